// Statistics of the pitfalls lab (section 5): is a histogram of emitted tokens drawn from the
// target's distribution p? Pearson's chi-square test, with its p-value from the regularised
// upper incomplete gamma function, and the total variation distance to p; and the draw of a
// token from a row. Plain functions of numbers (no DOM, no WASM), so the worker and the Node
// tests (tests/js/chisq.test.mjs) share them.

/**
 * Inverse-CDF draw of one token from a probability row, with a uniform u in [0, 1) (the lab
 * takes it from sd.createRng(seed).uniform(), so that runs replay from their seed).
 * @param {ArrayLike<number>} row probabilities summing to 1
 * @param {number} u
 */
export function sampleToken(row, u) {
  let acc = 0;
  let last = 0;
  for (let i = 0; i < row.length; i++) {
    if (row[i] <= 0) continue;
    acc += row[i];
    last = i;
    if (u < acc) return i;
  }
  return last; // rounding: u beyond the accumulated float sum
}

// Lanczos approximation of ln Γ(z) for z > 0 (g = 7, 9 coefficients: about 15 digits).
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Γ(z), z > 0. */
export function logGamma(z) {
  if (!(z > 0)) throw new RangeError(`logGamma: z must be > 0, got ${z}`);
  if (z < 0.5) {
    // Reflection: Γ(z) Γ(1 − z) = π / sin(πz).
    return Math.log(Math.PI / Math.sin(Math.PI * z)) - logGamma(1 - z);
  }
  const x = z - 1;
  let sum = LANCZOS[0];
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i] / (x + i);
  const t = x + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(sum);
}

const EPS = 1e-15;
const TINY = 1e-300;
const MAX_ITER = 10000;

// P(a, x) by its power series: e^−x x^a / Γ(a + 1) · Σ x^n / ((a + 1)…(a + n)). Converges
// quickly for x < a + 1.
function seriesP(a, x) {
  let term = 1 / a;
  let sum = term;
  for (let n = 1; n < MAX_ITER; n++) {
    term *= x / (a + n);
    sum += term;
    if (Math.abs(term) < Math.abs(sum) * EPS) break;
  }
  return sum * Math.exp(-x + a * Math.log(x) - logGamma(a));
}

// Q(a, x) by its continued fraction (modified Lentz), for x ≥ a + 1:
// Q = e^−x x^a / Γ(a) · 1/(x + 1 − a − 1·(1 − a)/(x + 3 − a − 2·(2 − a)/(x + 5 − a − …))).
function continuedFractionQ(a, x) {
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let f = d;
  for (let i = 1; i < MAX_ITER; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    f *= delta;
    if (Math.abs(delta - 1) < EPS) break;
  }
  return Math.exp(-x + a * Math.log(x) - logGamma(a)) * f;
}

/** The regularised lower incomplete gamma function P(a, x) = γ(a, x) / Γ(a); a > 0, x ≥ 0. */
export function gammaP(a, x) {
  checkGammaArgs(a, x);
  if (x === 0) return 0;
  if (x === Infinity) return 1;
  return x < a + 1 ? seriesP(a, x) : 1 - continuedFractionQ(a, x);
}

/**
 * The regularised upper incomplete gamma function Q(a, x) = Γ(a, x) / Γ(a) = 1 − P(a, x).
 * Computed directly where it is small (the continued fraction), so tail values such as 1e-200
 * keep their digits instead of vanishing in 1 − P.
 */
export function gammaQ(a, x) {
  checkGammaArgs(a, x);
  if (x === 0) return 1;
  if (x === Infinity) return 0;
  return x < a + 1 ? 1 - seriesP(a, x) : continuedFractionQ(a, x);
}

function checkGammaArgs(a, x) {
  if (!(a > 0) || !Number.isFinite(a))
    throw new RangeError(`incomplete gamma: a must be a finite number > 0, got ${a}`);
  if (!(x >= 0)) throw new RangeError(`incomplete gamma: x must be >= 0, got ${x}`);
}

/** P(X ≥ x) for X chi-square distributed with df degrees of freedom: Q(df/2, x/2). */
export function chiSquareSurvival(x, df) {
  if (!(df > 0)) throw new RangeError(`chiSquareSurvival: df must be > 0, got ${df}`);
  if (Number.isNaN(x)) throw new RangeError('chiSquareSurvival: x is NaN');
  if (x <= 0) return 1;
  return gammaQ(df / 2, x / 2);
}

/**
 * Pools the bins whose expected count is below minExpected, as statistics texts advise before a
 * chi-square test (the chi-square law is a poor approximation for small expected counts): all
 * small bins go into one pooled bin, and if that bin is still below minExpected it is merged
 * with the smallest of the others. Returns parallel arrays of observed and expected counts.
 * @param {ArrayLike<number>} observed counts per token
 * @param {ArrayLike<number>} expected expected counts per token (n · p)
 */
export function poolBins(observed, expected, minExpected = 5) {
  const obs = [];
  const exp = [];
  let pooledObs = 0;
  let pooledExp = 0;
  let pooledCount = 0;
  for (let i = 0; i < expected.length; i++) {
    if (expected[i] >= minExpected) {
      obs.push(observed[i]);
      exp.push(expected[i]);
    } else {
      pooledObs += observed[i];
      pooledExp += expected[i];
      pooledCount++;
    }
  }
  if (pooledCount > 0 && (pooledExp > 0 || pooledObs > 0)) {
    if (pooledExp >= minExpected || exp.length === 0) {
      obs.push(pooledObs);
      exp.push(pooledExp);
    } else {
      let k = 0;
      for (let i = 1; i < exp.length; i++) if (exp[i] < exp[k]) k = i;
      obs[k] += pooledObs;
      exp[k] += pooledExp;
    }
  }
  return { observed: obs, expected: exp, pooled: pooledCount };
}

/**
 * Pearson's chi-square goodness-of-fit test of token counts against a distribution p.
 * @param {ArrayLike<number>} counts how often each token came out
 * @param {ArrayLike<number>} probs the distribution they should follow (sums to 1)
 * @returns {{ n: number, statistic: number, df: number, pValue: number, bins: number, pooled: number }}
 *   bins: bins after pooling; pooled: tokens pooled because their expected count was < 5.
 *   A token that came out although p gives it probability 0 makes the statistic infinite and
 *   the p-value 0.
 */
export function chiSquareTest(counts, probs, { minExpected = 5 } = {}) {
  if (counts.length !== probs.length)
    throw new RangeError(`chiSquareTest: ${counts.length} counts for ${probs.length} probabilities`);
  let n = 0;
  for (let i = 0; i < counts.length; i++) n += counts[i];
  let total = 0;
  for (let i = 0; i < probs.length; i++) total += probs[i];
  const expected = Array.from(probs, (p) => (n * p) / total);
  // Checked before pooling, which would hide it in a bin of other tokens.
  const impossible = expected.some((e, i) => e === 0 && counts[i] > 0);
  const pooled = poolBins(counts, expected, minExpected);
  let statistic = 0;
  for (let i = 0; i < pooled.expected.length; i++) {
    const e = pooled.expected[i];
    const o = pooled.observed[i];
    if (e > 0) statistic += ((o - e) * (o - e)) / e;
  }
  if (impossible) statistic = Infinity;
  const df = pooled.expected.length - 1;
  const pValue = statistic === Infinity ? 0 : df < 1 ? 1 : chiSquareSurvival(statistic, df);
  return { n, statistic, df, pValue, bins: pooled.expected.length, pooled: pooled.pooled };
}

/** ½ Σ |counts/n − p|: the total variation distance between the histogram and p. */
export function histogramTV(counts, probs) {
  let n = 0;
  for (let i = 0; i < counts.length; i++) n += counts[i];
  if (n === 0) return NaN;
  let tv = 0;
  for (let i = 0; i < probs.length; i++) tv += Math.abs(counts[i] / n - probs[i]);
  return tv / 2;
}

/**
 * What the TV distance of a histogram of n draws from p itself is on average (sampling noise
 * alone): ½ Σ E|f − p| ≈ ½ Σ √(2 p (1 − p) / (π n)) (normal approximation of each count).
 */
export function noiseTV(probs, n) {
  let tv = 0;
  for (let i = 0; i < probs.length; i++) tv += Math.sqrt((2 * probs[i] * (1 - probs[i])) / (Math.PI * n));
  return tv / 2;
}
