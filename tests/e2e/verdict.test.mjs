// Section 4's verdict on "Run both & compare" (web/page/src/verdict.js), in Node: it reads the
// spread of the per-repeat ratios (speculative tokens/s ÷ plain tokens/s, one per repeat).
// "Pays" only when every repeat's ratio is above 1, "does not pay" only when every one is below
// 1, "no measurable gain" when they fall on both sides; one ratio gets no verdict.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RULE, ratioVerdict, ratioText, spreadText, verdictHeadline } from '../../web/page/src/verdict.js';

test('every repeat faster: pays; the median is the headline number', () => {
  const v = ratioVerdict([1.31, 1.18, 1.27]);
  assert.deepEqual(v, { kind: 'pays', n: 3, median: 1.27, min: 1.18, max: 1.31 });
  const h = verdictHeadline(v);
  assert.equal(h.cls, 'ok');
  assert.match(h.text, /^Speculation pays here: 1\.27× measured \(median; 1\.18–1\.31× over 3 repeats, every repeat faster than plain\)\. $/);
});

test('every repeat slower: does not pay', () => {
  const v = ratioVerdict([0.8, 0.85, 0.82, 0.79]);
  assert.equal(v.kind, 'loses');
  assert.ok(Math.abs(v.median - 0.81) < 1e-12, 'median of an even count: the mean of the middle two');
  const h = verdictHeadline(v);
  assert.equal(h.cls, 'bad');
  assert.match(h.text, /^On this machine speculation does not pay: 0\.81× measured \(median; 0\.79–0\.85× over 4 repeats, every repeat slower/);
});

test('a 1.00× run no longer reads "pays": ratios on both sides of 1 are no measurable gain', () => {
  // The run that used to read "Speculation pays here" at 1.00×.
  const v = ratioVerdict([1.004, 0.97, 1.03]);
  assert.equal(v.kind, 'even');
  assert.equal(v.median, 1.004);
  const h = verdictHeadline(v);
  assert.equal(h.cls, 'even');
  assert.match(h.text, /^No measurable gain: 1\.004× measured \(median; 0\.97–1\.03× over 3 repeats: the repeats fall on both sides of 1×\)/);
  assert.doesNotMatch(h.text, /pays/);
  // A median well above 1 with one repeat below it: still within the spread.
  assert.equal(ratioVerdict([0.98, 1.6, 1.7]).kind, 'even');
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
  assert.match(h.text, /^1\.50× measured from one plain and one speculative run: one ratio has no spread, so no verdict/);
  assert.doesNotMatch(h.text, /pays/);
  const none = ratioVerdict([NaN, Infinity, 0, -1]);
  assert.equal(none.kind, 'none');
  assert.equal(none.n, 0);
  assert.match(verdictHeadline(none, { predicted: 1.3 }).text, /^Predicted from the measured costs: 1\.30×/);
  assert.match(verdictHeadline(none).text, /^Run plain decoding too/);
  assert.equal(ratioVerdict(undefined).kind, 'none');
});

test('the rule the page states matches the rule the code applies', () => {
  assert.match(RULE, /“pays” only when every repeat’s ratio .* is above 1/);
  assert.match(RULE, /“does not pay” only when every one is below 1/);
  assert.match(RULE, /no measurable gain/);
  // Randomised: the kind follows min and max exactly.
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let i = 0; i < 500; i++) {
    const xs = Array.from({ length: 2 + (i % 6) }, () => 0.7 + 0.6 * rand());
    const v = ratioVerdict(xs);
    const want = Math.min(...xs) > 1 ? 'pays' : Math.max(...xs) < 1 ? 'loses' : 'even';
    assert.equal(v.kind, want, xs.join(', '));
  }
});
