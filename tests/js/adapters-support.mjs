// What the adapter tests share (tests/js/ort.test.mjs and the transformers*.test.mjs): a
// decoder's tokens with its scorers disposed after, the seeded T = 0.8 comparison with the
// built-in pair, a scorer's cache checks, softmax and the chi-square's pooled cells, and
// transformers.js's own greedy generate() and one-token rows.
import assert from 'node:assert/strict';
import { transformersScorer } from 'specdec/transformers';

/**
 * Runs a decoder to the end through generate(); returns its tokens, stats, and the target
 * scorer's forwardedTokens and runs, then disposes the decoder and the scorers given.
 */
export async function drain(dec, ts = null, ds = null) {
  const tokens = [];
  for await (const r of dec.generate()) tokens.push(...r.emitted);
  const out = { tokens, stats: dec.stats, forwarded: ts?.forwardedTokens, runs: ts?.runs };
  dec.dispose();
  await ts?.dispose();
  await ds?.dispose();
  return out;
}

/**
 * Seeded T = 0.8 decodes (seeds 1..4, γ 4, 150 tokens from 'KING HENRY:') with the built-in pair
 * (sides {}) and with `sides`: alpha within 0.06 and tokens per target pass within 0.3.
 * @param {(options: object, sides: object) => Promise<{ stats: object }>} decode
 */
export async function assertSampledLikeBuiltin(decode, sides, label) {
  const agg = {
    ref: { examined: 0, accepted: 0, gen: 0, passes: 0 },
    other: { examined: 0, accepted: 0, gen: 0, passes: 0 },
  };
  for (const seed of [1, 2, 3, 4]) {
    const options = { prompt: 'KING HENRY:', temperature: 0.8, gamma: 4, maxTokens: 150, seed };
    for (const [key, s] of [
      ['ref', {}],
      ['other', sides],
    ]) {
      const r = await decode(options, s);
      agg[key].examined += r.stats.examined;
      agg[key].accepted += r.stats.accepted;
      agg[key].gen += r.stats.generated;
      agg[key].passes += r.stats.targetPasses;
    }
  }
  const alpha = (a) => a.accepted / a.examined;
  const tpp = (a) => a.gen / a.passes;
  const line = `alpha ${alpha(agg.other).toFixed(3)} vs ${alpha(agg.ref).toFixed(3)}, tokens/pass ${tpp(agg.other).toFixed(2)} vs ${tpp(agg.ref).toFixed(2)}`;
  console.log(`# ${label}, T 0.8: ${line}`);
  assert.ok(Math.abs(alpha(agg.other) - alpha(agg.ref)) < 0.06, line);
  assert.ok(Math.abs(tpp(agg.other) - tpp(agg.ref)) < 0.3, line);
}

/**
 * A scorer that last scored tokens.length - 2 tokens: its cache holds them, scoring `tokens`
 * forwards only the two new ones, reset() empties it, and after dispose() a call rejects.
 */
export async function assertCacheCutBack(ts, tokens, name) {
  assert.equal(ts.cachedTokens, tokens.length - 2);
  const before = ts.forwardedTokens;
  await ts(tokens, 1);
  assert.equal(ts.forwardedTokens - before, 2);
  await ts.reset();
  assert.equal(ts.cachedTokens, 0);
  await ts.dispose();
  await assert.rejects(ts(tokens, 1), new RegExp(`${name}: disposed`));
}

export const softmax = (logits) => {
  const max = Math.max(...logits);
  const e = Array.from(logits, (x) => Math.exp(x - max));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
};

/**
 * One chi-square group: observed counts (Map token -> count) against probs for n draws, the
 * cells whose expected count is under 5 pooled into one.
 */
export function pooledGroup(observed, probs, n) {
  const cells = [];
  const pooled = { count: 0, p: 0 };
  probs.forEach((p, i) => {
    if (p * n >= 5) cells.push({ count: observed.get(i) ?? 0, p });
    else {
      pooled.count += observed.get(i) ?? 0;
      pooled.p += p;
    }
  });
  if (pooled.p > 0) cells.push(pooled);
  return { counts: cells.map((c) => c.count), probs: cells.map((c) => c.p) };
}

/** transformers.js's own greedy generate(): the n tokens after `tokens`. */
export async function greedyFrom(tf, model, tokens, n) {
  const ids = new tf.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
  const out = await model.generate({
    input_ids: ids,
    attention_mask: tf.ones([1, tokens.length]),
    max_new_tokens: n,
    do_sample: false,
  });
  return Array.from(out[0].data, Number).slice(tokens.length);
}

/** Next-token logits after `tokens` through generate()'s function (the adapter, one-token passes). */
export async function oneTokenRow(model, tokens) {
  const ts = transformersScorer(model);
  for (let i = 1; i < tokens.length; i++) await ts(Int32Array.from(tokens.slice(0, i)), 1);
  const row = await ts(Int32Array.from(tokens), 1);
  await ts.dispose();
  return row;
}
