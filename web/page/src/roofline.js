// What one verify pass costs, measured and modelled. The lesson assumes the target scores γ + 1
// tokens in one pass for the price of one step: v = 1. On a CPU a pass over k new tokens reads
// the weights once (memory time, weight bytes / read bandwidth) and does k tokens' arithmetic
// (compute time, k × FLOP per token / compute peak); it cannot be faster than the larger of the
// two, so its cost in one-token steps is at least the roofline ratio
//   r(k) = max(W / B, k F / P) / (W / B)          (W weight bytes, B bandwidth, F FLOP, P peak).
// The page measures v(k) = time(target pass over k tokens) / time(one-token pass) through the
// public API (worker.js, measureVk), B with sd.measureReadBandwidth, and estimates P from the
// k = 8 pass. Pure functions: the page, the worker and the Node tests import them.

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
export function targetCosts({ params, passMs = [], gbPerSecond = null, peak = null }) {
  const weightBytes = weightBytesOf(params);
  const flop = flopPerTokenOf(params);
  const est = peak ? { flops: peak, fromK: null } : estimatePeak(passMs, flop);
  let memMs = NaN;
  let memSource = null;
  if (gbPerSecond > 0) {
    memMs = weightBytes / (gbPerSecond * 1e9) * 1000;
    memSource = 'bandwidth';
  } else if (passMs[1] > 0) {
    memMs = passMs[1];
    memSource = 'step';
  }
  const computeMsPerToken = est ? flop / est.flops * 1000 : NaN;
  const measured = verifyCosts(passMs);
  const roof = [];
  for (let k = 1; k <= K_MAX; k++) roof.push({ k, v: rooflineRatio(k, { memMs, computeMsPerToken }) });
  return {
    params, weightBytes, flopPerToken: flop, gbPerSecond: gbPerSecond > 0 ? gbPerSecond : null,
    peak: est, memMs, memSource, computeMsPerToken, stepMs: passMs[1] ?? NaN, measured, roof,
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

const mbText = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
const f2 = (x) => x.toFixed(2);
const gbText = (x) => `${x.toFixed(1)} GB/s`;

/** What one extra verified token costs, in one-token steps: (v(k) − 1) / (k − 1). */
export function perExtraToken(v, k) {
  return k > 1 ? Math.max(0, v - 1) / (k - 1) : NaN;
}

/**
 * The two sentences under the chart: why the large pair pays more on this machine, with the
 * numbers measured here. large / small: targetCosts(...) of the two shipped targets (one not
 * run yet has no pass times: its v comes from the roofline when the bandwidth is known, and the
 * text says so); k: the pass length to quote (γ + 1 of the run); bandwidthError: why the read
 * bandwidth could not be measured, if it could not. Claims follow the numbers: "do not fit in
 * cache" only when the large target's weights are read clearly slower than the small one's,
 * "nearly free" only when an extra token costs under 0.15 of a step. Returns a string.
 */
export function explainPairs({ large, small, k, bandwidthError = null }) {
  if (!large || !small) return '';
  const vl = costAt(large, k);
  const vs = costAt(small, k);
  const xl = vl ? perExtraToken(vl.v, k) : NaN;
  const xs = vs ? perExtraToken(vs.v, k) : NaN;
  const vText = (c) => `v(${k}) = ${f2(c.v)}, ${c.from === 'measured' ? 'measured' : 'by the roofline; run the pair to measure it'}`;
  const step = (c) => (c.stepMs > 0 ? `${f2(c.stepMs)} ms` : null);
  let ride;
  if (!vl) ride = 'ride along in the same pass (pick the large pair and run it to measure what they cost)';
  else if (xl < 0.15) ride = `ride along nearly free: ${f2(xl)} of a step each (${vText(vl)})`;
  else if (Number.isFinite(xs) && xl >= 0.85 * xs) {
    ride = `cost ${f2(xl)} of a step each here, ${xl > 1.15 * xs ? 'more than' : 'about as much as'} on the small target (${vText(vl)})`;
  }
  else ride = `cost only ${f2(xl)} of a step each (${vText(vl)})`;
  const smallCost = vs
    ? `each extra verified token costs arithmetic: ${f2(xs)} of a step (${vText(vs)})`
    : 'each extra verified token costs arithmetic (run the small pair to measure it)';
  const Bl = large.gbPerSecond;
  const Bs = small.gbPerSecond;
  if (Bl && Bs) {
    const outOfCache = Bs > 1.15 * Bl;
    const floor = `one step takes at least ${f2(large.memMs)} ms${step(large) ? ` (measured: ${step(large)})` : ''}`;
    const first = outOfCache
      ? `The large target's ${mbText(large.weightBytes)} of weights do not fit in cache: one core reads them at ${gbText(Bl)} here `
        + `(the small target's ${mbText(small.weightBytes)} at ${gbText(Bs)}), so ${floor}, and since a pass reads them once for all its tokens, the extra verified tokens ${ride}.`
      : `The large target's ${mbText(large.weightBytes)} of weights are read at ${gbText(Bl)} by one core here, `
        + `${Bs * 1.15 < Bl ? 'faster than' : 'about as fast as'} the small target's ${mbText(small.weightBytes)} (${gbText(Bs)}: `
        + `on this machine the cache does not set them apart), so ${floor}, and since a pass reads them once for all its tokens, the extra verified tokens ${ride}.`;
    const second = outOfCache
      ? `The small target's ${mbText(small.weightBytes)} sit in cache, so its step is short`
      : `The small target's ${mbText(small.weightBytes)} are read no faster, so its step is short only for having fewer weights`;
    const secondEnd = `${step(small) ? ` (${step(small)})` : ` (at least ${f2(small.memMs)} ms)`} and ${smallCost}.`;
    return `${first} ${second}${secondEnd}`;
  }
  const why = `the read bandwidth is not measured${bandwidthError ? `: ${bandwidthError}` : ''}`;
  const first = `The large target's ${mbText(large.weightBytes)} of weights are more than a CPU cache usually holds, so one step is bound by reading them `
    + `(${why}), and since a pass reads them once for all its tokens, the extra verified tokens ${ride}.`;
  const second = `The small target's ${mbText(small.weightBytes)} can sit in cache, so its step is short${step(small) ? ` (${step(small)})` : ''} and ${smallCost}.`;
  return `${first} ${second}`;
}
