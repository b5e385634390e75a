// Section 4's v(k) panel drawn for the target where it runs (vk.js calls these): on the GPU, its
// curve beside the CPU's and the other weights'; on the CPU at T threads, the curve with its
// roofline, the other pair's, one thread's and the GPU's; then the facts table and the sentences
// that explain them (roofline-explain.js), or the busy explanation when the timings failed the
// checks (busy.js).
import { h } from '../../shared/svg.js';
import { costAt, targetCosts } from '../../shared/roofline.js';
import {
  explainGpu,
  explainPairs,
  explainThreads,
  explainWeights,
  pairsHeading,
} from '../../shared/roofline-explain.js';
import { RAW_FACTS, busyExplain, renderBusy } from './busy.js';

/** Costs without what B(T) and P(T) give (the roofline, the floor, the ridge): when those failed the checks. */
const withoutRoof = (c) => c && { ...c, roof: [], memSource: null, memMs: NaN, gbPerSecond: null, peak: null };
import { sizeText } from '../../shared/limits.js';
import { labelOf, modelOf, otherWeightsKey } from './store.js';
import { cpuFactRows, factRows, gpuFactRows, threadsText } from './facts.js';
import { drawVk } from './chart.js';

/** The parameters of a shipped pair's target, or null when the build lacks it. */
export function pairParams(pairs, name) {
  return pairs[name]?.available ? pairs[name].files.target.params : null;
}

/**
 * The chart, facts and explanation with the target on the GPU.
 * @param {object} view  { ui, store, pairs, info, key, T, k }
 * @param {object} b  the backend in use (backend.js current())
 */
export function renderGpu({ ui, store, info, key, T, k }, b) {
  const gpu = store.gpuCosts(key, info.target) ?? {
    ...targetCosts(modelOf(info.target)),
    roof: [],
  };
  // The CPU beside it: at T threads, or at 1 when the runs timed one thread faster just then.
  const cpuT = store.has(key, T) ? T : store.has(key, 1) ? 1 : null;
  const cpu = cpuT ? store.costs(key, info.target, cpuT) : null;
  // The same pair with the other weights, measured on the GPU too.
  const wk = otherWeightsKey(key);
  const wGpu = wk ? store.gpuCosts(wk) : null;
  const weights = wGpu?.measured.length ? { costs: wGpu, label: `${labelOf(wk)}, GPU` } : null;
  ui.caption.textContent = `${labelOf(key)} on the GPU (${b.name || 'WebGPU'})`;
  ui.roofCaption.hidden = true; // no roofline for a GPU
  drawVk(ui.chart, {
    current: gpu,
    label: `${labelOf(key)}, GPU`,
    threads: T,
    gpu: true,
    backend: cpu ? { costs: cpu, label: `CPU (WebAssembly), ${threadsText(cpuT)}` } : null,
    weights,
  });
  ui.root.dataset.weights = gpu.weights ?? 'f32';
  ui.root.dataset.weightsCurves = weights ? 'f32,int8' : (gpu.weights ?? 'f32');
  ui.root.dataset.bandwidth = 'none';
  ui.root.dataset.points = String(gpu.measured.length);
  ui.root.dataset.threads = String(T);
  ui.root.dataset.backend = 'gpu';
  ui.root.dataset.curves = cpu?.measured.length ? 'gpu,cpu' : 'gpu';
  ui.facts.replaceChildren(...factRows(gpuFactRows(gpu, b)));
  ui.measure.textContent = gpu.measured.length ? 'Measure v(k) again' : 'Measure v(k)';
  const trust = store.judge(key, 'gpu');
  ui.root.dataset.trusted = String(trust.ok);
  if (!trust.ok) {
    ui.explain.replaceChildren(...busyExplain(trust, 'GPU', gpu.measured));
    return;
  }
  const text = explainGpu({ costs: gpu, gpu: b, cpu, threads: T, k });
  const wText = weights ? explainWeights({ ...byWeights(gpu, wGpu), k, cpu: false }) : '';
  ui.explain.replaceChildren(
    ...(text
      ? [
          h('strong', {}, ['Why a verify pass costs what it does on the GPU. ']),
          h('span', { 'data-testid': 'vk-gpu-explanation' }, [text]),
        ]
      : []),
    ...weightsPart(wText),
  );
}

/**
 * The chart, facts and explanation with the target on the CPU at T threads.
 * @param {object} view  { ui, store, pairs, info, key, T, k }
 * @param {{ run: object | null, speedup: Function | null }} o  the last comparison's facts
 */
export function renderCpu({ ui, store, pairs, info, key, T, k }, { run, speedup }) {
  ui.root.dataset.backend = 'cpu';
  const trust = store.judge(key, T);
  ui.root.dataset.trusted = String(trust.ok);
  if (!trust.ok) {
    renderBusy({ ui, store, info, key, T }, trust);
    return;
  }
  // B(T) and P(T) judged apart (store.judgeRoof): when they fail, v(k) is drawn without the roofline.
  const roofTrust = store.judgeRoof(key, T);
  ui.root.dataset.roofTrusted = String(roofTrust.ok);
  const roofed = (c) => (roofTrust.ok ? c : withoutRoof(c));
  ui.roofCaption.hidden = !roofTrust.ok;
  const current = roofed(store.costs(key, info.target, T));
  // Another target's roofline borrows this one's peak when P(T) is not measured.
  const peak = current.peak?.flops ?? null;
  ui.caption.textContent = `${labelOf(key)}, ${sizeText(current.weightBytes)} of ${current.weights === 'int8' ? '8-bit' : 'f32'} weights, ${threadsText(T)}`;
  // The other pair, with the same weights, when measured at T.
  const int8 = key.endsWith(':int8');
  const base = int8 ? key.slice(0, -5) : key;
  const otherBase = base === 'large' ? 'small' : base === 'small' ? 'large' : null;
  const otherKey = otherBase ? `${otherBase}${int8 ? ':int8' : ''}` : null;
  const otherOk = !otherKey || store.judge(otherKey, T).ok;
  const other =
    otherKey && otherOk && store.has(otherKey, T) && pairParams(pairs, otherBase)
      ? {
          costs: roofed(store.costs(otherKey, store.model(otherKey) ?? pairParams(pairs, otherBase), T, peak)),
          label: labelOf(otherKey),
        }
      : null;
  // The same pair with the other weights (float32 beside int8), when measured at T: its curve and roofline.
  const wk = otherWeightsKey(key);
  const wCosts =
    wk && store.has(wk, T) && store.model(wk) && store.judge(wk, T).ok ? roofed(store.costs(wk, null, T)) : null;
  const weights = wCosts?.measured.length ? { costs: wCosts, label: labelOf(wk) } : null;
  const one = T > 1 ? roofed(store.costs(key, info.target, 1)) : null;
  // The same target's GPU curve, once measured there.
  const gpuSide = store.gpuCosts(key, info.target);
  const backend = gpuSide?.measured.length ? { costs: gpuSide, label: `GPU (${gpuSide.gpu?.name || 'WebGPU'})` } : null;
  ui.root.dataset.curves = backend ? 'cpu,gpu' : 'cpu';
  drawVk(ui.chart, { current, label: labelOf(key), other, one, threads: T, backend, weights });
  ui.root.dataset.weights = current.weights;
  ui.root.dataset.weightsCurves = weights ? 'f32,int8' : current.weights;
  // For scripts and tests: the other weights' measured v(k) and one-token pass.
  ui.root.dataset.vOther = weights ? wCosts.measured.map((m) => m.v.toFixed(4)).join(',') : '';
  ui.root.dataset.stepMsOther = weights && Number.isFinite(wCosts.stepMs) ? wCosts.stepMs.toFixed(4) : '';
  const bwErr = store.bandwidthError();
  ui.root.dataset.bandwidth = current.gbPerSecond ? 'measured' : bwErr ? 'unavailable' : 'pending';
  ui.root.dataset.points = String(current.measured.length);
  ui.root.dataset.threads = String(T);
  // For scripts (bench/browser.mjs, tests): the measured v(k), k = 1.., and the one-token pass.
  ui.root.dataset.v = current.measured.map((m) => m.v.toFixed(4)).join(',');
  ui.root.dataset.stepMs = Number.isFinite(current.stepMs) ? current.stepMs.toFixed(4) : '';
  // Without a trusted B(T), P(T): the measured facts as they are (busy.js RAW_FACTS), nothing drawn from them.
  const facts = roofTrust.ok
    ? cpuFactRows(current, one, T, bwErr, weights?.costs ?? null)
    : cpuFactRows(store.costs(key, info.target, T), T > 1 ? store.costs(key, info.target, 1) : null, T, bwErr).filter(
        ([id]) => RAW_FACTS.has(id),
      );
  ui.facts.replaceChildren(...factRows(facts));
  ui.measure.textContent = current.measured.length ? 'Measure v(k) again' : 'Measure v(k)';
  // The explanation: the two shipped targets, measured where measured, the roofline elsewhere;
  // then what T threads make of a pass.
  const threadsPart = explainThreads({
    costs: current,
    threads: T,
    one,
    speedup,
    run: run && run.target === info.target.digest ? run : null,
  });
  const wText = weights ? explainWeights({ ...byWeights(current, wCosts), k }) : '';
  const roofNote = roofTrust.ok
    ? []
    : [
        ' ',
        h('span', { 'data-testid': 'vk-roof-busy' }, [
          `The read bandwidth and compute peak measured at ${threadsText(T)} failed the checks (${roofTrust.reasons.join('; ')}): another process had the cores, so no roofline is drawn from them; v(k) itself passed its checks.`,
        ]),
      ];
  const extra = [
    ...roofNote,
    ...(threadsPart
      ? [' ', h('span', { class: 'vk-threads', 'data-testid': 'vk-threads-explanation' }, [threadsPart])]
      : []),
    ...weightsPart(wText),
  ];
  if (
    roofTrust.ok &&
    pairParams(pairs, 'large') &&
    pairParams(pairs, 'small') &&
    current.measured.length >= 2 &&
    !int8 &&
    otherOk
  ) {
    const costs = (name) => store.costs(name, pairParams(pairs, name), T, name === key ? null : peak);
    const [large, small] = [costs('large'), costs('small')];
    const text = explainPairs({ large, small, k, bandwidthError: bwErr, threads: T });
    // The heading says what the numbers under it show (roofline-explain.js pairsHeading).
    ui.explain.replaceChildren(
      h('strong', { 'data-testid': 'vk-pairs-heading' }, [`${pairsHeading({ large, small, k })} `]),
      h('span', { 'data-testid': 'vk-pairs-explanation' }, [text]),
      ...extra,
    );
  } else if (current.measured.length >= 2) {
    const otherNote = otherOk
      ? ''
      : ` The ${labelOf(otherKey)}'s measurement at ${threadsText(T)} failed the checks (busy machine), so the two pairs are not compared.`;
    ui.explain.replaceChildren(
      h('span', { 'data-testid': 'vk-pairs-explanation' }, [
        `v(${k}) = ${costAt(current, k)?.v.toFixed(2) ?? '–'} for this target.${otherNote}`,
      ]),
      ...extra,
    );
  } else {
    ui.explain.replaceChildren(...weightsPart(wText));
  }
}

/** { f32, int8 }: the two costs by their weights. */
function byWeights(a, b) {
  return a.weights === 'int8' ? { f32: b, int8: a } : { f32: a, int8: b };
}

/** The 8-bit verdict's paragraph part (data-testid vk-weights-explanation), or nothing. */
function weightsPart(text) {
  return text
    ? [
        h('span', { class: 'vk-weights-explain', 'data-testid': 'vk-weights-explanation' }, [
          h('strong', {}, ['What 8-bit weights did to the physics. ']),
          text,
        ]),
      ]
    : [];
}
