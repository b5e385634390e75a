// The Web Worker that runs the two real models, so the page never freezes. It owns its own
// WASM instance, the two loaded models and at most one running decoder (plus one decoder for
// the step-through). Its WASM instance runs the model passes on several threads where the page
// is cross-origin isolated (loadSpecdec({ threads: 'auto' }): the machine's logical cores, at
// most 16), else on one, and says why (threadInfo). Results are bit-identical for any count.
// Protocol (every request carries an id; replies echo it):
//   → { type: 'init', threads }                           (before anything else, no reply: the
//                                                        threads option of loadSpecdec, 'auto' by
//                                                        default; the pitfalls lab's instance asks for 1)
//   → { type: 'threads', id, n? }                         ← { type: 'threads', info } (threadInfo;
//                                                        with n: sd.setThreads(n) first)
//   → { type: 'load', id, urls: { target, draft }, sizes?, pair?, replace? }
//                                                        ← progress*, { type: 'loaded', info }
//                                                        (replace: load them over the models in use,
//                                                        a learner's files or another pair; sizes:
//                                                        the expected bytes, for the progress bar)
//   → { type: 'load-files', id, files: { target?, draft? } }   ← { type: 'loaded', info }
//                                                        (File objects a learner chose or dropped;
//                                                        a role without a file keeps its model)
//   → { type: 'run', id, mode: 'plain'|'spec', options } ← chunk*, { type: 'done', summary }
//                                                        (options: see decoderOptions, and
//                                                        `threads` (sd.setThreads before the run),
//                                                        `quiet` (no chunks: a timing repeat); a
//                                                        chunk carries `iters`, one iterationSummary
//                                                        per iteration since the last chunk; the
//                                                        summary `threads` and `pool`, the thread
//                                                        pool's counters over the run)
//   → { type: 'stop' }                                    (the running decode or measurement
//                                                        stops at its next yield)
//   → { type: 'measure-vk', id, options, ks?, iterations? } ← vk-progress*, { type: 'measured', vk }
//                                                        (target pass time over k new tokens)
//   → { type: 'bandwidth', id, sizes: [bytes, ...], threads? } ← { type: 'bandwidth', results }
//                                                        (B(T): T threads reading at once)
//   → { type: 'peak', id, threads: [T, ...] }             ← { type: 'peak', results } (P(T),
//                                                        sd.measurePeak: mul+add GFLOP/s)
//   → { type: 'memory', id }                              ← { type: 'memory', stats } (sd.memoryStats())
//   → { type: 'gpu-probe', id }                           ← { type: 'gpu-probe', probe } (is there a
//                                                        WebGPU adapter here, and which: gpuProbe)
//   → { type: 'backend', id, want: 'gpu' | 'cpu' }        ← { type: 'backend', info } (with 'gpu': the
//                                                        current target loaded onto the GPU now;
//                                                        info.backend says where it runs, and
//                                                        info.reason why not on the GPU)
//   → { type: 'gpu-lose', id }                            ← { type: 'ok' } (diagnostics: destroys the
//                                                        GPU device, as a driver reset would, so that
//                                                        the fall-back can be seen and tested)
// run, calibrate and measure-vk take options.backend: 'gpu' runs the target on the GPU (WebGPU,
// sd.loadModel(bytes, { device: 'webgpu' }); the draft stays on the CPU, WebAssembly), 'cpu' (the
// default) in WebAssembly. A GPU that fails (no adapter, a model too large for it, a device
// lost mid-run) ends the request with an error carrying `fallback` (the reason): the page then
// runs the target on the CPU.
//   → { type: 'step-start', id, options }                 ← { type: 'ok' }
//   → { type: 'step-next', id }                           ← { type: 'view', view }
//   → { type: 'step-dispose' }
//   → { type: 'heads', id }                               ← { type: 'heads', count } (loads the
//                                                        current target's heads: sd.loadHeads)
//   → { type: 'pitfall', id, job: { card, broken, seed, rounds? } }
//                                                        ← pitfall-progress*, { type: 'pitfall-result', result }
//                                                        (a card of the pitfalls lab, section 5:
//                                                        pitfalls-runs.js; the real pair's cards
//                                                        need 'load' first; result null if cancelled)
//   → { type: 'pitfall-cancel', target }                  (the pitfall job with id `target` stops at
//                                                        its next yield)
//   ← { type: 'error', id, message, fallback? } on any failure
import { loadSpecdec } from 'specdec';
import { recordToView, emittedKinds, iterationSummary, statsOf, modelInfoOf, decoderTokens, decoderDone } from './records.js';
import { fileSizeProblem } from './limits.js';
import { K_MAX, median } from './roofline.js';
import { Cancelled, runPitfall } from './pitfalls-runs.js';

let sd = null;
let sdLoading = null;
let threadsOption = 'auto'; // loadSpecdec's threads ('init' may change it before the first load)
let models = null; // { target, draft, info, parts: { target, draft }, heads } (parts: see install)
let stopRequested = false;
let running = false;
let stepper = null; // { dec, promptLength }
const cancelledPitfalls = new Set(); // ids of pitfall jobs asked to stop
// The target on the GPU: the probe's result, and the GpuModel loaded for models.target (the
// same weights, read again from where they came from: the pair's URL or the learner's file).
const gpu = { probe: null, model: null, forTarget: null, loadMs: 0, loading: null };

const post = (msg) => self.postMessage(msg);

/** This worker's WASM instance, loaded once (with threadsOption). */
async function ensureSd() {
  if (sd) return sd;
  sdLoading ??= loadSpecdec({ threads: threadsOption }).then((x) => (sd = x), (e) => {
    sdLoading = null;
    throw e;
  });
  return sdLoading;
}

/** The threads this instance has, and why not more: what the page shows. */
function threadInfo() {
  return {
    threads: sd.threads,
    maxThreads: sd.maxThreads,
    requested: sd.threadsRequested,
    threaded: sd.threaded,
    reason: sd.threadsUnavailableReason,
    isolated: self.crossOriginIsolated === true,
    cores: self.navigator?.hardwareConcurrency ?? 1,
  };
}

/** Uses n threads from now on (clamped to 1..maxThreads; nothing given: unchanged). */
function useThreads(n) {
  if (n === undefined || n === null) return;
  const t = Math.max(1, Math.min(sd.maxThreads, Math.round(Number(n)) || 1));
  if (sd.threads !== t) sd.setThreads(t);
}

const poolStats = () => (typeof sd.threadStats === 'function' ? sd.threadStats() : { runs: 0, serial: 0, wakeups: 0 });
const poolDelta = (a, b) => ({ runs: b.runs - a.runs, serial: b.serial - a.serial, wakeups: b.wakeups - a.wakeups });

// Yields to the event loop without the 4 ms timer clamp, so 'stop' gets through quickly.
const channel = new MessageChannel();
const waiters = [];
channel.port1.onmessage = () => waiters.shift()?.();
const yieldNow = () => new Promise((resolve) => { waiters.push(resolve); channel.port2.postMessage(0); });

async function fetchWithProgress(urls, onProgress, expected = {}) {
  const entries = Object.entries(urls);
  const loaded = Object.fromEntries(entries.map(([k]) => [k, 0]));
  // Until a response says its length, the size the build recorded (or 0: unknown).
  const totals = Object.fromEntries(entries.map(([k]) => [k, expected[k] || 0]));
  const report = () => onProgress(
    Object.values(loaded).reduce((a, b) => a + b, 0),
    Object.values(totals).reduce((a, b) => a + b, 0),
  );
  const out = {};
  await Promise.all(entries.map(async ([role, url]) => {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    totals[role] = Number(res.headers.get('content-length')) || totals[role];
    if (!res.body) {
      out[role] = new Uint8Array(await res.arrayBuffer());
      loaded[role] = out[role].length;
      report();
      return;
    }
    const reader = res.body.getReader();
    const parts = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      loaded[role] += value.length;
      report();
    }
    const bytes = new Uint8Array(loaded[role]);
    let off = 0;
    for (const p of parts) { bytes.set(p, off); off += p.length; }
    out[role] = bytes;
  }));
  return out;
}

// FNV-1a over the bytes, with the length: tells the UI whether both roles hold the same weights.
function digest(bytes) {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return `${bytes.length}:${(h >>> 0).toString(16)}`;
}

// Makes `next` ({ target, draft }, each { model, bytes, file, digest }) the models in use and
// disposes the models it replaces (a decoder still using one keeps its weights alive).
// The step-through's decoder is disposed too: it would keep the old weights alive (the page's
// step-through starts again on the new models when it hears they are loaded).
function install(next, parseMs, pair = null) {
  const old = models;
  const part = (p) => ({ ...modelInfoOf(p.model), bytes: p.bytes, file: p.file, digest: p.digest, pair: p.pair ?? null });
  const info = {
    target: part(next.target),
    draft: part(next.draft),
    pair: next.target.pair && next.target.pair === next.draft.pair ? next.target.pair : null,
    parseMs,
    sameWeights: next.target.digest === next.draft.digest,
    // Heads are trained for one target: only a pair's own target has them (loaded on first use).
    heads: next.target.heads ? { url: next.target.heads.url, count: next.target.heads.count ?? null } : null,
    threads: threadInfo(),
  };
  stepper?.dec.dispose();
  stepper = null;
  // The GPU copy belongs to its target: loaded again for the next one when a run asks.
  if (gpu.model && gpu.forTarget !== next.target.model) dropGpu();
  // Heads belong to their target: kept while it stays, disposed with it.
  const keepHeads = old && old.parts.target.model === next.target.model ? old.heads : null;
  if (old?.heads && old.heads !== keepHeads) old.heads.dispose();
  models = { target: next.target.model, draft: next.draft.model, info, parts: next, heads: keepHeads };
  for (const role of ['target', 'draft']) {
    const m = old?.parts[role].model;
    if (m && m !== next.target.model && m !== next.draft.model) m.dispose();
  }
  info.warmUpMs = warmUp();
  return info;
}

async function load(msg) {
  await ensureSd();
  if (models && !msg.replace) return { ...models.info, threads: threadInfo() };
  if (msg.replace && running) throw new Error('Stop the running decode before loading other models.');
  let lastPost = 0;
  const bytes = await fetchWithProgress(msg.urls, (loaded, total) => {
    const now = performance.now();
    if (now - lastPost > 50 || loaded === total) {
      lastPost = now;
      post({ type: 'progress', id: msg.id, loaded, total });
    }
  }, msg.sizes);
  if (msg.replace && running) throw new Error('Stop the running decode before loading other models.');
  // A learner's files loaded while these were downloading win over them.
  if (models && !msg.replace) return { ...models.info, threads: threadInfo() };
  const t0 = performance.now();
  const target = sd.loadModel(bytes.target);
  let draft;
  try {
    draft = sd.loadModel(bytes.draft);
  } catch (e) {
    target.dispose();
    throw e;
  }
  const part = (model, b, url) => ({ model, bytes: b.length, file: null, digest: digest(b), pair: msg.pair ?? null, reload: () => fetchBytes(url) });
  const targetPart = { ...part(target, bytes.target, msg.urls.target), heads: msg.heads ?? null };
  return install({ target: targetPart, draft: part(draft, bytes.draft, msg.urls.draft) }, performance.now() - t0);
}

// Models from files a learner chose: the size is checked before the file is read, then the
// bytes go through the same loader as the page's own models (sd.loadModel). Nothing changes
// unless every file given loads.
async function loadFiles(msg) {
  if (running) throw new Error('Stop the running decode before loading other models.');
  await ensureSd();
  const roles = ['target', 'draft'].filter((r) => msg.files?.[r]);
  if (roles.length === 0) throw new Error('no model file given');
  if (!models && roles.length < 2) {
    const missing = roles[0] === 'target' ? 'draft' : 'target';
    throw new Error(`Choose a ${missing} model file as well: the page's own models are not loaded.`);
  }
  const loaded = {};
  const t0 = performance.now();
  try {
    for (const role of roles) {
      const file = msg.files[role];
      const where = `${role} file “${file.name}”`;
      const tooBig = fileSizeProblem(file.size);
      if (tooBig) throw new Error(`${where}: ${tooBig}`);
      let bytes;
      try {
        bytes = new Uint8Array(await file.arrayBuffer());
      } catch (e) {
        throw new Error(`${where}: cannot be read (${e.message})`);
      }
      try {
        loaded[role] = { model: sd.loadModel(bytes), bytes: bytes.length, file: file.name, digest: digest(bytes), reload: async () => new Uint8Array(await file.arrayBuffer()) };
      } catch (e) {
        // "bytes: model file: ..." from the loader; the argument is the file here.
        throw new Error(`${where}: ${String(e.message).replace(/^bytes: /, '')}`);
      }
    }
  } catch (e) {
    for (const part of Object.values(loaded)) part.model.dispose();
    throw e;
  }
  if (running) {
    for (const part of Object.values(loaded)) part.model.dispose();
    throw new Error('Stop the running decode before loading other models.');
  }
  const next = { target: loaded.target ?? models.parts.target, draft: loaded.draft ?? models.parts.draft };
  return install(next, performance.now() - t0);
}

// The heads of the current target (sd.loadHeads), fetched and loaded the first time a decoder
// asks for them. A target without heads in this build, or heads the loader refuses (made for
// another target), is an error whose message the page shows.
async function ensureHeads() {
  if (!models) throw new Error('models are not loaded');
  if (models.heads) return models.heads;
  const src = models.info.heads;
  if (!src) throw new Error('heads: not in this build for this target');
  const forTarget = models.target;
  const res = await fetch(src.url);
  if (!res.ok) throw new Error(`heads: ${src.url}: HTTP ${res.status}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (!models || models.target !== forTarget) throw new Error('heads: the models changed while the heads loaded');
  try {
    models.heads = sd.loadHeads(bytes, models.target);
  } catch (e) {
    throw new Error(`heads file: ${String(e.message).replace(/^bytes: /, '')}`);
  }
  models.info.heads.count = models.heads.count;
  return models.heads;
}

async function fetchBytes(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

/** The adapter's name for people: its description, else vendor and architecture. */
function adapterName(info) {
  const d = String(info.description ?? '').trim();
  if (d) return d;
  const parts = [info.vendor, info.architecture, info.device].map((x) => String(x ?? '').trim()).filter(Boolean);
  return parts.length ? parts.join(' ') : 'unnamed adapter';
}

/**
 * Is there a WebGPU adapter in this worker, and which? { available, name, adapter, software,
 * reason }: software when it is a CPU emulation (SwiftShader, a fallback adapter), whose speed
 * says nothing about a GPU. Asked once.
 */
async function gpuProbe() {
  if (gpu.probe) return gpu.probe;
  const nav = self.navigator?.gpu;
  let probe;
  if (!nav || typeof nav.requestAdapter !== 'function') {
    probe = { available: false, reason: 'WebGPU is not available in this browser (no navigator.gpu)' };
  } else {
    let adapter = null;
    let error = null;
    try {
      adapter = await nav.requestAdapter();
    } catch (e) {
      error = e;
    }
    if (!adapter) {
      probe = { available: false, reason: error ? `requestAdapter() failed (${error.message})` : 'no WebGPU adapter (no usable GPU, or WebGPU is blocked for it)' };
    } else {
      const i = adapter.info ?? {};
      const info = { vendor: i.vendor ?? '', architecture: i.architecture ?? '', device: i.device ?? '', description: i.description ?? '' };
      const software = adapter.isFallbackAdapter === true || i.isFallbackAdapter === true || /swiftshader/i.test(Object.values(info).join(' '));
      probe = { available: true, name: adapterName(info), adapter: info, software };
    }
  }
  gpu.probe = probe;
  return probe;
}

function dropGpu() {
  gpu.model?.dispose();
  gpu.model = null;
  gpu.forTarget = null;
}

/** An error that sends the page back to the CPU target, with why. */
function gpuFailure(reason) {
  dropGpu();
  const err = new Error(`The GPU could not run the target (${reason}); it runs on the CPU (WebAssembly) now.`);
  err.fallback = reason;
  return err;
}

/** The current target on the GPU, loaded (or loaded again after a change of models) now. */
async function ensureGpuTarget() {
  if (!models) throw new Error('models are not loaded');
  if (gpu.model && gpu.forTarget === models.target && !gpu.model.disposed) return gpu.model;
  // One upload at a time: a run that starts while the page's upload is under way waits for it.
  if (gpu.loading?.forTarget === models.target) return gpu.loading.promise;
  const promise = loadGpuTarget();
  gpu.loading = { forTarget: models.target, promise };
  try {
    return await promise;
  } finally {
    if (gpu.loading?.promise === promise) gpu.loading = null;
  }
}

async function loadGpuTarget() {
  dropGpu();
  const probe = await gpuProbe();
  if (!probe.available) throw gpuFailure(probe.reason);
  const forTarget = models.target;
  const t0 = performance.now();
  let model;
  try {
    const bytes = await models.parts.target.reload();
    model = await sd.loadModel(bytes, { device: 'webgpu' });
  } catch (e) {
    throw gpuFailure(String(e?.message ?? e).replace(/^(bytes|device): /, ''));
  }
  if (!models || models.target !== forTarget) {
    model.dispose();
    throw new Error('the models changed while the target was loaded onto the GPU');
  }
  gpu.model = model;
  gpu.forTarget = forTarget;
  gpu.loadMs = performance.now() - t0;
  return model;
}

/** Where a request's target runs: the GPU model or the WASM one (options.backend). */
async function targetFor(o) {
  return o?.backend === 'gpu' ? ensureGpuTarget() : models.target;
}

/** What the page shows about the GPU target. */
const gpuInfo = () => ({
  backend: 'gpu', name: gpu.probe?.name ?? '', software: !!gpu.probe?.software, adapter: gpu.probe?.adapter ?? null,
  loadMs: gpu.loadMs, liveBuffers: gpu.model?.liveBuffers ?? 0, dispatchesPerPass: gpu.model ? 7 * gpu.model.config.nLayer + 3 : null,
});

// A GPU fault during a request (a device lost, a pass refused) becomes a fall-back.
function gpuFault(e, o) {
  if (o?.backend !== 'gpu' || e?.fallback) return e;
  if (!/WebGPU|GPU/.test(String(e?.message ?? ''))) return e;
  return gpuFailure(String(e.message).replace(/^(score|scorer|scoreTree): /, '').replace(/; load the model again$/, ''));
}

// One step: the record, or (the GPU target) a Promise of it; awaited only then, so that a CPU
// run's timing is what it was.
const isPromise = (x) => typeof x?.then === 'function';

/**
 * createDecoder options from the page's settings:
 *   gamma (fixed γ, or γ max of 'auto' / 'heuristic'), gammaMode 'fixed' | 'auto' | 'heuristic',
 *   drafter 'draft' | 'lookup' | 'both' (lookup, else the draft model) | 'heads',
 *   tree: null (a chain) or branches per depth, e.g. [2, 2, 1] (its depth is its γ),
 *   temperature, topK, topP, seed, prompt.
 * Heads must have been loaded (ensureHeads) before.
 */
function decoderOptions(o, plain, keepRows = false, target = models.target) {
  const opts = {
    target,
    temperature: o.temperature,
    seed: o.seed,
    prompt: o.prompt,
  };
  if (o.topK > 0) opts.topK = o.topK;
  if (o.topP > 0 && o.topP < 1) opts.topP = o.topP;
  if (!keepRows) opts.distributions = false; // full rows are only needed by the step-through
  if (plain) {
    opts.plain = true;
    return opts;
  }
  const drafter = o.drafter ?? 'draft';
  if (drafter === 'draft' || drafter === 'both') opts.draft = models.draft;
  if (drafter === 'lookup' || drafter === 'both') opts.promptLookup = true;
  if (drafter === 'heads') {
    if (!models.heads) throw new Error('heads: not loaded');
    opts.heads = models.heads;
  }
  if (o.tree?.length) {
    opts.tree = { branches: Array.from(o.tree) };
  } else if (o.gammaMode === 'auto' || o.gammaMode === 'heuristic') {
    opts.gamma = o.gammaMode;
    opts.gammaMax = o.gamma;
  } else {
    opts.gamma = o.gamma;
  }
  return opts;
}

/** decoderOptions, after loading what the drafter needs. */
async function prepareOptions(o, plain, keepRows = false, target = models.target) {
  if (!plain && o.drafter === 'heads') await ensureHeads();
  return decoderOptions(o, plain, keepRows, target);
}

// v(k) is a property of the target pass alone: always measured with the draft model drafting
// fixed-length chains, whatever the page's drafter, tree or γ policy.
const CHAIN = { drafter: 'draft', tree: null, gammaMode: 'fixed' };

// WebAssembly starts in a baseline tier and is optimised once it is hot; without a warm-up the
// first run (usually the plain one) would be measured slow and the speedup overstated.
function warmUp() {
  const t0 = performance.now();
  const runs = [
    { target: models.target, plain: true, steps: 32 },
    { target: models.draft, plain: true, steps: 32 },
    { target: models.target, draft: models.draft, gamma: 4, steps: 8 },
  ];
  for (const r of runs) {
    const { steps, ...opts } = r;
    const dec = sd.createDecoder({ ...opts, prompt: [10], seed: 0, distributions: false });
    try {
      for (let i = 0; i < steps && !dec.done; i++) dec.step();
    } finally {
      dec.dispose();
    }
  }
  return performance.now() - t0;
}

// One decode run, streamed back in chunks (about every 60 ms) so the page can paint.
async function run(msg) {
  if (!models) throw new Error('models are not loaded');
  if (running) throw new Error('a run is already in progress');
  running = true;
  stopRequested = false;
  const { mode, options } = msg;
  const plain = mode === 'plain';
  let dec;
  let pool0;
  try {
    useThreads(options.threads);
    const target = await targetFor(options);
    dec = sd.createDecoder(await prepareOptions(options, plain, false, target));
    pool0 = poolStats();
  } catch (e) {
    running = false;
    throw gpuFault(e, options);
  }
  const maxTokens = options.maxTokens;
  let generated = 0;
  let computeMs = 0;
  let pending = [];
  let iters = [];
  let scored = 0; // positions the target scored, over all its passes (a tree's nodes + 1)
  let lastPost = performance.now();
  let sinceYield = 0;
  const runStats = () => ({ ...statsOf(dec, computeMs, generated), positionsScored: scored });
  const flush = (final) => {
    if (options.quiet && !final) return; // a timing repeat: the summary is all the page needs
    post({ type: 'chunk', id: msg.id, tokens: pending, iters, stats: runStats(), final });
    pending = [];
    iters = [];
    lastPost = performance.now();
  };
  try {
    post({ type: 'started', id: msg.id, promptTokens: decoderTokens(dec) });
    while (generated < maxTokens && !decoderDone(dec) && !stopRequested) {
      const t0 = performance.now();
      let it = dec.step();
      if (isPromise(it)) it = await it;
      const dt = performance.now() - t0;
      computeMs += dt;
      sinceYield += dt;
      const kinds = emittedKinds(it, plain);
      let tokens = it.emitted;
      if (generated + tokens.length > maxTokens) tokens = tokens.slice(0, maxTokens - generated);
      tokens.forEach((t, i) => pending.push([t, kinds[i]]));
      generated += tokens.length;
      scored += it.targetPositions ?? it.proposed.length + 1;
      if (!plain) iters.push(iterationSummary(it, tokens.length));
      if (options.paceMs > 0) {
        // Slow motion for watching the bursts arrive; not counted in the compute time.
        flush(false);
        await new Promise((resolve) => setTimeout(resolve, options.paceMs));
        sinceYield = 0;
        continue;
      }
      if (performance.now() - lastPost > 60) flush(false);
      if (sinceYield > 25) {
        sinceYield = 0;
        await yieldNow();
      }
    }
    flush(true);
    const summary = runStats();
    summary.stopped = stopRequested;
    summary.threads = sd.threads;
    summary.pool = poolDelta(pool0, poolStats());
    summary.backend = options.backend === 'gpu' ? gpuInfo() : { backend: 'cpu' };
    return summary;
  } catch (e) {
    throw gpuFault(e, options);
  } finally {
    dec.dispose();
    running = false;
    stopRequested = false;
  }
}

// A quick measurement of one plain target step (used for c and v when no plain run exists).
async function calibrate(options) {
  useThreads(options.threads);
  let dec;
  try {
    dec = sd.createDecoder(decoderOptions({ ...options, ...CHAIN, gamma: 1 }, true, false, await targetFor(options)));
    const first = dec.step(); // warm-up
    if (isPromise(first)) await first;
    let ms = 0;
    let n = 0;
    while (n < 12 && !decoderDone(dec)) {
      const t0 = performance.now();
      const r = dec.step();
      if (isPromise(r)) await r;
      ms += performance.now() - t0;
      n++;
    }
    return n ? ms / n : NaN;
  } catch (e) {
    throw gpuFault(e, options);
  } finally {
    dec?.dispose();
  }
}

// v(k) through the public API only: the target pass of a speculative iteration with a fixed
// γ always forwards γ + 1 new tokens (the last emitted token and γ drafts) and each
// IterationRecord carries its targetMs; plain decoding gives k = 1. For every k, a dozen
// iterations after one warm-up iteration (the first pass also reads the prompt); the k are
// swept up and then down, six iterations each way, so a machine whose speed drifts (other load,
// clock changes) biases no k. Medians. Stoppable between iterations ('stop').
async function measureVk(msg) {
  if (!models) throw new Error('models are not loaded');
  if (running) throw new Error('a run is already in progress');
  running = true;
  stopRequested = false;
  const o = msg.options;
  let target;
  try {
    useThreads(o.threads);
    target = await targetFor(o);
  } catch (e) {
    running = false;
    throw gpuFault(e, o);
  }
  const kMax = Math.min(K_MAX, msg.kMax ?? K_MAX);
  const perSweep = Math.max(1, Math.round((msg.iterations ?? 12) / 2));
  const ks = Array.from({ length: kMax }, (_, i) => i + 1);
  const sweeps = [ks, [...ks].reverse()];
  // Keep the prompt short enough that every iteration has room for k new tokens.
  const context = Math.min(models.info.target.blockSize ?? 256, models.info.draft.blockSize ?? 256);
  const room = Math.max(1, context - (perSweep + 1) * kMax - 1);
  const prompt = Array.from(o.prompt ?? [10]).slice(-room);
  const samples = ks.map(() => []);
  const total = sweeps.length * ks.length;
  let done = 0;
  const t0 = performance.now();
  try {
    for (const sweep of sweeps) {
      for (const k of sweep) {
        if (stopRequested) break;
        const plain = k === 1;
        const dec = sd.createDecoder(decoderOptions({ ...o, ...CHAIN, prompt, gamma: Math.max(1, k - 1) }, plain, false, target));
        try {
          for (let i = 0; i <= perSweep && !decoderDone(dec) && !stopRequested; i++) {
            let rec = dec.step();
            if (isPromise(rec)) rec = await rec;
            // Near the end of the context the decoder drafts fewer tokens: not a k-token pass.
            if (i > 0 && (plain || rec.proposed.length === k - 1)) samples[k - 1].push(rec.targetMs);
            await yieldNow();
          }
        } finally {
          dec.dispose();
        }
        done++;
        post({ type: 'vk-progress', id: msg.id, done, total, k });
      }
    }
  } catch (e) {
    throw gpuFault(e, o);
  } finally {
    running = false;
  }
  const stopped = stopRequested;
  stopRequested = false;
  const passMs = [NaN, ...samples.map((xs) => median(xs))];
  return {
    passMs,
    samples: samples.map((xs) => xs.length),
    stopped,
    ms: performance.now() - t0,
    threads: sd.threads,
    backend: o.backend === 'gpu' ? gpuInfo() : { backend: 'cpu' },
    target: { params: models.info.target.params, digest: models.info.target.digest, pair: models.info.target.pair },
  };
}

// The read bandwidth B(T) of T threads reading at once (each its own part of the buffer) over
// buffers of these sizes (the weight bytes of a target), with sd.measureReadBandwidth; an older
// build of the module without it says so in `error`.
const clampThreads = (t) => Math.max(1, Math.min(sd.maxThreads, Math.round(Number(t ?? sd.threads)) || 1));
function bandwidth(sizes, threads) {
  const T = clampThreads(threads);
  return sizes.map((bytes) => {
    // (A package older than the function itself: the same words as a module without it.)
    if (typeof sd.measureReadBandwidth !== 'function') return { bytes, threads: T, error: 'measureReadBandwidth: not in this build of the module' };
    try {
      return { bytes, ...sd.measureReadBandwidth({ bytes, repeats: 5, threads: T }) };
    } catch (e) {
      return { bytes, threads: T, error: String(e?.message || e) };
    }
  });
}

// The compute peak P(T) of T threads at once (sd.measurePeak: multiply-adds in registers, GFLOP/s).
function peak(threadCounts) {
  return threadCounts.map((t) => {
    const T = clampThreads(t);
    if (typeof sd.measurePeak !== 'function') return { threads: T, error: 'measurePeak: not in this build of the module' };
    try {
      return sd.measurePeak({ repeats: 5, threads: T });
    } catch (e) {
      return { threads: T, error: String(e?.message || e) };
    }
  });
}

// One card of the pitfalls lab in one state (pitfalls-runs.js), with progress about every
// 50 ms; it yields between chunks of work so that a 'pitfall-cancel' gets through.
async function pitfall(msg) {
  await ensureSd();
  let lastPost = 0;
  try {
    return await runPitfall(sd, models ? { target: models.target, draft: models.draft } : null, msg.job, {
      progress(done, total, phase) {
        const now = performance.now();
        if (now - lastPost < 50 && done < total) return;
        lastPost = now;
        post({ type: 'pitfall-progress', id: msg.id, done, total, phase });
      },
      cancelled: () => cancelledPitfalls.has(msg.id),
      yield: yieldNow,
    });
  } catch (e) {
    if (e instanceof Cancelled) return null;
    throw e;
  } finally {
    cancelledPitfalls.delete(msg.id);
  }
}

async function handle(msg) {
  switch (msg.type) {
    case 'init':
      if (!sd && !sdLoading && msg.threads !== undefined) threadsOption = msg.threads;
      return null;
    case 'threads':
      await ensureSd();
      if (msg.n !== undefined) {
        if (running) throw new Error('a run is in progress: the thread count changes before the next one');
        useThreads(msg.n);
      }
      return { type: 'threads', info: threadInfo() };
    case 'load':
      return { type: 'loaded', info: await load(msg) };
    case 'load-files':
      return { type: 'loaded', info: await loadFiles(msg) };
    case 'run':
      return { type: 'done', summary: await run(msg) };
    case 'calibrate':
      if (!models) throw new Error('models are not loaded');
      if (running) throw new Error('a run is already in progress');
      return { type: 'calibrated', stepMs: await calibrate(msg.options) };
    case 'stop':
      stopRequested = true;
      return null;
    case 'measure-vk':
      return { type: 'measured', vk: await measureVk(msg) };
    case 'bandwidth':
      await ensureSd();
      if (running) throw new Error('a run is already in progress');
      return { type: 'bandwidth', results: bandwidth(msg.sizes, msg.threads) };
    case 'peak':
      await ensureSd();
      if (running) throw new Error('a run is already in progress');
      return { type: 'peak', results: peak(msg.threads ?? [sd.threads]) };
    case 'memory':
      await ensureSd();
      return { type: 'memory', stats: sd.memoryStats() };
    case 'gpu-probe':
      return { type: 'gpu-probe', probe: await gpuProbe() };
    case 'backend': {
      await ensureSd();
      if (msg.want !== 'gpu') return { type: 'backend', info: { backend: 'cpu' } };
      if (running) throw new Error('a run is in progress: the target moves after it');
      try {
        await ensureGpuTarget();
      } catch (e) {
        if (!e.fallback) throw e;
        return { type: 'backend', info: { backend: 'cpu', reason: e.fallback, probe: gpu.probe } };
      }
      return { type: 'backend', info: gpuInfo() };
    }
    case 'gpu-lose':
      gpu.model?.gpuDevice.destroy();
      return { type: 'ok' };
    case 'step-start': {
      if (!models) throw new Error('models are not loaded');
      stepper?.dec.dispose();
      stepper = null;
      if (!running) useThreads(msg.options.threads);
      const dec = sd.createDecoder(await prepareOptions(msg.options, false, true));
      stepper = { dec, topRows: msg.options.topRows ?? 6 };
      return { type: 'ok' };
    }
    case 'heads': {
      // Loads the current target's heads now (the page enables the heads drafter on success).
      if (!models) throw new Error('models are not loaded');
      const heads = await ensureHeads();
      return { type: 'heads', count: heads.count };
    }
    case 'step-next': {
      if (!stepper) throw new Error('no step-through running');
      const before = decoderTokens(stepper.dec);
      const rec = stepper.dec.step();
      const view = recordToView(rec, { topRows: stepper.topRows, context: before });
      view.done = decoderDone(stepper.dec);
      return { type: 'view', view };
    }
    case 'pitfall':
      return { type: 'pitfall-result', result: await pitfall(msg) };
    case 'pitfall-cancel':
      cancelledPitfalls.add(msg.target);
      return null;
    case 'step-dispose':
      stepper?.dec.dispose();
      stepper = null;
      return null;
    default:
      throw new Error(`unknown message ${msg.type}`);
  }
}

self.onmessage = async (e) => {
  const msg = e.data;
  try {
    const reply = await handle(msg);
    if (reply) post({ ...reply, id: msg.id });
  } catch (err) {
    post({ type: 'error', id: msg.id, message: String(err?.message || err), ...(err?.fallback ? { fallback: err.fallback } : {}) });
  }
};
