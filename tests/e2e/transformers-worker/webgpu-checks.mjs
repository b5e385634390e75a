// The checks of tests/e2e/transformers-webgpu.test.mjs, run in the page of
// examples/transformers-webgpu/ once it has streamed its first run: they import the example's
// module (the same instance: its models are loaded and their WebGPU programs compiled, which on
// SwiftShader takes longer than everything below) and drive its target (transformers.js,
// device 'webgpu') and draft (WASM) through specdec/transformers. window.__gpu (the test's init
// script) counts the GPUBuffers made and destroyed on every GPUDevice; here the ORT tensors
// the target's session hands out on the GPU (its present.* outputs: transformers.js asks for
// 'gpu-buffer') are counted as made and disposed.
import { transformersScorer } from '../web/lib/adapters/transformers.js';
import { rowsAsFloat32 } from '../web/lib/adapters/ort.js';
import { compareGreedy } from './greedy-ties.mjs';

const ex = await import('../examples/transformers-webgpu/main.js');
const tf = await import('@huggingface/transformers'); // the example's instance (import map)
const { target, draft, tokenizer, sd } = ex;
const CONTEXT = target.config.n_positions;
const V = target.config.vocab_size;

// ORT tensors on the GPU out of the target's session: made and disposed
const ortGpu = { made: 0, disposed: 0 };
const session = target.sessions.model;
const run = session.run.bind(session);
session.run = async (...args) => {
  const out = await run(...args);
  for (const t of Object.values(out)) {
    if (t?.location !== 'gpu-buffer') continue;
    ortGpu.made++;
    const dispose = t.dispose.bind(t);
    let done = false;
    t.dispose = () => {
      if (!done) ortGpu.disposed++;
      done = true;
      return dispose();
    };
  }
  return out;
};
const counts = () => ({
  ortMade: ortGpu.made,
  ortLive: ortGpu.made - ortGpu.disposed,
  gpuLive: window.__gpu.live.size,
  gpuBytes: window.__gpu.bytes,
  gpuMade: window.__gpu.made,
});

const ids = (tokens) => new tf.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
/** One fresh pass of the target over `tokens` (no cache): every row of logits, as float32. */
async function freshRows(tokens) {
  const out = await target({ input_ids: ids(tokens), attention_mask: tf.ones([1, tokens.length]) });
  for (const [k, t] of Object.entries(out)) if (k !== 'logits') t.dispose();
  return rowsAsFloat32(out.logits.data, out.logits.type, 0, out.logits.size);
}
async function greedyFrom(tokens, n) {
  const out = await target.generate({
    input_ids: ids(tokens),
    attention_mask: tf.ones([1, tokens.length]),
    max_new_tokens: n,
    do_sample: false,
  });
  return Array.from(out[0].data, Number).slice(tokens.length);
}
const scorers = () => [
  transformersScorer(target, { tokenizer, transformers: tf }),
  transformersScorer(draft, { transformers: tf }),
];

/** Decodes with a fresh scorer pair; returns tokens, stats, target calls and cut iterations. */
async function decode(prompt, options) {
  const [ts, ds] = scorers();
  const dec = sd.createDecoder({
    prompt,
    targetScore: ts,
    draftScore: ds,
    contextLength: CONTEXT,
    ...options,
  });
  let cut = 0;
  const t0 = performance.now();
  for await (const r of dec.generate()) if (r.nAccepted < r.proposed.length) cut++;
  const result = {
    tokens: dec.generatedTokens,
    stats: { ...dec.stats },
    cut,
    targetRuns: ts.runs,
    cacheType: ts.cacheType,
    ms: performance.now() - t0,
  };
  dec.dispose();
  await ts.dispose();
  await ds.dispose();
  return result;
}

const rng = (seed) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

export const checks = {
  info: async () => ({
    device: ex.device,
    dtype: ex.dtype,
    first: {
      generated: ex.first.generated,
      iterations: ex.first.iterations,
      tokensPerPass: ex.first.tokensPerPass,
      tokens: ex.first.tokens.length,
    },
    spans: document.querySelectorAll('#out span').length,
    corrected: document.querySelectorAll('#out span.corrected').length,
    text: document.getElementById('out').textContent,
    status: document.getElementById('status').textContent,
    adapter: await navigator.gpu.requestAdapter().then((a) => ({
      vendor: a.info?.vendor,
      architecture: a.info?.architecture,
      description: a.info?.description,
      f16: a.features.has('shader-f16'),
    })),
    counts: counts(),
  }),

  /** Greedy specdec against the target's own generate() on this device. */
  async greedy({ prompt, tokens, tie }) {
    const p = Array.from(tokenizer.encode(prompt), Number);
    let t0 = performance.now();
    const reference = await greedyFrom(p, tokens);
    const generateMs = performance.now() - t0;
    const r = await decode(Int32Array.from(p), { temperature: 0, gamma: 3, maxTokens: tokens });
    const compared = await compareGreedy({
      got: r.tokens,
      reference,
      tie,
      logitsAfter: async (prefix) => {
        const rows = await freshRows(p.concat(prefix));
        return rows.subarray(rows.length - V);
      },
      continueFrom: (prefix, n) => greedyFrom(p.concat(prefix), n),
    });
    return { ...r, reference, compared, generateMs };
  },

  /** The adapter's rows after cache cuts (a rejected draft) against a fresh pass over the same tokens. */
  async cut() {
    const ts = transformersScorer(target, { tokenizer, transformers: tf });
    const base = Array.from(ts.encode('First Citizen:\nBefore we proceed any further, hear me speak.'), Number);
    const other = Array.from(ts.encode('xyz'), Number);
    // each call: tokens, nLast; the second and third cut the cache back (a draft rejected)
    const calls = [
      [base.slice(0, 24), 4],
      [base.slice(0, 18).concat(other), 4],
      [base.slice(0, 21), 3],
      [base.slice(0, 22), 1],
    ];
    const cases = [];
    for (const [tokens, nLast] of calls) {
      const cachedBefore = ts.cachedTokens;
      const forwardedBefore = ts.forwardedTokens;
      const rows = await ts(Int32Array.from(tokens), nLast);
      const fresh = await freshRows(tokens);
      const want = fresh.subarray(fresh.length - nLast * V);
      let maxDiff = 0;
      let maxAbs = 0;
      for (let i = 0; i < want.length; i++) {
        maxDiff = Math.max(maxDiff, Math.abs(rows[i] - want[i]));
        maxAbs = Math.max(maxAbs, Math.abs(want[i]));
      }
      cases.push({
        length: tokens.length,
        nLast,
        cachedBefore,
        forwarded: ts.forwardedTokens - forwardedBefore,
        cachedAfter: ts.cachedTokens,
        rows: rows.length / V,
        maxDiff,
        maxAbs,
      });
    }
    await ts.dispose();
    return { cases, counts: counts() };
  },

  /**
   * A sampled run at T = 1 and, from one fresh pass over prompt + tokens, each token's randomized
   * probability integral transform u = F(x-) + v p(x) under the target's row there: uniform on
   * [0, 1), independently, when every token is drawn from the target's distribution.
   */
  async sampled({ prompt, tokens, seed, bins }) {
    const p = Array.from(tokenizer.encode(prompt), Number);
    const r = await decode(Int32Array.from(p), {
      temperature: 1,
      gamma: 3,
      seed,
      maxTokens: tokens,
    });
    const rows = await freshRows(p.concat(r.tokens));
    const rand = rng(seed);
    const counts = new Array(bins).fill(0);
    r.tokens.forEach((x, i) => {
      const row = rows.subarray((p.length - 1 + i) * V, (p.length + i) * V);
      const max = Math.max(...row);
      let z = 0;
      let below = 0;
      for (let j = 0; j < V; j++) {
        const e = Math.exp(row[j] - max);
        z += e;
        if (j < x) below += e;
      }
      const u = (below + rand() * Math.exp(row[x] - max)) / z;
      counts[Math.min(bins - 1, Math.floor(u * bins))]++;
    });
    return { ...r, counts };
  },

  /** n decoders, each with its own scorers, one iteration each: GPU buffers and ORT tensors after each. */
  async leak({ n, prompt }) {
    const p = Int32Array.from(tokenizer.encode(prompt), Number);
    const after = [];
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      await decode(p, { temperature: 1, gamma: 2, seed: 100 + i, maxTokens: 1 });
      after.push(counts());
    }
    const ms = performance.now() - t0;
    // the control: passes whose present tensors are not disposed are seen by both counts
    const before = counts();
    const kept = [];
    for (let i = 0; i < 3; i++) {
      const out = await target({
        input_ids: ids(Array.from(p)),
        attention_mask: tf.ones([1, p.length]),
      });
      kept.push(
        ...Object.entries(out)
          .filter(([k]) => k !== 'logits')
          .map(([, t]) => t),
      );
    }
    const leaked = counts();
    for (const t of kept) t.dispose();
    return { after, ms, control: { before, leaked, released: counts(), tensors: kept.length } };
  },
};
