// The pitfalls lab's statistics (web/page/src/pitfalls/stats.js): the chi-square survival function
// Q(df/2, x/2) against reference values, bin pooling, the test on simulated histograms, and the
// inverse-CDF draw the lab samples tokens with.
//
// References: computed with mpmath 1.3.0 at 40 significant digits,
//   mpmath.gammainc(df/2, x/2, mpmath.inf, regularized=True)
// (the regularised upper incomplete gamma function); the 5% critical values 3.841, 18.307 and
// 293.25 are those of the usual chi-square tables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chiSquareSurvival,
  chiSquareTest,
  gammaP,
  gammaQ,
  histogramTV,
  logGamma,
  noiseTV,
  poolBins,
  sampleToken,
} from '../../web/page/src/pitfalls/stats.js';

/** [df, x, Q(df/2, x/2)] */
const REFERENCE = [
  [1, 3.841458820694124, 0.050000000000000057],
  [1, 3.841, 0.050013683763956699],
  [10, 18.307, 0.05000058909139812],
  [255, 293.25, 0.049990990308137282],
  [5, 50, 1.3857973367009593e-9],
  [2, 2, 0.36787944117144232], // e^-1: Q(1, 1)
  [1, 0.5, 0.47950012218695346],
  [3, 0.1, 0.99183742373187648],
  [100, 100, 0.48119168452795672],
  [50, 200, 7.8576107246547436e-20],
  [255, 200, 0.9954254445419519],
  [1, 1e-6, 0.99920211557217787],
  [4, 1e-3, 0.99999987504165886],
  [30, 31, 0.41540711014779169],
  [20, 150, 6.285681673933381e-22],
  [1000, 1100, 0.014614408126295194],
  [7, 1000, 1.2044267735190188e-211],
  [255, 1000, 9.3784773436583981e-89],
];

const close = (got, want, rel, what) => {
  assert.ok(
    Math.abs(got - want) <= rel * Math.abs(want),
    `${what}: got ${got}, want ${want} (relative error ${Math.abs(got - want) / Math.abs(want)})`,
  );
};

test('chi-square survival function against reference values (relative error < 1e-9)', () => {
  for (const [df, x, want] of REFERENCE) close(chiSquareSurvival(x, df), want, 1e-9, `df=${df} x=${x}`);
});

test('the textbook 5% critical values give 0.05', () => {
  assert.equal(chiSquareSurvival(3.841, 1).toFixed(4), '0.0500');
  assert.equal(chiSquareSurvival(18.307, 10).toFixed(4), '0.0500');
  assert.equal(chiSquareSurvival(293.25, 255).toFixed(4), '0.0500');
});

test('P + Q = 1, both in [0, 1], edge values', () => {
  for (const a of [0.5, 1, 2.5, 10, 127.5, 500]) {
    for (const x of [0, 1e-8, 0.3, a - 0.5, a + 1, a + 3, 2 * a + 10]) {
      const p = gammaP(a, x);
      const q = gammaQ(a, x);
      assert.ok(p >= 0 && p <= 1 && q >= 0 && q <= 1, `a=${a} x=${x}: P=${p} Q=${q}`);
      assert.ok(Math.abs(p + q - 1) < 1e-12, `a=${a} x=${x}: P + Q = ${p + q}`);
    }
  }
  assert.equal(chiSquareSurvival(0, 3), 1);
  assert.equal(gammaQ(2, Infinity), 0);
  // Q(1, x) = e^-x and Q(1/2, x) = erfc(√x): closed forms.
  for (const x of [0.1, 1, 5, 40]) close(gammaQ(1, x), Math.exp(-x), 1e-12, `Q(1, ${x})`);
  assert.throws(() => gammaQ(0, 1), RangeError);
  assert.throws(() => gammaQ(1, -1), RangeError);
});

test('ln Γ against factorials and Γ(1/2) = √π', () => {
  assert.ok(Math.abs(logGamma(1)) < 1e-14 && Math.abs(logGamma(2)) < 1e-14, 'lnΓ(1) = lnΓ(2) = 0');
  for (const [n, fact] of [
    [5, 24],
    [11, 3628800],
    [21, 2432902008176640000],
  ]) {
    close(logGamma(n), Math.log(fact), 1e-13, `lnΓ(${n})`);
  }
  close(logGamma(0.5), Math.log(Math.sqrt(Math.PI)), 1e-13, 'lnΓ(1/2)');
  close(logGamma(0.1), Math.log(9.513507698668731836), 1e-13, 'lnΓ(0.1)');
});

test('bins with expected counts under 5 are pooled', () => {
  // Two small bins pool into one of 6; a lone small bin is merged with the smallest other.
  assert.deepEqual(poolBins([10, 20, 3, 2], [12, 18, 3, 3]), {
    observed: [10, 20, 5],
    expected: [12, 18, 6],
    pooled: 2,
  });
  assert.deepEqual(poolBins([10, 20, 1], [12, 18, 2]), {
    observed: [11, 20],
    expected: [14, 18],
    pooled: 1,
  });
  assert.deepEqual(poolBins([5, 5], [5, 5]), { observed: [5, 5], expected: [5, 5], pooled: 0 });
  // A 256-token distribution with a long tail of tiny probabilities: far fewer bins.
  const p = Array.from({ length: 256 }, (_, i) => Math.exp(-i / 4));
  const s = p.reduce((a, b) => a + b, 0);
  const r = chiSquareTest(
    p.map((x) => Math.round((1000 * x) / s)),
    p.map((x) => x / s),
  );
  assert.ok(r.bins < 30 && r.pooled > 200, `bins ${r.bins}, pooled ${r.pooled}`);
  assert.equal(r.df, r.bins - 1);
});

test('the test accepts draws from p and rejects draws from another distribution', () => {
  // A small seeded generator (mulberry32), so the test is deterministic.
  let state = 12345;
  const uniform = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const draw = (probs, n) => {
    const counts = new Array(probs.length).fill(0);
    for (let k = 0; k < n; k++) {
      let u = uniform();
      let i = 0;
      while (i < probs.length - 1 && u >= probs[i]) u -= probs[i++];
      counts[i]++;
    }
    return counts;
  };
  const p = [0.4, 0.25, 0.15, 0.1, 0.06, 0.04];
  const near = [0.39, 0.26, 0.15, 0.1, 0.06, 0.04];
  // Under p the p-value is uniform: over 200 seeded histograms about 5% fall under 0.05.
  let under = 0;
  for (let r = 0; r < 200; r++) if (chiSquareTest(draw(p, 2000), p).pValue < 0.05) under++;
  assert.ok(under >= 2 && under <= 22, `${under} of 200 p-values under 0.05`);
  const same = chiSquareTest(draw(p, 20000), p);
  assert.ok(same.pValue > 1e-3, `p-value ${same.pValue}`);
  const other = chiSquareTest(draw(near, 80000), p);
  assert.ok(other.pValue < 1e-3, `p-value ${other.pValue}`);
  // A token p rules out: p-value 0.
  assert.equal(chiSquareTest([10, 10, 1], [0.5, 0.5, 0]).pValue, 0);
});

test('TV distance of a histogram, and its sampling noise', () => {
  assert.equal(histogramTV([50, 50], [0.5, 0.5]), 0);
  assert.ok(Math.abs(histogramTV([70, 30], [0.5, 0.5]) - 0.2) < 1e-12);
  // Two bins of 1/2 with n draws: E|f − 1/2| ≈ √(1/(2πn)) each.
  assert.ok(Math.abs(noiseTV([0.5, 0.5], 10000) - Math.sqrt(1 / (2 * Math.PI * 10000))) < 1e-12);
});

test('inverse-CDF draw: each token over its own interval of u, never a token of probability 0', () => {
  const row = [0.2, 0, 0.5, 0.3, 0];
  assert.equal(sampleToken(row, 0), 0);
  assert.equal(sampleToken(row, 0.199), 0);
  assert.equal(sampleToken(row, 0.2), 2);
  assert.equal(sampleToken(row, 0.69), 2);
  assert.equal(sampleToken(row, 0.7), 3);
  // A float32 row may sum to a hair under 1: the last possible token, not one of probability 0.
  assert.equal(sampleToken(Float32Array.from([0.1, 0.2, 0.3, 0.3999999, 0]), 0.99999999), 3);
});
