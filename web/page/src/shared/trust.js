// Whether the page's timings can be trusted: the consistency checks that every derived number
// of sections 4 and 5 passes before the page claims anything from it (the v(k) table, B(T),
// P(T), the roofline, the verdict, E/(γc + v), the suggested γ, the pitfall cards' speedups).
// A learner's machine is rarely idle; when another process takes the cores in bursts, the
// passes the page times are slowed by whatever was running at the moment, not by what they
// compute, and any sentence drawn from them explains noise. The checks (LIMITS):
//   repeats agree      timings of the same work (the passes over k tokens of the v(k)
//                      measurement, a run's timed repeats and their speedups, the plain chunks of a lab card) lie
//                      within LIMITS.spread of each other: upper quartile ÷ lower quartile
//                      (for two or three values, largest ÷ smallest);
//   v(k) ≥ ~1, rising  a pass over k tokens costs at least LIMITS.vMin one-token passes, and no
//                      v(k) falls below LIMITS.vDrop of a shorter pass's (more tokens cannot be
//                      cheaper);
//   T threads ≥ 1      B(T) and P(T) at least LIMITS.threads of B(1) and P(1): T threads reading
//                      or multiplying at once are not slower than one unless the cores were taken;
//   run ≈ v(k)         the v of a run (its verify-and-test time in plain steps) and the v(γ + 1) of
//                      the v(k) measurement at the same thread count agree within LIMITS.runVsVk
//                      (either way), and the run's own v is at least LIMITS.vMin.
// Each judge returns { ok, reasons }: reasons in plain words, with the numbers that failed. The
// page then shows BUSY, the raw times, and nothing derived from them. Pure functions: the page
// and the Node tests import them.

/** The thresholds of the checks (see the comment above). */
export const LIMITS = Object.freeze({
  spread: 1.5,
  vMin: 0.95,
  vDrop: 0.9,
  threads: 0.9,
  runVsVk: 1.5,
  threadsMargin: 0.1,
});

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
 * The v(k) measurement judged: its passes per k agree, v(k) ≥ LIMITS.vMin, and v(k) does not
 * fall below LIMITS.vDrop of any shorter pass's v.
 * @param {{ passMs: number[], sampleMs?: number[][] }} m  passMs[k] (index 0 unused), the medians;
 *   sampleMs[k - 1]: every timed pass over k tokens (when the worker reported them)
 * @returns {{ ok: boolean, reasons: string[] }}
 */
export function judgeVk({ passMs = [], sampleMs = null }) {
  const reasons = [];
  (sampleMs ?? []).forEach((xs, i) => {
    if (!agree(xs))
      reasons.push(`the passes over ${i + 1} token${i ? 's' : ''} took ${range(xs)} ms (spread ${f2(spreadOf(xs))}×)`);
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
 * A run's costs judged: its timed repeats agree (tokens/s of the plain runs, of the speculative
 * runs, and the repeats' ratios of the two), its v is at least LIMITS.vMin, and it agrees with the v(γ + 1) of the v(k) measurement
 * within LIMITS.runVsVk when that one is known (and trusted). vkDisagrees: that last check failed
 * (one of the two was timed while the machine was busy: compare.js measures v(k) again).
 * @param {{ plainTps?: number[], specTps?: number[], ratios?: number[], v?: number, gamma?: number, vk?: number }} m
 */
export function judgeRun({ plainTps = [], specTps = [], ratios = [], v = NaN, gamma = 0, vk = NaN }) {
  const reasons = [];
  if (!agree(plainTps)) reasons.push(`the plain repeats ran at ${range(plainTps)} tokens/s`);
  if (!agree(specTps)) reasons.push(`the speculative repeats ran at ${range(specTps)} tokens/s`);
  if (agree(plainTps) && agree(specTps) && !agree(ratios))
    reasons.push(`the repeats' speedups ranged over ${range(ratios)}×`);
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
 * Which thread count to use now, from one-token step times measured at each (ms, several per
 * count, taken in turns): the most threads unless fewer are faster by more than
 * LIMITS.threadsMargin (10%) — the thread pool already runs serially while its threads lose, so
 * a near tie is noise, and flipping the count between runs would leave every per-count
 * measurement (v(k), warm-up) behind. Returns { threads, medians: { [t]: ms }, faster: boolean }
 * (faster: the count used is more than 1).
 * @param {Record<number, number[]>} stepsByThreads
 */
export function pickThreads(stepsByThreads) {
  const med = (xs) => {
    const a = xs.filter((x) => Number.isFinite(x) && x > 0).sort((x, y) => x - y);
    if (!a.length) return NaN;
    return quantile(a, 0.5);
  };
  const medians = {};
  for (const [t, xs] of Object.entries(stepsByThreads)) medians[t] = med(xs);
  const counts = Object.keys(medians)
    .map(Number)
    .filter((t) => Number.isFinite(medians[t]));
  if (!counts.length) return { threads: 1, medians, faster: false };
  const most = Math.max(...counts);
  const best = counts.reduce((a, b) => (medians[b] < medians[a] ? b : a));
  const threads = medians[most] > (1 + LIMITS.threadsMargin) * medians[best] ? best : most;
  return { threads, medians, faster: threads > 1 };
}

/** "2 threads: 0.71 ms per step, 1 thread: 0.98 ms — using 2 threads (faster now)." */
export function threadsChoiceText(choice, asked) {
  const ms = (t) => `${t} thread${t === 1 ? '' : 's'}: ${f2(choice.medians[t])} ms per step`;
  const counts = Object.keys(choice.medians)
    .map(Number)
    .sort((a, b) => b - a);
  const measured = counts.map(ms).join(', ');
  if (choice.threads === asked) return `Threads measured just now (${measured}): using ${asked}, the faster now.`;
  return `Threads measured just now (${measured}): ${asked} threads were slower than ${choice.threads} at this moment, so the runs use ${choice.threads} thread${choice.threads === 1 ? '' : 's'}.`;
}
