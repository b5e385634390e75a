// The Web Worker that runs the two real models, so the page never freezes. It owns its own
// WASM instance, the two loaded models and at most one running decoder (plus one decoder for
// the step-through). Protocol (every request carries an id; replies echo it):
//   → { type: 'load', id, urls: { target, draft }, replace? }  ← progress*, { type: 'loaded', info }
//                                                        (replace: load them again over user files)
//   → { type: 'load-files', id, files: { target?, draft? } }   ← { type: 'loaded', info }
//                                                        (File objects a learner chose or dropped;
//                                                        a role without a file keeps its model)
//   → { type: 'run', id, mode: 'plain'|'spec', options } ← chunk*, { type: 'done', summary }
//   → { type: 'stop' }                                    (the running decode stops at its next yield)
//   → { type: 'step-start', id, options }                 ← { type: 'ok' }
//   → { type: 'step-next', id }                           ← { type: 'view', view }
//   → { type: 'step-dispose' }
//   ← { type: 'error', id, message } on any failure
import { loadSpecdec } from 'specdec';
import { recordToView, emittedKinds, statsOf, modelInfoOf, decoderTokens, decoderDone } from './records.js';
import { fileSizeProblem } from './limits.js';

let sd = null;
let models = null; // { target, draft, info, parts: { target, draft } } (parts: see install)
let stopRequested = false;
let running = false;
let stepper = null; // { dec, promptLength }

const post = (msg) => self.postMessage(msg);

// Yields to the event loop without the 4 ms timer clamp, so 'stop' gets through quickly.
const channel = new MessageChannel();
const waiters = [];
channel.port1.onmessage = () => waiters.shift()?.();
const yieldNow = () => new Promise((resolve) => { waiters.push(resolve); channel.port2.postMessage(0); });

async function fetchWithProgress(urls, onProgress) {
  const entries = Object.entries(urls);
  const loaded = Object.fromEntries(entries.map(([k]) => [k, 0]));
  const totals = Object.fromEntries(entries.map(([k]) => [k, 0]));
  const report = () => onProgress(
    Object.values(loaded).reduce((a, b) => a + b, 0),
    Object.values(totals).reduce((a, b) => a + b, 0),
  );
  const out = {};
  await Promise.all(entries.map(async ([role, url]) => {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    totals[role] = Number(res.headers.get('content-length')) || 0;
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
function install(next, parseMs) {
  const old = models;
  const info = {
    target: { ...modelInfoOf(next.target.model), bytes: next.target.bytes, file: next.target.file },
    draft: { ...modelInfoOf(next.draft.model), bytes: next.draft.bytes, file: next.draft.file },
    parseMs,
    sameWeights: next.target.digest === next.draft.digest,
  };
  models = { target: next.target.model, draft: next.draft.model, info, parts: next };
  for (const role of ['target', 'draft']) {
    const m = old?.parts[role].model;
    if (m && m !== next.target.model && m !== next.draft.model) m.dispose();
  }
  info.warmUpMs = warmUp();
  return info;
}

async function load(msg) {
  if (!sd) sd = await loadSpecdec();
  if (models && !msg.replace) return models.info;
  if (msg.replace && running) throw new Error('Stop the running decode before loading other models.');
  let lastPost = 0;
  const bytes = await fetchWithProgress(msg.urls, (loaded, total) => {
    const now = performance.now();
    if (now - lastPost > 50 || loaded === total) {
      lastPost = now;
      post({ type: 'progress', id: msg.id, loaded, total });
    }
  });
  // A learner's files loaded while these were downloading win over them.
  if (models && !msg.replace) return models.info;
  const t0 = performance.now();
  const target = sd.loadModel(bytes.target);
  let draft;
  try {
    draft = sd.loadModel(bytes.draft);
  } catch (e) {
    target.dispose();
    throw e;
  }
  const part = (model, b) => ({ model, bytes: b.length, file: null, digest: digest(b) });
  return install({ target: part(target, bytes.target), draft: part(draft, bytes.draft) }, performance.now() - t0);
}

// Models from files a learner chose: the size is checked before the file is read, then the
// bytes go through the same loader as the page's own models (sd.loadModel). Nothing changes
// unless every file given loads.
async function loadFiles(msg) {
  if (running) throw new Error('Stop the running decode before loading other models.');
  if (!sd) sd = await loadSpecdec();
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
        loaded[role] = { model: sd.loadModel(bytes), bytes: bytes.length, file: file.name, digest: digest(bytes) };
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

function decoderOptions(o, plain, keepRows = false) {
  const opts = {
    target: models.target,
    gamma: o.gamma,
    temperature: o.temperature,
    seed: o.seed,
    prompt: o.prompt,
  };
  if (o.topK > 0) opts.topK = o.topK;
  if (o.topP > 0 && o.topP < 1) opts.topP = o.topP;
  if (plain) opts.plain = true;
  else opts.draft = models.draft;
  if (!keepRows) opts.distributions = false; // full rows are only needed by the step-through
  return opts;
}

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
  const dec = sd.createDecoder(decoderOptions(options, plain));
  const maxTokens = options.maxTokens;
  let generated = 0;
  let computeMs = 0;
  let pending = [];
  let lastPost = performance.now();
  let sinceYield = 0;
  const flush = (final) => {
    post({ type: 'chunk', id: msg.id, tokens: pending, stats: statsOf(dec, computeMs, generated), final });
    pending = [];
    lastPost = performance.now();
  };
  try {
    post({ type: 'started', id: msg.id, promptTokens: decoderTokens(dec) });
    while (generated < maxTokens && !decoderDone(dec) && !stopRequested) {
      const t0 = performance.now();
      const it = dec.step();
      const dt = performance.now() - t0;
      computeMs += dt;
      sinceYield += dt;
      const kinds = emittedKinds(it, plain);
      let tokens = it.emitted;
      if (generated + tokens.length > maxTokens) tokens = tokens.slice(0, maxTokens - generated);
      tokens.forEach((t, i) => pending.push([t, kinds[i]]));
      generated += tokens.length;
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
    const summary = statsOf(dec, computeMs, generated);
    summary.stopped = stopRequested;
    return summary;
  } finally {
    dec.dispose();
    running = false;
    stopRequested = false;
  }
}

// A quick measurement of one plain target step (used for c and v when no plain run exists).
function calibrate(options) {
  const dec = sd.createDecoder(decoderOptions({ ...options, gamma: 1 }, true));
  try {
    dec.step(); // warm-up
    let ms = 0;
    let n = 0;
    while (n < 12 && !decoderDone(dec)) {
      const t0 = performance.now();
      dec.step();
      ms += performance.now() - t0;
      n++;
    }
    return n ? ms / n : NaN;
  } finally {
    dec.dispose();
  }
}

async function handle(msg) {
  switch (msg.type) {
    case 'load':
      return { type: 'loaded', info: await load(msg) };
    case 'load-files':
      return { type: 'loaded', info: await loadFiles(msg) };
    case 'run':
      return { type: 'done', summary: await run(msg) };
    case 'calibrate':
      if (!models) throw new Error('models are not loaded');
      return { type: 'calibrated', stepMs: calibrate(msg.options) };
    case 'stop':
      stopRequested = true;
      return null;
    case 'step-start': {
      if (!models) throw new Error('models are not loaded');
      stepper?.dec.dispose();
      const dec = sd.createDecoder(decoderOptions(msg.options, false, true));
      stepper = { dec, topRows: msg.options.topRows ?? 6 };
      return { type: 'ok' };
    }
    case 'step-next': {
      if (!stepper) throw new Error('no step-through running');
      const before = decoderTokens(stepper.dec);
      const rec = stepper.dec.step();
      const view = recordToView(rec, { topRows: stepper.topRows, context: before });
      view.done = decoderDone(stepper.dec);
      return { type: 'view', view };
    }
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
    post({ type: 'error', id: msg.id, message: String(err?.message || err) });
  }
};
