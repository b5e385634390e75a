// Section 4, "Two real models": the page side of the worker (worker.js). Runs plain and
// speculative decoding, colours the text by accepted / corrected / bonus tokens, and shows the
// measured statistics beside what the lesson's formula predicts from them.
import { frame, h, onWidthChange, s } from './svg.js';
import { byteTextStream, encodeBytes, visibleText } from './tokens.js';
import { fileSizeProblem, sizeText } from './limits.js';
import { bestGamma } from './costmodel.js';
import { initVk } from './vk.js';
import { initBackend } from './backend.js';
import { RULE, ratioVerdict, ratioText, verdictHeadline } from './verdict.js';
import { median } from './roofline.js';
import {
  DRAFTER_NAMES, commonGamma, drafterCounts, drafterCountsText, drafterLegend, drawDrafterStrip, drawGammaHistogram, meanGamma,
} from './runcharts.js';
import { PROMPT_PRESETS } from './presets.js';
import { showTreeDepth, treeOf } from './tree.js';
// The pairs the build ships (models.config.js, vite.config.js): sizes, shapes, URLs.
import { PAIRS, DEFAULT_PAIR } from 'virtual:specdec-pairs';

export { PAIRS, DEFAULT_PAIR };

const absolute = (url) => new URL(url, document.baseURI).href;

/** What the worker needs to load a pair: absolute URLs, expected sizes, its name. */
function pairRequest(name) {
  const p = PAIRS[name];
  if (!p?.available) throw new Error(`the ${name} pair is not in this build`);
  return {
    urls: { target: absolute(p.files.target.url), draft: absolute(p.files.draft.url) },
    sizes: { target: p.files.target.bytes, draft: p.files.draft.bytes },
    pair: name,
    // The pair's heads, if the build has them: the worker loads them on first use.
    heads: p.heads ? { url: absolute(p.heads.url), count: p.heads.count } : null,
  };
}

/** Whether both files of a pair are in a cache of the service worker (usable offline). */
export async function pairIsCached(name) {
  const p = PAIRS[name];
  if (!p?.available || !('caches' in window)) return false;
  try {
    const hits = await Promise.all(['target', 'draft'].map((r) => caches.match(absolute(p.files[r].url))));
    return hits.every(Boolean);
  } catch {
    return false;
  }
}

// A pair fetched on demand is kept by the service worker's runtime cache, so it must go
// through the service worker: on a first visit, wait (briefly) until it controls the page.
async function serviceWorkerInControl(timeoutMs = 10000) {
  if (!('serviceWorker' in navigator) || !window.isSecureContext || import.meta.env.DEV) return;
  if (navigator.serviceWorker.controller) return;
  const reg = await navigator.serviceWorker.getRegistration().catch(() => null);
  if (!reg) return;
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    navigator.serviceWorker.addEventListener('controllerchange', () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}

/**
 * Promise-based client of worker.js. `worker`: another instance of worker.js to talk to (the
 * pitfalls lab has its own, so that its runs and section 4's never wait for each other).
 * `threads`: loadSpecdec's threads option for that instance ('auto' when not given).
 */
export class ModelClient {
  constructor(worker = null, { threads } = {}) {
    this.worker = worker ?? new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'specdec-models' });
    if (threads !== undefined) this.worker.postMessage({ type: 'init', threads });
    this.nextId = 1;
    this.pending = new Map(); // id -> { resolve, reject, onEvent }
    this.info = null;
    this.loading = null;
    this.pair = DEFAULT_PAIR; // the pair loaded (or to load); a learner's files may replace it
    this.listeners = new Set();
    this.worker.onmessage = (e) => this.onMessage(e.data);
    this.worker.onerror = (e) => {
      const err = new Error(e.message || 'worker failed');
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.emit({ type: 'worker-error', message: err.message });
    };
  }

  onMessage(msg) {
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.type === 'error') {
      this.pending.delete(msg.id);
      const err = new Error(msg.message);
      if (msg.fallback) {
        // The GPU failed: the target runs on the CPU from now on (backend.js shows why).
        err.fallback = msg.fallback;
        this.emit({ type: 'backend-fallback', reason: msg.fallback });
      }
      p.reject(err);
    } else if (['progress', 'chunk', 'started', 'vk-progress', 'pitfall-progress'].includes(msg.type)) {
      p.onEvent?.(msg);
    } else {
      this.pending.delete(msg.id);
      p.resolve(msg);
    }
  }

  request(msg, onEvent) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onEvent });
      this.worker.postMessage({ ...msg, id });
    });
  }

  on(fn) { this.listeners.add(fn); }
  emit(ev) { for (const fn of this.listeners) fn(ev); }

  /** Loads the current pair (the default one at first) once; later calls share the promise. */
  ensureLoaded() {
    if (!this.loading) {
      const name = this.pair;
      const req = pairRequest(name);
      this.emit({ type: 'load-start', pair: name });
      this.loading = this.request({ type: 'load', ...req }, (ev) => this.emit({ ...ev, pair: name }))
        .then((msg) => {
          this.info = msg.info;
          this.emit({ type: 'loaded', info: msg.info });
          return msg.info;
        })
        .catch((err) => {
          this.loading = null;
          this.emit({ type: 'load-error', message: err.message });
          throw err;
        });
    }
    return this.loading;
  }

  /**
   * Loads a learner's model files ({ target?: File, draft?: File }) in the worker, through the
   * same loader as the page's models; a role without a file keeps its model. Rejects with the
   * loader's message (nothing changes then).
   */
  async loadFiles(files) {
    // Let a download of the page's models finish first (it would not replace these anyway).
    await this.loading?.catch(() => {});
    const msg = await this.request({ type: 'load-files', files });
    this.info = msg.info;
    this.emit({ type: 'loaded', info: msg.info });
    return msg.info;
  }

  /**
   * Switches to another pair of the build (PAIRS): fetched with progress events (a pair that is
   * not precached is fetched through the service worker, which keeps it for offline use), then
   * loaded in the worker, which disposes the models it replaces. On failure nothing changes.
   */
  async loadPair(name) {
    await this.loading?.catch(() => {});
    const req = pairRequest(name);
    if (!PAIRS[name].precached) await serviceWorkerInControl();
    this.emit({ type: 'load-start', pair: name });
    let msg;
    try {
      msg = await this.request({ type: 'load', ...req, replace: true }, (ev) => this.emit({ ...ev, pair: name }));
    } catch (err) {
      this.emit({ type: 'load-error', message: err.message, pair: name, kept: this.info });
      throw err;
    }
    this.pair = name;
    this.info = msg.info;
    this.loading = Promise.resolve(msg.info);
    this.emit({ type: 'loaded', info: msg.info });
    return msg.info;
  }

  /** Back to the current pair's model files (after loadFiles). */
  resetModels() { return this.loadPair(this.pair); }

  run(mode, options, onEvent) { return this.request({ type: 'run', mode, options }, onEvent); }
  stop() { this.worker.postMessage({ type: 'stop' }); }
  calibrate(options) { return this.request({ type: 'calibrate', options }).then((m) => m.stepMs); }
  /** Target pass times over k = 1..8 new tokens (roofline.js, worker.js measureVk). */
  measureVk(options, onEvent) { return this.request({ type: 'measure-vk', options }, onEvent).then((m) => m.vk); }
  /**
   * Read bandwidth B(T) of `threads` threads at once (default: the threads in use) over buffers
   * of these sizes ([{ bytes, threads, gbPerSecond } | { bytes, threads, error }]).
   */
  bandwidth(sizes, threads) { return this.request({ type: 'bandwidth', sizes, threads }).then((m) => m.results); }
  /** Compute peak P(T) for each thread count ([{ threads, gflops } | { threads, error }], sd.measurePeak). */
  peak(threads) { return this.request({ type: 'peak', threads }).then((m) => m.results); }
  /** The worker's threads ({ threads, maxThreads, requested, threaded, reason, isolated, cores }); with n, sets them first. */
  threads(n) { return this.request({ type: 'threads', n }).then((m) => m.info); }
  /** sd.memoryStats() of the worker's WASM instance (tests: no leak when switching pairs). */
  memory() { return this.request({ type: 'memory' }).then((m) => m.stats); }
  /** Loads the current target's heads in the worker (resolves to their count; rejects with the loader's message). */
  loadHeads() { return this.request({ type: 'heads' }).then((m) => m.count); }
  stepStart(options) { return this.request({ type: 'step-start', options }); }
  stepNext() { return this.request({ type: 'step-next' }).then((m) => m.view); }
  stepDispose() { this.worker.postMessage({ type: 'step-dispose' }); }
  /** Is there a WebGPU adapter in the worker ({ available, name, adapter, software, reason })? */
  gpuProbe() { return this.request({ type: 'gpu-probe' }).then((m) => m.probe); }
  /** Puts the target on 'gpu' (loads it there now) or 'cpu'; resolves to where it runs ({ backend, name, reason, ... }). */
  backend(want) { return this.request({ type: 'backend', want }).then((m) => m.info); }
  /** Diagnostics: destroys the worker's GPU device (what a driver reset does). */
  gpuLose() { return this.request({ type: 'gpu-lose' }); }

  /** The generation settings currently in section 4's form. */
  currentOptions() { return readOptions(); }
}

function num(id, dflt) {
  const v = Number(document.getElementById(id).value);
  return Number.isFinite(v) ? v : dflt;
}

/** The drafter chosen in section 4: 'draft' | 'lookup' | 'both' | 'heads'. */
function drafterChoice() {
  return document.querySelector('input[name="drafter"]:checked')?.value ?? 'draft';
}

/** The thread count chosen in section 4 (undefined until the worker has said what it has). */
function threadsChoice() {
  const el = document.getElementById('gen-threads');
  return el?.dataset.ready === 'true' ? Math.max(1, Math.round(Number(el.value)) || 1) : undefined;
}

/** "Run both & compare": how many times plain and speculative decoding run in turn. */
function repeatsChoice() {
  return Math.min(9, Math.max(1, Math.round(num('gen-repeats', 3))));
}

/** Where the target runs: 'gpu' (WebGPU) or 'cpu' (WebAssembly), as section 4's switch says. */
function backendChoice() {
  return document.querySelector('input[name="backend"]:checked')?.value === 'gpu' ? 'gpu' : 'cpu';
}

function readOptions() {
  const prompt = document.getElementById('prompt').value || '\n';
  const drafter = drafterChoice();
  // Prompt lookup drafts chains only (the tree select is disabled then).
  const tree = drafter === 'lookup' || drafter === 'both' ? null : treeOf(document.getElementById('gen-tree').value);
  return {
    prompt: encodeBytes(prompt),
    drafter,
    tree,
    gammaMode: tree ? 'fixed' : document.getElementById('gen-gamma-mode').value,
    gamma: Math.min(16, Math.max(1, Math.round(num('gen-gamma', 4)))),
    temperature: Math.min(2, Math.max(0, num('gen-temp', 0.8))),
    topK: Math.max(0, Math.round(num('gen-topk', 0))),
    topP: Math.min(1, Math.max(0.01, num('gen-topp', 1))),
    seed: Math.max(0, Math.round(num('gen-seed', 42))),
    maxTokens: Math.min(2000, Math.max(1, Math.round(num('gen-max', 200)))),
    paceMs: Math.max(0, num('gen-pace', 0)),
    threads: threadsChoice(),
    backend: backendChoice(),
  };
}

// Runs are comparable when they decode the same prompt with the same sampling settings on the
// same number of threads (γ, the drafter, the draft's shape and pace do not change what a plain
// step costs; the thread count does).
function sameSettings(a, b) {
  const key = (o) => JSON.stringify({ ...o, gamma: 0, gammaMode: '', drafter: '', tree: null, paceMs: 0, quiet: false });
  return !!(a && b) && key(a) === key(b);
}

/**
 * @param {any} sd the page's WASM instance (the lesson's formulas)
 * @param {ModelClient} client section 4's decoding worker
 * @param {{ isolation?: { state: string, reason: string | null, on: (fn: Function) => void } }} [o]
 *   the page's cross-origin isolation (isolation.js): why the worker has one thread, if it has
 */
export function initModels(sd, client, { isolation = null } = {}) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    loadText: $('model-load-text'), progress: $('model-progress'), info: $('model-info'),
    both: $('run-both'), plain: $('run-plain'), spec: $('run-spec'), stop: $('run-stop'),
    plainText: $('plain-text'), specText: $('spec-text'), plainLine: $('plain-line'), specLine: $('spec-line'),
    plainState: $('plain-state'), specState: $('spec-state'), verdict: $('verdict'),
    chartPositions: $('chart-positions'),
    fileInputs: { target: $('model-file-target'), draft: $('model-file-draft') },
    fileStatus: $('model-file-status'), fileError: $('model-file-error'), fileReset: $('model-file-reset'),
    pairOptions: $('pair-options'), pairNote: $('pair-note'),
    prompt: $('prompt'), promptNote: $('prompt-note'),
    gammaMode: $('gen-gamma-mode'), gamma: $('gen-gamma'), gammaLabel: $('gen-gamma-label'), tree: $('gen-tree'),
    genNote: $('gen-note'), headsWhy: $('drafter-heads-why'), specConfig: $('spec-config'),
    drafters: Object.fromEntries(['draft', 'lookup', 'both', 'heads'].map((d) => [d, $(`drafter-${d}`)])),
    chartGamma: $('chart-gamma'), chartDrafters: $('chart-drafters'), gammaSummary: $('gamma-summary'),
    gammaPolicy: $('gamma-policy'), drafterCounts: $('drafter-counts'), drafterLegend: $('drafter-legend'),
    threads: $('gen-threads'), threadsStatus: $('threads-status'), repeats: $('gen-repeats'),
  };
  const cell = (id) => document.querySelector(`[data-testid="${id}"]`);
  let busy = false;
  let plainResult = null; // { options, summary }
  let specResult = null;
  let stepMs = null; // { options, ms } from calibration
  let shownPositions = null;
  let shownRun = null; // { stats, iters, options } of the last speculative run (redrawn on resize)
  let headsError = null; // the loader's refusal of the current target's heads
  let headsCount = null;
  let headsChecking = null;
  let note = ''; // why a control changed by itself (heads unavailable, ...)
  let threadInfo = null; // the worker's threads (worker.js threadInfo), once it has said
  let shownThreads = null; // the count the page last showed
  let pairedRatios = null; // per-repeat ratios of the last "Run both & compare"
  let runFacts = null; // the last comparison's α, γ, c, E (vk.js quotes them)
  let stopAsked = false; // Stop was pressed during this go(): no further repeat starts
  let backend = null; // where the target runs (backend.js)
  const vk = initVk({
    client, pairs: PAIRS, setBusy: (b) => setBusy(b), isBusy: () => busy, readOptions,
    threadsNow: () => threadInfo?.threads ?? 1,
    runFacts: () => runFacts,
    speedup: (...a) => sd.speculativeSpeedup(...a),
    backendNow: () => backend?.current() ?? { backend: 'cpu' },
  });
  backend = initBackend({
    client, isBusy: () => busy,
    onChange: () => {
      note = '';
      syncControls();
      vk.onBackend();
    },
  });

  // ---- threads: how many the worker's passes use, and why not more
  function threadsText(t) {
    if (!t) return 'Threads: starting the decoding worker…';
    if (t.threads > 1) return `${t.threads} threads, cross-origin isolated${t.maxThreads > t.threads ? ` (${t.maxThreads} available)` : ''}.`;
    if (t.maxThreads > 1) return `1 thread (chosen; ${t.maxThreads} available), cross-origin isolated.`;
    if (t.isolated) {
      return t.reason ? `1 thread: ${t.reason}.`
        : `1 thread, cross-origin isolated: this machine reports ${t.cores} logical core${t.cores === 1 ? '' : 's'}.`;
    }
    const why = isolation?.reason ?? String(t.reason ?? 'SharedArrayBuffer is unavailable').replace(/^not cross-origin isolated: /, '');
    return `1 thread: not cross-origin isolated (${why}).`;
  }

  function showThreads(t) {
    if (t) threadInfo = t;
    const info = threadInfo;
    ui.threadsStatus.textContent = threadsText(info);
    if (!info) return;
    ui.threadsStatus.dataset.threads = String(info.threads);
    ui.threadsStatus.dataset.maxThreads = String(info.maxThreads);
    ui.threadsStatus.dataset.isolated = String(info.isolated);
    if (ui.threads.options.length !== info.maxThreads) {
      ui.threads.replaceChildren(...Array.from({ length: info.maxThreads }, (_, i) => h('option', { value: String(i + 1) }, [String(i + 1)])));
    }
    const changed = info.threads !== shownThreads;
    shownThreads = info.threads;
    ui.threads.value = String(info.threads);
    ui.threads.dataset.ready = 'true';
    ui.threads.disabled = busy || info.maxThreads < 2;
    if (changed) vk.onThreads();
  }
  ui.threads.addEventListener('change', async () => {
    const n = Number(ui.threads.value);
    if (busy) {
      showThreads(null); // back to the count in use; the select is disabled while busy anyway
      return;
    }
    try {
      showThreads(await client.threads(n));
    } catch (err) {
      showThreads(null);
      ui.threadsStatus.textContent += ` (${err.message})`;
    }
  });
  isolation?.on(() => showThreads(null));
  showThreads(null);
  const showPositions = (st) => {
    shownPositions = st;
    drawPositions(ui.chartPositions, st);
  };

  // ---- the drafter, the γ policy and the draft's shape
  function headsStatus() {
    if (headsError) return { ok: false, reason: headsError };
    const info = client.info;
    const pair = PAIRS[info ? info.pair : client.pair];
    if (info?.target.file) return { ok: false, reason: 'heads are trained for the page’s own targets, not for a model file you chose' };
    if (info ? info.heads : pair?.heads) return { ok: true, reason: '' };
    return { ok: false, reason: `heads not in this build${pair?.headsMissing ? ` (${pair.headsMissing} missing)` : ''}` };
  }

  function syncControls() {
    const hs = headsStatus();
    ui.drafters.heads.disabled = !hs.ok;
    ui.headsWhy.textContent = hs.ok ? (headsCount ? `${headsCount} heads` : '') : hs.reason;
    ui.headsWhy.dataset.state = hs.ok ? 'available' : 'unavailable';
    if (ui.drafters.heads.checked && !hs.ok) {
      ui.drafters.draft.checked = true;
      note = `Heads unavailable (${hs.reason}): back to the draft model.`;
    }
    const drafter = drafterChoice();
    const lookup = drafter === 'lookup' || drafter === 'both';
    ui.tree.disabled = lookup;
    if (lookup && ui.tree.value) ui.tree.value = '';
    const tree = treeOf(ui.tree.value);
    ui.gammaMode.disabled = !!tree;
    showTreeDepth(ui.gamma, tree);
    const mode = ui.gammaMode.value;
    ui.gammaLabel.textContent = tree ? 'γ (tree depth)' : (mode === 'fixed' ? 'γ' : 'γ max');
    const notes = note ? [note] : [];
    if (tree) {
      const nodes = tree.reduce((acc, b) => ({ n: acc.n * b, sum: acc.sum + acc.n * b }), { n: 1, sum: 0 }).sum;
      notes.push(`A tree's depth is its γ: ${tree.length} here; its ${nodes} nodes are drafted in ${tree.length} batched passes and scored in ONE target pass (a tree attention mask).`);
    } else if (mode === 'auto') {
      notes.push('auto: before every iteration the decoder picks γ in 1…γ max (or a plain step) for the most expected tokens per unit of time, E(α, γ) / (γc + v(γ + 1)), from what this run has measured so far.');
    } else if (mode === 'heuristic') {
      notes.push('heuristic (Hugging Face’s schedule): γ starts at 5, +2 after a fully accepted draft, −1 otherwise, within 1…γ max.');
    }
    if (lookup) notes.push('Prompt lookup drafts chains, not trees.');
    if (drafter === 'heads') {
      const count = headsCount ?? PAIRS[client.info?.pair ?? client.pair]?.heads?.count;
      if (count) notes.push(`The heads guess at most ${count} tokens ahead: a deeper γ or tree is cut to ${count}; the first iteration is a plain step (the heads read the target's last hidden state).`);
    }
    ui.genNote.textContent = notes.join(' ');
  }

  async function checkHeads() {
    if (!client.info || headsError || headsCount || headsChecking) return;
    const info = client.info;
    headsChecking = client.loadHeads().then((count) => {
      if (client.info === info) headsCount = count;
    }, (err) => {
      if (client.info === info) headsError = err.message;
    }).finally(() => {
      headsChecking = null;
      syncControls();
    });
  }

  for (const input of Object.values(ui.drafters)) {
    input.addEventListener('change', () => {
      note = '';
      if (input.checked && input.value === 'heads') checkHeads();
      syncControls();
    });
  }
  for (const el of [ui.gammaMode, ui.tree]) el.addEventListener('change', () => { note = ''; syncControls(); });
  // γ becomes the upper bound of the policy: start it at the library's default, 8.
  ui.gammaMode.addEventListener('change', () => {
    if (ui.gammaMode.value !== 'fixed' && Number(ui.gamma.value) < 8) ui.gamma.value = '8';
  });

  for (const button of document.querySelectorAll('.prompt-presets button')) {
    button.addEventListener('click', () => {
      const preset = PROMPT_PRESETS[button.dataset.prompt];
      ui.prompt.value = preset.prompt;
      ui.prompt.rows = Math.min(8, Math.max(2, preset.prompt.split('\n').length));
      ui.promptNote.textContent = preset.note;
      ui.prompt.dispatchEvent(new Event('change', { bubbles: true }));
    });
  }

  function showRun(run) {
    shownRun = run;
    const st = run?.stats ?? null;
    const iters = run?.iters ?? [];
    const o = run?.options;
    drawGammaHistogram(ui.chartGamma, st?.gammaHistogram ?? null, { policy: o ? policyOf(o) : '' });
    drawDrafterStrip(ui.chartDrafters, iters);
    const counts = drafterCounts(iters);
    ui.drafterCounts.textContent = drafterCountsText(counts);
    ui.drafterLegend.replaceChildren(...drafterLegend(counts));
    ui.gammaPolicy.textContent = o ? policyText(o) : 'fixed';
    const hist = st?.gammaHistogram ?? [];
    const n = hist.reduce((a, b) => a + b, 0);
    ui.gammaSummary.textContent = n
      ? `Mean γ ${meanGamma(hist).toFixed(2)} over ${n} iteration${n === 1 ? '' : 's'}; most often γ = ${commonGamma(hist)}.`
      : '';
  }

  // ---- the pair picker: one radio button per pair of the build ("small, 10.7 MB")
  const pairInputs = {};
  for (const [name, p] of Object.entries(PAIRS)) {
    const input = h('input', { type: 'radio', name: 'pair', value: name, id: `pair-${name}`, disabled: !p.available });
    input.checked = name === client.pair;
    pairInputs[name] = input;
    const desc = h('span', { class: 'pair-desc', id: `pair-${name}-desc` }, [pairDescription(p)]);
    const where = h('span', { class: 'pair-where', id: `pair-${name}-where`, 'data-testid': `pair-${name}-where` },
      [p.precached ? 'loaded on every visit' : (p.available ? 'downloaded only when picked' : '')]);
    ui.pairOptions.append(h('label', { class: 'pair', for: input.id }, [
      input, h('span', { class: 'pair-name', 'data-testid': `pair-${name}-label` }, [p.label]), desc, where]));
  }
  async function refreshPairStatus() {
    for (const [name, p] of Object.entries(PAIRS)) {
      if (p.precached || !p.available) continue;
      const cached = await pairIsCached(name);
      const el = document.getElementById(`pair-${name}-where`);
      el.textContent = cached ? 'saved for offline use' : 'downloaded only when picked, then kept for offline use';
      el.dataset.cached = String(cached);
    }
  }
  refreshPairStatus();
  const checkPair = (name) => { for (const [n, input] of Object.entries(pairInputs)) input.checked = n === name; };
  for (const [name, input] of Object.entries(pairInputs)) {
    input.addEventListener('change', async () => {
      if (!input.checked || name === client.pair && client.info?.pair === name) return;
      if (busy) {
        checkPair(client.pair);
        ui.pairNote.textContent = 'Stop the running decode before switching pairs.';
        return;
      }
      ui.pairNote.textContent = '';
      setBusy(true);
      try {
        await client.loadPair(name);
        ui.fileReset.hidden = true;
        fileState('', '');
      } catch (err) {
        checkPair(client.pair);
        ui.pairNote.textContent = `Could not load the ${name} pair: ${err.message}. `
          + (client.info ? `Still using the ${client.info.pair ?? 'same'} models.` : '');
      } finally {
        setBusy(false);
        refreshPairStatus();
      }
    });
  }

  client.on((ev) => {
    if (ev.type === 'load-start') {
      const p = PAIRS[ev.pair];
      ui.loadText.textContent = `Loading the ${ev.pair} pair (${mb(p?.bytes ?? 0)})…`;
      ui.progress.value = 0;
      ui.progress.hidden = false;
      ui.progress.dataset.pair = ev.pair;
      document.body.dataset.modelsReady = 'false';
    } else if (ev.type === 'progress') {
      const frac = ev.total ? ev.loaded / ev.total : 0;
      ui.progress.value = frac;
      ui.progress.dataset.loaded = String(ev.loaded);
      ui.progress.dataset.total = String(ev.total);
      ui.loadText.textContent = ev.total
        ? `Loading the ${ev.pair} pair… ${mb(ev.loaded)} of ${mb(ev.total)} (${Math.round(frac * 100)} %)`
        : `Loading the ${ev.pair} pair… ${mb(ev.loaded)}`;
    } else if (ev.type === 'loaded') {
      // Other models: earlier measurements no longer compare.
      plainResult = null;
      specResult = null;
      stepMs = null;
      pairedRatios = null;
      runFacts = null;
      ui.progress.value = 1;
      ui.progress.hidden = true;
      const pairName = ev.info.pair;
      ui.loadText.textContent = pairName
        ? `Models ready: the ${pairName} pair (${mb(ev.info.target.bytes + ev.info.draft.bytes)}).`
        : `Models ready (${mb(ev.info.target.bytes + ev.info.draft.bytes)}).`;
      checkPair(client.pair);
      ui.info.replaceChildren(describeModel('Target', ev.info.target), ' ', describeModel('Draft', ev.info.draft),
        ...(ev.info.sameWeights ? [h('span', { class: 'note-inline' }, [
          ' Both roles load the same demo weights, so every guess is accepted (p = q): this checks the plumbing, not the speed.'])] : []));
      document.body.dataset.modelsReady = 'true';
      document.body.dataset.pair = pairName ?? 'own';
      // The worker's threads: the count it started with, unless one was chosen already.
      if (!threadInfo && ev.info.threads) showThreads(ev.info.threads);
      headsError = null;
      headsCount = null;
      if (ui.drafters.heads.checked) checkHeads();
      syncControls();
      vk.onLoaded();
      setBusy(busy);
    } else if (ev.type === 'load-error' || ev.type === 'worker-error') {
      ui.loadText.textContent = ev.kept
        ? `Could not load the ${ev.pair} pair: ${ev.message}. Still using the ${ev.kept.pair ?? 'same'} models.`
        : `Could not load the models: ${ev.message}`;
      ui.progress.hidden = true;
      if (ev.kept) document.body.dataset.modelsReady = 'true';
    }
  });

  function setBusy(b) {
    busy = b;
    // The pitfalls lab waits while section 4 decodes or measures (pitfalls.js).
    if (document.body.dataset.modelsBusy !== String(b)) {
      document.body.dataset.modelsBusy = String(b);
      window.dispatchEvent(new CustomEvent('specdec-models-busy', { detail: { busy: b } }));
    }
    const ready = !!client.info;
    ui.both.disabled = b || !ready;
    ui.plain.disabled = b || !ready;
    ui.spec.disabled = b || !ready;
    ui.stop.disabled = !b;
    for (const input of Object.values(ui.fileInputs)) input.disabled = b;
    ui.fileReset.disabled = b;
    for (const [name, input] of Object.entries(pairInputs)) input.disabled = b || !PAIRS[name].available;
    vk.setDisabled(b);
    backend?.setDisabled(b);
    ui.threads.disabled = b || !threadInfo || threadInfo.maxThreads < 2;
  }

  // ---- a learner's own model files: file pickers and drag and drop, one zone per role
  function fileState(state, status, error = '') {
    ui.fileStatus.dataset.state = state;
    ui.fileStatus.textContent = status;
    ui.fileError.textContent = error;
  }

  async function useFiles(chosen) {
    const roles = Object.keys(chosen);
    const names = roles.map((r) => `the ${r} file “${chosen[r].name}”`).join(' and ');
    if (busy) {
      fileState('error', '', `Stop the running decode before loading ${names}.`);
      return;
    }
    for (const role of roles) {
      const tooBig = fileSizeProblem(chosen[role].size);
      if (tooBig) {
        fileState('error', '', `${role} file “${chosen[role].name}”: ${tooBig}`);
        return;
      }
    }
    fileState('checking', `Checking ${names}…`);
    setBusy(true);
    try {
      await client.loadFiles(chosen);
      fileState('loaded', `Loaded ${names}.`);
      ui.fileReset.hidden = false;
    } catch (err) {
      fileState('error', '', err.message);
    } finally {
      setBusy(false);
      for (const input of Object.values(ui.fileInputs)) input.value = ''; // the same file can be chosen again
    }
  }

  for (const [role, input] of Object.entries(ui.fileInputs)) {
    input.addEventListener('change', () => {
      if (input.files?.length) useFiles({ [role]: input.files[0] });
    });
  }
  const hasFiles = (e) => Array.from(e.dataTransfer?.types ?? []).includes('Files');
  for (const zone of document.querySelectorAll('#own-models .drop')) {
    const role = zone.dataset.role;
    zone.addEventListener('dragover', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.stopPropagation();
      e.dataTransfer.dropEffect = 'copy';
      zone.classList.add('over');
    });
    zone.addEventListener('dragleave', () => zone.classList.remove('over'));
    zone.addEventListener('drop', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.stopPropagation();
      zone.classList.remove('over');
      const dropped = Array.from(e.dataTransfer.files);
      if (dropped.length !== 1) {
        fileState('error', '', `Drop one file on the ${role} zone (got ${dropped.length}).`);
        return;
      }
      useFiles({ [role]: dropped[0] });
    });
  }
  // A file dropped anywhere else would make the browser leave the page to show it.
  window.addEventListener('dragover', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'none';
  });
  window.addEventListener('drop', (e) => {
    if (hasFiles(e)) e.preventDefault();
  });
  ui.fileReset.addEventListener('click', async () => {
    if (busy) return;
    fileState('checking', 'Loading the page’s models…');
    setBusy(true);
    try {
      await client.resetModels();
      fileState('loaded', 'Back to the page’s models.');
      ui.fileReset.hidden = true;
    } catch (err) {
      fileState('error', '', err.message);
    } finally {
      setBusy(false);
    }
  });

  /**
   * One plain or speculative run. `repeat` / `repeats`: its place in "Run both & compare"; a
   * repeat after the first is `quiet` (the worker streams nothing back: same seed, same tokens,
   * only the timing is new), and the state reads "done" only after the last one.
   */
  async function runOne(mode, options, { repeat = 0, repeats = 1 } = {}) {
    const isPlain = mode === 'plain';
    const textEl = isPlain ? ui.plainText : ui.specText;
    const stateEl = isPlain ? ui.plainState : ui.specState;
    const lineEl = isPlain ? ui.plainLine : ui.specLine;
    const last = repeat === repeats - 1;
    const finish = (summary) => {
      const done = summary.stopped ? `stopped after ${summary.generated} tokens` : `done, ${summary.generated} tokens`;
      const more = summary.stopped || repeats === 1 ? '' : (last ? ` · ${repeats} timing repeats` : ` · timing repeat ${repeat + 2} of ${repeats} next`);
      stateEl.textContent = done + more;
      stateEl.dataset.state = summary.stopped ? 'stopped' : (last ? 'done' : 'repeating');
      // For tests: the threads the run's passes used, and how many parallel regions went to the
      // pool's workers (0 on one thread).
      stateEl.dataset.threads = String(summary.threads ?? '');
      stateEl.dataset.parallelRuns = String(summary.pool?.runs ?? '');
    };
    if (repeat > 0) {
      stateEl.textContent = `timing repeat ${repeat + 1} of ${repeats}…`;
      stateEl.dataset.state = 'repeating';
      let msg;
      try {
        msg = await client.run(mode, { ...options, quiet: true, paceMs: 0 }, () => {});
      } catch (err) {
        stateEl.textContent = 'failed';
        stateEl.dataset.state = 'failed';
        throw err;
      }
      finish(msg.summary);
      return msg.summary;
    }
    textEl.replaceChildren();
    lineEl.textContent = '';
    stateEl.textContent = 'running…';
    stateEl.dataset.state = 'running';
    const stream = byteTextStream();
    const promptText = new TextDecoder().decode(Uint8Array.from(options.prompt));
    textEl.append(h('span', { class: 'tok prompt' }, [promptText]));
    let lastKind = null;
    let lastSpan = null;
    const iters = [];
    if (!isPlain) {
      ui.specConfig.textContent = `(${configText(options)})`;
      showRun({ stats: null, iters, options });
    }
    const onEvent = (ev) => {
      if (ev.type !== 'chunk') return;
      if (!isPlain && ev.iters) iters.push(...ev.iters);
      const frag = document.createDocumentFragment();
      for (const [tok, kind] of ev.tokens) {
        const text = visibleText(stream.push(tok));
        if (!text) continue;
        if (kind === lastKind && lastSpan && kind !== 'cor' && kind !== 'bonus') {
          lastSpan.textContent += text;
        } else {
          lastSpan = h('span', { class: `tok ${kind}` }, [text]);
          lastKind = kind;
          frag.append(lastSpan);
        }
      }
      textEl.append(frag);
      textEl.scrollTop = textEl.scrollHeight;
      lineEl.textContent = runLine(ev.stats, isPlain);
      if (!isPlain) {
        showSpecStats(ev.stats);
        showRun({ stats: ev.stats, iters, options });
      }
    };
    let msg;
    try {
      msg = await client.run(mode, options, onEvent);
    } catch (err) {
      stateEl.textContent = 'failed';
      stateEl.dataset.state = 'failed';
      throw err;
    }
    const tail = stream.flush();
    if (tail) textEl.append(tail);
    const summary = msg.summary;
    finish(summary);
    lineEl.textContent = runLine(summary, isPlain);
    if (!isPlain) showRun({ stats: summary, iters, options });
    return summary;
  }

  /** Several runs of the same decoding as one: the first run's counts, the timings' medians. */
  function aggregate(runs) {
    const med = (f) => median(runs.map(f));
    return {
      ...runs[0],
      tokensPerSecond: med((r) => r.tokensPerSecond),
      draftMsPerPass: med((r) => r.draftMsPerPass),
      targetMsPerPass: med((r) => r.targetMsPerPass),
      repeats: runs.length,
    };
  }

  function showRepeatLines() {
    for (const [res, el, isPlain] of [[plainResult, ui.plainLine, true], [specResult, ui.specLine, false]]) {
      if (!res || !(res.runs?.length > 1)) continue;
      el.textContent = `${runLine(res.summary, isPlain)} (tokens/s: median of ${res.runs.length} repeats, `
        + `${res.runs.map((r) => r.tokensPerSecond.toFixed(1)).join(', ')})`;
    }
  }

  async function go(which) {
    if (busy) return;
    setBusy(true);
    stopAsked = false;
    ui.verdict.textContent = '';
    try {
      await client.ensureLoaded();
      const options = readOptions();
      if (which === 'both') {
        // Plain and speculative in turn, `repeats` times: one ratio per repeat, and the verdict
        // reads their spread (verdict.js). A stopped repeat ends it; the complete ones count.
        const repeats = repeatsChoice();
        const plains = [];
        const specs = [];
        pairedRatios = null;
        // After a Stop: a run left waiting for its next repeat says how many were complete.
        const settle = () => {
          for (const [el, runs] of [[ui.plainState, plains], [ui.specState, specs]]) {
            if (el.dataset.state !== 'repeating' || !runs.length) continue;
            el.textContent = `done, ${runs[0].generated} tokens · stopped after ${runs.length} of ${repeats} timing repeats`;
            el.dataset.state = 'done';
          }
        };
        for (let r = 0; r < repeats; r++) {
          // A Stop pressed between two runs reaches no run: it ends the comparison here.
          if (stopAsked) return settle();
          const p = await runOne('plain', options, { repeat: r, repeats });
          if (p.stopped || stopAsked) {
            if (!plains.length) plainResult = { options, summary: p, runs: [p] };
            return settle();
          }
          const sp = await runOne('spec', options, { repeat: r, repeats });
          if (sp.stopped) {
            if (!specs.length) {
              plainResult = { options, summary: p, runs: [p] };
              specResult = { options, summary: sp, runs: [sp] };
            }
            return settle();
          }
          plains.push(p);
          specs.push(sp);
          plainResult = { options, summary: aggregate(plains), runs: plains };
          specResult = { options, summary: aggregate(specs), runs: specs };
          pairedRatios = specs.map((x, i) => x.tokensPerSecond / plains[i].tokensPerSecond);
          showRepeatLines();
          showComparison();
        }
        if (stopAsked) return settle();
      } else if (which === 'plain') {
        const summary = await runOne('plain', options);
        plainResult = { options, summary, runs: [summary] };
        pairedRatios = null;
        if (summary.stopped) return;
      } else {
        const summary = await runOne('spec', options);
        specResult = { options, summary, runs: [summary] };
        pairedRatios = null;
        if (summary.stopped) return;  // Stop means stop: no calibration pass after it
      }
      if (which !== 'plain' && (!plainResult || !sameSettings(plainResult.options, options))) {
        if (!stepMs || !sameSettings(stepMs.options, options)) {
          stepMs = { options, ms: await client.calibrate(options) };
        }
      }
      showComparison();
      // What a verify pass costs on this target at this thread count, once per target and
      // count (a button measures again); the comparison then uses the measured v(k).
      if (vk.needsMeasurement(options.threads)) {
        const hist = specResult?.summary.gammaHistogram;
        const typical = options.tree ? options.tree.length : (options.gammaMode === 'fixed' ? options.gamma : commonGamma(hist ?? []));
        await vk.measure(options, typical || options.gamma);
        showComparison();
      }
    } catch (err) {
      ui.verdict.textContent = `Error: ${err.message}`;
      console.warn(err);
    } finally {
      setBusy(false);
    }
  }

  function plainStepMs() {
    if (plainResult && specResult && sameSettings(plainResult.options, specResult.options)) {
      return { ms: plainResult.summary.targetMsPerPass, from: 'the plain run' };
    }
    if (stepMs && specResult && sameSettings(stepMs.options, specResult.options)) {
      return { ms: stepMs.ms, from: 'a 12-step calibration' };
    }
    return null;
  }

  function showSpecStats(st) {
    cell('alpha-measured').textContent = st.examined ? `${st.alpha.toFixed(3)} (${st.accepted} / ${st.examined})` : '–';
    cell('tokens-per-target-pass').textContent = st.targetPasses ? st.tokensPerPass.toFixed(2) : '–';
    cell('positions-per-pass').textContent = st.targetPasses && st.positionsScored ? (st.positionsScored / st.targetPasses).toFixed(2) : '–';
    cell('spec-tps').textContent = st.tokensPerSecond ? st.tokensPerSecond.toFixed(1) : '–';
    showPositions(st);
  }

  /** One ratio per repeat of the last "Run both & compare", or the one ratio of separate runs. */
  function comparisonRatios() {
    const plainSt = plainResult?.summary;
    const specSt = specResult?.summary;
    if (!plainSt || !specSt || !sameSettings(plainResult.options, specResult.options) || !plainSt.tokensPerSecond) return [];
    if (pairedRatios?.length) return pairedRatios;
    return [specSt.tokensPerSecond / plainSt.tokensPerSecond];
  }

  function showComparison() {
    const plainSt = plainResult?.summary;
    const specSt = specResult?.summary;
    cell('plain-tps').textContent = plainSt?.tokensPerSecond ? plainSt.tokensPerSecond.toFixed(1) : '–';
    if (!specSt) return;
    showSpecStats(specSt);
    const step = plainStepMs();
    const o = specResult.options;
    // The lesson's formulas describe a chain of a fixed length from one drafter; for the other
    // settings the page reports what was measured and says why the formulas do not apply.
    const formula = !o.tree && o.gammaMode === 'fixed' && o.drafter !== 'both';
    const hist = specSt.gammaHistogram ?? [];
    const deepest = hist.reduce((m, count, g) => (count > 0 ? g : m), 0);
    // Heads cut a deeper γ to their count; the context end cuts the last drafts.
    const gamma = formula && deepest > 0 ? Math.min(o.gamma, deepest) : o.gamma;
    let c = NaN;
    let v = NaN;
    if (step && step.ms > 0) {
      // Prompt lookup runs no model: its drafts cost nothing measurable (no draft passes).
      c = specSt.draftPasses ? specSt.draftMsPerPass / step.ms : 0;
      v = specSt.targetMsPerPass / step.ms;
    }
    cell('c-measured').textContent = Number.isFinite(c) ? `${c.toFixed(3)}` : '–';
    cell('v-measured').textContent = Number.isFinite(v) ? `${v.toFixed(2)}` : '–';
    const alpha = Math.min(1, Math.max(0, specSt.alpha));
    const E = sd.expectedAcceptedTokens(alpha, gamma);
    const predicted = Number.isFinite(c) ? sd.speculativeSpeedup(alpha, gamma, Math.max(0, c)) : NaN;
    // The measured-cost extension: E / (γc + v), v = a verify pass in target steps.
    const predictedV = Number.isFinite(c) && v > 0 ? sd.speculativeSpeedup(alpha, gamma, Math.max(0, c), v) : NaN;
    const ratios = comparisonRatios();
    const verdict = ratioVerdict(ratios);
    const speedupCell = cell('speedup-measured');
    speedupCell.textContent = verdict.n
      ? `${ratioText(verdict.median)}${verdict.n > 1 ? ` (median; ${ratioText(verdict.min).slice(0, -1)}–${ratioText(verdict.max)} over ${verdict.n} repeats)` : ''}`
      : '– (run plain too)';
    speedupCell.dataset.ratios = ratios.map((r) => r.toFixed(4)).join(',');
    speedupCell.dataset.median = Number.isFinite(verdict.median) ? String(verdict.median) : '';
    ui.verdict.dataset.verdict = verdict.kind;
    ui.verdict.dataset.pays = String(verdict.kind === 'pays');
    runFacts = formula && o.drafter === 'draft' && Number.isFinite(c) && Number.isFinite(v)
      ? { alpha, gamma, c: Math.max(0, c), E, threads: o.threads ?? threadInfo?.threads ?? 1, target: client.info?.target?.digest ?? null }
      : null;
    vk.refresh();
    // Which backend ran the target: the verdict is that backend's.
    const ran = specSt.backend ?? { backend: 'cpu' };
    const where = h('span', { class: 'verdict-backend', 'data-testid': 'verdict-backend', 'data-backend': ran.backend }, [
      ran.backend === 'gpu' ? `Target on the GPU (${ran.name}${ran.software ? ', a software adapter' : ''}). ` : `Target on the CPU (WebAssembly, ${threadCount(o.threads ?? threadInfo?.threads ?? 1)}). `]);
    ui.verdict.dataset.backend = ran.backend;
    if (!formula) {
      const why = o.tree ? '– (a tree: the chain formula does not apply)'
        : o.drafter === 'both' ? '– (two drafters: see the counts below)' : '– (γ varies: see the histogram below)';
      cell('speedup-predicted').textContent = why;
      cell('speedup-predicted-v').textContent = why;
      ui.verdict.replaceChildren(where, ...verdictMixed({ verdict, o, specSt, hist }));
      return;
    }
    cell('speedup-predicted').textContent = Number.isFinite(predicted) ? `${predicted.toFixed(2)}×` : '–';
    cell('speedup-predicted-v').textContent = Number.isFinite(predictedV) ? `${predictedV.toFixed(2)}×` : '–';
    const coarseTimer = threadInfo ? !threadInfo.isolated : !window.crossOriginIsolated;
    const parts = [where, ...verdictOf({ verdict, predictedV, alpha, gamma, c, v, E, step, specSt, coarseTimer, gpu: ran.backend === 'gpu' ? ran : null })];
    if (o.drafter !== 'draft') {
      ui.verdict.replaceChildren(...parts, ...ruleNote(verdict));
      return;
    }
    // The γ the measured costs predict to be best: with v(k) measured at this thread count when
    // section 4's measurement has it, else extrapolated from this run's v(γ + 1).
    const threads = o.threads ?? threadInfo?.threads ?? 1;
    const curve = vk.verifyCurve(threads);
    const best = bestGamma({ alpha, gamma, c: Math.max(0, c), v, speedup: (...a) => sd.speculativeSpeedup(...a), verifyCost: curve ?? undefined });
    ui.verdict.replaceChildren(...parts, ...suggestion(best, gamma, v, curve ? (ran.backend === 'gpu' ? 'gpu' : threads) : null, c), ...ruleNote(verdict));
  }

  ui.both.addEventListener('click', () => go('both'));
  ui.plain.addEventListener('click', () => go('plain'));
  ui.spec.addEventListener('click', () => go('spec'));
  ui.stop.addEventListener('click', () => {
    stopAsked = true;
    client.stop();
  });
  $('gen-form').addEventListener('submit', (e) => e.preventDefault());
  setBusy(false);
  onWidthChange(() => {
    showPositions(shownPositions);
    showRun(shownRun);
  });
  showPositions(null);
  showRun(null);
  syncControls();
}

/** How γ was chosen, for the histogram's caption. */
function policyOf(o) {
  return o.tree ? 'tree' : o.gammaMode;
}

function policyText(o) {
  if (o.tree) return `a tree [${o.tree.join(', ')}]: γ is its depth`;
  if (o.gammaMode === 'auto') return `auto, γ ≤ ${o.gamma}`;
  if (o.gammaMode === 'heuristic') return `heuristic, γ ≤ ${o.gamma}`;
  return `fixed γ = ${o.gamma}`;
}

/** "prompt lookup, auto γ ≤ 8" / "heads, tree [2, 2, 1]". */
function configText(o) {
  const who = o.drafter === 'both' ? 'prompt lookup + draft model' : DRAFTER_NAMES[o.drafter] ?? o.drafter;
  if (o.tree) return `${who}, tree [${o.tree.join(', ')}]`;
  if (o.gammaMode === 'fixed') return `${who}, γ = ${o.gamma}`;
  return `${who}, ${o.gammaMode} γ ≤ ${o.gamma}`;
}

// The verdict for settings the lesson's formula does not cover (auto / heuristic γ, two
// drafters, trees): what was measured, and where the tokens per pass came from.
function verdictMixed({ verdict, o, specSt, hist }) {
  const out = [];
  const tpp = specSt.tokensPerPass;
  const ppp = specSt.positionsScored && specSt.targetPasses ? specSt.positionsScored / specSt.targetPasses : NaN;
  const head = verdictHeadline(verdict);
  out.push(h('strong', head.cls ? { class: head.cls } : {}, [head.text]));
  const bits = [`Each target pass emitted ${tpp.toFixed(2)} tokens on average` + (Number.isFinite(ppp) ? ` and scored ${ppp.toFixed(1)} positions` : '')];
  if (o.tree) {
    bits.push(`a tree offers several candidates per depth, so more of each pass is kept, but every pass scores all its nodes: whether that pays depends on what a wider pass costs here (v(k) below)`);
  } else if (o.gammaMode !== 'fixed') {
    const used = hist.map((count, g) => (count > 0 ? g : null)).filter((g) => g !== null);
    if (used.length) bits.push(`γ ranged over ${used[0]}…${used[used.length - 1]} (mean ${meanGamma(hist).toFixed(2)}), chosen by the ${o.gammaMode} policy from what the run measured`);
  }
  const counts = specSt.byDrafter ?? {};
  const by = Object.entries(DRAFTER_NAMES).filter(([d]) => counts[d] > 0).map(([d, name]) => `${name} ${counts[d]}`);
  if (by.length > 1) bits.push(`iterations by drafter: ${by.join(', ')}`);
  out.push(bits.join('; ') + '.');
  out.push(...ruleNote(verdict));
  return out;
}

function pairDescription(p) {
  if (!p.available) return 'its files are not in this build';
  const t = p.files.target;
  const d = p.files.draft;
  const shape = (f) => `${f.config.nLayer} × ${f.config.nEmbd}`;
  return `target ${shape(t)} (${(t.params / 1e6).toFixed(2)} M parameters, ${sizeText(4 * t.params)} of f32 weights in memory), `
    + `draft ${shape(d)} (${(d.params / 1e6).toFixed(2)} M)`;
}

function mb(bytes) {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${Math.round(bytes / 1e3)} kB`;
}

function describeModel(role, m) {
  const bits = [m.file ? `file “${m.file}”` : null, m.name ? `“${m.name}”` : null,
    m.nLayer ? `${m.nLayer} layers` : null, m.nEmbd ? `width ${m.nEmbd}` : null,
    m.params ? `${(m.params / 1e6).toFixed(2)} M parameters` : null,
    m.blockSize ? `context ${m.blockSize}` : null].filter(Boolean);
  return h('span', { class: 'model-desc' }, [h('b', {}, [`${role}: `]), bits.join(', ') + '.']);
}

function runLine(st, isPlain) {
  if (!st) return '';
  const parts = [`${st.generated} tokens`, `${st.targetPasses} target passes`];
  if (!isPlain) parts.push(`${st.draftPasses} draft steps`);
  if (st.tokensPerSecond) parts.push(`${st.tokensPerSecond.toFixed(1)} tokens/s`);
  parts.push(`${st.computeMs.toFixed(0)} ms compute`);
  return parts.join(' · ');
}

const threadCount = (t) => `${t} thread${t === 1 ? '' : 's'}`;

function verdictOf({ verdict, predictedV, alpha, gamma, c, v, E, step, specSt, coarseTimer, gpu = null }) {
  const out = [];
  if (!verdict.n && !Number.isFinite(predictedV)) return out;
  const head = verdictHeadline(verdict, { predicted: predictedV });
  const why = `One iteration costs γc + v = ${gamma}·${c.toFixed(2)} + ${v.toFixed(2)} = ${(gamma * c + v).toFixed(2)} target steps `
    + `(one step = ${step.ms.toFixed(2)} ms, from ${step.from}; a verify pass over γ + 1 = ${gamma + 1} tokens took `
    + `${specSt.targetMsPerPass.toFixed(2)} ms) and yields E = ${E.toFixed(2)} tokens at α = ${alpha.toFixed(2)}: `
    + `E/(γc + v) = ${Number.isFinite(predictedV) ? predictedV.toFixed(2) : '–'}×.`;
  // Browsers coarsen performance.now() (to 0.1 ms in a page that is not cross-origin isolated),
  // so the per-step times of a very small model are rough; the tokens/s over a whole run are not.
  const coarse = coarseTimer && step.ms < 0.5
    ? ` One step takes less than 0.5 ms here, close to the browser's timer resolution without cross-origin isolation (≈ 0.1 ms), so c and v are rough; the measured tokens/s are not.`
    : '';
  out.push(h('strong', head.cls ? { class: head.cls } : {}, [head.text]), why);
  // Why it does not clearly pay, from the measured costs (only what they show).
  const basis = verdict.n ? verdict.median : predictedV;
  if (verdict.kind === 'loses' || verdict.kind === 'even' || (verdict.kind === 'none' && basis < 1)) {
    const reasons = [];
    if (c > 0.3) reasons.push(`the draft is not cheap (c = ${c.toFixed(2)}; the lesson assumes c ≪ 1)`);
    if (alpha < 0.6) reasons.push(`the draft agrees too rarely (α = ${alpha.toFixed(2)})`);
    if (v > 1.5) {
      reasons.push(!gpu
        ? `verifying ${gamma + 1} tokens costs v = ${v.toFixed(2)} single steps, not ≈ 1: on this CPU a forward pass is compute-bound, so scoring several positions at once is not free as it is on a memory-bound GPU`
        : gpu.software
          ? `verifying ${gamma + 1} tokens costs v = ${v.toFixed(2)} single steps on this adapter: it is a software one (SwiftShader, the GPU emulated on the CPU cores), where a pass costs arithmetic as on a CPU — this says nothing about a hardware GPU`
          : `verifying ${gamma + 1} tokens costs v = ${v.toFixed(2)} single steps on this GPU, not ≈ 1: at this model size its passes grow with k`);
    }
    if (reasons.length) out.push(' Why: ' + reasons.join('; ') + '.');
  }
  if (coarse) out.push(coarse);
  return out;
}

/** The verdict's rule, under it (only when a speedup was measured). */
const ruleNote = (verdict) => (verdict.n ? [h('span', { class: 'verdict-rule', 'data-testid': 'verdict-rule' }, [` ${RULE}`])] : []);

// Which γ the measured cost model predicts to be best, with a button that selects it.
// threads: the thread count whose measured v(k) was used (null: extrapolated from the run's v).
function suggestion(best, gamma, v, threads, c) {
  if (!best) return [];
  const source = threads === 'gpu'
    ? `With c = ${c.toFixed(3)} and v(k) measured on the GPU (k = 1…8, below)`
    : threads
    ? `With c = ${c.toFixed(3)} and v(k) measured at ${threads} thread${threads === 1 ? '' : 's'} (k = 1…8, below)`
    : `With v(k) extrapolated linearly from this run's v(${gamma + 1}) = ${v.toFixed(2)}`;
  if (best.gamma === gamma || best.speedup <= best.current * 1.02) {
    return [h('span', { 'data-testid': 'best-gamma' }, [` ${source}, γ = ${gamma} is about the best γ here.`])];
  }
  const input = document.getElementById('gen-gamma');
  const use = () => {
    input.value = String(best.gamma);
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.dispatchEvent(new Event('change', { bubbles: true }));
    input.focus();
  };
  return [
    h('span', { 'data-testid': 'best-gamma' }, [
      ` ${source}, γ = ${best.gamma} is predicted best here: `
        + `${best.speedup.toFixed(2)}× instead of ${best.current.toFixed(2)}×. `,
    ]),
    h('button', { type: 'button', 'data-testid': 'use-best-gamma', onclick: use }, [`Use γ = ${best.gamma}`]),
  ];
}

function drawPositions(svg, st) {
  const rates = st?.perPosition ?? [];
  const n = Math.max(rates.length, 4);
  const f = frame(svg, {
    height: 220, maxWidth: 480, xDomain: [0.5, n + 0.5], yDomain: [0, 1.05],
    xTicks: Array.from({ length: n }, (_, i) => i + 1), yTicks: [0, 0.25, 0.5, 0.75, 1],
    xLabel: 'draft position', yLabel: 'acceptance', yFormat: (t) => t.toFixed(2),
  });
  if (!st) {
    f.plot.append(s('text', { class: 'note', x: (f.m.left + f.W - f.m.right) / 2, y: f.H / 2, 'text-anchor': 'middle' }, ['run speculative decoding to fill this chart']));
    return;
  }
  const bw = Math.min(36, (f.x(1) - f.x(0)) * 0.6);
  rates.forEach((r, i) => {
    if (!(r.reached > 0)) return;
    const y = f.y(r.rate);
    f.plot.append(s('rect', { class: 'pos-bar', x: f.x(i + 1) - bw / 2, y, width: bw, height: Math.max(0, f.y(0) - y) }, [
      s('title', {}, [`position ${i + 1}: ${r.accepted} / ${r.reached} = ${r.rate.toFixed(3)}`]),
    ]));
  });
  if (st.examined) {
    f.plot.append(
      s('line', { class: 'alpha-line', x1: f.x(0.5), x2: f.x(n + 0.5), y1: f.y(st.alpha), y2: f.y(st.alpha) }),
      s('text', { class: 'note', x: f.x(n + 0.5) - 4, y: f.y(st.alpha) - 5, 'text-anchor': 'end' }, [`α = ${st.alpha.toFixed(3)}`]),
    );
  }
}
