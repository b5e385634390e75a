// Section 4's verdict on "Run both & compare" (web/page/src/models/verdict.js), in Node: it reads the
// spread of the per-repeat ratios (speculative tokens/s ÷ plain tokens/s, one per repeat).
// "Pays" only when every repeat's ratio is above 1, "does not pay" only when every one is below
// 1, "no measurable gain" when they fall on both sides; one ratio gets no verdict; with 3 or more
// repeats one outlier (> 15% of the median away from it and > 3 times as far as any other) is set
// aside first, so that one repeat hit by other load does not decide.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  OUTLIER,
  RULE,
  outlierOf,
  ratioVerdict,
  ratioText,
  spreadText,
  verdictHeadline,
} from '../../web/page/src/models/verdict.js';

test('every repeat faster: pays; the median is the headline number', () => {
  const v = ratioVerdict([1.31, 1.18, 1.27]);
  assert.deepEqual(v, { kind: 'pays', n: 3, median: 1.27, min: 1.18, max: 1.31, outlier: null });
  const h = verdictHeadline(v);
  assert.equal(h.cls, 'ok');
  assert.match(
    h.text,
    /^Speculation pays here: 1\.27× measured \(median; 1\.18–1\.31× over 3 repeats, every repeat faster than plain\)\. $/,
  );
});

test('every repeat slower: does not pay', () => {
  const v = ratioVerdict([0.8, 0.85, 0.82, 0.79]);
  assert.equal(v.kind, 'loses');
  assert.ok(Math.abs(v.median - 0.81) < 1e-12, 'median of an even count: the mean of the middle two');
  const h = verdictHeadline(v);
  assert.equal(h.cls, 'bad');
  assert.match(
    h.text,
    /^On this machine speculation does not pay: 0\.81× measured \(median; 0\.79–0\.85× over 4 repeats, every repeat slower/,
  );
});

test('a 1.00× run no longer reads "pays": ratios on both sides of 1 are no measurable gain', () => {
  // The run that used to read "Speculation pays here" at 1.00×.
  const v = ratioVerdict([1.004, 0.97, 1.03]);
  assert.equal(v.kind, 'even');
  assert.equal(v.median, 1.004);
  const h = verdictHeadline(v);
  assert.equal(h.cls, 'even');
  assert.match(
    h.text,
    /^No measurable gain: 1\.004× measured \(median; 0\.97–1\.03× over 3 repeats: the repeats fall on both sides of 1×\)/,
  );
  assert.doesNotMatch(h.text, /pays/);
  // A median well above 1 with one repeat below it, as far from the median as the other: within
  // the spread (the page's first load on a loaded machine, issue 29).
  assert.equal(ratioVerdict([1.41, 0.84, 1.95]).kind, 'even');
  // Exactly 1 is not above 1.
  assert.equal(ratioVerdict([1, 1.2, 1.3]).kind, 'even');
  assert.equal(ratioVerdict([0.9, 0.95, 1]).kind, 'even');
});

test('pays just above 1 says so with three decimals, never "1.00×"', () => {
  const v = ratioVerdict([1.003, 1.001, 1.002]);
  assert.equal(v.kind, 'pays');
  assert.equal(ratioText(v.median), '1.002×');
  assert.equal(spreadText(v), '1.001–1.003× over 3 repeats');
  assert.equal(ratioText(1), '1.00×');
  assert.equal(ratioText(1.234), '1.23×');
  assert.equal(ratioText(0.996), '0.996×');
  assert.equal(ratioText(NaN), '–');
});

test('one ratio has no spread: no verdict; none at all: the prediction or a hint', () => {
  const one = ratioVerdict([1.5]);
  assert.equal(one.kind, 'single');
  const h = verdictHeadline(one);
  assert.match(
    h.text,
    /^1\.50× measured from one plain and one speculative run: one ratio has no spread, so no verdict/,
  );
  assert.doesNotMatch(h.text, /pays/);
  const none = ratioVerdict([NaN, Infinity, 0, -1]);
  assert.equal(none.kind, 'none');
  assert.equal(none.n, 0);
  assert.match(verdictHeadline(none, { predicted: 1.3 }).text, /^Predicted from the measured costs: 1\.30×/);
  assert.match(verdictHeadline(none).text, /^Run plain decoding too/);
  assert.equal(ratioVerdict(undefined).kind, 'none');
});

// The rule, case by case: [ratios, kind, outlier set aside].
const CASES = [
  // Warm repeats on a quiet machine.
  [[1.31, 1.18, 1.27], 'pays', null],
  [[0.8, 0.85, 0.82, 0.79], 'loses', null],
  [[1.004, 0.97, 1.03], 'even', null],
  [[1.2, 1.25], 'pays', null],
  [[0.9, 1.3], 'even', null], // two repeats: no outlier is set aside
  // One repeat hit by a burst of other load: set aside, it does not flip the verdict.
  [[1.29, 1.31, 0.84], 'pays', 0.84],
  [[0.98, 1.6, 1.7], 'pays', 0.98],
  [[1.3, 1.31, 2.5], 'pays', 2.5],
  [[1.3, 1.28, 1.33, 0.7, 1.31], 'pays', 0.7],
  [[0.8, 0.82, 1.5], 'loses', 1.5],
  // Not outliers: too close to the median (≤ 15% of it), or not alone (another repeat as far).
  [[1.02, 1.03, 0.9], 'even', null],
  [[1.41, 0.84, 1.95], 'even', null],
  [[1.3, 0.8, 0.82, 1.31], 'even', null],
  // Two repeats below 1 of five: one outlier at most is set aside.
  [[1.3, 1.31, 1.29, 0.6, 0.62], 'even', null],
  // Setting the outlier aside does not help when the rest straddle 1.
  [[0.99, 1.01, 2.0], 'even', 2.0],
];

test('the rule, case by case: one outlier repeat set aside, the rest decide', () => {
  for (const [ratios, kind, outlier] of CASES) {
    const v = ratioVerdict(ratios);
    assert.equal(v.kind, kind, `${ratios}: ${v.kind}`);
    assert.equal(v.outlier, outlier, `${ratios}: outlier ${v.outlier}`);
    const sorted = [...ratios].sort((a, b) => a - b);
    assert.equal(
      v.median,
      sorted.length % 2 ? sorted[sorted.length >> 1] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2,
      'the headline number is the median of all repeats',
    );
  }
  const h = verdictHeadline(ratioVerdict([1.29, 1.31, 0.84]));
  assert.match(
    h.text,
    /^Speculation pays here: 1\.29× measured \(median; 0\.84–1\.31× over 3 repeats, every other repeat faster than plain; one, 0\.84×, set aside as an outlier\)\. $/,
  );
  assert.match(
    verdictHeadline(ratioVerdict([0.99, 1.01, 2.0])).text,
    /both sides of 1×, even with one, 2\.00×, set aside as an outlier\)/,
  );
});

test('the rule the page states matches the rule the code applies', () => {
  assert.match(RULE, /“pays” only when every repeat’s ratio .* is above 1/);
  assert.match(RULE, /“does not pay” only when every one is below 1/);
  assert.match(RULE, /no measurable gain/);
  assert.match(
    RULE,
    new RegExp(
      `one outlier is set aside first: the ratio farthest from the median, when it is more than ${OUTLIER.fraction * 100}% of the median away and more than ${OUTLIER.times} times as far as any other repeat`,
    ),
  );
  // Randomised: the kind follows min and max of the repeats left once the outlier is set aside.
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  let setAside = 0;
  for (let i = 0; i < 500; i++) {
    const xs = Array.from({ length: 2 + (i % 6) }, () => 0.7 + 0.6 * rand());
    if (i % 3 === 0) xs[0] = 0.3 + 2 * rand(); // now and then a wild repeat
    const v = ratioVerdict(xs);
    const sorted = [...xs].sort((a, b) => a - b);
    const out = outlierOf(sorted);
    const kept = out === null ? xs : xs.filter((x, j) => j !== xs.indexOf(out));
    if (out !== null) setAside++;
    const want = Math.min(...kept) > 1 ? 'pays' : Math.max(...kept) < 1 ? 'loses' : 'even';
    assert.equal(v.kind, want, xs.join(', '));
    // An outlier is never one of two repeats, is > 15% of the median away and > 3x the next.
    if (out !== null) {
      assert.ok(xs.length >= 3);
      const d = sorted.map((x) => Math.abs(x - v.median)).sort((a, b) => b - a);
      assert.ok(d[0] > 0.15 * v.median && d[0] > 3 * d[1], xs.join(', '));
    }
  }
  assert.ok(setAside > 10, `outliers set aside: ${setAside}`);
});
