// Section 4's verdict, drawn: the comparison table's measured cells (c, v, the speedup and its
// spread) and the sentences under it: the headline (verdict.js), what one iteration cost in
// target steps and what the lesson's E / (γc + v) predicts from it, why speculation does not
// pay when it does not, the γ the measured costs predict to be best (with a button that picks
// it), and which backend ran the target. The numbers come from results.js compareRuns, with c, v
// and the prediction from the means of the runs they explain (costmodel.js meanCosts).
import { h } from '../shared/svg.js';
import { bestGamma } from './costmodel.js';
import { DRAFTER_NAMES, meanGamma } from './runcharts.js';
import { RULE, RULE_STEADY, ratioText, spreadText, verdictHeadline } from './verdict.js';
import { passMs } from './results.js';
import { BUSY } from '../shared/trust.js';
import { gammaPolicy } from '../shared/gamma.js';
import { shownFormula } from '../shared/shown.js';

/** Below this, a γ predicted faster than the current one is within noise: no suggestion. */
export const SUGGEST_MARGIN = 0.05;

/**
 * The comparison table's measured cells and the verdict's data attributes.
 * @param {(id: string) => HTMLElement} cell  a cell by its data-testid
 * @param {HTMLElement} el  #verdict
 * @param {object} f  results.js compareRuns
 */
export function showMeasured(cell, el, f) {
  const { c, v, verdict, ratios } = f;
  cell('c-measured').textContent = Number.isFinite(c) ? `${c.toFixed(3)}` : '–';
  cell('v-measured').textContent = Number.isFinite(v) ? `${v.toFixed(2)}` : '–';
  const speedupCell = cell('speedup-measured');
  const how = verdict.steady ? 'each step’s fastest repeat' : 'median';
  speedupCell.textContent = verdict.n
    ? `${ratioText(verdict.median)}${verdict.n > 1 ? ` (${how}; ${spreadText(verdict)})` : ''}`
    : '– (run plain too)';
  for (const id of ['c-measured', 'v-measured', 'speedup-measured']) delete cell(id).dataset.untrusted;
  speedupCell.dataset.ratios = ratios.map((r) => r.toFixed(4)).join(',');
  speedupCell.dataset.median = Number.isFinite(verdict.median) ? String(verdict.median) : '';
  el.dataset.verdict = verdict.kind;
  el.dataset.pays = String(verdict.kind === 'pays');
}

/**
 * The predicted cells and the verdict's sentences.
 * @param {(id: string) => HTMLElement} cell
 * @param {HTMLElement} el  #verdict
 * @param {object} f  results.js compareRuns
 * @param {object} o
 * @param {number} o.threads  the threads the run used
 * @param {boolean} o.coarseTimer  performance.now() is coarsened (no cross-origin isolation)
 * @param {(threads: number) => ((k: number) => number) | null} o.verifyCurve  measured v(k) (vk.js)
 * @param {(alpha: number, gamma: number, c: number, v?: number) => number} o.speedup  E / (γc + v)
 * @param {{ ok: boolean, reasons: string[] }} [o.trust]  trust.js judgeRun of these runs: when not
 *   ok, the busy sentence and the raw times, and no headline, prediction or suggestion
 * @param {{ plain: object[], spec: object[] }} [o.raw]  the runs' summaries, for the raw times
 */
export function showVerdict(cell, el, f, { threads, coarseTimer, verifyCurve, speedup, trust = null, raw = null }) {
  const { o, specSt, formula, hist, gamma, c, v, alpha, E, predicted, predictedV, verdict, step, costs } = f;
  // Which backend ran the target: the verdict is that backend's.
  const ran = specSt.backend ?? { backend: 'cpu' };
  const where = h('span', { class: 'verdict-backend', 'data-testid': 'verdict-backend', 'data-backend': ran.backend }, [
    ran.backend === 'gpu'
      ? `Target on the GPU (${ran.name}${ran.software ? ', a software adapter' : ''}). `
      : `Target on the CPU (WebAssembly, ${threadCount(threads)}). `,
  ]);
  el.dataset.backend = ran.backend;
  el.dataset.trusted = String(!trust || trust.ok);
  if (trust && !trust.ok) {
    // Nothing derived from timings that failed the checks, in the table either: the raw times
    // are in the verdict.
    const why = '– (the timings failed the checks)';
    for (const id of ['speedup-predicted', 'speedup-predicted-v', 'c-measured', 'v-measured', 'speedup-measured']) {
      cell(id).textContent = why;
      cell(id).dataset.untrusted = 'true';
    }
    el.dataset.verdict = 'untrusted';
    el.dataset.pays = 'false';
    el.replaceChildren(where, ...busyParts(trust, raw, f.rawRatios ?? f.ratios));
    return;
  }
  if (!formula) {
    const why = o.tree
      ? '– (a tree: the chain formula does not apply)'
      : o.drafter === 'both'
        ? '– (two drafters: see the counts below)'
        : '– (γ varies: see the histogram below)';
    cell('speedup-predicted').textContent = why;
    cell('speedup-predicted-v').textContent = why;
    el.replaceChildren(where, ...verdictMixed({ verdict, o, specSt, hist }));
    return;
  }
  // The predictions from the numbers the table and the verdict show (shown.js): they add up as written.
  const at1 = shownFormula({ gamma, c, v: 1, E });
  const atV = shownFormula({ gamma, c, v, E });
  cell('speedup-predicted').textContent = Number.isFinite(predicted) ? `${at1.speedupText}×` : '–';
  cell('speedup-predicted-v').textContent = Number.isFinite(predictedV) ? `${atV.speedupText}×` : '–';
  const parts = [
    where,
    ...verdictOf({
      verdict,
      predictedV,
      alpha,
      gamma,
      c,
      v,
      E,
      step,
      costs,
      specSt,
      coarseTimer,
      gpu: ran.backend === 'gpu' ? ran : null,
    }),
  ];
  if (o.drafter !== 'draft') {
    el.replaceChildren(...parts, ...ruleNote(verdict));
    return;
  }
  // The γ the measured costs predict to be best: with v(k) measured at this thread count when
  // section 4's measurement has it, else extrapolated from this run's v(γ + 1).
  const curve = verifyCurve(threads);
  const best = bestGamma({
    alpha,
    gamma,
    c: Math.max(0, c),
    v,
    speedup,
    verifyCost: curve ?? undefined,
  });
  el.replaceChildren(
    ...parts,
    ...suggestion(best, gamma, v, curve ? (ran.backend === 'gpu' ? 'gpu' : threads) : null, c, marginOf(verdict)),
    ...ruleNote(verdict),
  );
}

// The verdict for settings the lesson's formula does not cover (auto / heuristic γ, two
// drafters, trees): what was measured, and where the tokens per pass came from.
function verdictMixed({ verdict, o, specSt, hist }) {
  const out = [];
  const tpp = specSt.tokensPerPass;
  const ppp = specSt.positionsScored && specSt.targetPasses ? specSt.positionsScored / specSt.targetPasses : NaN;
  const head = verdictHeadline(verdict);
  out.push(h('strong', head.cls ? { class: head.cls } : {}, [head.text]));
  const bits = [
    `Each target pass emitted ${tpp.toFixed(2)} tokens on average` +
      (Number.isFinite(ppp) ? ` and scored ${ppp.toFixed(1)} positions` : ''),
  ];
  if (o.tree) {
    bits.push(
      `a tree offers several candidates per depth, so more of each pass is kept, but every pass scores all its nodes: whether that pays depends on what a wider pass costs here (v(k) below)`,
    );
  } else if (gammaPolicy(o) !== 'fixed') {
    const used = hist.map((count, g) => (count > 0 ? g : null)).filter((g) => g !== null);
    if (used.length)
      bits.push(
        `γ ranged over ${used[0]}…${used[used.length - 1]} (mean ${meanGamma(hist).toFixed(2)}), chosen by the ${o.gamma} policy from what the run measured`,
      );
  }
  const counts = specSt.byDrafter ?? {};
  const by = Object.entries(DRAFTER_NAMES)
    .filter(([d]) => counts[d] > 0)
    .map(([d, name]) => `${name} ${counts[d]}`);
  if (by.length > 1) bits.push(`iterations by drafter: ${by.join(', ')}`);
  out.push(bits.join('; ') + '.');
  out.push(...ruleNote(verdict));
  return out;
}

const threadCount = (t) => `${t} thread${t === 1 ? '' : 's'}`;

/**
 * What the verdict's units are, each said with what it counts: "one step = 2.41 ms, the plain
 * run's time per token (…)"; "one iteration = 7.20 ms, …"; the verify pass alone.
 */
export function costsText(k, gamma) {
  const ms = (x) => `${x.toFixed(2)} ms`;
  if (!Number.isFinite(k.iterationMs)) {
    return `one step = ${ms(k.stepMs)}, from ${k.from}; a verify pass over γ + 1 = ${gamma + 1} tokens took ${ms(k.verifyMs)}`;
  }
  const over = k.repeats > 1 ? `, each step's fastest of ${k.repeats} repeats` : '';
  const step = k.steps
    ? k.repeats > 1
      ? `one step = ${ms(k.stepMs)}, the plain run's time per token (its ${k.steps} steps${over})`
      : `one step = ${ms(k.stepMs)}, the plain runs' time ÷ their ${k.steps} steps`
    : `one step = ${ms(k.stepMs)}, from ${k.from}`;
  const iter =
    k.repeats > 1
      ? `one iteration = ${ms(k.iterationMs)}, the speculative run's time ÷ its ${k.iterations} iterations${over ? `${over}` : ''}`
      : `one iteration = ${ms(k.iterationMs)}, the speculative runs' time ÷ their ${k.iterations} iterations`;
  return (
    `${step}; ${iter}: ` +
    `${ms(k.draftMs)} drafting, ${ms(k.iterationMs - k.draftMs)} verifying γ + 1 = ${gamma + 1} tokens and testing them ` +
    `(the verify pass alone ${ms(k.verifyMs)}); means, as tokens/s counts time`
  );
}

/** How much better a γ must be predicted before the page suggests it: the measured spread, at least SUGGEST_MARGIN. */
export function marginOf(verdict) {
  const spread = verdict?.n > 1 && verdict.min > 0 ? verdict.max / verdict.min - 1 : 0;
  return Math.max(SUGGEST_MARGIN, spread);
}

function verdictOf({ verdict, predictedV, alpha, gamma, c, v, E, step, costs, specSt, coarseTimer, gpu = null }) {
  const out = [];
  if (!verdict.n && !Number.isFinite(predictedV)) return out;
  const head = verdictHeadline(verdict, { predicted: predictedV });
  // Written from the shown numbers (shown.js): the sum and the quotient add up as written.
  const f = shownFormula({ gamma, c, v, E });
  const why =
    `One iteration costs γc + v = ${gamma}·${f.c} + ${f.v} = ${f.cost} target steps ` +
    `(${costsText(costs ?? { stepMs: step.ms, from: step.from, verifyMs: passMs(specSt) }, gamma)}) and yields E = ${f.E} tokens at α = ${alpha.toFixed(2)}: ` +
    `E/(γc + v) = ${Number.isFinite(predictedV) ? `${f.E} / ${f.cost} = ${f.speedupText}` : '–'}×.`;
  // Browsers coarsen performance.now() (to 0.1 ms in a page that is not cross-origin isolated),
  // so the per-step times of a very small model are rough; the tokens/s over a whole run are not.
  const coarse =
    coarseTimer && step.ms < 0.5
      ? ` One step takes less than 0.5 ms here, close to the browser's timer resolution without cross-origin isolation (≈ 0.1 ms), so c and v are rough; the measured tokens/s are not.`
      : '';
  out.push(h('strong', head.cls ? { class: head.cls } : {}, [head.text]), why);
  // Why it does not clearly pay, from the measured costs (only what they show).
  const basis = verdict.n ? verdict.median : predictedV;
  if (verdict.kind === 'loses' || verdict.kind === 'even' || (verdict.kind === 'none' && basis < 1)) {
    const reasons = [];
    if (c > 0.3) reasons.push(`the draft is not cheap (c = ${c.toFixed(2)}; the lesson assumes c ≪ 1)`);
    if (alpha < 0.6) reasons.push(`the draft agrees too rarely (α = ${alpha.toFixed(2)})`);
    if (v > 1.5) {
      reasons.push(
        !gpu
          ? `verifying ${gamma + 1} tokens costs v = ${v.toFixed(2)} single steps, not ≈ 1: on this CPU a forward pass is compute-bound, so scoring several positions at once is not free as it is on a memory-bound GPU`
          : gpu.software
            ? `verifying ${gamma + 1} tokens costs v = ${v.toFixed(2)} single steps on this adapter: it is a software one (SwiftShader, the GPU emulated on the CPU cores), where a pass costs arithmetic as on a CPU — this says nothing about a hardware GPU`
            : `verifying ${gamma + 1} tokens costs v = ${v.toFixed(2)} single steps on this GPU, not ≈ 1: at this model size its passes grow with k`,
      );
    }
    if (reasons.length) out.push(' Why: ' + reasons.join('; ') + '.');
  }
  if (coarse) out.push(coarse);
  return out;
}

/**
 * The verdict when the runs failed the checks (trust.js): the busy sentence, what disagreed, and
 * the raw times — each run's tokens/s and each repeat's ratio — with nothing derived from them.
 */
function busyParts(trust, raw, ratios) {
  const tps = (runs) => (runs ?? []).map((r) => r.tokensPerSecond?.toFixed(1) ?? '–').join(', ') || '–';
  const rawText =
    `Raw times: plain ${tps(raw?.plain)} tokens/s; speculative ${tps(raw?.spec)} tokens/s` +
    `${ratios?.length ? `; ratio${ratios.length > 1 ? 's' : ''} ${ratios.map((r) => r.toFixed(2)).join(', ')}` : ''}.`;
  return [
    h('strong', { class: 'bad', 'data-testid': 'verdict-busy' }, [BUSY]),
    ' ',
    h('span', { 'data-testid': 'verdict-busy-why' }, [`What disagreed: ${trust.reasons.join('; ')}.`]),
    ' ',
    h('span', { 'data-testid': 'verdict-raw' }, [rawText]),
  ];
}

/** The verdict's rule, under it (only when a speedup was measured). */
const ruleNote = (verdict) =>
  verdict.n
    ? [h('span', { class: 'verdict-rule', 'data-testid': 'verdict-rule' }, [` ${verdict.steady ? RULE_STEADY : RULE}`])]
    : [];

// Which γ the measured cost model predicts to be best, with a button that selects it.
// threads: the thread count whose measured v(k) was used (null: extrapolated from the run's v);
// margin: how much faster (a fraction) the best γ must be predicted to be suggested (marginOf).
function suggestion(best, gamma, v, threads, c, margin = SUGGEST_MARGIN) {
  if (!best) return [];
  const source =
    threads === 'gpu'
      ? `With c = ${c.toFixed(3)} and v(k) measured on the GPU (k = 1…8, below)`
      : threads
        ? `With c = ${c.toFixed(3)} and v(k) measured at ${threads} thread${threads === 1 ? '' : 's'} (k = 1…8, below)`
        : `With v(k) extrapolated linearly from this run's v(${gamma + 1}) = ${v.toFixed(2)}`;
  if (best.gamma === gamma || best.speedup <= best.current * (1 + margin)) {
    const within =
      best.gamma === gamma
        ? ''
        : ` (γ = ${best.gamma} is predicted at ${best.speedup.toFixed(2)}× against ${best.current.toFixed(2)}×: within the measured spread, ${Math.round(margin * 100)}%)`;
    return [
      h('span', { 'data-testid': 'best-gamma' }, [` ${source}, γ = ${gamma} is about the best γ here${within}.`]),
    ];
  }
  const input = document.getElementById('gen-gamma');
  const use = () => {
    input.value = String(best.gamma);
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.dispatchEvent(new Event('change', { bubbles: true }));
    input.focus();
  };
  return [
    h('span', { 'data-testid': 'best-gamma' }, [
      ` ${source}, γ = ${best.gamma} is predicted best here: ` +
        `${best.speedup.toFixed(2)}× instead of ${best.current.toFixed(2)}×, more than the measured spread (${Math.round(margin * 100)}%). `,
    ]),
    h('button', { type: 'button', 'data-testid': 'use-best-gamma', onclick: use }, [`Use γ = ${best.gamma}`]),
  ];
}
