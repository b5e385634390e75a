// Section 4's runs and what they compare to: which results may be set side by side, the medians
// of repeated runs (what the page shows per run), the step a draft's cost is measured in, and the
// measured c, v, α and E the lesson's formulas take (E / (γc + v), from the runs' means). Pure functions over a results record:
//   { plain, spec }   the last plain / speculative run: { options, summary, runs } (or null)
//   step              the last calibration: { options, ms } (or null)
//   pairedRatios      one ratio per repeat of the last "Run both & compare" (or null)
//   steady            that comparison from each step's fastest repeat (trust.js steadyComparison), or null
// The page (compare.js) and the Node tests import them.
import { median } from '../shared/roofline.js';
import { ratioVerdict } from './verdict.js';
import { commonGamma } from './runcharts.js';
import { meanCosts } from './costmodel.js';
import { gammaDepth, gammaPolicy } from '../shared/gamma.js';

/** A results record with nothing measured yet (also: after other models were loaded). */
export function emptyResults() {
  return { plain: null, spec: null, step: null, pairedRatios: null, steady: null };
}

/**
 * Runs are comparable when they decode the same prompt with the same sampling settings on the
 * same number of threads (γ, the drafter, the draft's shape and pace do not change what a plain
 * step costs; the thread count does).
 */
export function sameSettings(a, b) {
  const key = (o) =>
    JSON.stringify({
      ...o,
      gamma: 0,
      gammaMax: 0,
      drafter: '',
      tree: null,
      paceMs: 0,
      quiet: false,
    });
  return !!(a && b) && key(a) === key(b);
}

/**
 * Several runs of the same decoding as one: the first run's counts, the timings' medians — and
 * with `steady` (trust.js steadyComparison's plain or spec: each step's fastest repeat), its
 * tokens/s instead (steady: true), the figure the speed-up is the ratio of.
 */
export function aggregate(runs, steady = null) {
  const med = (f) => median(runs.map(f));
  return {
    ...runs[0],
    tokensPerSecond: steady ? steady.tokensPerSecond : med((r) => r.tokensPerSecond),
    ...(steady ? { steady: true } : {}),
    draftMsPerPass: med((r) => r.draftMsPerPass),
    targetMsPerPass: med((r) => r.targetMsPerPass),
    ...(runs[0].targetMsMedian !== undefined ? { targetMsMedian: med((r) => r.targetMsMedian) } : {}),
    ...(runs[0].draftMsMedian !== undefined ? { draftMsMedian: med((r) => r.draftMsMedian) } : {}),
    repeats: runs.length,
  };
}

/** One ratio per repeat of the last "Run both & compare", or the one ratio of separate runs. */
export function comparisonRatios({ plain, spec, pairedRatios }) {
  const plainSt = plain?.summary;
  const specSt = spec?.summary;
  if (!plainSt || !specSt || !sameSettings(plain.options, spec.options) || !plainSt.tokensPerSecond) return [];
  if (pairedRatios?.length) return pairedRatios;
  return [specSt.tokensPerSecond / plainSt.tokensPerSecond];
}

/**
 * A run's target pass, ms: the median of its passes when the worker reported them, else their
 * mean (which settings have a plain step; compareRuns then takes the runs' mean step).
 */
export const passMs = (st) => (Number.isFinite(st?.targetMsMedian) ? st.targetMsMedian : st?.targetMsPerPass);

/** One target step of the speculative run's settings, { ms, from }, or null when none is known. */
export function plainStepMs({ plain, spec, step }) {
  if (plain && spec && sameSettings(plain.options, spec.options)) {
    return { ms: passMs(plain.summary), from: 'the plain run' };
  }
  if (step && spec && sameSettings(step.options, spec.options)) {
    return { ms: step.ms, from: 'a 12-step calibration' };
  }
  return null;
}

/** Whether a speculative run with these options needs a calibration of the plain step. */
export function needsCalibration({ plain, step }, options) {
  if (plain && sameSettings(plain.options, options)) return false;
  return !step || !sameSettings(step.options, options);
}

/**
 * What the last speculative run measured against the lesson's formulas, or null before one.
 * `sd`: the WASM instance's formulas (expectedAcceptedTokens, speculativeSpeedup).
 * formula: whether the lesson's formulas describe these settings (a chain of a fixed length from
 * one drafter); c, v, α, E and the predictions: the means of the runs the comparison explains
 * (costmodel.js meanCosts: total time ÷ count, over every timed repeat, as tokens/s counts time,
 * so that E / (γc + v) predicts the measured speed-up; c, v NaN when no step is known);
 * predicted: E / (γc + 1); predictedV: E / (γc + v); costs: meanCosts's means (ms, for the text)
 * with `from`; step: { ms, from } of the mean step; verdict: verdict.js ratioVerdict.
 */
export function compareRuns(results, sd) {
  const specSt = results.spec?.summary;
  if (!specSt) return null;
  const known = plainStepMs(results);
  const fromPlain = known?.from === 'the plain run';
  const o = results.spec.options;
  // The lesson's formulas describe a chain of a fixed length from one drafter; for the other
  // settings the page reports what was measured and says why the formulas do not apply.
  const formula = !o.tree && gammaPolicy(o) === 'fixed' && o.drafter !== 'both';
  const hist = specSt.gammaHistogram ?? [];
  const deepest = hist.reduce((m, count, g) => (count > 0 ? g : m), 0);
  // Heads cut a deeper γ to their count; the context end cuts the last drafts.
  const gamma = formula && deepest > 0 ? Math.min(o.gamma, deepest) : gammaDepth(o);
  // Each step's fastest repeat as one run, when the repeats have step times (trust.js).
  const steady = fromPlain ? results.steady : null;
  const asRun = (first, part) => ({
    ...first,
    computeMs: part.computeMs,
    draftMs: part.draftMs,
    targetMs: part.targetMs,
  });
  const m = meanCosts({
    plainRuns: steady
      ? [asRun(results.plain.runs[0], steady.plain)]
      : fromPlain
        ? (results.plain.runs ?? [results.plain.summary])
        : [],
    specRuns: steady ? [asRun(results.spec.runs[0], steady.spec)] : (results.spec.runs ?? [specSt]),
    calibrationMs: known && !fromPlain ? known.ms : NaN,
    gamma,
    expectedAcceptedTokens: (a, g) => sd.expectedAcceptedTokens(a, g),
  });
  const from = fromPlain ? 'the plain runs' : known?.from;
  const costs = m && { ...m, from, repeats: steady ? steady.repeats : 0 };
  const step = known && { ms: m ? m.stepMs : known.ms, from };
  const alpha = m ? m.alpha : Math.min(1, Math.max(0, specSt.alpha));
  const E = m ? m.E : sd.expectedAcceptedTokens(alpha, gamma);
  const c = m ? m.c : NaN;
  const v = m ? m.v : NaN;
  const predicted = m ? m.predicted : NaN;
  const predictedV = m ? m.predictedV : NaN;
  const raw = comparisonRatios(results);
  // The verdict reads the speed-up with each repeat left out in turn; the headline is all of them.
  const ratios = steady ? steady.ratios : raw;
  const rv = ratioVerdict(ratios);
  // (The range shown holds the headline: all repeats together can be cleaner than any subset.)
  const verdict = steady
    ? {
        ...rv,
        median: steady.ratio,
        min: Math.min(rv.min, steady.ratio),
        max: Math.max(rv.max, steady.ratio),
        steady: true,
      }
    : rv;
  return {
    o,
    specSt,
    step,
    costs,
    formula,
    hist,
    gamma,
    c,
    v,
    alpha,
    E,
    predicted,
    predictedV,
    ratios,
    rawRatios: raw,
    verdict,
  };
}

/**
 * The facts of a comparison that vk.js quotes ({ alpha, gamma, c, E, threads, target }), or null
 * when they do not describe a fixed chain from the draft model with measured costs.
 */
export function runFactsOf(f, { threads, target }) {
  if (!f || !f.formula || f.o.drafter !== 'draft' || !Number.isFinite(f.c) || !Number.isFinite(f.v)) return null;
  return { alpha: f.alpha, gamma: f.gamma, c: Math.max(0, f.c), E: f.E, threads, target };
}

/** The pass length a v(k) measurement after a run quotes: the run's γ (a tree's depth). */
export function typicalGamma(options, hist) {
  const typical = options.tree
    ? options.tree.length
    : gammaPolicy(options) === 'fixed'
      ? options.gamma
      : commonGamma(hist ?? []);
  return typical || gammaDepth(options);
}

/** "120 tokens · 41 target passes · 96 draft steps · 310.2 tokens/s · 387 ms compute". */
export function runLine(st, isPlain) {
  if (!st) return '';
  const parts = [`${st.generated} tokens`, `${st.targetPasses} target passes`];
  if (!isPlain) parts.push(`${st.draftPasses} draft steps`);
  if (st.tokensPerSecond) parts.push(`${st.tokensPerSecond.toFixed(1)} tokens/s`);
  parts.push(`${st.computeMs.toFixed(0)} ms compute`);
  return parts.join(' · ');
}

/**
 * A run's line after repeats, or null for a single run: its tokens/s (each step's fastest repeat,
 * or the median) and every repeat's own.
 */
export function repeatLine(res, isPlain) {
  if (!res || !(res.runs?.length > 1)) return null;
  const how = res.summary.steady
    ? `each step's fastest of ${res.runs.length} repeats; the repeats:`
    : `median of ${res.runs.length} repeats,`;
  return `${runLine(res.summary, isPlain)} (tokens/s: ${how} ${res.runs.map((r) => r.tokensPerSecond.toFixed(1)).join(', ')})`;
}

/** A finished run's state line: "done, 120 tokens · timing repeat 2 of 3 next". */
export function finishedText(summary, repeat, repeats) {
  const last = repeat === repeats - 1;
  const done = summary.stopped ? `stopped after ${summary.generated} tokens` : `done, ${summary.generated} tokens`;
  const more =
    summary.stopped || repeats === 1
      ? ''
      : last
        ? ` · ${repeats} timing repeats`
        : ` · timing repeat ${repeat + 2} of ${repeats} next`;
  return { text: done + more, state: summary.stopped ? 'stopped' : last ? 'done' : 'repeating' };
}
