// The checks of the WebGPU target, run in the page and called by tests/e2e/webgpu.test.mjs (and
// bench/gpu.mjs) as window.gpu.*. Each returns plain data (measured figures, token lists, error
// names and messages); the assertions are made in Node. The served folder holds lib/ (web/lib
// with its wasm), models/ and greedy-ties.mjs (tests/js), assembled by the test.
import { loadSpecdec, SpecdecError } from './lib/index.js';
import { compareGreedy, describeFlips } from './greedy-ties.mjs';
import { int8Checks } from './int8.mjs';

const status = document.getElementById('status');
const sd = await loadSpecdec();
const V = 256;

window.__unhandled = [];
window.addEventListener('unhandledrejection', (e) => window.__unhandled.push(String(e.reason?.message ?? e.reason)));

const files = new Map();
async function bytesOf(name) {
  if (!files.has(name)) {
    const res = await fetch(`./models/${name}.safetensors`);
    if (!res.ok) throw new Error(`models/${name}.safetensors: HTTP ${res.status}`);
    files.set(name, new Uint8Array(await res.arrayBuffer()));
  }
  return files.get(name);
}
const wasmModels = new Map();
async function wasmModel(name) {
  if (!wasmModels.has(name)) wasmModels.set(name, sd.loadModel(await bytesOf(name)));
  return wasmModels.get(name);
}
let headsOf = null;
// The small target's heads, loaded for its WASM model (whose LM head they use): they draft for
// the GPU target too, which holds the same weights.
async function wasmHeads() {
  headsOf ??= sd.loadHeads(await bytesOf('target-heads'), await wasmModel('target'));
  return headsOf;
}
const gpuModels = new Map();
async function gpuModel(name) {
  if (!gpuModels.has(name)) {
    const t0 = performance.now();
    const m = await sd.loadModel(await bytesOf(name), { device: 'webgpu' });
    m.loadMs = performance.now() - t0;
    gpuModels.set(name, m);
  }
  return gpuModels.get(name);
}

const seqOf = (...parts) =>
  Int32Array.from(parts.flatMap((p) => (typeof p === 'string' ? sd.encode(p) : Array.from(p))));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
async function capture(fn) {
  try {
    await fn();
    return { ok: true };
  } catch (e) {
    return {
      ok: false,
      specdec: e instanceof SpecdecError,
      name: e?.name,
      argument: e?.argument,
      message: String(e?.message ?? e),
    };
  }
}

// GPU logits against WASM probabilities: both as log-softmax (logits are defined up to a
// constant per row), |Δ| relative to the row's max |logit|. Entries whose WASM probability
// underflows below 1e-30 are skipped (its log is not precise there).
function compareToProbs(logits, probs, nRows) {
  let maxRel = 0;
  let maxAbs = 0;
  let skipped = 0;
  for (let r = 0; r < nRows; r++) {
    const row = logits.subarray(r * V, (r + 1) * V);
    let mx = -Infinity;
    let absMax = 0;
    for (const x of row) {
      mx = Math.max(mx, x);
      absMax = Math.max(absMax, Math.abs(x));
    }
    let sum = 0;
    for (const x of row) sum += Math.exp(x - mx);
    const lse = mx + Math.log(sum);
    let worst = 0;
    for (let v = 0; v < V; v++) {
      const p = probs[r * V + v];
      if (p < 1e-30) {
        skipped++;
        continue;
      }
      worst = Math.max(worst, Math.abs(row[v] - lse - Math.log(p)));
    }
    maxAbs = Math.max(maxAbs, worst);
    maxRel = Math.max(maxRel, worst / absMax);
  }
  return { maxRel, maxAbs, skipped };
}

// Greedy tokens of a WASM model (plain decoding), n after `prefix`.
function greedyTokens(target, prefix, n) {
  const dec = sd.createDecoder({
    target,
    plain: true,
    temperature: 0,
    prompt: Array.from(prefix),
    maxTokens: n,
    distributions: false,
  });
  while (!dec.done) dec.step();
  const out = dec.generatedTokens;
  dec.dispose();
  return out;
}

// Greedy tokens of the WASM engine's small target, plain, after `prefix`.
const wasmGreedy = async (prefix, n) => greedyTokens(await wasmModel('target'), prefix, n);

// Greedy decoding of one mode (`options`: its drafter and shape) with the GPU model g as the
// target: g itself for heads (their fingerprint is checked), its scorer otherwise; then its
// tokens against the reference greedy tokens (compareGreedy: a difference must be a near-tie,
// continued by referenceGreedy(prefix, n)). Returns the tokens, the decoder's stats, its
// iterations, the wall time, g's stats when the decoding ended and the comparison.
async function greedyOnGpu(g, promptTokens, maxTokens, options, { reference, referenceGreedy }) {
  const t0 = performance.now();
  const target = options.heads ? { target: g } : { targetScore: g.scorer() };
  const dec = sd.createDecoder({
    ...target,
    temperature: 0,
    prompt: Array.from(promptTokens),
    maxTokens,
    seed: 1,
    ...options,
  });
  let iterations = 0;
  while (!dec.done) {
    await dec.step();
    iterations++;
  }
  const ms = performance.now() - t0;
  const after = g.stats;
  const got = dec.generatedTokens;
  const stats = dec.stats;
  dec.dispose();
  const cmp = await compareGreedy({
    got,
    reference: reference.slice(0, maxTokens),
    logitsAfter: (prefix) => g.score(seqOf(promptTokens, prefix), 1),
    continueFrom: (prefix, n) => referenceGreedy(seqOf(promptTokens, prefix), n),
    tie: 1e-4,
  });
  return { got, stats, iterations, ms, after, cmp };
}

// Waits, in microtasks only (never a task: a read-back needs one to resolve), until the model
// has submitted `passes` passes; false if it does not within 10,000 turns.
async function submitted(model, passes) {
  for (let i = 0; i < 10_000; i++) {
    if (model.stats.passes >= passes) return true;
    await Promise.resolve();
  }
  return false;
}

// A draft tree of the given branching (nodes in drawing order, depth by depth), its tokens
// taken in turn from `pool`.
function makeTree(branches, pool) {
  const tokens = [];
  const parents = [];
  let level = [-1];
  let i = 0;
  for (const b of branches) {
    const next = [];
    for (const parent of level) {
      for (let c = 0; c < b; c++) {
        next.push(tokens.length);
        tokens.push(pool[i++ % pool.length]);
        parents.push(parent);
      }
    }
    level = next;
  }
  return { tokens: Int32Array.from(tokens), parents: Int32Array.from(parents) };
}

// The rows a tree query asks for, from the WASM engine, each path scored as a sequence.
function pathRows(step, prefix, tree, first, withRoot) {
  const seqs = [];
  if (withRoot) seqs.push(Array.from(prefix));
  for (let v = first; v < tree.tokens.length; v++) {
    const path = [];
    for (let u = v; u >= 0; u = tree.parents[u]) path.unshift(tree.tokens[u]);
    seqs.push([...prefix, ...path]);
  }
  const out = new Float32Array(seqs.length * V);
  seqs.forEach((seq, i) => out.set(step(seq, 1), i * V));
  return out;
}

const CONTINUATION =
  ' through yonder window breaks? It is the east, and Juliet is the sun. Arise, fair sun, and kill the envious moon';

/**
 * The passes both logits checks (this file's and int8.mjs's) walk over one cached sequence: the
 * prompt in one pass (every row), then chains of `chains[i]` tokens appended after the cached
 * prefix, then a cut back (a rejection: the last 3 dropped, 4 others appended); each through
 * check(what, seq, nLast). Returns the last sequence.
 */
async function checkCachedChains(check, chains) {
  let seq = seqOf('ROMEO:\nWhat light');
  await check(`prompt, ${seq.length} tokens in one pass`, seq, seq.length);
  const cont = seqOf(CONTINUATION);
  let off = 0;
  for (const k of chains) {
    seq = seqOf(seq, cont.subarray(off, off + k));
    off += k;
    await check(`chain of ${k} after ${seq.length - k} cached`, seq, k);
  }
  seq = seqOf(seq.subarray(0, seq.length - 3), 'XYZW');
  await check('after dropping 3 cached tokens, 4 new', seq, 4);
  return seq;
}

window.gpu = {
  async info(name = 'target') {
    const m = await gpuModel(name);
    return {
      adapterInfo: m.adapterInfo,
      config: m.config,
      device: m.device,
      loadMs: m.loadMs,
      liveBuffers: m.liveBuffers,
      dispatchesPerPass: m.stats.lastPassDispatches,
    };
  },

  // The GPU pass against the WASM engine: the prompt in one pass (every row), then chains of k
  // tokens appended after the cached prefix, then a cut back (rejection) and a new chain.
  // For the small target also against PyTorch's logits of models/golden.json.
  async logits(name = 'target', chains = [1, 2, 3, 5, 8, 17, 33]) {
    const g = await gpuModel(name);
    await g.reset();
    const step = sd.modelStep(await wasmModel(name));
    const results = [];
    const check = async (what, seq, nLast) => {
      const before = g.stats;
      const t0 = performance.now();
      const rows = await g.score(seq, nLast);
      const ms = performance.now() - t0;
      const after = g.stats;
      const ref = step(seq, nLast);
      results.push({
        what,
        nLast,
        ms,
        ...compareToProbs(rows, ref, nLast),
        forwarded: after.forwardedTokens - before.forwardedTokens,
        passes: after.passes - before.passes,
        readbacks: after.readbacks - before.readbacks,
        dispatches: after.dispatches - before.dispatches,
      });
    };
    await checkCachedChains(check, chains);
    step.dispose();
    let golden = null;
    if (name === 'target') {
      const gold = await (await fetch('./models/golden.json')).json();
      await g.reset();
      const rows = await g.score(Int32Array.from(gold.target.tokens), gold.target.tokens.length);
      let maxRel = 0;
      gold.target.logits.forEach((row, r) => {
        const absMax = Math.max(...row.map(Math.abs));
        let worst = 0;
        row.forEach((x, v) => {
          worst = Math.max(worst, Math.abs(rows[r * V + v] - x));
        });
        maxRel = Math.max(maxRel, worst / absMax);
      });
      golden = { rows: gold.target.logits.length, maxRel };
    }
    return {
      results,
      golden,
      dispatchesPerPass: g.stats.lastPassDispatches,
      adapter: g.adapterInfo,
    };
  },

  // Trees on the GPU against the WASM engine (each path scored as a sequence): a tree with its
  // root row after a cached prefix; a tree grown depth by depth (a drafter's queries, reusing
  // the nodes already cached); then the accepted path committed down to the sequence's slots
  // and the next chain pass against a fresh model's single pass.
  async treeLogits(name = 'target') {
    const g = await gpuModel(name);
    await g.reset();
    const step = sd.modelStep(await wasmModel(name));
    const pool = Array.from(sd.encode(' through yonder window breaks? It is'));
    const results = [];
    const check = async (what, prefix, tree, first, withRoot) => {
      const before = g.stats;
      const t0 = performance.now();
      const rows = await g.scoreTree(prefix, { ...tree, first, withRoot });
      const ms = performance.now() - t0;
      const after = g.stats;
      const nRows = (withRoot ? 1 : 0) + tree.tokens.length - first;
      results.push({
        what,
        nodes: tree.tokens.length,
        nRows,
        ms,
        length: rows.length,
        ...compareToProbs(rows, pathRows(step, prefix, tree, first, withRoot), nRows),
        forwarded: after.forwardedTokens - before.forwardedTokens,
        passes: after.passes - before.passes,
        readbacks: after.readbacks - before.readbacks,
        dispatches: after.dispatches - before.dispatches,
      });
    };
    const A = seqOf('ROMEO:\nWhat light');
    await g.score(A, 1);
    await check(
      '3x2x1 tree (15 nodes) with its root row, the prefix cached but its last token',
      A,
      makeTree([3, 2, 1], pool),
      0,
      true,
    );
    // a drafter: depth 1 from the sequence's row, depth 2 for depth 1's 2 nodes, depth 3 for
    // depth 2's 4 nodes (nodes 0, 1 reused from the cache)
    const B = seqOf(A, ' t');
    await g.score(B, 1);
    const t2 = makeTree([2, 2], pool);
    const t1 = { tokens: t2.tokens.subarray(0, 2), parents: t2.parents.subarray(0, 2) };
    await check('depth 2 of a drafter: 2 nodes, no root row', B, t1, 0, false);
    await check('depth 3 of a drafter: 6 nodes, rows of the last 4, 2 reused', B, t2, 2, false);
    // accepted: node 0, then its first child (node 2), then a bonus token: the path is copied
    // from slots base + 0, base + 2 to base, base + 1 and only the bonus is forwarded
    const C = seqOf(B, [t2.tokens[0], t2.tokens[2]], 'e');
    const before = g.stats;
    const rows = await g.score(C, 2);
    const after = g.stats;
    const fresh = await sd.loadModel(await bytesOf(name), { device: 'webgpu' });
    const ref = await fresh.score(C, 2);
    fresh.dispose();
    let maxDiff = 0;
    for (let i = 0; i < ref.length; i++) maxDiff = Math.max(maxDiff, Math.abs(ref[i] - rows[i]));
    const commit = {
      forwarded: after.forwardedTokens - before.forwardedTokens,
      dispatches: after.lastPassDispatches,
      maxDiff,
      cachedAfter: g.cachedTokens,
      length: C.length,
    };
    // a rejected tree: the next chain after the prefix forgets every node
    await g.scoreTree(C, { ...makeTree([2, 2], pool), first: 0, withRoot: true });
    const D = seqOf(C, 'xyz');
    const b2 = g.stats;
    const rows2 = await g.score(D, 3);
    const ref2 = pathRows(
      step,
      C,
      { tokens: Int32Array.from(sd.encode('xyz')), parents: Int32Array.from([-1, 0, 1]) },
      0,
      false,
    );
    const rejected = {
      ...compareToProbs(rows2, ref2, 3),
      forwarded: g.stats.forwardedTokens - b2.forwardedTokens,
      dispatches: g.stats.lastPassDispatches,
    };
    step.dispose();
    return { results, commit, rejected, nLayer: g.config.nLayer };
  },

  // Greedy decoding with the GPU target and the WASM draft, in every chain mode, against the
  // WASM engine's greedy plain tokens.
  // only: { label: maxTokens } for the modes to run (default: all, maxTokens each).
  async greedy({ maxTokens = 200, only = null, prompt = 'ROMEO:\nWhat light through yonder window breaks?\n' } = {}) {
    const g = await gpuModel('target');
    const draft = await wasmModel('draft');
    const promptTokens = seqOf(prompt);
    const t0 = performance.now();
    const reference = await wasmGreedy(promptTokens, maxTokens);
    const plainMs = performance.now() - t0;
    const modes = [
      ['gamma 4', { draft, gamma: 4 }],
      ["gamma 'auto'", { draft, gamma: 'auto' }],
      ["gamma 'heuristic'", { draft, gamma: 'heuristic' }],
      ['prompt lookup', { promptLookup: true }],
      ['prompt lookup + draft', { promptLookup: true, draft, gamma: 'auto' }],
      ['GPU plain', { plain: true }],
      // both on the GPU: the draft's own model and cache (called once per drafted token)
      ['GPU target + GPU draft', { draft: await gpuModel('draft'), gamma: 4 }],
      // trees: one GPU pass per tree under its attention mask
      ['tree 2x2x1', { draft, tree: { branches: [2, 2, 1] } }],
      ['tree 3x1, GPU target + GPU draft', { draft: await gpuModel('draft'), tree: { branches: [3, 1] } }],
      // heads: the GPU pass hands its hidden states over with the logits
      ['heads', { heads: await wasmHeads(), gamma: 3 }],
      ['heads, tree 2x2', { heads: await wasmHeads(), tree: { branches: [2, 2] } }],
    ];
    const out = [];
    for (const [label, options] of modes) {
      if (only && !(label in only)) continue;
      const n = only ? only[label] : maxTokens;
      const before = g.stats;
      const compare = { reference, referenceGreedy: wasmGreedy };
      const { got, stats, iterations, ms, after, cmp } = await greedyOnGpu(g, promptTokens, n, options, compare);
      out.push({
        label,
        ms,
        iterations,
        tokens: got.length,
        equal: got.length === Math.min(n, reference.length) && got.every((t, i) => t === reference[i]),
        flips: cmp.flips,
        mismatch: cmp.mismatch,
        account: describeFlips(cmp),
        gpuPasses: after.passes - before.passes,
        readbacks: after.readbacks - before.readbacks,
        targetPasses: stats.targetPasses,
        tokensPerPass: stats.tokensPerPass,
      });
    }
    return { reference: reference.length, plainMs, modes: out };
  },

  // KV rollback: A+B scored, then A+C (B rejected), then A+C[0..2]+D (part of C kept); each
  // result against a freshly loaded GPU model's single pass over the same sequence.
  async rollback() {
    const g = await gpuModel('target');
    await g.reset();
    const fresh = await sd.loadModel(await bytesOf('target'), { device: 'webgpu' });
    const A = seqOf('ROMEO:\nWhat light');
    const cases = [
      [A, 1],
      [seqOf(A, ' through yo'), 12],
      [seqOf(A, '! Who is'), 9],
      [seqOf(A, '! Wh', 'ere art'), 8],
      [seqOf(A, '! Where art thou'), 2],
    ];
    const out = [];
    for (const [seq, nLast] of cases) {
      const before = g.stats.forwardedTokens;
      const rows = await g.score(seq, nLast);
      const forwarded = g.stats.forwardedTokens - before;
      await fresh.reset();
      const ref = await fresh.score(seq, nLast);
      let maxDiff = 0;
      for (let i = 0; i < ref.length; i++) maxDiff = Math.max(maxDiff, Math.abs(ref[i] - rows[i]));
      out.push({
        length: seq.length,
        nLast,
        forwarded,
        cachedAfter: g.cachedTokens,
        maxDiff,
        bitEqual: maxDiff === 0,
      });
    }
    fresh.dispose();
    return out;
  },

  // Two tokens after a prompt, sampled with top-k 4 at temperature 1, `samples` times, by
  // speculative decoding (GPU target, WASM draft) or plain decoding with the GPU target; with
  // the WASM target's rows to compute the expected joint law in Node.
  async joint({
    samples = 400,
    gamma = 2,
    plain = false,
    tree = null,
    heads = false,
    topK = 4,
    seed = 7_000_000,
    prompt = 'ROMEO:\nWhat light through yonder win',
  } = {}) {
    const g = await gpuModel('target');
    const draft = await wasmModel('draft');
    const promptTokens = Array.from(seqOf(prompt));
    const counts = {};
    let drafted = 0;
    let accepted = 0;
    let byHeads = 0;
    const t0 = performance.now();
    // Heads draft from the hidden state of the last pass: the first token comes from a plain
    // step, the second from the heads' draft, verified.
    const h = heads ? await wasmHeads() : null;
    for (let s = 0; s < samples; s++) {
      const dec = sd.createDecoder({
        ...(heads
          ? { target: g, heads: h, gamma }
          : {
              targetScore: g.scorer(),
              ...(plain ? { plain: true } : tree ? { draft, tree } : { draft, gamma }),
            }),
        prompt: promptTokens,
        temperature: 1,
        topK,
        maxTokens: 2,
        seed: seed + s,
        distributions: false,
      });
      while (!dec.done) await dec.step();
      const [a, b] = dec.generatedTokens;
      counts[`${a},${b}`] = (counts[`${a},${b}`] ?? 0) + 1;
      byHeads += dec.stats.byDrafter?.heads ?? 0;
      drafted += dec.stats.drafted ?? 0;
      accepted += dec.stats.accepted ?? 0;
      dec.dispose();
    }
    const ms = performance.now() - t0;
    const step = sd.modelStep(await wasmModel('target'));
    const first = Array.from(step(promptTokens, 1));
    const order = first.map((_, i) => i).sort((x, y) => first[y] - first[x]);
    const second = {};
    for (const x of order.slice(0, topK + 4)) second[x] = Array.from(step([...promptTokens, x], 1));
    step.dispose();
    return { counts, first, second, samples, ms, drafted, accepted, byHeads };
  },

  // Faults: bad options, a fake adapter with small limits, no adapter, dispose, use after
  // dispose, dispose during a pass, a lost device.
  async faults() {
    const bytes = await bytesOf('target');
    const A = seqOf('ROMEO:\nWhat light');
    // One step of a decoder over the draft and `target` (a model, or targetScore: a scorer), what it threw.
    const stepOnce = (target) =>
      capture(async () => {
        const dec = sd.createDecoder({
          ...target,
          draft: await wasmModel('draft'),
          prompt: Array.from(A),
          maxTokens: 5,
          seed: 1,
        });
        try {
          await dec.step();
        } finally {
          dec.dispose();
        }
      });
    const out = {};
    out.badDevice = await capture(() => sd.loadModel(bytes, { device: 'cuda' }));
    out.badOption = await capture(() => sd.loadModel(bytes, { device: 'webgpu', precision: 'f16' }));
    out.wasmSync = (() => {
      const m = sd.loadModel(bytes, { device: 'wasm' });
      const r = {
        isPromise: typeof m?.then === 'function',
        device: m.device ?? 'wasm',
        isModel: m instanceof sd.Model,
      };
      m.dispose();
      return r;
    })();
    const tiny = { maxStorageBufferBindingSize: 1 << 18, maxBufferSize: 1 << 18 };
    out.tooLarge = await capture(() =>
      sd.loadModel(bytes, {
        device: 'webgpu',
        adapter: {
          limits: tiny,
          info: {},
          requestDevice: async () => {
            throw new Error('not to be asked');
          },
        },
      }),
    );
    out.noAdapter = await capture(() =>
      sd.loadModel(bytes, { device: 'webgpu', gpu: { requestAdapter: async () => null } }),
    );
    out.badBytes = await capture(() => sd.loadModel(bytes.subarray(0, 1000), { device: 'webgpu' }));

    const m = await sd.loadModel(bytes, { device: 'webgpu' });
    out.liveBeforeDispose = m.liveBuffers;
    await m.score(A, 1);
    const scorer = m.scorer();
    m.dispose();
    out.liveAfterDispose = m.liveBuffers;
    out.scoreAfterDispose = await capture(() => m.score(A, 1));
    out.scorerAfterDispose = await capture(() => scorer(A, 1));
    out.decoderAfterDispose = await stepOnce({ target: m });

    const m2 = await sd.loadModel(bytes, { device: 'webgpu' });
    await m2.score(A, 1);
    const passes2 = m2.stats.passes;
    const inFlight = m2.score(seqOf(A, CONTINUATION), 4);
    const queued = m2.score(seqOf(A, CONTINUATION, '!'), 1);
    // microtasks only, until the pass is submitted: its mapAsync cannot resolve within them, so
    // the pass is still in flight when dispose() comes, on any adapter however fast
    out.midPassSubmitted = await submitted(m2, passes2 + 1);
    m2.dispose();
    out.disposeMidPass = await capture(() => inFlight);
    out.queuedAfterDispose = await capture(() => queued);
    out.liveAfterMidPass = m2.liveBuffers;

    const m3 = await sd.loadModel(bytes, { device: 'webgpu' });
    await m3.score(A, 1);
    const s3 = m3.scorer();
    m3.gpuDevice.destroy();
    await m3.gpuDevice.lost;
    out.afterLost = await capture(() => m3.score(seqOf(A, '!'), 1));
    out.decoderAfterLost = await stepOnce({ targetScore: s3 });
    m3.dispose();
    out.liveAfterLost = m3.liveBuffers;

    const m4 = await sd.loadModel(bytes, { device: 'webgpu' });
    await m4.score(A, 1);
    const passes4 = m4.stats.passes;
    const lostInFlight = m4.score(seqOf(A, CONTINUATION), 8);
    out.lostMidPassSubmitted = await submitted(m4, passes4 + 1);
    m4.gpuDevice.destroy();
    out.lostMidPass = await capture(() => lostInFlight);
    m4.dispose();
    out.liveAfterLostMidPass = m4.liveBuffers;
    const g = await gpuModel('target');
    out.fingerprint = g.fingerprint;
    // heads made for the small target, given the large one on the GPU
    const large = await sd.loadModel(await bytesOf('large-target'), { device: 'webgpu' });
    out.heads = await capture(async () =>
      sd.createDecoder({ target: large, heads: await wasmHeads(), prompt: [1, 2] }).dispose(),
    );
    large.dispose();
    out.badTree = [
      await capture(() => g.scoreTree(A, { tokens: [1, 2], parents: [-1, 5] })),
      await capture(() => g.scoreTree(A, { tokens: [], parents: [] })),
      await capture(() => g.scoreTree(A, { tokens: [1, 2], parents: [-1] })),
      await capture(() => g.scoreTree(A, { tokens: [1, 2], parents: [-1, 0], first: 1 })),
      await capture(() =>
        g.scoreTree(
          Array.from({ length: 250 }, () => 65),
          makeTree([4, 2], [66]),
        ),
      ),
    ];
    await new Promise((r) => setTimeout(r, 50));
    out.unhandled = window.__unhandled.slice();
    return out;
  },

  // What happens without WebGPU (the test removes navigator.gpu or launches without it).
  async noWebgpu() {
    return {
      hasGpu: 'gpu' in navigator && navigator.gpu !== undefined,
      load: await capture(() => sd.loadModel(new Uint8Array(8), { device: 'webgpu' })),
      loadReal: await capture(async () => sd.loadModel(await bytesOf('target'), { device: 'webgpu' })),
    };
  },

  // bench/gpu.mjs: ms per pass for k new tokens after a cached prefix, median of `repeats`,
  // round robin over k (so that a change of the machine's load touches every k alike).
  async timePasses({ name = 'target', ks = [1, 2, 3, 4, 5, 6, 7, 8], repeats = 7, prefix = 64 } = {}) {
    const g = await gpuModel(name);
    await g.reset();
    const text = seqOf(CONTINUATION, CONTINUATION);
    const base = text.subarray(0, prefix);
    await g.score(base, 1);
    const seqs = ks.map((k) => seqOf(base, text.subarray(prefix, prefix + k)));
    const times = ks.map(() => []);
    const before = g.stats;
    for (let r = 0; r <= repeats; r++) {
      for (let i = 0; i < ks.length; i++) {
        const t0 = performance.now();
        await g.score(seqs[i], ks[i]); // nLast = k: the cache keeps base, k tokens are forwarded
        if (r > 0) times[i].push(performance.now() - t0); // the first round is a warm-up
      }
    }
    const after = g.stats;
    const passes = after.passes - before.passes;
    const rows = ks.map((k, i) => ({
      k,
      ms: median(times[i]),
      min: Math.min(...times[i]),
      max: Math.max(...times[i]),
    }));
    return {
      adapter: g.adapterInfo,
      config: g.config,
      loadMs: g.loadMs,
      rows,
      prefix,
      dispatchesPerPass: (after.dispatches - before.dispatches) / passes,
      readbacksPerPass: (after.readbacks - before.readbacks) / passes,
      forwarded: after.forwardedTokens - before.forwardedTokens,
      expectedForwarded: (repeats + 1) * ks.reduce((a, b) => a + b, 0),
    };
  },

  // bench/gpu.mjs: ms per token of plain and speculative decoding (GPU target, WASM draft) and
  // of the WASM target alone, at temperature 0.8, one seed.
  async decodeSpeed({
    target = 'target',
    draft = 'draft',
    maxTokens = 64,
    gammas = [1, 2, 3, 4],
    seed = 11,
    prompt = 'ROMEO:\nBut soft',
  } = {}) {
    const g = await gpuModel(target);
    const d = await wasmModel(draft);
    const run = async (options) => {
      await g.reset();
      const dec = sd.createDecoder({ prompt, maxTokens, seed, temperature: 0.8, ...options });
      await dec.step(); // the prompt's pass, left out of the rate
      const n0 = dec.generatedTokens.length;
      const t0 = performance.now();
      while (!dec.done) await dec.step();
      const ms = performance.now() - t0;
      const r = {
        msPerToken: ms / (dec.generatedTokens.length - n0),
        tokensPerPass: dec.stats.tokensPerPass,
        acceptanceRate: dec.stats.acceptanceRate,
      };
      if (options.gamma === 'auto') r.estimates = dec.estimates;
      dec.dispose();
      return r;
    };
    const wasmPlain = await run({ target: await wasmModel(target), plain: true });
    const plain = await run({ targetScore: g.scorer(), plain: true });
    const spec = [];
    for (const gamma of gammas) spec.push({ gamma, ...(await run({ targetScore: g.scorer(), draft: d, gamma })) });
    const auto = await run({ targetScore: g.scorer(), draft: d, gamma: 'auto' });
    // a tree: its nodes in one GPU pass under the tree mask
    const tree = {
      branches: [2, 2, 1],
      ...(await run({ targetScore: g.scorer(), draft: d, tree: { branches: [2, 2, 1] } })),
    };
    return { wasmPlain, plain, spec, auto, tree };
  },

  // Disposes one GPU model; resolves to its live buffers afterwards (0).
  // createDecoder({ target: gpuModel }) with nothing else to cap the context (plain decoding):
  // the decoder stops at the model's block size, as with a built-in target, and the GPU model's
  // own path (not an explicit scorer) decodes the WASM engine's greedy tokens.
  async context({ promptLength = 240, maxTokens = 40 } = {}) {
    const base = sd.encode('ROMEO:\nWhat light through yonder window breaks? It is the east, and Juliet is the sun. ');
    const prompt = Array.from({ length: promptLength }, (_, i) => base[i % base.length]);
    const target = await gpuModel('target');
    const dec = sd.createDecoder({ target, plain: true, prompt, temperature: 0, maxTokens });
    let error = null;
    try {
      for await (const r of dec.generate()) void r;
    } catch (e) {
      error = `${e.name}: ${e.message}`;
    }
    const tokens = Array.from(dec.generatedTokens);
    const done = dec.done;
    dec.dispose();
    const reference = await wasmGreedy(prompt, tokens.length);
    return {
      error,
      tokens: tokens.length,
      done,
      equal: tokens.every((t, i) => t === reference[i]),
      blockSize: target.config.blockSize,
    };
  },

  async release(name) {
    const m = gpuModels.get(name);
    if (!m) return 0;
    m.dispose();
    gpuModels.delete(name);
    return m.liveBuffers;
  },

  async dispose() {
    for (const m of gpuModels.values()) m.dispose();
    gpuModels.clear();
    return window.__unhandled.slice();
  },
};

// 8-bit weights on the GPU (int8.mjs)
Object.assign(
  window.gpu,
  int8Checks({
    sd,
    bytesOf,
    seqOf,
    compareToProbs,
    makeTree,
    pathRows,
    describeFlips,
    checkCachedChains,
    greedyTokens,
    greedyOnGpu,
  }),
);

status.textContent = 'ready';
window.__ready = true;
