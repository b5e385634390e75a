// Whether the page's timings can be trusted: how they are estimated, and the consistency checks
// that every derived number of sections 4 and 5 passes before the page claims anything from it
// (the v(k) table, B(T), P(T), the roofline, the verdict, E/(γc + v), the suggested γ, the
// pitfall cards' speedups). A learner's machine is rarely idle; when another process takes the
// cores, the work the page times is slowed by whatever was running at the moment, never sped up.
// So the page times the same work many times, in turns with the work it is compared with, and
// takes the FASTEST time (steadyEstimate): another process can only add to a timing, so the
// fastest of many repeats is the work's own time as soon as one repeat ran undisturbed. The
// check that this happened: the fastest of the even-numbered repeats and the fastest of the
// odd-numbered ones (interleaved in time, so both span the same moments) agree within
// LIMITS.halves; when they do not, not even the fastest repeats were undisturbed. The checks
// (LIMITS):
//   halves agree       the two halves' fastest times of the same work (the passes over k
//                      tokens of the v(k) measurement) agree within LIMITS.halves;
//   few slow steps     of a run's steps (each its fastest repeat), at most LIMITS.slowShare are
//                      slower than LIMITS.slowStep × the median of their neighbours' (4 steps either
//                      side): a step slowed in every repeat;
//   repeats agree      a run's speed-up estimated with each repeat left out in turn agrees within
//                      LIMITS.halves (a verdict that does not hang on one repeat); where no
//                      step times exist (one repeat, a stopped one), the raw repeats within
//                      LIMITS.spread: upper quartile ÷ lower quartile (largest ÷ smallest for few);
//   v(k) ≥ ~1, rising  a pass over k tokens costs at least LIMITS.vMin one-token passes, and no
//                      v(k) falls below LIMITS.vDrop of a shorter pass's (more tokens cannot be
//                      cheaper);
//   T threads ≥ 1      B(T) and P(T) at least LIMITS.threads of B(1) and P(1): T threads reading
//                      or multiplying at once are not slower than one unless the cores were taken;
//   floor ≤ pass       the memory floor W / B(T) (the time to read the weights once at the measured
//                      bandwidth) is at most LIMITS.floor × the measured one-token pass, which reads
//                      them all: a lower bandwidth was slowed by another process;
//   run ≈ v(k)         the v of a run (its verify-and-test time in plain steps) and the v(γ + 1) of
//                      the v(k) measurement at the same thread count agree within LIMITS.runVsVk
//                      (either way), and the run's own v is at least LIMITS.vMin.
// Each judge returns { ok, reasons }: reasons in plain words, with the numbers that failed. The
// page then shows BUSY, the raw times, and nothing derived from them. Pure functions: the page
// and the Node tests import them.

import { LIMITS, steadyEstimate } from './steady.js';

// The estimators and the thresholds live in steady.js; the page imports them from here too.
export { LIMITS, PASS_CYCLE, alignedToIterations, fastestSteps, steadyComparison, steadyEstimate } from './steady.js';

/** The one sentence the page shows when a check fails. */
export const BUSY =
  'This machine was busy while measuring: these timings can’t be trusted; close other work and measure again.';

const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '–');

/** The q-quantile (0..1) of sorted numbers, linearly interpolated. */
function quantile(sorted, q) {
  const i = (sorted.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo);
}

/**
 * How far repeated timings of the same work spread: upper quartile ÷ lower quartile (largest ÷
 * smallest for fewer than four). 1 when they agree exactly; NaN with fewer than two positive values.
 * @param {number[]} xs
 */
export function spreadOf(xs) {
  const a = (xs ?? []).filter((x) => Number.isFinite(x) && x > 0).sort((x, y) => x - y);
  if (a.length < 2) return NaN;
  if (a.length < 4) return a[a.length - 1] / a[0];
  return quantile(a, 0.75) / quantile(a, 0.25);
}

/** Whether repeated timings agree (within LIMITS.spread); true when there are too few to tell. */
export function agree(xs, limit = LIMITS.spread) {
  const s = spreadOf(xs);
  return !(s > limit);
}

const range = (xs) => {
  const a = xs.filter((x) => Number.isFinite(x) && x > 0);
  return `${f2(Math.min(...a))}–${f2(Math.max(...a))}`;
};

/**
 * The v(k) measurement judged: per k, the fastest passes of the two interleaved halves agree
 * (steadyEstimate), v(k) ≥ LIMITS.vMin, and v(k) does not fall below LIMITS.vDrop of any shorter
 * pass's v.
 * @param {{ passMs: number[], sampleMs?: number[][], cycle?: number }} m  passMs[k] (index 0
 *   unused): the pass over k tokens (steadyEstimate); sampleMs[k - 1]: every timed pass over k
 *   tokens, in the order taken, in repeats of `cycle` passes
 * @returns {{ ok: boolean, reasons: string[] }}
 */
export function judgeVk({ passMs = [], sampleMs = null, cycle = 1 }) {
  const reasons = [];
  (sampleMs ?? []).forEach((xs, i) => {
    const e = steadyEstimate(xs, cycle);
    if (!e.agree)
      reasons.push(
        `the fastest passes over ${i + 1} token${i ? 's' : ''} took ${f2(e.halves[0])} ms in one half of the repeats and ${f2(e.halves[1])} ms in the other (${f2(e.ratio)}×)`,
      );
  });
  const one = passMs[1];
  let highest = NaN;
  let highestK = 0;
  for (let k = 2; k < passMs.length; k++) {
    if (!(one > 0) || !Number.isFinite(passMs[k])) continue;
    const v = passMs[k] / one;
    if (v < LIMITS.vMin)
      reasons.push(
        `a pass over ${k} tokens (${f2(passMs[k])} ms) was cheaper than one over 1 (${f2(one)} ms): v(${k}) = ${f2(v)}`,
      );
    else if (v < LIMITS.vDrop * highest) reasons.push(`v(${k}) = ${f2(v)} is below v(${highestK}) = ${f2(highest)}`);
    if (!(v <= highest)) {
      highest = v;
      highestK = k;
    }
  }
  return { ok: !reasons.length, reasons };
}

/**
 * B(T) and P(T) judged against B(1) and P(1): T threads not slower than one (within
 * LIMITS.threads). Missing numbers pass (nothing to compare).
 * @param {{ T: number, B1?: number | null, BT?: number | null, P1?: number | null, PT?: number | null }} m
 *   B in GB/s, P in GFLOP/s
 */
export function judgeThreads({ T, B1 = null, BT = null, P1 = null, PT = null }) {
  const reasons = [];
  if (T > 1 && B1 > 0 && BT > 0 && BT < LIMITS.threads * B1) {
    reasons.push(`${T} threads read at ${BT.toFixed(1)} GB/s, slower than 1 thread's ${B1.toFixed(1)} GB/s`);
  }
  if (T > 1 && P1 > 0 && PT > 0 && PT < LIMITS.threads * P1) {
    reasons.push(
      `${T} threads multiplied at ${PT.toFixed(1)} GFLOP/s, slower than 1 thread's ${P1.toFixed(1)} GFLOP/s`,
    );
  }
  return { ok: !reasons.length, reasons };
}

/**
 * The memory floor judged: W / B(T) not above LIMITS.floor × the one-token pass (which reads every
 * weight once). Missing numbers pass.
 * @param {{ T: number, memMs?: number, stepMs?: number, gbPerSecond?: number | null }} m
 */
export function judgeFloor({ T, memMs = NaN, stepMs = NaN, gbPerSecond = null }) {
  if (!(memMs > 0) || !(stepMs > 0) || !(memMs > LIMITS.floor * stepMs)) return { ok: true, reasons: [] };
  return {
    ok: false,
    reasons: [
      `reading the weights once at the measured B(${T}) = ${gbPerSecond?.toFixed(1) ?? '–'} GB/s would take ${f2(memMs)} ms, longer than the whole one-token pass (${f2(stepMs)} ms)`,
    ],
  };
}

/**
 * A run's costs judged: with step times (steadyComparison), the speed-up with each repeat left
 * out in turn agrees within LIMITS.halves; without them, the raw repeats agree (tokens/s of the
 * plain runs, of the speculative runs, and the repeats' ratios, within LIMITS.spread). Then its v
 * is at least LIMITS.vMin, and it agrees with the v(γ + 1) of the v(k) measurement within
 * LIMITS.runVsVk when that one is known (and trusted). vkDisagrees: that last check failed (one of
 * the two was timed while the machine was busy: compare.js measures v(k) again).
 * @param {{ plainTps?: number[], specTps?: number[], ratios?: number[], steady?: object | null,
 *   v?: number, gamma?: number, vk?: number }} m
 */
export function judgeRun({ plainTps = [], specTps = [], ratios = [], steady = null, v = NaN, gamma = 0, vk = NaN }) {
  const reasons = [];
  if (steady) {
    const r = steady.ratios.filter((x) => x > 0);
    if (r.length > 1 && Math.max(...r) / Math.min(...r) > LIMITS.halves)
      reasons.push(
        `the speedup from each step's fastest repeat ranged over ${range(r)}× as each repeat was left out in turn`,
      );
    for (const [name, part] of [
      ['plain steps', steady.plain],
      ['speculative iterations', steady.spec],
    ]) {
      if (part.slowShare > LIMITS.slowShare)
        reasons.push(
          `${Math.round(part.slowShare * 100)}% of the ${name} were slowed in all ${steady.repeats} repeats (over ${LIMITS.slowStep}× their neighbours)`,
        );
    }
  } else {
    if (!agree(plainTps)) reasons.push(`the plain repeats ran at ${range(plainTps)} tokens/s`);
    if (!agree(specTps)) reasons.push(`the speculative repeats ran at ${range(specTps)} tokens/s`);
    if (agree(plainTps) && agree(specTps) && !agree(ratios))
      reasons.push(`the repeats' speedups ranged over ${range(ratios)}×`);
  }
  if (Number.isFinite(v) && v < LIMITS.vMin) {
    reasons.push(`verifying γ + 1 = ${gamma + 1} tokens cost v = ${f2(v)} plain steps, less than one step`);
  }
  const vkDisagrees = Number.isFinite(v) && v >= LIMITS.vMin && vk > 0 && Math.max(v / vk, vk / v) > LIMITS.runVsVk;
  if (vkDisagrees) reasons.push(`the run's v = ${f2(v)} and the measured v(${gamma + 1}) = ${f2(vk)} disagree`);
  return { ok: !reasons.length, reasons, vkDisagrees };
}

/**
 * A pitfall card's decoding judged: the plain decoder's chunks (ms per token of each chunk of
 * tokens, timed between the other decoders' chunks) agree.
 * @param {number[]} plainChunkMs
 */
export function judgeChunks(plainChunkMs) {
  const xs = plainChunkMs ?? [];
  return agree(xs)
    ? { ok: true, reasons: [] }
    : {
        ok: false,
        reasons: [`plain decoding's chunks took ${range(xs)} ms per token (spread ${f2(spreadOf(xs))}×)`],
      };
}

/** Several judgements as one: ok when all are, with all the reasons. */
export function both(...js) {
  const xs = js.filter(Boolean);
  return { ok: xs.every((j) => j.ok), reasons: xs.flatMap((j) => j.reasons) };
}

/** BUSY and what failed, as the page says it: "<BUSY> (What disagreed: …)". '' when ok. */
export function busyText(j) {
  if (!j || j.ok) return '';
  return `${BUSY} (What disagreed: ${j.reasons.join('; ')}.)`;
}

/**
 * Which thread count to use now, from one-token target passes timed at each count (ms, taken in
 * turns, in cycles of `cycle` passes from the prompt), each count's time steadyEstimate's (each
 * pass of the cycle its fastest repeat, averaged: the estimate of v(k)'s one-token pass): the
 * most threads unless fewer are faster by more than LIMITS.threadsMargin (10%) — the thread pool
 * already runs serially while its threads lose, so a near tie is noise, and flipping the count
 * between runs would leave every per-count measurement (v(k), warm-up) behind. Returns
 * { threads, ms: { [t]: ms }, n: { [t]: passes }, cycle, faster: boolean, margin: 'faster' |
 * 'within' | 'slower' } (faster: the count used is more than 1; margin: how the most threads
 * compared: faster than the rest, within the margin of the fastest, or slower by more).
 * @param {Record<number, number[]>} stepsByThreads
 * @param {number} [cycle]
 */
export function pickThreads(stepsByThreads, cycle = 1) {
  const ms = {};
  const n = {};
  for (const [t, xs] of Object.entries(stepsByThreads)) {
    const e = steadyEstimate(xs, cycle);
    ms[t] = e.ms;
    n[t] = e.n;
  }
  const counts = Object.keys(ms)
    .map(Number)
    .filter((t) => Number.isFinite(ms[t]));
  if (!counts.length) return { threads: 1, ms, n, cycle, faster: false, margin: 'within' };
  const most = Math.max(...counts);
  const best = counts.reduce((a, b) => (ms[b] < ms[a] ? b : a));
  const slower = ms[most] > (1 + LIMITS.threadsMargin) * ms[best];
  const threads = slower ? best : most;
  const margin = slower ? 'slower' : best === most ? 'faster' : 'within';
  return { threads, ms, n, cycle, faster: threads > 1, margin };
}

/**
 * What the thread choice did, with the times it compared: "Threads measured just now (one-token
 * pass, each of the first 4 after the prompt its fastest of 6 repeats, averaged: 2 threads 1.41
 * ms, 1 thread 1.38 ms): within 10%: kept 2 threads."
 */
export function threadsChoiceText(choice, asked) {
  const name = (t) => `${t} thread${t === 1 ? '' : 's'}`;
  const counts = Object.keys(choice.ms)
    .map(Number)
    .sort((a, b) => b - a);
  const ns = [...new Set(counts.map((t) => choice.n[t]))];
  const W = choice.cycle ?? 1;
  const each =
    W > 1
      ? `each of the first ${W} after the prompt its fastest of ${ns.length === 1 ? Math.round(ns[0] / W) : 'its'} repeats, averaged`
      : ns.length === 1
        ? `the fastest of ${ns[0]} at each count`
        : 'the fastest at each count';
  const measured = `one-token pass, ${each}: ${counts.map((t) => `${name(t)} ${f2(choice.ms[t])} ms`).join(', ')}`;
  const pct = Math.round(LIMITS.threadsMargin * 100);
  const head = `Threads measured just now (${measured}): `;
  if (choice.threads === asked && choice.margin === 'faster')
    return `${head}${name(asked)} faster: kept ${name(asked)}.`;
  if (choice.threads === asked) return `${head}within ${pct}%: kept ${name(asked)}.`;
  return `${head}${name(choice.threads)} faster by more than ${pct}%: the runs use ${name(choice.threads)} (${asked} chosen).`;
}
