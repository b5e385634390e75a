// How section 4 times what another process cannot fool (trust.js says when the results can be
// trusted; the reasoning is in its header): another process only ever adds to a timing, so the
// page times the same work many times, in turns with the work it is compared with, and takes
// the fastest repeat. steadyEstimate: repeated timings of the same passes (v(k), the threads
// comparison); fastestSteps, alignedToIterations, steadyComparison: the repeats of "Run both &
// compare", step by step. LIMITS: the thresholds of trust.js's checks. Pure functions: the page,
// the worker and the Node tests import them.

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
