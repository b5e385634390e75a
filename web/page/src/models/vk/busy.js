// Section 4's v(k) when its timings failed the page's checks (trust.js): the busy sentence, what
// disagreed, the raw pass times and the raw facts — no roofline, curve comparison or claim.
import { h } from '../../shared/svg.js';
import { BUSY } from '../../shared/trust.js';
import { sizeText } from '../../shared/limits.js';
import { labelOf } from './store.js';
import { cpuFactRows, factRows, threadsText } from './facts.js';
import { drawVk } from './chart.js';

/**
 * The explanation's parts for timings that failed the checks: BUSY, what disagreed, the raw
 * pass times (each k's fastest) measured `where` (e.g. 'GPU', '2 threads').
 * @param {{ reasons: string[] }} trust
 * @param {string} where
 * @param {{ k: number, ms: number }[]} measured
 */
export function busyExplain(trust, where, measured) {
  const passes = measured.map((m) => `k = ${m.k}: ${m.ms.toFixed(2)} ms`).join(', ');
  // Each k's fastest pass (worker/measure.js): what was measured, not a claim.
  return [
    h('strong', { class: 'bad', 'data-testid': 'vk-busy' }, [BUSY]),
    ' ',
    h('span', { 'data-testid': 'vk-busy-why' }, [`What disagreed: ${trust.reasons.join('; ')}.`]),
    ' ',
    h('span', { 'data-testid': 'vk-raw' }, [`Raw pass times (each k's fastest, ${where}): ${passes || '–'}.`]),
  ];
}

// Facts that are measured as they are (no model drawn from them): shown under a busy measurement.
export const RAW_FACTS = new Set(['weights', 'bandwidth', 'bandwidth-1', 'step', 'peak', 'peak-1', 'int-peak']);

/**
 * A CPU measurement that failed the checks (trust.js, models/vk/store.js judge): the busy sentence,
 * what disagreed, the raw pass times per k and the raw facts; no roofline, no explanation, no
 * prediction from them.
 * @param {object} view  { ui, store, info, key, T }
 * @param {{ ok: boolean, reasons: string[] }} trust
 */
export function renderBusy({ ui, store, info, key, T }, trust) {
  const current = store.costs(key, info.target, T);
  const raw = { ...current, roof: [] };
  const one = T > 1 ? store.costs(key, info.target, 1) : null;
  ui.roofCaption.hidden = true;
  ui.caption.textContent = `${labelOf(key)}, ${sizeText(current.weightBytes)} of ${current.weights === 'int8' ? '8-bit' : 'f32'} weights, ${threadsText(T)}: raw timings`;
  drawVk(ui.chart, { current: raw, label: `${labelOf(key)} (raw, untrusted)`, threads: T });
  ui.root.dataset.curves = 'cpu';
  ui.root.dataset.weights = current.weights;
  ui.root.dataset.weightsCurves = current.weights;
  ui.root.dataset.vOther = '';
  ui.root.dataset.stepMsOther = '';
  ui.root.dataset.bandwidth = current.gbPerSecond ? 'measured' : store.bandwidthError() ? 'unavailable' : 'pending';
  ui.root.dataset.points = String(current.measured.length);
  ui.root.dataset.threads = String(T);
  ui.root.dataset.v = current.measured.map((m) => m.v.toFixed(4)).join(',');
  ui.root.dataset.stepMs = Number.isFinite(current.stepMs) ? current.stepMs.toFixed(4) : '';
  const rows = cpuFactRows(current, one, T, store.bandwidthError()).filter(([id]) => RAW_FACTS.has(id));
  ui.facts.replaceChildren(...factRows(rows));
  ui.measure.textContent = 'Measure v(k) again';
  ui.explain.replaceChildren(...busyExplain(trust, threadsText(T), current.measured));
}
