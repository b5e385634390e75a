// The page's cost model for choosing γ from one measured run. A speculative iteration costs
// γc + v(γ+1) target steps and yields E(α, γ) tokens (the lesson's formula with the verify cost
// v measured instead of assumed to be 1). One run measures v at a single k = γ + 1; a pass over k
// tokens reads the weights once and then pays a fixed amount of arithmetic per token, so v grows
// about linearly in k (bench/run.mjs, "Verify cost v(k)"):
//   v(k) ≈ 1 + (v_measured − 1) (k − 1) / γ.

/**
 * v(k) extrapolated linearly from v measured over gamma + 1 tokens (v(1) = 1 by definition).
 * @param {number} vMeasured v(gamma + 1) of the run
 * @param {number} gamma the run's γ
 * @param {number} k tokens in the pass
 */
export function verifyCostAt(vMeasured, gamma, k) {
  return 1 + (Math.max(1, vMeasured) - 1) * (k - 1) / gamma;
}

/**
 * v(k) from a measured curve (k = 1..K, v(1) = 1: roofline.js verifyCosts), extended beyond its
 * last k along the line through v(1) and v(K). Returns a function of k, or null when the curve
 * has fewer than two points.
 * @param {{ k: number, v: number }[]} points
 */
export function curveVerifyCost(points) {
  const pts = (points ?? []).filter((p) => Number.isFinite(p.v) && p.v > 0).sort((a, b) => a.k - b.k);
  if (pts.length < 2) return null;
  const lastK = pts[pts.length - 1].k;
  const slope = (pts[pts.length - 1].v - pts[0].v) / Math.max(1, lastK - pts[0].k);
  return (k) => {
    const hit = pts.find((p) => p.k === k);
    if (hit) return hit.v;
    if (k > lastK) return pts[pts.length - 1].v + Math.max(0, slope) * (k - lastK);
    // A k inside the curve that was not measured: between its neighbours.
    const hi = pts.find((p) => p.k > k);
    const lo = [...pts].reverse().find((p) => p.k < k) ?? pts[0];
    return lo.v + (hi.v - lo.v) * (k - lo.k) / (hi.k - lo.k);
  };
}

/**
 * The γ in 1..gammaMax with the best predicted speedup E(α, γ') / (γ'c + v(γ'+1)) under the
 * measured cost model, or null when the inputs are not measurements (NaN, c < 0, v <= 0).
 * @param {{ alpha: number, gamma: number, c: number, v: number, gammaMax?: number,
 *           speedup: (alpha: number, gamma: number, c: number, v: number) => number,
 *           verifyCost?: (k: number) => number }} m
 *   speedup: the library's speculativeSpeedup (E / (γc + v)); verifyCost: v(k) measured at the
 *   run's thread count (curveVerifyCost), used instead of extrapolating the run's v(γ + 1).
 * @returns {{ gamma: number, speedup: number, current: number } | null}
 */
export function bestGamma({ alpha, gamma, c, v, gammaMax = 16, speedup, verifyCost }) {
  if (![alpha, gamma, c, v].every(Number.isFinite) || c < 0 || v <= 0 || gamma < 1) return null;
  const a = Math.min(1, Math.max(0, alpha));
  const vAt = verifyCost ?? ((k) => verifyCostAt(v, gamma, k));
  const predict = (g) => speedup(a, g, c, vAt(g + 1));
  let best = { gamma: 1, speedup: predict(1) };
  for (let g = 2; g <= gammaMax; g++) {
    const s = predict(g);
    if (s > best.speedup) best = { gamma: g, speedup: s };
  }
  return { ...best, current: predict(gamma) };
}
