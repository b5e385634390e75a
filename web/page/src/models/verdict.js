// Section 4's verdict on a measured speedup, from the spread of the repeats. "Run both & compare"
// runs plain and speculative decoding R times in turn (same prompt, seed, settings and thread
// count, so the same tokens every time: only the timing varies) and takes one ratio per repeat,
// r_i = speculative tokens/s ÷ plain tokens/s. The rule (RULE, shown on the page):
//   outlier          with 3 or more repeats, the one ratio farthest from the median is set aside
//                    when it lies more than 15% of the median away from it and more than 3 times
//                    as far as any other repeat (a burst of other load on a shared machine hits
//                    one repeat, and one repeat alone must not decide); at most one is set aside;
//   pays             every other repeat's ratio is above 1;
//   does not pay     every other repeat's ratio is below 1;
//   no measurable gain  otherwise: the repeats fall on both sides of 1, within their spread;
// and one ratio alone (a single repeat, or plain and speculative run separately) has no spread,
// so it gets no verdict. The headline number is the median of all the repeats' ratios.
// When the repeats have step times (compare.js, trust.js steadyComparison), each step's time is
// its fastest repeat (the same tokens every repeat: another process can only slow a step down),
// the headline is the speed-up of those, and the ratios the rule reads are that speed-up with
// each repeat left out in turn (with two repeats, each repeat's own): "pays" then means it does
// not hang on any one repeat (verdict.steady). Pure functions: the page and the Node tests import them.

import { LIMITS } from '../shared/trust.js';

/** The rule, in the words the page shows. */
export const RULE =
  'Rule: “pays” only when every repeat’s ratio (speculative ÷ plain tokens/s) is above 1, ' +
  '“does not pay” only when every one is below 1; ratios on both sides of 1 are within the spread: no measurable gain. ' +
  'With 3 or more repeats, one outlier is set aside first: the ratio farthest from the median, when it is more than 15% ' +
  'of the median away and more than 3 times as far as any other repeat.';

/** The rule when the repeats have step times (verdict.steady), in the words the page shows. */
export const RULE_STEADY =
  'Rule: each step’s time is its fastest repeat (every repeat decodes the same tokens, so another process can only slow a step down, never speed it up); ' +
  'the speedup is the speculative ÷ plain tokens/s of those. “pays” only when it stays above 1 whichever repeat is left out, ' +
  `“does not pay” only when it stays below 1; otherwise no measurable gain. The page trusts it when those estimates agree within ${Math.round((LIMITS.halves - 1) * 100)}%.`;

/** How far from the median an outlier lies at least: a fraction of the median, and a multiple of the next farthest. */
export const OUTLIER = { fraction: 0.15, times: 3 };

function medianOf(sorted) {
  const m = sorted.length >> 1;
  return sorted.length % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
}

/**
 * The repeat set aside by the rule, or null: with 3 or more ratios, the one farthest from their
 * median when it is more than OUTLIER.fraction of the median away and more than OUTLIER.times as
 * far as every other.
 * @param {number[]} sorted ratios, ascending
 * @returns {number | null}
 */
export function outlierOf(sorted) {
  if (sorted.length < 3) return null;
  const m = medianOf(sorted);
  const byDistance = [...sorted].sort((a, b) => Math.abs(b - m) - Math.abs(a - m));
  const far = Math.abs(byDistance[0] - m);
  const next = Math.abs(byDistance[1] - m);
  return far > OUTLIER.fraction * m && far > OUTLIER.times * next ? byDistance[0] : null;
}

/**
 * @param {number[]} ratios one per repeat (non-finite entries are ignored)
 * @returns {{ kind: 'pays' | 'even' | 'loses' | 'single' | 'none', n: number, median: number,
 *   min: number, max: number, outlier: number | null }}
 *   kind: 'pays', 'loses' (does not pay), 'even' (no measurable gain), 'single' (one ratio: no
 *   verdict), 'none' (no ratio at all); median, min, max: of all the ratios; outlier: the ratio
 *   set aside (null when none was).
 */
export function ratioVerdict(ratios) {
  const xs = (ratios ?? []).filter((x) => Number.isFinite(x) && x > 0).sort((a, b) => a - b);
  if (!xs.length) return { kind: 'none', n: 0, median: NaN, min: NaN, max: NaN, outlier: null };
  const outlier = outlierOf(xs);
  const out = { n: xs.length, median: medianOf(xs), min: xs[0], max: xs[xs.length - 1], outlier };
  if (xs.length < 2) return { kind: 'single', ...out };
  const kept = outlier === null ? xs : xs.filter((x, i) => i !== xs.indexOf(outlier));
  if (kept[0] > 1) return { kind: 'pays', ...out };
  if (kept[kept.length - 1] < 1) return { kind: 'loses', ...out };
  return { kind: 'even', ...out };
}

/**
 * A ratio as the page writes it: two decimals, or three when two would round it to 1.00 (so a
 * ratio just above or below 1 never reads "1.00×" under a verdict that says which side it is).
 */
export function ratioText(x) {
  if (!Number.isFinite(x)) return '–';
  const two = x.toFixed(2);
  return (two === '1.00' && x !== 1 ? x.toFixed(3) : two) + '×';
}

/** "1.18–1.27× over 3 repeats" (or "one repeat"; steady: "1.18–1.27× with each of 3 repeats left out"). */
export function spreadText(v) {
  if (!v || v.n === 0) return '';
  if (v.n === 1) return 'one repeat';
  const range = `${ratioText(v.min).slice(0, -1)}–${ratioText(v.max)}`;
  if (v.steady) return v.n === 2 ? `${range} in each of 2 repeats` : `${range} with each of ${v.n} repeats left out`;
  return `${range} over ${v.n} repeats`;
}

/** How the headline number was had: "median" or "each step's fastest repeat". */
const how = (v) => (v.steady ? 'each step’s fastest repeat' : 'median');

// "every repeat faster than plain", or with an outlier set aside, which one.
const side = (v, word) =>
  v.outlier !== null
    ? `every other ${v.steady ? 'estimate' : 'repeat'} ${word} than plain; one, ${ratioText(v.outlier)}, set aside as an outlier`
    : v.steady
      ? `${word} than plain ${v.n === 2 ? 'in both' : 'whichever repeat is left out'}`
      : `every repeat ${word} than plain`;

/** The headline of the verdict: { text, cls } (cls: 'ok' | 'bad' | 'even' | ''). */
export function verdictHeadline(v, { predicted = NaN } = {}) {
  switch (v.kind) {
    case 'pays':
      return {
        cls: 'ok',
        text: `Speculation pays here: ${ratioText(v.median)} measured (${how(v)}; ${spreadText(v)}, ${side(v, 'faster')}). `,
      };
    case 'loses':
      return {
        cls: 'bad',
        text: `On this machine speculation does not pay: ${ratioText(v.median)} measured (${how(v)}; ${spreadText(v)}, ${side(v, 'slower')}). `,
      };
    case 'even':
      return {
        cls: 'even',
        text: `No measurable gain: ${ratioText(v.median)} measured (${how(v)}; ${spreadText(v)}: ${v.steady ? 'they fall' : 'the repeats fall'} on both sides of 1×${v.outlier !== null ? `, even with one, ${ratioText(v.outlier)}, set aside as an outlier` : ''}). `,
      };
    case 'single':
      return {
        cls: 'even',
        text: `${ratioText(v.median)} measured from one plain and one speculative run: one ratio has no spread, so no verdict (Run both & compare repeats them). `,
      };
    default:
      return Number.isFinite(predicted)
        ? {
            cls: '',
            text: `Predicted from the measured costs: ${ratioText(predicted)} (no plain run with these settings to measure the speedup against). `,
          }
        : { cls: '', text: 'Run plain decoding too to measure the speedup. ' };
  }
}
