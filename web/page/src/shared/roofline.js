// What one verify pass costs, measured and modelled. The lesson assumes the target scores γ + 1
// tokens in one pass for the price of one step: v = 1. On a CPU a pass over k new tokens reads
// the weights once (memory time, weight bytes / read bandwidth) and does k tokens' arithmetic
// (compute time, k × FLOP per token / compute peak); it cannot be faster than the larger of the
// two, so its cost in one-token steps is at least the roofline ratio
//   r(k) = max(W / B, k F / P) / (W / B)          (W weight bytes, B bandwidth, F FLOP, P peak).
// The page measures v(k) = time(target pass over k tokens) / time(one-token pass) through the
// public API (worker.js, measureVk), B(T) with sd.measureReadBandwidth and P(T) with
// sd.measurePeak for the thread count T the passes use (without measurePeak, P is estimated
// from the k = 8 pass). With T threads the roofline is v(k, T) = max(W/B(T), k F/P(T)) / (W/B(T)).
// With 8-bit weights (model.weights 'int8') W is the packed weights' bytes in memory (a quarter
// of float32's, plus a scale per 32) and a token's arithmetic is integer: the Linear layers'
// multiply-adds at P_int(T) (sd.measurePeak's intGops), the rest (LM head) in float at P(T):
//   v(k, T) = max(W/B(T), k (I/P_int(T) + F'/P(T))) / (W/B(T)).
// The sentences that explain these numbers: roofline-explain.js. Pure functions: the page, the
// worker and the Node tests import them.

/** Largest k the page measures (γ = 7). */
export const K_MAX = 8;

/** The median of the finite numbers in xs (NaN when there is none). */
export function median(xs) {
  const a = xs.filter(Number.isFinite).sort((x, y) => x - y);
  if (!a.length) return NaN;
  const m = a.length >> 1;
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2;
}

/** Weights held in memory as float32 by the WASM model: 4 bytes per parameter. */
export function weightBytesOf(params) {
  return 4 * params;
}

/** FLOP of one token's matmuls: a multiply and an add per weight (attention not counted). */
export function flopPerTokenOf(params) {
  return 2 * params;
}

/**
 * v(k) from measured pass times: passMs[k] (ms of a pass over k new tokens, k = 1..K) over
 * passMs[1]. Returns [{ k, ms, v }] for the k that were measured.
 */
export function verifyCosts(passMs) {
  const one = passMs[1];
  const out = [];
  for (let k = 1; k < passMs.length; k++) {
    if (Number.isFinite(passMs[k]) && one > 0) out.push({ k, ms: passMs[k], v: passMs[k] / one });
  }
  return out;
}

/**
 * The weights of the Linear layers (attention and MLP) of a GPT block stack: 12 × layers × width²
 * (q, k, v, projection: 4 w²; the MLP's two 4w × w: 8 w²) — the weights that 8-bit holds as int8.
 * Capped at the parameter count; 0 without a config.
 */
export function linearParamsOf({ params = 0, nLayer = 0, nEmbd = 0 } = {}) {
  return Math.max(0, Math.min(params, 12 * nLayer * nEmbd * nEmbd));
}

/**
 * The compute peak (FLOP/s) estimated from the longest measured pass: k × FLOP per token / its
 * time. A lower bound of the real peak: that pass also reads the weights and runs attention.
 */
export function estimatePeak(passMs, flopPerToken) {
  for (let k = passMs.length - 1; k >= 2; k--) {
    if (passMs[k] > 0) return { flops: (k * flopPerToken) / (passMs[k] / 1000), fromK: k };
  }
  return null;
}

/**
 * The roofline ratio r(k) = max(memMs, k × computeMsPerToken) / memMs, where memMs = weight
 * bytes / bandwidth (the memory floor of one step) and computeMsPerToken = FLOP per token /
 * peak. NaN when an input is missing.
 */
export function rooflineRatio(k, { memMs, computeMsPerToken }) {
  if (!(memMs > 0) || !(computeMsPerToken > 0)) return NaN;
  return Math.max(memMs, k * computeMsPerToken) / memMs;
}

/**
 * Everything the chart and the explanation need about one target, from what was measured:
 *   params, passMs (index k; may be partial), gbPerSecond (read bandwidth over its weight bytes,
 *   or null when the module cannot measure it), peak (FLOP/s, or null: estimated from passMs).
 * memMs is W / B when B is measured; otherwise the one-token pass stands in for the floor
 * (an assumption the page states: it is then an estimate, memSource 'step').
 */
export function targetCosts({
  params,
  passMs = [],
  gbPerSecond = null,
  peak = null,
  peakMeasured = false,
  threads = 1,
  weights = 'f32',
  weightBytes: packedBytes = null,
  intParams = 0,
  intPeak = null,
}) {
  const int8 = weights === 'int8';
  const weightBytes = int8 && packedBytes > 0 ? packedBytes : weightBytesOf(params);
  const flop = flopPerTokenOf(params);
  // 8-bit: I integer ops per token (the Linear layers), the rest in float.
  const intOps = int8 ? 2 * Math.min(params, intParams) : 0;
  const floatFlop = flop - intOps;
  // peak: P (FLOP/s) measured (peakMeasured: sd.measurePeak) or borrowed from another target's
  // estimate; otherwise estimated from this target's longest pass (every operation counted).
  const achieved = estimatePeak(passMs, flop);
  const est = peak
    ? { flops: peak, fromK: null, measured: !!peakMeasured }
    : achieved
      ? { ...achieved, measured: false }
      : null;
  const intEst = int8 && intPeak > 0 ? { ops: intPeak, measured: true } : null;
  let memMs = NaN;
  let memSource = null;
  if (gbPerSecond > 0) {
    memMs = (weightBytes / (gbPerSecond * 1e9)) * 1000;
    memSource = 'bandwidth';
  } else if (passMs[1] > 0) {
    memMs = passMs[1];
    memSource = 'step';
  }
  let computeMsPerToken = est ? (flop / est.flops) * 1000 : NaN;
  // 8-bit with P_int(T) measured: the integer part at P_int, the float rest at P (when known).
  if (intEst) computeMsPerToken = (intOps / intEst.ops) * 1000 + (est?.measured ? (floatFlop / est.flops) * 1000 : 0);
  const measured = verifyCosts(passMs);
  const roof = [];
  for (let k = 1; k <= K_MAX; k++) roof.push({ k, v: rooflineRatio(k, { memMs, computeMsPerToken }) });
  return {
    params,
    weights: int8 ? 'int8' : 'f32',
    weightBytes,
    flopPerToken: flop,
    intOps,
    intPeak: intEst,
    gbPerSecond: gbPerSecond > 0 ? gbPerSecond : null,
    peak: est,
    achieved,
    memMs,
    memSource,
    computeMsPerToken,
    stepMs: passMs[1] ?? NaN,
    measured,
    roof,
    threads,
  };
}

/** v at k: measured when there is a measurement, else the roofline's; with where it came from. */
export function costAt(costs, k) {
  const m = costs?.measured?.find((x) => x.k === k);
  if (m) return { v: m.v, from: 'measured' };
  const r = costs?.roof?.find((x) => x.k === k);
  if (r && Number.isFinite(r.v)) return { v: r.v, from: 'roofline' };
  return null;
}

/** What one extra verified token costs, in one-token steps: (v(k) − 1) / (k − 1). */
export function perExtraToken(v, k) {
  return k > 1 ? Math.max(0, v - 1) / (k - 1) : NaN;
}

/** Within this fraction of a one-token step, a pass counts as "about the price of one". */
export const ABOUT_ONE = 1.1;

/**
 * The most tokens one pass verifies for about the price of one, from the measured v(k): the
 * largest k such that v(j) <= ABOUT_ONE for every measured j <= k (1 when v(2) is already above;
 * null when fewer than two k were measured). Returns { k, v } (v: v(k)) and `next`, the first
 * measured point above the limit, if any.
 */
export function tokensForOne(costs) {
  const pts = (costs?.measured ?? []).slice().sort((a, b) => a.k - b.k);
  if (pts.length < 2 || pts[0].k !== 1) return null;
  let best = pts[0];
  let next = null;
  for (const p of pts.slice(1)) {
    if (p.k !== best.k + 1) break;
    if (p.v > ABOUT_ONE) {
      next = p;
      break;
    }
    best = p;
  }
  return { k: best.k, v: best.v, next };
}

/**
 * Where the roofline turns: the k at which a pass's arithmetic (k F / P) takes as long as
 * reading the weights once (W / B) — 2P/B tokens for f32 weights. NaN without B and P.
 */
export function ridgeTokens(costs) {
  if (costs?.memSource !== 'bandwidth' || !(costs.computeMsPerToken > 0)) return NaN;
  return costs.memMs / costs.computeMsPerToken;
}
