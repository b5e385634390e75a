// The page's v(k) arithmetic and its explanation (web/page/src/shared/roofline.js), in Node: medians,
// v(k) from pass times, the compute peak from the longest pass, the roofline ratio
// max(W/B, k F/P) / (W/B), and the two sentences, whose claims must follow the numbers; with T
// threads, the sentences after them (tokens a pass verifies for about the price of one, and the
// prediction for E/(γc + v)), and the measured v(k) curve the γ suggestion uses (costmodel.js);
// the 8-bit roofline and verdict (explainWeights) and the weights' default (weights.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  median,
  verifyCosts,
  estimatePeak,
  rooflineRatio,
  targetCosts,
  costAt,
  perExtraToken,
  K_MAX,
  tokensForOne,
  ridgeTokens,
  linearParamsOf,
} from '../../web/page/src/shared/roofline.js';
import {
  explainPairs,
  explainThreads,
  explainGpu,
  explainWeights,
} from '../../web/page/src/shared/roofline-explain.js';
import { decideDefault, defaultText, keepDefault, storedDefault } from '../../web/page/src/shared/weights.js';
import { bestGamma, curveVerifyCost } from '../../web/page/src/models/costmodel.js';

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
  assert.deepEqual(v, [
    { k: 1, ms: 2, v: 1 },
    { k: 2, ms: 2.5, v: 1.25 },
    { k: 4, ms: 4, v: 2 },
  ]);
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
  assert.deepEqual(
    [1, 2, 3, 4, 5, 8].map((k) => rooflineRatio(k, m)),
    [1, 1, 1, 1, 1.25, 2],
  );
  assert.ok(Number.isNaN(rooflineRatio(2, { memMs: NaN, computeMsPerToken: 1 })));
});

test('targetCosts: floor from the bandwidth, or the one-token step when it is not measured', () => {
  // 19.18 M parameters = 76.7 MB of f32; at 19.2 GB/s the floor is 4.0 ms.
  const passMs = [NaN, 4.4, 4.6, 4.9, 5.3, 5.8, 6.4, 7.0, 7.7];
  const c = targetCosts({ params: LARGE, passMs, gbPerSecond: 19.2 });
  assert.equal(c.weightBytes, 4 * LARGE);
  assert.ok(Math.abs(c.memMs - ((4 * LARGE) / 19.2e9) * 1000) < 1e-9);
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

const large = (v5, gbPerSecond) =>
  targetCosts({
    params: LARGE,
    passMs: [NaN, 4.4, 4.6, 4.9, 5.3, 4.4 * v5, 6.4, 7.0, 7.7],
    gbPerSecond,
  });
const small = (v5, gbPerSecond) =>
  targetCosts({
    params: SMALL,
    passMs: [NaN, 0.9, 1.2, 1.6, 2.2, 0.9 * v5, 3.1, 3.5, 4.0],
    gbPerSecond,
  });
const sentences = (t) => t.split(/(?<=\.) (?=[A-Z])/);

test('explanation: out of cache, memory-bound, extra tokens nearly free', () => {
  const t = explainPairs({ large: large(1.3, 19.2), small: small(3, 45.3), k: 5 });
  assert.equal(sentences(t).length, 2, t);
  assert.match(
    t,
    /^The large target's 76\.7 MB of weights do not fit in cache: one core reads them at 19\.2 GB\/s here \(the small target's 19\.5 MB at 45\.3 GB\/s\)/,
  );
  assert.match(t, /one step takes at least 4\.00 ms \(measured: 4\.40 ms\)/);
  assert.match(t, /ride along nearly free: 0\.08 of a step each \(v\(5\) = 1\.30, measured\)/);
  assert.match(
    t,
    /The small target's 19\.5 MB sit in cache, so its step is short \(0\.90 ms\) and each extra verified token costs arithmetic: 0\.50 of a step \(v\(5\) = 3\.00, measured\)\.$/,
  );
});

test('explanation: no cache claim when both sizes read alike; no "free" claim the numbers deny', () => {
  const same = explainPairs({ large: large(2.2, 19.2), small: small(3, 20), k: 5 });
  assert.doesNotMatch(same, /do not fit in cache|sit in cache/);
  assert.match(same, /about as fast as the small target's 19\.5 MB \(20\.0 GB\/s/);
  assert.match(
    same,
    /The small target's 19\.5 MB are read no faster, so its step is short only for having fewer weights/,
  );
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
  const t = explainPairs({
    large: large(1.9, null),
    small: small(3, null),
    k: 5,
    bandwidthError: err,
  });
  assert.equal(sentences(t).length, 2, t);
  assert.match(t, /\(the read bandwidth is not measured: measureReadBandwidth: not in this build of the module\)/);
  assert.match(t, /cost only 0\.22 of a step each \(v\(5\) = 1\.90, measured\)/);
  const notRun = explainPairs({
    large: targetCosts({ params: LARGE }),
    small: small(3, null),
    k: 5,
    bandwidthError: err,
  });
  assert.match(notRun, /pick the large pair and run it to measure what they cost/);
  // With the bandwidth, the pair not run yet gets the roofline's v, labelled as such.
  const peak = small(3, 45).peak.flops;
  const roof = explainPairs({
    large: targetCosts({ params: LARGE, gbPerSecond: 19.2, peak }),
    small: small(3, 45),
    k: 5,
  });
  assert.match(roof, /v\(5\) = \d\.\d\d, by the roofline; run the pair to measure it/);
});

test('with T threads the sentences say "T threads", not "one core"', () => {
  const t = explainPairs({ large: large(1.3, 19.2), small: small(3, 45.3), k: 5, threads: 2 });
  assert.match(t, /do not fit in cache: 2 threads read them at 19\.2 GB\/s here/);
  assert.doesNotMatch(t, /one core/);
  const same = explainPairs({ large: large(2.2, 19.2), small: small(3, 20), k: 5, threads: 4 });
  assert.match(same, /are read at 19\.2 GB\/s by 4 threads here/);
});

// The speedup formula, written independently: E(α, γ) / (γc + v).
const speedup = (a, g, c, v) => (a >= 1 ? g + 1 : (1 - a ** (g + 1)) / (1 - a)) / (g * c + v);
const E = (a, g) => speedup(a, g, 0, 1);

test('tokens for the price of one: the longest run of measured v(k) within 10 % of a step', () => {
  const c = targetCosts({
    params: LARGE,
    passMs: [NaN, 4, 4.1, 4.3, 4.35, 5, 6, 7, 8],
    gbPerSecond: 19.2,
    peak: 50e9,
    peakMeasured: true,
    threads: 2,
  });
  assert.deepEqual(tokensForOne(c), { k: 4, v: 4.35 / 4, next: { k: 5, ms: 5, v: 1.25 } });
  assert.equal(tokensForOne(targetCosts({ params: SMALL, passMs: [NaN, 1, 1.5, 2] })).k, 1);
  assert.equal(tokensForOne(targetCosts({ params: SMALL, passMs: [NaN, 1] })), null, 'one point says nothing');
  // 2P/B tokens: F/W = 1/2 FLOP per byte for f32 weights.
  assert.ok(Math.abs(ridgeTokens(c) - (2 * 50e9) / 19.2e9) < 1e-9);
  assert.ok(Number.isNaN(ridgeTokens(targetCosts({ params: SMALL, passMs: [NaN, 1, 2] }))), 'no B, no ridge');
});

test('explainThreads: the measured count, the roofline turn, the prediction for the last run', () => {
  const passMs = [NaN, 4, 4.1, 4.3, 4.35, 5, 6, 7, 8];
  const costs = targetCosts({
    params: LARGE,
    passMs,
    gbPerSecond: 19.2,
    peak: 50e9,
    peakMeasured: true,
    threads: 2,
  });
  const one = targetCosts({
    params: LARGE,
    passMs: [NaN, 6, 6.5, 7.8],
    gbPerSecond: 15,
    peak: 26e9,
    peakMeasured: true,
    threads: 1,
  });
  const run = { alpha: 0.8, gamma: 4, c: 0.05, E: E(0.8, 4), threads: 2 };
  const t = explainThreads({ costs, threads: 2, one, run, speedup });
  assert.match(
    t,
    /^On this machine with 2 threads, one target pass verifies up to 4 tokens for about the price of one \(v\(4\) = 1\.09 measured, within 10 % of a one-token step; v\(5\) = 1\.25\) \(with 1 thread: up to 2\)/,
  );
  assert.match(t, /the roofline of B\(2\) = 19\.2 GB\/s and P\(2\) = 50\.0 GFLOP\/s turns at k = 2P\/B ≈ 5\.2/);
  assert.match(t, /turns at k = 2P\/B ≈ 5\.2, so the measured v\(k\) rises sooner than the roofline/);
  // (Written from the shown numbers: 3.36 / 1.450, whatever the unrounded E.)
  assert.ok(Math.abs(3.36 / 1.45 - speedup(0.8, 4, 0.05, 1.25)) < 0.01);
  assert.match(
    t,
    new RegExp(
      `For the last run \\(γ = 4, α = 0\\.80, c = 0\\.050 with 2 threads\\) that predicts E/\\(γc \\+ v\\(5\\)\\) = 3\\.36 / \\(4·0\\.050 \\+ 1\\.25\\) = 3\\.36 / 1\\.450 = ${(3.36 / 1.45).toFixed(2)}×`,
    ),
  );
  assert.doesNotMatch(t, /did not get cores/, 'P(2) is well above P(1)');
  // A run on another thread count is not quoted; nor is a v the roofline guessed.
  assert.doesNotMatch(
    explainThreads({ costs, threads: 2, one, run: { ...run, threads: 1 }, speedup }),
    /For the last run/,
  );
  assert.doesNotMatch(
    explainThreads({ costs, threads: 2, one, run: { ...run, gamma: 9 }, speedup }),
    /For the last run/,
  );
});

test('explainThreads claims no more than the numbers: no free token, threads that got no cores, a floor the step beats', () => {
  // Both cases below on one machine at 2 threads: B(2) = 40 GB/s, P(2) = 30 GFLOP/s measured.
  const twoThreads = { gbPerSecond: 40, peak: 30e9, peakMeasured: true, threads: 2 };
  const dear = targetCosts({ params: SMALL, passMs: [NaN, 1, 1.6, 2.2], ...twoThreads });
  const one = targetCosts({ params: SMALL, gbPerSecond: 45, peak: 29e9, peakMeasured: true });
  const t = explainThreads({ costs: dear, threads: 2, one });
  assert.match(
    t,
    /^On this machine with 2 threads, no second token rides along for about the price of one: v\(2\) = 1\.60 measured/,
  );
  assert.match(
    t,
    /P\(2\) = 30\.0 GFLOP\/s is not clearly above P\(1\) = 29\.0 GFLOP\/s here: the extra threads did not get cores of their own/,
  );
  assert.match(t, /and B\(2\) = 40\.0 GB\/s is not above B\(1\) = 45\.0 GB\/s either/);
  // The one-token step (0.20 ms) is faster than W/B = 0.49 ms: B was measured low.
  const low = targetCosts({ params: SMALL, passMs: [NaN, 0.2, 0.3, 0.4], ...twoThreads });
  const u = explainThreads({ costs: low, threads: 2 });
  assert.match(
    u,
    /The measured one-token pass \(0\.20 ms\) is faster than the floor W\/B\(2\) = 0\.49 ms, so B\(2\) = 40\.0 GB\/s was measured low here/,
  );
  assert.doesNotMatch(u, /turns at/, 'no roofline claim from a floor the step beats');
  assert.equal(
    explainThreads({ costs: targetCosts({ params: SMALL }), threads: 2 }),
    '',
    'nothing measured, nothing said',
  );
});

test('the γ suggestion with v(k) measured at the thread count: the curve, extended along its line', () => {
  const v = curveVerifyCost([
    { k: 1, v: 1 },
    { k: 2, v: 1.1 },
    { k: 4, v: 1.5 },
    { k: 8, v: 2.4 },
  ]);
  assert.equal(v(2), 1.1);
  assert.ok(Math.abs(v(3) - 1.3) < 1e-12, 'between measured neighbours');
  assert.ok(Math.abs(v(10) - (2.4 + 2 * (1.4 / 7))) < 1e-12, 'beyond k = 8 along the line through v(1) and v(8)');
  assert.equal(curveVerifyCost([{ k: 1, v: 1 }]), null);
  // A flat curve (memory-bound) favours a longer γ than a steep one.
  const flat = curveVerifyCost([1, 1.02, 1.04, 1.06, 1.08, 1.1, 1.12, 1.14].map((x, i) => ({ k: i + 1, v: x })));
  const steep = curveVerifyCost([1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5].map((x, i) => ({ k: i + 1, v: x })));
  const pick = (curve) => bestGamma({ alpha: 0.8, gamma: 4, c: 0.05, v: 2, speedup, verifyCost: curve }).gamma;
  assert.ok(pick(flat) > pick(steep), `${pick(flat)} vs ${pick(steep)}`);
  // Without a curve: as before (the run's v extrapolated).
  assert.equal(
    bestGamma({ alpha: 0.8, gamma: 4, c: 0.05, v: 2, speedup }).gamma,
    bestGamma({ alpha: 0.8, gamma: 4, c: 0.05, v: 2, speedup, verifyCost: undefined }).gamma,
  );
});

// The GPU's sentences: claims follow the measured v(k) and the adapter's kind.
const gpuCosts = (passMs) => targetCosts({ params: LARGE, passMs });
const FLAT = [NaN, 2, 2.02, 2.05, 2.06, 2.1, 2.2, 2.3, 2.4]; // a hardware GPU: v(8) = 1.2
const STEEP = [NaN, 100, 130, 160, 190, 220, 250, 280, 310]; // SwiftShader-like: v(5) = 2.2

test('explainGpu: a flat v(k) on a hardware adapter says extra tokens ride along, with the numbers', () => {
  const text = explainGpu({
    costs: gpuCosts(FLAT),
    gpu: { name: 'NVIDIA H200', software: false, dispatchesPerPass: 45 },
    k: 5,
  });
  assert.match(
    text,
    /^On the GPU \(NVIDIA H200\) a pass over 5 tokens took 2\.10 ms against 2\.00 ms for one: v\(5\) = 1\.05/,
  );
  assert.match(text, /up to 6 tokens were verified for about the price of one \(within 10 %\)/);
  assert.match(text, /Extra verified tokens ride along/);
  assert.match(text, /45 kernel launches/);
  assert.doesNotMatch(text, /software|SwiftShader/);
});

test('explainGpu: a software adapter is named as such and claims nothing about a GPU', () => {
  const text = explainGpu({
    costs: gpuCosts(STEEP),
    gpu: { name: 'google swiftshader', software: true },
    k: 5,
  });
  assert.match(text, /v\(5\) = 2\.20/);
  assert.match(text, /a software one \(SwiftShader/);
  assert.match(text, /extra tokens are not free here/);
  assert.match(text, /say nothing about a hardware GPU/);
  assert.match(text, /not measured on this page/);
  assert.doesNotMatch(text, /up to \d+ tokens were verified/);
  assert.doesNotMatch(text, /^.*Extra verified tokens ride along/);
});

test('explainGpu: a hardware GPU with a steep v(k) is not said to verify for free; the CPU figure is quoted when measured', () => {
  const cpu = targetCosts({ params: LARGE, passMs: [NaN, 5, 6, 7, 8, 9, 10, 11, 12] });
  const text = explainGpu({
    costs: gpuCosts(STEEP),
    gpu: { name: 'iGPU', software: false },
    cpu,
    threads: 2,
    k: 4,
  });
  assert.match(text, /v\(4\) = 1\.90/);
  assert.match(text, /Here extra tokens are not free/);
  assert.doesNotMatch(text, /ride along/);
  assert.match(text, /On the CPU \(WebAssembly, 2 threads\) the same pass cost v\(4\) = 1\.60 \(8\.00 ms\)/);
  assert.equal(explainGpu({ costs: gpuCosts([NaN, 2]), gpu: {} }), '', 'one point: nothing to say');
});

test('8-bit roofline: W the packed bytes, integer ops of the Linear weights at P_int, the LM head at P', () => {
  const intParams = linearParamsOf({ params: SMALL, nLayer: 6, nEmbd: 256 });
  assert.equal(intParams, 12 * 6 * 256 * 256);
  assert.equal(linearParamsOf({ params: 100, nLayer: 6, nEmbd: 256 }), 100, 'capped at the parameters');
  // One machine for both weight types: its bandwidth, its measured float peak and its integer peak.
  const machine = { gbPerSecond: 31, peak: 40e9, peakMeasured: true, intPeak: 80e9 };
  const c = targetCosts({
    params: SMALL,
    weights: 'int8',
    weightBytes: 6.2e6,
    intParams,
    passMs: [NaN, 1, 1.5],
    ...machine,
  });
  assert.equal(c.weights, 'int8');
  assert.equal(c.weightBytes, 6.2e6);
  assert.ok(Math.abs(c.memMs - (6.2e6 / 31e9) * 1000) < 1e-12);
  const perToken = ((2 * intParams) / 80e9) * 1000 + ((2 * (SMALL - intParams)) / 40e9) * 1000;
  assert.ok(Math.abs(c.computeMsPerToken - perToken) < 1e-12);
  for (const r of c.roof) assert.ok(Math.abs(r.v - Math.max(c.memMs, r.k * perToken) / c.memMs) < 1e-9);
  // The same target in float32 reads four times the bytes: its roofline turns later.
  const f = targetCosts({ params: SMALL, passMs: [NaN, 2, 2.2], ...machine });
  assert.equal(f.weights, 'f32');
  assert.equal(f.weightBytes, 4 * SMALL);
  assert.ok(ridgeTokens(f) > ridgeTokens(c));
});

test('explainWeights: one pass cheaper, extra tokens relatively dearer — from the numbers, not written in', () => {
  const f32 = targetCosts({ params: LARGE, passMs: [NaN, 5, 5.4, 5.8, 6.2, 6.6] });
  const int8 = targetCosts({
    params: LARGE,
    weights: 'int8',
    weightBytes: 20e6,
    intParams: 18.9e6,
    passMs: [NaN, 2.5, 3.2, 3.9, 4.6, 5.3],
  });
  const t = explainWeights({ f32, int8, k: 5 });
  assert.match(t, /made one pass cheaper: 2\.50 ms against 5\.00 ms for float32 \(2\.00× faster/);
  assert.match(t, /relatively dearer with 8-bit weights: v\(5\) = 2\.12 against 1\.32/);
  assert.match(t, /each extra token 0\.28 of int8's own one-token pass against 0\.08 of float32's/);
  assert.match(t, /v\(k\) rises faster/);
  // Numbers that deny it: no "cheaper", no "dearer", no physics claim.
  const flat = targetCosts({
    params: LARGE,
    weights: 'int8',
    weightBytes: 20e6,
    passMs: [NaN, 5.1, 5.5, 5.9, 6.3, 6.7],
  });
  const u = explainWeights({ f32, int8: flat, k: 5 });
  assert.match(u, /about the same with 8-bit weights/);
  assert.match(u, /about as dear/);
  assert.doesNotMatch(u, /rises faster/);
  const slow = targetCosts({
    params: LARGE,
    weights: 'int8',
    weightBytes: 20e6,
    passMs: [NaN, 7, 7.2],
  });
  assert.match(
    explainWeights({ f32, int8: slow, k: 5 }),
    /did not make one pass cheaper.*v\(2\)/,
    'the longest k both measured',
  );
  assert.equal(
    explainWeights({ f32, int8: targetCosts({ params: LARGE, passMs: [NaN, 2] }) }),
    '',
    'one k: nothing to say',
  );
});

test('the weights default: int8 only when its first measured one-token pass is the faster; decided once', () => {
  assert.equal(decideDefault({ pair: 'small', where: 'CPU, 2 threads', f32Ms: 1.2, int8Ms: 0.8 }).weights, 'int8');
  assert.equal(decideDefault({ pair: 'small', where: 'CPU, 2 threads', f32Ms: 0.8, int8Ms: 1.2 }).weights, 'f32');
  assert.equal(decideDefault({ pair: 'small', where: 'x', f32Ms: NaN, int8Ms: 1 }), null);
  assert.match(defaultText(null), /^Default: float32, until this machine has measured both/);
  const mem = new Map();
  const storage = { getItem: (k) => mem.get(k) ?? null, setItem: (k, v) => mem.set(k, v) };
  const first = decideDefault({
    pair: 'small',
    where: 'CPU, 1 thread',
    f32Ms: 1.5,
    int8Ms: 1.0,
    at: 1,
  });
  assert.equal(keepDefault(first, storage).weights, 'int8');
  assert.equal(
    keepDefault(decideDefault({ pair: 'small', where: 'CPU, 1 thread', f32Ms: 1, int8Ms: 2 }), storage).weights,
    'int8',
    'the first measurement decides',
  );
  assert.deepEqual(storedDefault(storage), first);
  assert.match(defaultText(first), /^Default: int8, because .* int8 1\.00 ms against float32 1\.50 ms \(1\.50×\)\.$/);
});

test('the pairs heading says what the numbers under it show (issue 38: never a fixed "pays more")', async () => {
  const { pairsHeading } = await import('../../web/page/src/shared/roofline-explain.js');
  const { targetCosts: tc } = await import('../../web/page/src/shared/roofline.js');
  const costs = (passMs) => tc({ params: 1e6, passMs });
  const flat = costs([NaN, 10, 10.2, 10.4, 10.6, 10.8]); // an extra token: 0.02 of a step
  const steep = costs([NaN, 1, 1.5, 2, 2.5, 3]); // 0.5 of a step
  assert.equal(pairsHeading({ large: steep, small: flat, k: 5 }), 'Why extra tokens cost the large pair more here.');
  assert.equal(pairsHeading({ large: flat, small: steep, k: 5 }), 'Why extra tokens cost the large pair less here.');
  assert.equal(
    pairsHeading({ large: steep, small: steep, k: 5 }),
    'Why extra tokens cost both pairs about the same here.',
  );
  assert.equal(pairsHeading({ large: costs([]), small: costs([]), k: 5 }), 'What a verify pass costs each pair here.');
});
