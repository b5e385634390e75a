// The decoding worker's loading (worker.js): a pair's two files by URL, or the files a learner
// chose; both go the one way in of worker/sources.js (checked, read as they arrive and loaded by
// the package's loading API), one role after the other, with one progress report. `install`
// makes them the models in use, disposes what they replace and warms the WASM code up. The
// target's heads are fetched and loaded the first time a decoder asks for them.
import { modelInfoOf } from '../shared/records.js';
import { state, post, ensureSd, threadInfo } from './state.js';
import { gpu, dropGpu } from './gpu.js';
import { vocabularyMismatch, useFullModule } from './checkpoints.js';
import { pairSource, fileSource, sourceProblem, loadSource } from './sources.js';

const BUSY = 'Stop the running decode before loading other models.';
const MIXED =
  'A checkpoint (GGUF file or Hugging Face folder) and one of our byte-level files cannot make a pair: their tokens differ. Give the other role a checkpoint of the same family as well.';

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
    fileKind: p.kind ?? null, // 'ours' | 'gguf' | 'folder' (file: the folder's names, quoted)
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

// One progress report for a request's sources, loaded one after the other: { phase, role,
// loaded, total } in bytes over all of them (those done count whole; a source's size as the
// build recorded or its file says until its bytes tell), posted at most every 50 ms and at the
// end of each phase; a build under a quarter of a second (a pair's file) only at its end.
function progressReport(id, sources) {
  const sizes = sources.map((s) => s.size || 0);
  const sum = (list) => list.reduce((a, b) => a + b, 0);
  let last = 0;
  return (i) => {
    let building = null;
    return (e) => {
      sizes[i] = Math.max(e.total || sizes[i], e.loaded);
      const now = performance.now();
      if (e.phase === 'build') building ??= now;
      const end = e.loaded >= e.total;
      if (!end && (now - last < 50 || (building !== null && now - building < 250))) return;
      last = now;
      const loaded = sum(sizes.slice(0, i)) + e.loaded;
      post({ type: 'progress', id, phase: e.phase, role: sources[i].role, loaded, total: sum(sizes) });
    };
  };
}

/**
 * The models of one request (the 'load' of a pair, the 'load-files' of a learner): its sources
 * loaded one after the other through loadSource, with the roles it does not give kept, checked
 * to make a pair. Nothing changes, and nothing stays loaded, unless every source loads.
 * @returns {Promise<{ target: object, draft: object }>} install's parts
 */
async function loadPair(id, sources, options = {}) {
  const kept = state.models?.parts ?? {};
  const kind = (role) => sources.find((s) => s.role === role)?.kind ?? kept[role]?.kind;
  if ((kind('target') === 'ours') !== (kind('draft') === 'ours')) throw new Error(MIXED);
  for (const src of sources) {
    const problem = sourceProblem(src);
    if (problem) throw new Error(problem);
  }
  const progress = progressReport(id, sources);
  const loaded = {};
  try {
    for (const [i, src] of sources.entries()) {
      loaded[src.role] = await loadSource(src, { ...options, onProgress: progress(i) });
    }
    const next = { target: loaded.target ?? kept.target, draft: loaded.draft ?? kept.draft };
    if (next.target.tokenizer && next.draft.tokenizer) {
      const why = vocabularyMismatch(next.target.tokenizer, next.draft.tokenizer);
      if (why) throw new Error(why);
    }
    if (state.running) throw new Error(BUSY);
    return next;
  } catch (e) {
    for (const part of Object.values(loaded)) part.model.dispose();
    throw e;
  }
}

/** The 'load' request: a pair's files by URL (see worker.js). Resolves to the models' info. */
export async function load(msg) {
  await ensureSd();
  if (state.models && !msg.replace) return { ...state.models.info, threads: threadInfo() };
  if (msg.replace && state.running) throw new Error(BUSY);
  const t0 = performance.now();
  const sources = ['target', 'draft'].map((role) => pairSource(role, msg.urls[role], msg.sizes?.[role]));
  // The 8-bit files are stored quantized and load as they are; { weights: 'int8' } says so (and
  // would quantize a float file at load, were one given).
  const next = await loadPair(msg.id, sources, msg.weights === 'int8' ? { weights: 'int8' } : {});
  // A learner's files loaded while these were downloading win over them.
  if (state.models && !msg.replace) {
    for (const part of Object.values(next)) part.model.dispose();
    return { ...state.models.info, threads: threadInfo() };
  }
  for (const part of Object.values(next)) part.pair = msg.pair ?? null;
  next.target.heads = msg.heads ?? null;
  return install(next, performance.now() - t0);
}

// The 'load-files' request: models from files a learner chose, a role's File or Files (one of
// our files, a GGUF file, or a Hugging Face folder's files: worker/sources.js), through the same
// way in as the page's pairs. A role without a file keeps its model; nothing changes unless
// every file given loads.
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
  const sources = [];
  for (const role of roles) sources.push(await fileSource(role, given(role)));
  const t0 = performance.now();
  const next = await loadPair(msg.id, sources);
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
