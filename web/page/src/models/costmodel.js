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
  return 1 + ((Math.max(1, vMeasured) - 1) * (k - 1)) / gamma;
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
    return lo.v + ((hi.v - lo.v) * (k - lo.k)) / (hi.k - lo.k);
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

const sum = (runs, f) => runs.reduce((s, r) => s + (Number(f(r)) || 0), 0);

/**
 * The costs of one comparison, as the speed-up it explains counts them. A run's tokens/s is its
 * tokens over its total time, so the speed-up of speculative over plain decoding is a ratio of
 * total times: (tokens per iteration) × (mean plain step) / (mean speculative iteration). The
 * costs are therefore means — total time ÷ count, over every timed repeat of each run, the same
 * time tokens/s divides by (each step() call whole: the passes and the sampling, acceptance and
 * bookkeeping around them):
 *   step       one plain step, ms: the plain runs' time ÷ their steps (or `calibrationMs` when no
 *              plain run with these settings is there);
 *   iteration  one speculative iteration, ms: the speculative runs' time ÷ their iterations;
 *   c          one draft pass in steps: the draft's time per iteration ÷ γ ÷ step;
 *   v          the rest of an iteration in steps — the verify pass over γ + 1 tokens and the
 *              acceptance test: (iteration − draft time per iteration) ÷ step;
 * so γc + v = iteration ÷ step exactly, and E(α, γ) / (γc + v), with α the run's measured
 * acceptance (accepted ÷ examined positions over its repeats) and E the lesson's
 * (1 − α^(γ+1)) / (1 − α), predicts the measured speed-up up to how far the run's tokens per
 * iteration are from E. (Medians of the passes leave out exactly the slow passes that total times
 * include, which made the page's prediction 1.3–1.5× the measured speed-up on a loaded machine.)
 * @param {object} m
 * @param {object[]} [m.plainRuns]  the plain runs' summaries ({ computeMs, targetPasses, iterations? })
 * @param {object[]} m.specRuns  the speculative runs' summaries ({ computeMs, iterations,
 *   targetPasses, draftMs, draftPasses, targetMs, accepted, examined, alpha })
 * @param {number} [m.calibrationMs]  one step, ms, when there is no plain run
 * @param {number} m.gamma  the run's γ
 * @param {(alpha: number, gamma: number) => number} m.expectedAcceptedTokens  the lesson's E
 * @returns {{ stepMs: number, steps: number, iterationMs: number, iterations: number, draftMs: number,
 *   verifyMs: number, c: number, v: number, alpha: number, E: number, predicted: number,
 *   predictedV: number } | null}  predicted: E / (γc + 1); predictedV: E / (γc + v); null when
 *   nothing was timed.
 */
export function meanCosts({ plainRuns = [], specRuns, calibrationMs = NaN, gamma, expectedAcceptedTokens }) {
  const specs = (specRuns ?? []).filter((r) => r && r.computeMs > 0);
  const plains = (plainRuns ?? []).filter((r) => r && r.computeMs > 0);
  const iterations = sum(specs, (r) => r.iterations || r.targetPasses);
  if (!iterations || !(gamma >= 1)) return null;
  const steps = sum(plains, (r) => r.iterations || r.targetPasses);
  const stepMs = steps ? sum(plains, (r) => r.computeMs) / steps : calibrationMs;
  const iterationMs = sum(specs, (r) => r.computeMs) / iterations;
  const draftMs = sum(specs, (r) => r.draftMs) / iterations; // the draft's time per iteration
  const verifyMs =
    sum(specs, (r) => r.targetMs) /
    Math.max(
      1,
      sum(specs, (r) => r.targetPasses),
    );
  const examined = sum(specs, (r) => r.examined);
  const alpha = Math.min(1, Math.max(0, examined ? sum(specs, (r) => r.accepted) / examined : specs[0].alpha));
  const E = Number.isFinite(alpha) ? expectedAcceptedTokens(alpha, gamma) : NaN;
  const ok = stepMs > 0;
  const drafts = sum(specs, (r) => r.draftPasses) > 0; // prompt lookup runs no model: c = 0
  const c = ok ? (drafts ? draftMs / gamma / stepMs : 0) : NaN;
  const v = ok ? (iterationMs - (drafts ? draftMs : 0)) / stepMs : NaN;
  return {
    stepMs,
    steps,
    iterationMs,
    iterations,
    draftMs,
    verifyMs,
    c,
    v,
    alpha,
    E,
    predicted: ok ? E / (gamma * c + 1) : NaN,
    predictedV: ok && v > 0 ? E / (gamma * c + v) : NaN,
  };
}
