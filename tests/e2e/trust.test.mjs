// The page's consistency checks (web/page/src/shared/trust.js), in Node: when the timings of sections 4
// and 5 can be trusted, and the words the page says when they cannot. No browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  BUSY,
  LIMITS,
  agree,
  both,
  busyText,
  judgeChunks,
  judgeRun,
  judgeThreads,
  judgeVk,
  pickThreads,
  spreadOf,
  threadsChoiceText,
} from '../../web/page/src/shared/trust.js';

test("trust: the spread of repeated timings is the quartiles' ratio (largest ÷ smallest for few)", () => {
  assert.equal(spreadOf([2, 2, 2, 2]), 1);
  assert.equal(spreadOf([1, 3]), 3);
  assert.ok(Number.isNaN(spreadOf([1])));
  // One slow pass among 16 does not move the quartiles.
  assert.ok(spreadOf([...Array(15).fill(0.7), 30]) < 1.01);
  assert.ok(agree([0.7, 0.72, 0.69, 0.75, 0.71]));
  assert.ok(!agree([0.7, 0.7, 30, 31, 0.8, 29]));
  assert.ok(agree([]), 'too few to tell: no claim of disagreement');
});

test('trust: v(k) passes when its passes agree, it is at least ~1 and rises', () => {
  const passMs = [NaN, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7, 1.9, 2.1];
  const sampleMs = passMs.slice(1).map((m) => [m, m * 1.05, m * 0.97, m * 1.02]);
  assert.deepEqual(judgeVk({ passMs, sampleMs }), { ok: true, reasons: [] });
  // Flat within noise (a memory-bound target) is rising enough.
  assert.ok(judgeVk({ passMs: [NaN, 10, 10.1, 9.9, 10.2, 10, 10.3, 10.4, 10.6] }).ok);
});

test("trust: the issue's busy v(k) fails: five tokens cheaper than one, passes that disagree", () => {
  // Section 4 under 3 CPU hogs (issue 38): one-token step 37.94 ms, v(5) = 0.90.
  const passMs = [NaN, 37.94, 40, 45, 41, 34.1, 60, 62, 70];
  const j = judgeVk({ passMs, sampleMs: [[0.7, 37.9, 38, 80, 0.8, 41]] });
  assert.equal(j.ok, false);
  assert.ok(
    j.reasons.some((r) =>
      /the fastest passes over 1 token took 0\.70 ms in one half of the repeats and 37\.90 ms in the other/.test(r),
    ),
  );
  assert.ok(j.reasons.some((r) => /v\(5\) = 0\.90/.test(r)));
  // Falling by more than LIMITS.vDrop from a shorter pass's v.
  const fall = judgeVk({ passMs: [NaN, 1, 1.5, 2, 2.5, 1.6, 3, 3.5, 4] });
  assert.equal(fall.ok, false);
  assert.match(fall.reasons[0], /v\(5\) = 1\.60 is below v\(4\) = 2\.50/);
});

test('trust: T threads slower than one fail the check; missing numbers do not', () => {
  // The issue's: B(2) 7.0 GB/s against B(1) 79.0, P(2) 1.2 GFLOP/s against P(1) 30.1.
  const j = judgeThreads({ T: 2, B1: 79, BT: 7, P1: 30.1, PT: 1.2 });
  assert.equal(j.ok, false);
  assert.equal(j.reasons.length, 2);
  assert.ok(judgeThreads({ T: 2, B1: 20, BT: 19, P1: 30, PT: 55 }).ok, `within ${LIMITS.threads} of one thread's`);
  assert.ok(judgeThreads({ T: 1, B1: 20, BT: 5 }).ok);
  assert.ok(judgeThreads({ T: 2, B1: null, BT: 5, P1: 30, PT: null }).ok);
});

test('trust: a run fails when its repeats disagree, its v is below one step, or it disagrees with v(k)', () => {
  assert.ok(judgeRun({ plainTps: [300, 310, 295], specTps: [400, 390, 410], v: 3.2, gamma: 4, vk: 2.9 }).ok);
  assert.ok(
    judgeRun({ plainTps: [300, 310], specTps: [400, 405], v: 3.2, gamma: 4, vk: NaN }).ok,
    'no v(k) yet: nothing to compare',
  );
  const repeats = judgeRun({ plainTps: [300, 40, 310], specTps: [400, 410, 390], v: 3, gamma: 4 });
  assert.equal(repeats.ok, false);
  assert.match(repeats.reasons[0], /plain repeats ran at 40\.00–310\.00 tokens\/s/);
  // The issue's: the run's v 3.40 against the v(k) section's v(5) 0.90.
  const vs = judgeRun({ plainTps: [100, 101], specTps: [80, 81], v: 3.4, gamma: 4, vk: 0.9 });
  assert.equal(vs.ok, false);
  assert.match(vs.reasons[0], /v = 3\.40 and the measured v\(5\) = 0\.90 disagree/);
  // That disagreement, and only it, sends v(k) to be measured again (compare.js).
  assert.equal(vs.vkDisagrees, true);
  assert.equal(repeats.vkDisagrees, false);
  assert.equal(judgeRun({ plainTps: [300, 310], specTps: [400, 405], v: 3.2, gamma: 4, vk: 2.9 }).vkDisagrees, false);
  assert.equal(judgeRun({ v: 0.5, gamma: 4 }).ok, false);
  // Each run's repeats within the limit, their speedups not (large pair under 3 hogs: 1.42–2.87×).
  const ratios = judgeRun({
    plainTps: [100, 130, 120],
    specTps: [280, 200, 260],
    ratios: [2.87, 1.42, 2.1],
    v: 1.75,
    gamma: 4,
  });
  assert.equal(ratios.ok, false);
  assert.match(ratios.reasons[0], /speedups ranged over 1\.42–2\.87×/);
});

test("trust: a lab card's plain chunks judged; several judgements as one; the busy words", () => {
  assert.ok(judgeChunks([0.8, 0.82, 0.79, 0.81]).ok);
  const j = both(judgeChunks([0.8, 3, 0.8, 3.2, 0.9, 3.1]), judgeThreads({ T: 2, B1: 10, BT: 1 }), null);
  assert.equal(j.ok, false);
  assert.equal(j.reasons.length, 2);
  const text = busyText(j);
  assert.ok(text.startsWith(BUSY));
  assert.match(BUSY, /busy while measuring: these timings can’t be trusted; close other work and measure again/);
  assert.equal(busyText({ ok: true, reasons: [] }), '');
});

test('trust: the thread count used is the faster now, and the page says what it did', () => {
  const slow = pickThreads({ 2: [30, 31, 4.9], 1: [4.3, 2.0, 1.2] });
  assert.equal(slow.threads, 1);
  assert.match(
    threadsChoiceText(slow, 2),
    /^Threads measured just now \(one-token pass, the fastest of 3 at each count: 2 threads 4\.90 ms, 1 thread 1\.20 ms\): 1 thread faster by more than 10%: the runs use 1 thread \(2 chosen\)\.$/,
  );
  const fast = pickThreads({ 2: [0.5, 0.52], 1: [0.8, 0.82] });
  assert.equal(fast.threads, 2);
  assert.ok(fast.faster);
  assert.match(threadsChoiceText(fast, 2), /: 2 threads faster: kept 2 threads\.$/);
  assert.equal(pickThreads({}).threads, 1);
  // A near tie keeps the threads asked for (no flipping between runs on noise); 1 thread only
  // when it is faster by more than LIMITS.threadsMargin.
  assert.equal(pickThreads({ 2: [1.05, 1.06], 1: [1.0, 1.0] }).threads, 2);
  assert.equal(pickThreads({ 2: [1.2, 1.2], 1: [1.0, 1.0] }).threads, 1);
  // Issue 56: "2 threads: 1.41 ms, 1 thread: 1.38 ms: using 2, the faster now" — 2 was not the
  // faster; the page says what it did instead.
  const tie = pickThreads({ 2: [1.41, 1.6, 1.5, 1.45], 1: [1.38, 1.5, 1.4, 1.7] });
  assert.equal(tie.threads, 2);
  const text = threadsChoiceText(tie, 2);
  assert.match(text, /2 threads 1\.41 ms, 1 thread 1\.38 ms\): within 10%: kept 2 threads\.$/);
  assert.doesNotMatch(text, /faster/);
  // In cycles of 4 passes from the prompt (as the worker times them): each pass its fastest
  // repeat, averaged — the estimate of v(k)'s one-token pass.
  const cyc = pickThreads({ 2: [1, 2, 3, 4, 9, 9, 9, 9, 1, 2, 3, 4], 1: [2, 3, 4, 5, 2, 3, 4, 5, 9, 3, 4, 5] }, 4);
  assert.deepEqual(cyc.ms, { 1: 3.5, 2: 2.5 });
  assert.match(
    threadsChoiceText(cyc, 2),
    /^Threads measured just now \(one-token pass, each of the first 4 after the prompt its fastest of 3 repeats, averaged: 2 threads 2\.50 ms, 1 thread 3\.50 ms\): 2 threads faster: kept 2 threads\.$/,
  );
  // A burst of other load on most of one count's passes does not decide: its fastest does.
  assert.equal(pickThreads({ 2: [9, 0.6, 8, 7, 0.61, 12], 1: [1.0, 1.1, 1.0, 1.2, 1.0, 1.1] }).threads, 2);
});

test('trust: a v(k) measurement that fails the checks predicts nothing and is measured again', async () => {
  const { createVkStore } = await import('../../web/page/src/models/vk/store.js');
  const store = createVkStore();
  const model = { params: 4.87e6, pair: 'small' };
  const good = [NaN, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7, 1.9, 2.1];
  store.record('small', 2, { passMs: good, sampleMs: good.slice(1).map((m) => [m, m, m * 1.1, m]) }, model);
  assert.ok(store.judge('small', 2).ok);
  assert.equal(typeof store.verifyCurve('small', model, 2), 'function');
  assert.ok(!store.needs('small', 2));
  // A run disagreed with it (compare.js, judgeRun's vkDisagrees): measured again, shown until then.
  store.invalidate('small', 2);
  assert.ok(store.needs('small', 2), 'a run disagreed: measured again');
  assert.equal(store.get('small', 2).passMs, good);
  store.record('small', 2, { passMs: good, sampleMs: good.slice(1).map((m) => [m, m, m * 1.1, m]) }, model);
  assert.ok(!store.needs('small', 2), 'measured again: trusted');
  // B(2) far below B(1): the threads did not get cores. The roofline fails its checks, v(k)
  // itself does not (issue 56: v(k) is drawn, and used for γ, without the roofline).
  store.setBandwidth([{ bytes: 4 * 4.87e6, gbPerSecond: 79 }], 1);
  store.setBandwidth([{ bytes: 4 * 4.87e6, gbPerSecond: 7 }], 2);
  assert.equal(store.judgeRoof('small', 2).ok, false);
  assert.ok(store.judge('small', 2).ok);
  assert.equal(typeof store.verifyCurve('small', model, 2), 'function', 'v(k) still predicts');
  assert.ok(store.needs('small', 2), 'measured again after the next run');
  // The floor W / B(2) above the whole one-token pass: B(2) was slowed.
  store.setBandwidth([{ bytes: 4 * 4.87e6, gbPerSecond: 20 }], 2);
  store.setBandwidth([{ bytes: 4 * 4.87e6, gbPerSecond: 20 }], 1);
  assert.match(
    store.judgeRoof('small', 2).reasons[0],
    /would take 0\.97 ms, longer than the whole one-token pass \(0\.70 ms\)/,
  );
  store.setBandwidth([{ bytes: 4 * 4.87e6, gbPerSecond: 40 }], 2);
  assert.ok(store.judgeRoof('small', 2).ok, `${store.judgeRoof('small', 2).reasons}`);
  // Passes whose fastest differ between the even and the odd rounds: v(k) itself fails.
  store.record('small', 2, { passMs: good, sampleMs: good.slice(1).map((m) => [m, m * 2, m, m * 2]) }, model);
  assert.equal(store.judge('small', 2).ok, false);
  assert.equal(store.verifyCurve('small', model, 2), null, 'no γ suggestion from it');
  // At 1 thread: five tokens cheaper than one.
  store.record('small', 1, { passMs: [NaN, 37.94, 40, 41, 42, 34.1, 44, 45, 46] }, model);
  assert.match(store.judge('small', 1).reasons[0], /v\(5\) = 0\.90/);
});
