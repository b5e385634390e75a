// ─────────────────────────────────────────────────────────────────────────────────────────────
// TEACHING CODE, DELIBERATELY WRONG OR MISMATCHED. Do not copy it into a decoder.
//
// The pitfalls lab (section 5) shows what goes wrong when speculative decoding is implemented
// carelessly. The correct rules always come from the specdec library (sd.speculativeVerify,
// sd.createDecoder); this module holds only the mistakes the lab switches on with "break it",
// written with the library's public functions, so that the library itself ships nothing broken:
//   - verifyResamplingFromP: after a rejection, draws the correction from p instead of the
//     residual (p − q)₊ — the output is no longer distributed as p;
//   - the draft sampling at one temperature while the verifier is told q at another (a choice
//     of rows, made in pitfalls/runs.js: temperature-mismatch);
//   - permutedVocabularyDraft: a draft whose token ids mean other bytes than the target's
//     (a tokenizer mismatch) — still exact, since the verifier is correct, but α collapses.
// ─────────────────────────────────────────────────────────────────────────────────────────────
import { sampleToken } from './stats.js';

/**
 * WRONG ON PURPOSE: block verification that, after the first rejection, draws the correction
 * token from the target's row p itself instead of the residual (p − q)₊ / Σ(p − q)₊.
 *
 * The accept test u < min(1, p(x)/q(x)) is the lesson's. But the accepted tokens already
 * supplied min(p, q) of every token's probability; drawing the correction from p adds p again
 * on top, so tokens the draft over-proposes come out too often and those it under-proposes too
 * rarely: P(output = v) = min(p(v), q(v)) + TV(p, q)·p(v) ≠ p(v). Same arguments and the same
 * order of uniforms as sd.speculativeVerify (u_1..u_k, then one for the correction or bonus).
 *
 * @param {ArrayLike<number>[]} targetRows gamma + 1 rows p_1..p_{γ+1}
 * @param {ArrayLike<number>[]} draftRows gamma rows q_1..q_γ
 * @param {ArrayLike<number>} draftTokens x_1..x_γ
 * @param {{ uniform(): number }} rng
 * @returns {{ emitted: number[], nAccepted: number }}
 */
export function verifyResamplingFromP(targetRows, draftRows, draftTokens, rng) {
  const emitted = [];
  for (let i = 0; i < draftTokens.length; i++) {
    const x = draftTokens[i];
    const p = targetRows[i][x];
    const q = draftRows[i][x];
    const u = rng.uniform();
    if (u < Math.min(1, p / q)) {
      emitted.push(x);
      continue;
    }
    // The mistake: p, where the lesson's rule uses the residual (p − q)₊.
    emitted.push(sampleToken(targetRows[i], rng.uniform()));
    return { emitted, nAccepted: i };
  }
  emitted.push(sampleToken(targetRows[draftTokens.length], rng.uniform())); // bonus: correct
  return { emitted, nAccepted: draftTokens.length };
}

/**
 * A vocabulary permutation: a seeded Fisher–Yates shuffle of 0..size − 1 with no fixed point
 * (every id moves), and its inverse.
 * @param {number} size
 * @param {{ uniform(): number }} rng
 */
export function derangement(size, rng) {
  for (;;) {
    const perm = Int32Array.from({ length: size }, (_, i) => i);
    for (let i = size - 1; i > 0; i--) {
      const j = Math.floor(rng.uniform() * (i + 1));
      const t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    if (perm.every((v, i) => v !== i)) return perm;
  }
}

/**
 * MISMATCHED ON PURPOSE: a draft built with another tokenizer, wired to the target without
 * translating ids. Its id k stands for the byte perm[k], so it reads the target's ids as other
 * bytes and proposes ids that mean other bytes to the target:
 *   draftStep(tokens) = out,  out[k] = step(tokens mapped through perm)[perm[k]].
 * (Simulated with the real draft model: `step` is its byte-level next-token function, e.g.
 * sd.modelStep(draft).) The verifier stays correct, so the output is still exactly the
 * target's; only α collapses.
 * @param {(tokens: Int32Array) => Float32Array} step the draft's own step function (byte ids)
 * @param {Int32Array} perm draft id → the byte it means
 * @returns {(tokens: Int32Array) => Float32Array}
 */
export function permutedVocabularyDraft(step, perm) {
  return (tokens) => {
    const seen = Int32Array.from(tokens, (t) => perm[t]);
    const row = step(seen);
    const out = new Float32Array(perm.length);
    for (let k = 0; k < perm.length; k++) out[k] = row[perm[k]];
    return out;
  };
}
