// The markup of section 4's "What a verify pass costs: v(k)" panel, built once into <div id="vk">
// by vk.js: the intro, the chart, the facts table, the status, progress and buttons, the
// explanation. vk.js and its parts fill them (ids vk-*, chart-vk).
import { h, s } from '../../shared/svg.js';

const INTRO =
  "The lesson's formula assumes the target checks γ + 1 tokens for the price of one step (v = 1). " +
  "After a run the page times the target's passes over k = 1…8 new tokens (speculative iterations with " +
  'γ = k − 1, plain decoding for k = 1, taking turns, each decoder started again from the prompt every 4 passes so that the same passes repeat; ' +
  'each pass its fastest repeat, since another process can only slow a pass down, until the estimates from the even and from the odd repeats agree) and the read bandwidth B(T) over its weights and the compute ' +
  'peak P(T) of the T threads the run used (and of one thread), and draws v(k) = pass time / one-token step against ' +
  'that assumption and the memory-floor roofline v(k, T) = max(W/B(T), k·F/P(T)) / (W/B(T)): W weight bytes, ' +
  'B read bandwidth, F FLOP per token, P compute peak.';

/** The panel's children. */
export function vkPanel() {
  return [
    h('h3', { text: 'What a verify pass costs: v(k)' }),
    h('p', { class: 'vk-intro', text: INTRO }),
    h('div', { class: 'vk-body' }, [
      h('figure', { class: 'chart' }, [
        s('svg', { id: 'chart-vk', role: 'img', 'aria-labelledby': 'chart-vk-cap' }),
        h('figcaption', { id: 'chart-vk-cap' }, [
          'Measured v(k) of the ',
          h('span', { id: 'vk-current', text: 'current target' }),
          ", the lesson's v = 1",
          h('span', { id: 'vk-roof-cap', text: ' and the roofline' }),
          ' (hover a point for its time).',
        ]),
      ]),
      h('div', { class: 'vk-side' }, [
        h('table', { class: 'stats-table', 'aria-label': 'Measured memory and compute figures' }, [
          h('tbody', { id: 'vk-facts' }),
        ]),
        h('p', {
          class: 'vk-status',
          id: 'vk-status',
          role: 'status',
          'data-testid': 'vk-status',
          text: 'Run the models to measure v(k).',
        }),
        h('progress', {
          id: 'vk-progress',
          max: 1,
          value: 0,
          hidden: true,
          'aria-label': 'v(k) measurement progress',
          'data-testid': 'vk-progress',
        }),
        h('div', { class: 'buttons' }, [
          h('button', { type: 'button', id: 'vk-measure', disabled: true, text: 'Measure v(k)' }),
          h('button', { type: 'button', id: 'vk-stop', hidden: true, text: 'Stop measuring' }),
        ]),
      ]),
    ]),
    h('p', {
      class: 'vk-explain',
      id: 'vk-explain',
      'data-testid': 'vk-explanation',
      'aria-live': 'polite',
    }),
  ];
}
