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

/** The thresholds of the checks (see the comment above). */
export const LIMITS = Object.freeze({
  spread: 1.5,
  halves: 1.15,
  slowStep: 1.5,
  floor: 1.1,
  slowShare: 0.1,
  vMin: 0.95,
  vDrop: 0.9,
  threads: 0.9,
  runVsVk: 1.5,
  threadsMargin: 0.1,
});

/**
 * The passes from the prompt that the one-token pass and v(k) are timed over, repeated
 * (worker/measure.js calibrate and measureVk; steadyEstimate's cycle).
 */
export const PASS_CYCLE = 4;

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

/**
 * The time of repeated timings of the same work, as another process cannot fool it: the fastest
 * (another process only ever adds to a timing), with the check that the fastest of the
 * even-numbered and of the odd-numbered repeats (in the order taken: interleaved in time) agree
 * within LIMITS.halves. With `cycle` > 1 the timings come in repeats of `cycle` different
 * passes each (xs[c · cycle + j]: pass j of repeat c, the same work in every repeat): each pass's
 * fastest over the repeats, averaged over the passes. { ms, halves: [even, odd], ratio (larger ÷
 * smaller half), agree, n }; agree is true when there are too few (under 2 repeats per half) to tell.
 * @param {number[]} xs  in the order they were taken
 * @param {number} [cycle]
 */
export function steadyEstimate(xs, cycle = 1) {
  const ok = (x) => Number.isFinite(x) && x > 0;
  const list = xs ?? [];
  const W = Math.max(1, Math.floor(cycle));
  const repeats = Math.floor(list.length / W) + (list.length % W ? 1 : 0);
  const low = (keep) => {
    let sum = 0;
    let passes = 0;
    let n = 0;
    let fewest = Infinity;
    for (let j = 0; j < W; j++) {
      const a = [];
      for (let c = 0; c < repeats; c++) if (keep(c) && ok(list[c * W + j])) a.push(list[c * W + j]);
      fewest = Math.min(fewest, a.length);
      if (!a.length) continue;
      sum += Math.min(...a);
      passes++;
      n += a.length;
    }
    return { n, reps: fewest, min: passes === W ? sum / W : NaN };
  };
  const all = low(() => true);
  const even = low((c) => c % 2 === 0);
  const odd = low((c) => c % 2 === 1);
  const ratio = even.reps >= 2 && odd.reps >= 2 ? Math.max(even.min, odd.min) / Math.min(even.min, odd.min) : NaN;
  return { ms: all.min, halves: [even.min, odd.min], ratio, agree: !(ratio > LIMITS.halves), n: all.n };
}

/**
 * Repeats of the same decoding (same prompt, seed and settings, so the same steps every time:
 * only the timing varies) as one run timed without interruptions: for each step, its fastest
 * repeat (records.js: a quiet run's `steps`: ms per step() call, and per iteration the draft's
 * and the target's ms), summed. null unless every run has step times of the same length.
 * @param {{ steps?: { ms: number[], draft?: number[], target?: number[] } }[]} runs
 * @returns {{ computeMs: number, draftMs: number, targetMs: number, steps: number, repeats: number } | null}
 */
export function fastestSteps(runs) {
  const xs = (runs ?? []).map((r) => r?.steps);
  if (!xs.length || xs.some((s) => !s?.ms?.length) || xs.some((s) => s.ms.length !== xs[0].ms.length)) return null;
  const out = { computeMs: 0, draftMs: 0, targetMs: 0, steps: xs[0].ms.length, repeats: xs.length, slowShare: 0 };
  const fastest = [];
  for (let i = 0; i < out.steps; i++) {
    let best = xs[0];
    for (const s of xs) if (s.ms[i] < best.ms[i]) best = s;
    // The draft's and the target's part of that same step() call, so that they add up within it.
    out.computeMs += best.ms[i];
    out.draftMs += best.draft?.[i] ?? 0;
    out.targetMs += best.target?.[i] ?? 0;
    fastest.push(best.ms[i]);
  }
  // Steps slowed in every repeat: their fastest is well above the median of their neighbours'
  // (nearly the same work: a few tokens more or less of context).
  let slow = 0;
  for (let i = 0; i < fastest.length; i++) {
    const near = fastest.slice(Math.max(0, i - 4), i + 5).sort((a, b) => a - b);
    if (fastest[i] > LIMITS.slowStep * near[near.length >> 1]) slow++;
  }
  out.slowShare = fastest.length ? slow / fastest.length : 0;
  return out;
}

/**
 * The plain repeats' steps grouped as the speculative run's iterations emitted their tokens:
 * chunk j holds the plain steps that emitted the tokens iteration j emitted (its `steps.emitted`),
 * so that both sides' fastest repeats are taken over work of about the same length (a one-token
 * step's fastest of a few repeats is far luckier than a four-token iteration's: its time is
 * shorter than the bursts of another process). The runs unchanged when either lacks `emitted`.
 */
export function alignedToIterations(plains, specs) {
  const bounds = specs[0]?.steps?.emitted;
  if (!bounds?.length || plains.some((r) => !r.steps?.emitted)) return plains;
  return plains.map((r) => {
    const s = r.steps;
    const out = { ms: [], draft: [], target: [], emitted: [] };
    let i = 0;
    for (const want of bounds) {
      let ms = 0;
      let target = 0;
      let got = 0;
      while (i < s.ms.length && got < want) {
        ms += s.ms[i];
        target += s.target?.[i] ?? 0;
        got += s.emitted[i];
        i++;
      }
      out.ms.push(ms);
      out.draft.push(0);
      out.target.push(target);
      out.emitted.push(got);
    }
    // (Steps past the speculative run's tokens: a last chunk of their own.)
    if (i < s.ms.length) {
      out.ms.push(s.ms.slice(i).reduce((a, b) => a + b, 0));
      out.draft.push(0);
      out.target.push((s.target ?? []).slice(i).reduce((a, b) => a + b, 0));
      out.emitted.push(s.emitted.slice(i).reduce((a, b) => a + b, 0));
    }
    return { ...r, steps: out };
  });
}

/**
 * "Run both & compare" estimated as another process cannot fool it (fastestSteps of the plain
 * repeats, their steps grouped as the speculative iterations emitted (alignedToIterations), and of
 * the speculative repeats), and the same with each repeat left out in turn: { plain, spec
 * (fastestSteps with tokensPerSecond), ratio (speculative ÷ plain tokens/s), ratios (one per
 * repeat left out; with two repeats, each repeat's own) }, or null (fewer than two paired repeats
 * with step times).
 * @param {object[]} plains  the plain repeats' summaries (generated, steps)
 * @param {object[]} specs  the speculative repeats' summaries, paired with them
 */
export function steadyComparison(plainRuns, specs) {
  const R = Math.min(plainRuns?.length ?? 0, specs?.length ?? 0);
  if (R < 2) return null;
  const plains = alignedToIterations(plainRuns.slice(0, R), specs.slice(0, R));
  const tps = (runs) => {
    const f = fastestSteps(runs);
    return f && f.computeMs > 0 ? { ...f, tokensPerSecond: (runs[0].generated / f.computeMs) * 1000 } : null;
  };
  const plain = tps(plains);
  const spec = tps(specs.slice(0, R));
  if (!plain || !spec) return null;
  const ratios = [];
  for (let j = 0; j < R; j++) {
    const keep = (runs) => runs.slice(0, R).filter((_, i) => i !== j);
    ratios.push(tps(keep(specs)).tokensPerSecond / tps(keep(plains)).tokensPerSecond);
  }
  return { plain, spec, ratio: spec.tokensPerSecond / plain.tokensPerSecond, ratios, repeats: R };
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
