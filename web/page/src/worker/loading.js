// The decoding worker's loading (worker.js): a pair's two files fetched with progress, or the
// files a learner chose; both through the same loader (sd.loadModel). `install` makes them the
// models in use, disposes what they replace and warms the WASM code up. The target's heads are
// fetched and loaded the first time a decoder asks for them.
import { modelInfoOf } from '../shared/records.js';
import { fileSizeProblem } from '../shared/limits.js';
import { state, post, ensureSd, threadInfo } from './state.js';
import { gpu, dropGpu } from './gpu.js';
import { kindOf, loadCheckpoint, vocabularyMismatch, useFullModule } from './checkpoints.js';

const BUSY = 'Stop the running decode before loading other models.';
const MIXED =
  'A checkpoint (GGUF file or Hugging Face folder) and one of our byte-level files cannot make a pair: their tokens differ. Give the other role a checkpoint of the same family as well.';

async function fetchWithProgress(urls, onProgress, expected = {}) {
  const entries = Object.entries(urls);
  const loaded = Object.fromEntries(entries.map(([k]) => [k, 0]));
  // Until a response says its length, the size the build recorded (or 0: unknown).
  const totals = Object.fromEntries(entries.map(([k]) => [k, expected[k] || 0]));
  const report = () =>
    onProgress(
      Object.values(loaded).reduce((a, b) => a + b, 0),
      Object.values(totals).reduce((a, b) => a + b, 0),
    );
  const out = {};
  await Promise.all(
    entries.map(async ([role, url]) => {
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
      for (const p of parts) {
        bytes.set(p, off);
        off += p.length;
      }
      out[role] = bytes;
    }),
  );
  return out;
}

async function fetchBytes(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

// FNV-1a over the bytes, with the length: tells the UI whether both roles hold the same weights.
function digest(bytes) {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return `${bytes.length}:${(h >>> 0).toString(16)}`;
}

// WebAssembly starts in a baseline tier and is optimised once it is hot; without a warm-up the
// first run (usually the plain one) would be measured slow and the speedup overstated.
function warmUp() {
  const { sd, models } = state;
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

// Makes `next` ({ target, draft }, each { model, bytes, file, digest }) the models in use and
// disposes the models it replaces (a decoder still using one keeps its weights alive).
// The step-through's decoder is disposed too: it would keep the old weights alive (the page's
// step-through starts again on the new models when it hears they are loaded).
function install(next, parseMs) {
  const old = state.models;
  const part = (p) => ({
    ...modelInfoOf(p.model),
    bytes: p.bytes,
    file: p.file,
    digest: p.digest,
    pair: p.pair ?? null,
    // A checkpoint's own tokenizer: its kind and size (the tokenizer itself stays in the worker).
    tokenizer: p.tokenizer ? { kind: p.tokenizer.kind, vocabSize: p.tokenizer.vocabSize } : null,
  });
  const info = {
    target: part(next.target),
    draft: part(next.draft),
    pair: next.target.pair && next.target.pair === next.draft.pair ? next.target.pair : null,
    // How the target's Linear weights are held ('f32' | 'int8': model.weights).
    weights: next.target.model.weights ?? 'f32',
    parseMs,
    sameWeights: next.target.digest === next.draft.digest,
    // Heads are trained for one target: only a pair's own target has them (loaded on first use).
    heads: next.target.heads ? { url: next.target.heads.url, count: next.target.heads.count ?? null } : null,
    threads: threadInfo(),
  };
  state.stepper?.dec.dispose();
  state.stepper = null;
  // The GPU copy belongs to its target: loaded again for the next one when a run asks.
  if (gpu.model && gpu.forTarget !== next.target.model) dropGpu();
  // Heads belong to their target: kept while it stays, disposed with it.
  const keepHeads = old && old.parts.target.model === next.target.model ? old.heads : null;
  if (old?.heads && old.heads !== keepHeads) old.heads.dispose();
  state.models = {
    target: next.target.model,
    draft: next.draft.model,
    info,
    parts: next,
    heads: keepHeads,
    tokenizer: next.target.tokenizer ?? null, // a checkpoint's: the prompt and the text go through it
  };
  for (const role of ['target', 'draft']) {
    const m = old?.parts[role].model;
    if (m && m !== next.target.model && m !== next.draft.model) m.dispose();
  }
  info.warmUpMs = warmUp();
  return info;
}

/** The 'load' request: a pair's files by URL (see worker.js). Resolves to the models' info. */
export async function load(msg) {
  await ensureSd();
  if (state.models && !msg.replace) return { ...state.models.info, threads: threadInfo() };
  if (msg.replace && state.running) throw new Error(BUSY);
  let lastPost = 0;
  const bytes = await fetchWithProgress(
    msg.urls,
    (loaded, total) => {
      const now = performance.now();
      if (now - lastPost > 50 || loaded === total) {
        lastPost = now;
        post({ type: 'progress', id: msg.id, loaded, total });
      }
    },
    msg.sizes,
  );
  if (msg.replace && state.running) throw new Error(BUSY);
  // A learner's files loaded while these were downloading win over them.
  if (state.models && !msg.replace) return { ...state.models.info, threads: threadInfo() };
  const t0 = performance.now();
  // The 8-bit files are stored quantized and load as they are; { weights: 'int8' } says so (and
  // would quantize a float file at load, were one given).
  const opts = msg.weights === 'int8' ? { weights: 'int8' } : undefined;
  const target = state.sd.loadModel(bytes.target, opts);
  let draft;
  try {
    draft = state.sd.loadModel(bytes.draft, opts);
  } catch (e) {
    target.dispose();
    throw e;
  }
  const part = (model, b, url) => ({
    model,
    bytes: b.length,
    file: null,
    digest: digest(b),
    pair: msg.pair ?? null,
    reload: () => fetchBytes(url),
  });
  const targetPart = { ...part(target, bytes.target, msg.urls.target), heads: msg.heads ?? null };
  return install({ target: targetPart, draft: part(draft, bytes.draft, msg.urls.draft) }, performance.now() - t0);
}

/** One file a learner chose, loaded for `role`; every error names the file. */
async function loadFile(role, file) {
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
    return {
      model: state.sd.loadModel(bytes),
      bytes: bytes.length,
      file: file.name,
      digest: digest(bytes),
      reload: async () => new Uint8Array(await file.arrayBuffer()),
    };
  } catch (e) {
    // "bytes: model file: ..." from the loader; the argument is the file here.
    throw new Error(`${where}: ${String(e.message).replace(/^bytes: /, '')}`);
  }
}

// The 'load-files' request: models from files a learner chose, a role's File or Files. Our own
// file: its size is checked before it is read, then the bytes go through the same loader as the
// page's own models. A GGUF file or a Hugging Face folder: worker/checkpoints.js, with progress
// events and the checkpoint's tokenizer. Nothing changes unless every file given loads.
export async function loadFiles(msg) {
  if (state.running) throw new Error(BUSY);
  await ensureSd();
  const given = (r) => [msg.files?.[r] ?? []].flat();
  const roles = ['target', 'draft'].filter((r) => given(r).length);
  if (roles.length === 0) throw new Error('no model file given');
  if (!state.models && roles.length < 2) {
    const missing = roles[0] === 'target' ? 'draft' : 'target';
    throw new Error(`Choose a ${missing} model file as well: the page's own models are not loaded.`);
  }
  const kinds = {};
  for (const role of roles) kinds[role] = await kindOf(role, given(role));
  const { parts } = state.models ?? {};
  const isCheckpoint = (r) => (kinds[r] ? kinds[r] !== 'ours' : !!parts?.[r].tokenizer);
  if (isCheckpoint('target') !== isCheckpoint('draft')) throw new Error(MIXED);
  let lastPost = 0;
  const onProgress = (e) => {
    const now = performance.now();
    if (now - lastPost < 50 && e.loaded !== e.total) return;
    lastPost = now;
    post({ type: 'progress', id: msg.id, phase: e.phase, role: e.role, loaded: e.loaded, total: e.total ?? 0 });
  };
  const loaded = {};
  const t0 = performance.now();
  let next;
  try {
    for (const role of roles) {
      loaded[role] =
        kinds[role] === 'ours'
          ? await loadFile(role, given(role)[0])
          : await loadCheckpoint(role, kinds[role], given(role), onProgress);
    }
    next = { target: loaded.target ?? parts.target, draft: loaded.draft ?? parts.draft };
    if (next.target.tokenizer && next.draft.tokenizer) {
      const why = vocabularyMismatch(next.target.tokenizer, next.draft.tokenizer);
      if (why) throw new Error(why);
    }
    if (state.running) throw new Error(BUSY);
  } catch (e) {
    for (const part of Object.values(loaded)) part.model.dispose();
    throw e;
  }
  if (next.target.tokenizer) useFullModule();
  return install(next, performance.now() - t0);
}

// The heads of the current target (sd.loadHeads), fetched and loaded the first time a decoder
// asks for them. A target without heads in this build, or heads the loader refuses (made for
// another target), is an error whose message the page shows.
export async function ensureHeads() {
  const { models } = state;
  if (!models) throw new Error('models are not loaded');
  if (models.heads) return models.heads;
  const src = models.info.heads;
  if (!src) throw new Error('heads: not in this build for this target');
  const forTarget = models.target;
  const res = await fetch(src.url);
  if (!res.ok) throw new Error(`heads: ${src.url}: HTTP ${res.status}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (!state.models || state.models.target !== forTarget)
    throw new Error('heads: the models changed while the heads loaded');
  try {
    state.models.heads = state.sd.loadHeads(bytes, state.models.target);
  } catch (e) {
    throw new Error(`heads file: ${String(e.message).replace(/^bytes: /, '')}`);
  }
  state.models.info.heads.count = state.models.heads.count;
  return state.models.heads;
}
