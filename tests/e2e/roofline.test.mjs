// The page's v(k) arithmetic and its explanation (web/page/src/roofline.js), in Node: medians,
// v(k) from pass times, the compute peak from the longest pass, the roofline ratio
// max(W/B, k F/P) / (W/B), and the two sentences, whose claims must follow the numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  median, verifyCosts, estimatePeak, rooflineRatio, targetCosts, costAt, perExtraToken, explainPairs, K_MAX,
} from '../../web/page/src/roofline.js';

const LARGE = 19_177_472; // parameters of the 6 x 512 target
const SMALL = 4_870_144; // 6 x 256

test('median ignores what is not a number', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([NaN, 5, Infinity, 1]), 3);
  assert.ok(Number.isNaN(median([])));
});

test('v(k) = pass time over the one-token pass, for the k measured', () => {
  const v = verifyCosts([NaN, 2, 2.5, NaN, 4]);
  assert.deepEqual(v, [{ k: 1, ms: 2, v: 1 }, { k: 2, ms: 2.5, v: 1.25 }, { k: 4, ms: 4, v: 2 }]);
  assert.deepEqual(verifyCosts([NaN, NaN, 3]), [], 'no one-token pass, no v');
});

test('the compute peak comes from the longest pass: k x FLOP per token / its time', () => {
  const passMs = [NaN, 1, 1.2, 1.4, 1.6, 1.8, 2, 2.2, 2.4];
  const p = estimatePeak(passMs, 1e7);
  assert.equal(p.fromK, 8);
  assert.ok(Math.abs(p.flops - 8e7 / 2.4e-3) < 1);
  assert.equal(estimatePeak([NaN, 1], 1e7), null, 'one token says nothing about the peak');
});

test('the roofline ratio: 1 while memory-bound, then k x compute / memory', () => {
  const m = { memMs: 4, computeMsPerToken: 1 };
  assert.deepEqual([1, 2, 3, 4, 5, 8].map((k) => rooflineRatio(k, m)), [1, 1, 1, 1, 1.25, 2]);
  assert.ok(Number.isNaN(rooflineRatio(2, { memMs: NaN, computeMsPerToken: 1 })));
});

test('targetCosts: floor from the bandwidth, or the one-token step when it is not measured', () => {
  // 19.18 M parameters = 76.7 MB of f32; at 19.2 GB/s the floor is 4.0 ms.
  const passMs = [NaN, 4.4, 4.6, 4.9, 5.3, 5.8, 6.4, 7.0, 7.7];
  const c = targetCosts({ params: LARGE, passMs, gbPerSecond: 19.2 });
  assert.equal(c.weightBytes, 4 * LARGE);
  assert.ok(Math.abs(c.memMs - 4 * LARGE / 19.2e9 * 1000) < 1e-9);
  assert.equal(c.memSource, 'bandwidth');
  assert.equal(c.measured.length, 8);
  assert.equal(c.roof.length, K_MAX);
  // The peak from k = 8 puts the 8-token pass exactly on the compute roof.
  assert.ok(Math.abs(c.roof[7].v - 7.7 / c.memMs) < 1e-9);
  assert.equal(c.roof[0].v, 1);
  const noBw = targetCosts({ params: LARGE, passMs, gbPerSecond: null });
  assert.equal(noBw.memSource, 'step');
  assert.equal(noBw.memMs, 4.4);
  assert.ok(Math.abs(noBw.roof[7].v - 7.7 / 4.4) < 1e-9);
  assert.deepEqual(costAt(c, 5), { v: 5.8 / 4.4, from: 'measured' });
  const unmeasured = targetCosts({ params: SMALL, gbPerSecond: 40, peak: c.peak.flops });
  assert.equal(costAt(unmeasured, 5).from, 'roofline');
  assert.equal(costAt(targetCosts({ params: SMALL }), 5), null);
  assert.equal(perExtraToken(2, 5), 0.25);
});

const large = (v5, gbPerSecond) => targetCosts({ params: LARGE, passMs: [NaN, 4.4, 4.6, 4.9, 5.3, 4.4 * v5, 6.4, 7.0, 7.7], gbPerSecond });
const small = (v5, gbPerSecond) => targetCosts({ params: SMALL, passMs: [NaN, 0.9, 1.2, 1.6, 2.2, 0.9 * v5, 3.1, 3.5, 4.0], gbPerSecond });
const sentences = (t) => t.split(/(?<=\.) (?=[A-Z])/);

test('explanation: out of cache, memory-bound, extra tokens nearly free', () => {
  const t = explainPairs({ large: large(1.3, 19.2), small: small(3, 45.3), k: 5 });
  assert.equal(sentences(t).length, 2, t);
  assert.match(t, /^The large target's 76\.7 MB of weights do not fit in cache: one core reads them at 19\.2 GB\/s here \(the small target's 19\.5 MB at 45\.3 GB\/s\)/);
  assert.match(t, /one step takes at least 4\.00 ms \(measured: 4\.40 ms\)/);
  assert.match(t, /ride along nearly free: 0\.08 of a step each \(v\(5\) = 1\.30, measured\)/);
  assert.match(t, /The small target's 19\.5 MB sit in cache, so its step is short \(0\.90 ms\) and each extra verified token costs arithmetic: 0\.50 of a step \(v\(5\) = 3\.00, measured\)\.$/);
});

test('explanation: no cache claim when both sizes read alike; no "free" claim the numbers deny', () => {
  const same = explainPairs({ large: large(2.2, 19.2), small: small(3, 20), k: 5 });
  assert.doesNotMatch(same, /do not fit in cache|sit in cache/);
  assert.match(same, /about as fast as the small target's 19\.5 MB \(20\.0 GB\/s/);
  assert.match(same, /The small target's 19\.5 MB are read no faster, so its step is short only for having fewer weights/);
  // A small target read slower than the large one (noise on a busy machine) is not "as fast".
  const slower = explainPairs({ large: large(2.2, 15.7), small: small(3, 8.6), k: 5 });
  assert.match(slower, /faster than the small target's 19\.5 MB \(8\.6 GB\/s/);
  assert.doesNotMatch(slower, /about as fast/);
  assert.match(same, /cost only 0\.30 of a step each/);
  const worse = explainPairs({ large: large(3.4, 19.2), small: small(3, 45), k: 5 });
  assert.doesNotMatch(worse, /nearly free/);
  assert.match(worse, /cost 0\.60 of a step each here, more than on the small target/);
  const alike = explainPairs({ large: large(2.1, 19.2), small: small(2.13, 45), k: 5 });
  assert.match(alike, /cost 0\.28 of a step each here, about as much as on the small target/);
});

test('explanation without the bandwidth binding says so; an unmeasured pair says how to measure it', () => {
  const err = 'measureReadBandwidth: not in this build of the module';
  const t = explainPairs({ large: large(1.9, null), small: small(3, null), k: 5, bandwidthError: err });
  assert.equal(sentences(t).length, 2, t);
  assert.match(t, /\(the read bandwidth is not measured: measureReadBandwidth: not in this build of the module\)/);
  assert.match(t, /cost only 0\.22 of a step each \(v\(5\) = 1\.90, measured\)/);
  const notRun = explainPairs({ large: targetCosts({ params: LARGE }), small: small(3, null), k: 5, bandwidthError: err });
  assert.match(notRun, /pick the large pair and run it to measure what they cost/);
  // With the bandwidth, the pair not run yet gets the roofline's v, labelled as such.
  const peak = small(3, 45).peak.flops;
  const roof = explainPairs({ large: targetCosts({ params: LARGE, gbPerSecond: 19.2, peak }), small: small(3, 45), k: 5 });
  assert.match(roof, /v\(5\) = \d\.\d\d, by the roofline; run the pair to measure it/);
});
