// Section 4's verdict, drawn: the comparison table's measured cells (c, v, the speedup and its
// spread) and the sentences under it: the headline (verdict.js), what one iteration cost in
// target steps and what the lesson's E / (γc + v) predicts from it, why speculation does not
// pay when it does not, the γ the measured costs predict to be best (with a button that picks
// it), and which backend ran the target. The numbers come from results.js compareRuns, with c, v
// and the prediction from the means of the runs they explain (costmodel.js meanCosts).
import { h } from '../shared/svg.js';
import { bestGamma } from './costmodel.js';
import { DRAFTER_NAMES, meanGamma } from './runcharts.js';
import { RULE, ratioText, verdictHeadline } from './verdict.js';
import { passMs } from './results.js';
import { BUSY } from '../shared/trust.js';
import { gammaPolicy } from '../shared/gamma.js';

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
  speedupCell.textContent = verdict.n
    ? `${ratioText(verdict.median)}${verdict.n > 1 ? ` (median; ${ratioText(verdict.min).slice(0, -1)}–${ratioText(verdict.max)} over ${verdict.n} repeats)` : ''}`
    : '– (run plain too)';
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
    const why = '– (the timings failed the checks)';
    cell('speedup-predicted').textContent = why;
    cell('speedup-predicted-v').textContent = why;
    el.dataset.verdict = 'untrusted';
    el.dataset.pays = 'false';
    el.replaceChildren(where, ...busyParts(trust, raw, f.ratios));
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
  cell('speedup-predicted').textContent = Number.isFinite(predicted) ? `${predicted.toFixed(2)}×` : '–';
  cell('speedup-predicted-v').textContent = Number.isFinite(predictedV) ? `${predictedV.toFixed(2)}×` : '–';
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
    ...suggestion(best, gamma, v, curve ? (ran.backend === 'gpu' ? 'gpu' : threads) : null, c),
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

/** "one step = 2.41 ms, the plain runs' time ÷ their 600 steps; one iteration = 7.20 ms, …". */
export function costsText(k, gamma) {
  const ms = (x) => `${x.toFixed(2)} ms`;
  if (!Number.isFinite(k.iterationMs)) {
    return `one step = ${ms(k.stepMs)}, from ${k.from}; a verify pass over γ + 1 = ${gamma + 1} tokens took ${ms(k.verifyMs)}`;
  }
  const step = k.steps
    ? `one step = ${ms(k.stepMs)}, the plain runs' time ÷ their ${k.steps} steps`
    : `one step = ${ms(k.stepMs)}, from ${k.from}`;
  return (
    `${step}; one iteration = ${ms(k.iterationMs)}, the speculative runs' time ÷ their ${k.iterations} iterations: ` +
    `${ms(k.draftMs)} drafting, ${ms(k.iterationMs - k.draftMs)} verifying γ + 1 = ${gamma + 1} tokens and testing them ` +
    `(the verify pass alone ${ms(k.verifyMs)}); means, as tokens/s counts time`
  );
}

function verdictOf({ verdict, predictedV, alpha, gamma, c, v, E, step, costs, specSt, coarseTimer, gpu = null }) {
  const out = [];
  if (!verdict.n && !Number.isFinite(predictedV)) return out;
  const head = verdictHeadline(verdict, { predicted: predictedV });
  const why =
    `One iteration costs γc + v = ${gamma}·${c.toFixed(2)} + ${v.toFixed(2)} = ${(gamma * c + v).toFixed(2)} target steps ` +
    `(${costsText(costs ?? { stepMs: step.ms, from: step.from, verifyMs: passMs(specSt) }, gamma)}) and yields E = ${E.toFixed(2)} tokens at α = ${alpha.toFixed(2)}: ` +
    `E/(γc + v) = ${Number.isFinite(predictedV) ? predictedV.toFixed(2) : '–'}×.`;
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
  verdict.n ? [h('span', { class: 'verdict-rule', 'data-testid': 'verdict-rule' }, [` ${RULE}`])] : [];

// Which γ the measured cost model predicts to be best, with a button that selects it.
// threads: the thread count whose measured v(k) was used (null: extrapolated from the run's v).
function suggestion(best, gamma, v, threads, c) {
  if (!best) return [];
  const source =
    threads === 'gpu'
      ? `With c = ${c.toFixed(3)} and v(k) measured on the GPU (k = 1…8, below)`
      : threads
        ? `With c = ${c.toFixed(3)} and v(k) measured at ${threads} thread${threads === 1 ? '' : 's'} (k = 1…8, below)`
        : `With v(k) extrapolated linearly from this run's v(${gamma + 1}) = ${v.toFixed(2)}`;
  if (best.gamma === gamma || best.speedup <= best.current * 1.02) {
    return [h('span', { 'data-testid': 'best-gamma' }, [` ${source}, γ = ${gamma} is about the best γ here.`])];
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
        `${best.speedup.toFixed(2)}× instead of ${best.current.toFixed(2)}×. `,
    ]),
    h('button', { type: 'button', 'data-testid': 'use-best-gamma', onclick: use }, [`Use γ = ${best.gamma}`]),
  ];
}
