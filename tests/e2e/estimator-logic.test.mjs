// Issue 56, items 2 and 3, in Node (no browser, no timing): how section 4 estimates a time that
// another process cannot fool (web/page/src/shared/trust.js steadyEstimate, fastestSteps,
// steadyComparison), how the verdict and the v(k) checks read those estimates (judgeVk, judgeRun,
// results.js compareRuns, verdict.js), that the formulas it writes out add up as written
// (shown.js), and when it suggests another γ (verdict-view.js marginOf). The timings are
// synthetic: a clean time per step, and "another process" that adds a delay to a seeded share of
// the steps — the only thing another process can do to a timing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LIMITS,
  fastestSteps,
  judgeRun,
  judgeVk,
  steadyComparison,
  steadyEstimate,
} from '../../web/page/src/shared/trust.js';
import { compareRuns } from '../../web/page/src/models/results.js';
import { verdictHeadline } from '../../web/page/src/models/verdict.js';
import { shownFormula } from '../../web/page/src/shared/shown.js';

/** A seeded generator in [0, 1) (mulberry32). */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `clean` timings with a delay of 1–5 ms added to each with probability `busy` (another process). */
const loaded = (clean, busy, rand) => clean.map((x) => (rand() < busy ? x + 1 + 4 * rand() : x));

test('steadyEstimate: the fastest timing, and whether the two interleaved halves agree', () => {
  const quiet = steadyEstimate([1.02, 1.0, 1.01, 1.03, 1.0, 1.04]);
  assert.equal(quiet.ms, 1.0);
  assert.ok(quiet.agree);
  // Half of the passes slowed 1–5 ms: the fastest is still the pass's own time, and both halves
  // found one.
  const rand = rng(7);
  const xs = loaded(Array(32).fill(0.7), 0.5, rand);
  const e = steadyEstimate(xs);
  assert.equal(e.ms, 0.7);
  assert.ok(e.agree, `halves ${e.halves}`);
  // Every odd pass slowed: not even the fastest were undisturbed in one half.
  const bad = steadyEstimate([0.7, 3, 0.71, 2.5, 0.7, 4]);
  assert.equal(bad.agree, false);
  assert.ok(bad.ratio > LIMITS.halves);
  assert.ok(steadyEstimate([0.7, 5]).agree, 'too few to tell: no claim');
});

test('steadyEstimate in cycles: the same passes repeated, each its fastest, averaged', () => {
  // The v(k) measurement's cycles (worker/measure.js): 4 passes from the prompt, each a little
  // dearer than the last (a longer context), repeated 8 times, half of them slowed.
  const rand = rng(13);
  const cycle = [1.0, 1.2, 1.4, 1.6];
  const xs = loaded(
    Array.from({ length: 32 }, (_, i) => cycle[i % 4]),
    0.5,
    rand,
  );
  const e = steadyEstimate(xs, 4);
  assert.ok(Math.abs(e.ms - 1.3) < 1e-9, `${e.ms}`);
  assert.ok(e.agree);
  // Taken as one list, the fastest is the cheapest pass of the cycle only.
  assert.equal(steadyEstimate(xs).ms, 1.0);
  // Every odd repeat slowed throughout: the halves disagree.
  const odd = xs.map((x, i) => (Math.floor(i / 4) % 2 ? cycle[i % 4] + 2 : cycle[i % 4]));
  assert.equal(steadyEstimate(odd, 4).agree, false);
});

test('judgeVk: passes slowed by another process most of the time still give a trusted v(k)', () => {
  // The small pair's passes, v(k) = 1 + 0.3 (k − 1), 24 rounds, 60% of them slowed (a CPU hog).
  const rand = rng(11);
  const clean = [0.7, 0.91, 1.12, 1.33, 1.54, 1.75, 1.96, 2.17];
  const sampleMs = clean.map((ms) => loaded(Array(24).fill(ms), 0.6, rand));
  const passMs = [NaN, ...sampleMs.map((xs) => steadyEstimate(xs).ms)];
  assert.deepEqual(passMs.slice(1), clean, 'each k: its clean time');
  assert.deepEqual(judgeVk({ passMs, sampleMs }), { ok: true, reasons: [] });
  // (The medians of these passes, which the page took before, are all slowed: v(k) from them
  // falls below 1 and jumps about.)
  // A k whose passes were all slowed in one half of the rounds is not trusted.
  const oneHalf = sampleMs.map((xs) => [...xs]);
  oneHalf[4] = oneHalf[4].map((x, i) => (i % 2 ? x + 3 : x));
  const j = judgeVk({ passMs, sampleMs: oneHalf });
  assert.equal(j.ok, false);
  assert.match(
    j.reasons[0],
    /the fastest passes over 5 tokens took 1\.54 ms in one half of the repeats and 4\.\d\d ms in the other/,
  );
});

/** R repeats of a plain run (`n` steps of `step` ms) and of a speculative one, each step slowed with probability `busy`. */
function repeats({ R, busy, seed, n = 200, step = 1.0, iters = 60, iterMs = 2.5, draftMs = 0.4 }) {
  const rand = rng(seed);
  const plains = [];
  const specs = [];
  for (let r = 0; r < R; r++) {
    const ms = loaded(Array(n).fill(step), busy, rand);
    plains.push({ generated: n, steps: { ms, draft: ms.map(() => 0), target: ms.map((x) => x * 0.9) } });
    const sms = loaded(Array(iters).fill(iterMs), busy, rand);
    specs.push({
      generated: n,
      steps: { ms: sms, draft: sms.map(() => draftMs), target: sms.map((x) => x - draftMs - 0.1) },
    });
  }
  return { plains, specs };
}

test('steadyComparison: each step its fastest repeat, the speed-up as if undisturbed, and its check', () => {
  // Clean: plain 200 × 1.0 ms, speculative 60 × 2.5 ms for the same 200 tokens: 200 / 150 = 1.33×.
  const clean = 200 / 150;
  for (const [busy, seed] of [
    [0, 1],
    [0.3, 2],
    [0.5, 3],
  ]) {
    const { plains, specs } = repeats({ R: 5, busy, seed });
    const st = steadyComparison(plains, specs);
    assert.ok(Math.abs(st.ratio / clean - 1) < 0.03, `busy ${busy}: ${st.ratio} vs ${clean}`);
    assert.equal(st.ratios.length, 5);
    assert.ok(judgeRun({ steady: st }).ok, `busy ${busy}: ${st.ratios}`);
    // The raw repeats under such load disagree; the old check called the machine busy.
    if (busy >= 0.3) {
      const raw = plains.map((p, i) => p.generated / sum(specs[i].steps.ms) / (p.generated / sum(p.steps.ms)));
      assert.ok(
        raw.some((x) => Math.abs(x / clean - 1) > 0.03),
        `raw ratios ${raw}`,
      );
    }
  }
  // The draft's and the target's parts come from the step each fastest time came from.
  const f = fastestSteps([
    { steps: { ms: [1, 5], draft: [0.1, 0.2], target: [0.8, 4] } },
    { steps: { ms: [3, 2], draft: [0.3, 0.4], target: [2, 1.5] } },
  ]);
  assert.deepEqual(f, { computeMs: 3, draftMs: 0.5, targetMs: 2.3, steps: 2, repeats: 2, slowShare: 0 });
  assert.equal(fastestSteps([{ steps: { ms: [1, 2] } }, { steps: { ms: [1] } }]), null, 'different steps: no estimate');
  assert.equal(steadyComparison([plainsOf(1)], [plainsOf(1)]), null, 'one repeat: no estimate');
});

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

/**
 * Work timed while another process takes the core in bursts (`rate` per ms, each 0.5–2.5 ms
 * long): each piece of work takes its own time plus the bursts that arrive while it runs.
 */
function bursts(rand, rate) {
  return (ms) => {
    let took = ms;
    for (let x = 0; x < took; x += 0.1) if (rand() < rate * 0.1) took += 0.5 + 2 * rand();
    return took;
  };
}

/** 4 repeats of 200 one-token steps of 1.0 ms and of 50 four-token iterations of 3.0 ms (200 / 150 = 1.33×). */
function burstRuns(rate, seed) {
  const clock = bursts(rng(seed), rate);
  const plains = [];
  const specs = [];
  for (let r = 0; r < 4; r++) {
    const ms = Array.from({ length: 200 }, () => clock(1.0));
    plains.push({ generated: 200, steps: { ms, target: ms, emitted: ms.map(() => 1) } });
    const it = Array.from({ length: 50 }, () => clock(3.0));
    const steps = { ms: it, draft: it.map(() => 0.4), target: it.map(() => 2.4), emitted: it.map(() => 4) };
    specs.push({ generated: 200, steps });
  }
  return { plains, specs };
}

test('steadyComparison: plain steps taken in chunks as long as the iterations, so both sides are equally lucky', () => {
  // Bursts about every 3 ms: a 1 ms step escapes them far more often than a 3 ms iteration, so
  // step by step the plain side's fastest repeats are cleaner and the speedup comes out low.
  const { plains, specs } = burstRuns(0.35, 1);
  const clean = 200 / 150;
  const st = steadyComparison(plains, specs);
  assert.ok(Math.abs(st.ratio / clean - 1) < 0.07, `aligned ${st.ratio} vs ${clean}`);
  assert.ok(judgeRun({ steady: st }).ok, `${st.ratios}`);
  const unaligned = fastestSteps(plains).computeMs / fastestSteps(specs).computeMs;
  assert.ok(unaligned / clean < 0.93, `step by step the plain side is luckier: ${unaligned} vs ${clean}`);
  // Bursts every 2 ms: not even the fastest repeats were clean — the check says so.
  const busy = burstRuns(0.5, 1);
  assert.equal(judgeRun({ steady: steadyComparison(busy.plains, busy.specs) }).ok, false);
});

const plainsOf = (ms) => ({ generated: 1, steps: { ms: [ms] } });

test('judgeRun: the verdict is untrusted only when the estimates really disagree', () => {
  // Every repeat slowed on most steps (3 hogs on 2 vCPUs): the estimate hangs on which repeat is
  // left out — busy.
  const { plains, specs } = repeats({ R: 3, busy: 0.9, seed: 5 });
  const st = steadyComparison(plains, specs);
  const j = judgeRun({ steady: st });
  assert.equal(j.ok, false, `ratios ${st.ratios}`);
  assert.ok(
    j.reasons.some((r) =>
      /^\d+% of the plain steps were slowed in all 3 repeats \(over 1\.5× their neighbours\)$/.test(r),
    ),
    j.reasons.join('; '),
  );
  // Five repeats at a third of the steps slowed: few steps slowed in all five — trusted.
  const five = repeats({ R: 5, busy: 0.35, seed: 6 });
  assert.ok(judgeRun({ steady: steadyComparison(five.plains, five.specs) }).ok);
  // Without step times (one repeat), the raw repeats are judged as before.
  assert.equal(judgeRun({ plainTps: [300, 40, 310], specTps: [400, 410, 390] }).ok, false);
});

test('compareRuns: with step times, the verdict, c, v and E/(γc + v) come from each step’s fastest repeat', () => {
  const { plains, specs } = repeats({ R: 3, busy: 0.3, seed: 9 });
  const options = { prompt: [1], gamma: 4, drafter: 'draft', tree: null, temperature: 0.8, seed: 42, threads: 2 };
  const withCounts = (runs, o) => runs.map((r) => ({ ...r, ...o }));
  const plainRuns = withCounts(plains, { targetPasses: 200, iterations: 200, tokensPerSecond: 900, computeMs: 250 });
  const specRuns = withCounts(specs, {
    targetPasses: 60,
    iterations: 60,
    draftPasses: 240,
    accepted: 140,
    examined: 240,
    alpha: 140 / 240,
    tokensPerSecond: 1000,
    computeMs: 200,
    gammaHistogram: [0, 0, 0, 0, 60],
  });
  const steady = steadyComparison(plainRuns, specRuns);
  const results = {
    plain: { options, summary: plainRuns[0], runs: plainRuns },
    spec: { options, summary: specRuns[0], runs: specRuns },
    step: null,
    pairedRatios: [1, 1, 1],
    steady,
  };
  const sd = {
    expectedAcceptedTokens: (a, g) => (1 - a ** (g + 1)) / (1 - a),
  };
  const f = compareRuns(results, sd);
  assert.ok(f.verdict.steady);
  assert.equal(f.verdict.median, steady.ratio);
  assert.ok(f.verdict.min <= steady.ratio && steady.ratio <= f.verdict.max, 'the range shown holds the headline');
  assert.deepEqual(f.ratios, steady.ratios);
  assert.deepEqual(f.rawRatios, [1, 1, 1]);
  // One step: the plain run's time per token from each step's fastest repeat (1.0 ms clean);
  // γc + v = one iteration ÷ one step (2.5 ms clean).
  // (Within 10%: a step slowed in all 3 repeats, about 3% of them here, keeps its delay.)
  assert.ok(Math.abs(f.costs.stepMs - 1.0) < 0.1, `step ${f.costs.stepMs}`);
  assert.ok(Math.abs(4 * f.c + f.v - 2.5 / f.costs.stepMs) < 0.25, `γc + v = ${4 * f.c + f.v}`);
  assert.equal(f.costs.repeats, 3);
  const head = verdictHeadline(f.verdict).text;
  assert.match(
    head,
    /^Speculation pays here: 1\.\d\d× measured \(each step’s fastest repeat; 1\.\d\d–1\.\d\d× with each of 3 repeats left out, faster than plain whichever repeat is left out\)\. $/,
  );
});

test('shownFormula: the sums and quotients the page writes out add up as written', () => {
  // Issue 56: "4·0.09 + 2.32 = 2.66" (the shown terms add to 2.68).
  const f = shownFormula({ gamma: 4, c: 0.0874, v: 2.3249, E: 3.351 });
  const m = f.text.match(/^([\d.]+) \/ \((\d+)·([\d.]+) \+ ([\d.]+)\) = ([\d.]+) \/ ([\d.]+) = ([\d.]+)×$/);
  assert.ok(m, f.text);
  const [E, g, c, v, E2, cost, q] = m.slice(1).map(Number);
  assert.equal(E, E2);
  assert.equal(Math.round((g * c + v) * 1000), Math.round(cost * 1000), `${g}·${c} + ${v} = ${cost}`);
  assert.equal((E / cost).toFixed(2), q.toFixed(2));
  // Over many inputs.
  const rand = rng(3);
  for (let i = 0; i < 500; i++) {
    const s = shownFormula({
      gamma: 1 + Math.floor(8 * rand()),
      c: rand() * 0.5,
      v: 1 + 3 * rand(),
      E: 1 + 4 * rand(),
    });
    const [, e, gg, cc, vv, , sum2, qq] = s.text.match(
      /^([\d.]+) \/ \((\d+)·([\d.]+) \+ ([\d.]+)\) = ([\d.]+) \/ ([\d.]+) = ([\d.]+)×$/,
    );
    assert.equal(Math.round((Number(gg) * Number(cc) + Number(vv)) * 1000), Math.round(Number(sum2) * 1000), s.text);
    assert.equal((Number(e) / Number(sum2)).toFixed(2), qq, s.text);
  }
});
