// The facts table under section 4's v(k) chart (vk.js): on the CPU the weight bytes W, the read
// bandwidth B(T) over them, the memory floor W / B(T), the measured one-token step, the compute
// peak P(T) (and B(1), P(1) beside them at T > 1), what the longest pass reached, and where the
// roofline turns; on the GPU the adapter, W, the one-token pass, the kernels per pass and v(8).
// Every row's name has a tip that says where its number comes from.
import { h } from '../../shared/svg.js';
import { ridgeTokens } from '../../shared/roofline.js';
import { sizeText } from '../../shared/limits.js';
import { bwBytes } from './store.js';

/** "1 thread", "2 threads". */
export const threadsText = (t) => `${t} thread${t === 1 ? '' : 's'}`;

/**
 * The rows at T threads: [id, name, value, tip?].
 * @param {object} c  the target's costs at T (roofline.js targetCosts)
 * @param {object | null} one  its costs at 1 thread (T > 1), or null
 * @param {number} T
 * @param {string | null} bwErr  why the bandwidth could not be measured, if it could not
 * @param {object | null} [w]  the same pair's costs at T with the other weights (float32 / int8), when measured
 */
export function cpuFactRows(c, one, T, bwErr, w = null) {
  const gb = (x) => (x ? `${x.toFixed(1)} GB/s` : bwErr ? 'not measured' : '–');
  const gf = (p) => (p ? `${(p.flops / 1e9).toFixed(1)} GFLOP/s` : '–');
  const ridge = ridgeTokens(c);
  const peakTip = c.peak?.measured
    ? `Measured (sd.measurePeak): multiply-adds in registers on ${threadsText(T)} at once, with no memory traffic. ` +
      'An upper bound of what a matmul reaches, so the roofline drawn from it is a floor.'
    : 'Estimated from the longest measured pass (k = 8): k × FLOP per token (2 × parameters: a multiply and an add per weight) ' +
      '÷ its time. A lower bound of the real SIMD peak, since that pass also reads the weights and runs attention ' +
      '(this build of the module cannot measure the peak itself).';
  const int8 = c.weights === 'int8' ? c : w?.weights === 'int8' ? w : null;
  const f32 = c.weights === 'int8' ? w : c;
  const intRows = int8
    ? [
        [
          'int-peak',
          `Integer peak, ${threadsText(T)}: P_int(${T})`,
          int8.intPeak ? `${(int8.intPeak.ops / 1e9).toFixed(1)} GOP/s` : '–',
          'Measured (sd.measurePeak, intGops): i32x4.dot_i16x8_s multiply-adds in registers (2 operations each) on ' +
            `${threadsText(T)} at once. The 8-bit roofline is max(W / B(${T}), k × (integer ops / P_int(${T}) + the float LM head / P(${T}))).`,
        ],
      ]
    : [];
  const wRows = w
    ? [
        [
          `weights-${w.weights}`,
          `${w.weights === 'int8' ? '8-bit' : 'f32'} weights of this pair, W`,
          sizeText(w.weightBytes),
        ],
        [
          `step-${w.weights}`,
          `Its one-token step (${w.weights === 'int8' ? 'int8' : 'float32'}), ${threadsText(T)}`,
          Number.isFinite(w.stepMs) ? `${w.stepMs.toFixed(2)} ms` : '–',
        ],
      ]
    : [];
  return [
    [
      'weights',
      `Weights in memory (${c.weights === 'int8' ? '8-bit: int8 blocks and their scales, the rest f32' : 'f32'}), W`,
      sizeText(c.weightBytes),
    ],
    ...wRows,
    [
      'bandwidth',
      `Read bandwidth over them, ${threadsText(T)}: B(${T})`,
      gb(c.gbPerSecond),
      bwErr && !c.gbPerSecond
        ? `${bwErr}. The one-token step stands in for the memory floor.`
        : `${threadsText(T)} reading at once, each its own part of a ${sizeText(bwBytes(c))} buffer (sd.measureReadBandwidth).`,
    ],
    ...(one ? [['bandwidth-1', 'Read bandwidth, 1 thread: B(1)', gb(one.gbPerSecond)]] : []),
    ['floor', `Memory floor of one step, W / B(${T})`, c.memSource === 'bandwidth' ? `${c.memMs.toFixed(2)} ms` : '–'],
    [
      'step',
      `One-token target pass, ${threadsText(T)}`,
      Number.isFinite(c.stepMs) ? `${c.stepMs.toFixed(2)} ms` : '–',
      'The fastest of the v(k) measurement’s one-token passes (k = 1), from the run’s prompt: the pass alone, without sampling. The threads line compares thread counts by the same figure; the verdict’s “one step” is a plain run’s whole time per token instead.',
    ],
    ['peak', `Compute peak, ${threadsText(T)}: P(${T})${c.peak?.measured ? '' : ' (estimated)'}`, gf(c.peak), peakTip],
    ...(one
      ? [['peak-1', `Compute peak, 1 thread: P(1)${one.peak?.measured ? '' : ' (estimated)'}`, gf(one.peak)]]
      : []),
    ...(c.peak?.measured && c.achieved
      ? [
          [
            'achieved',
            `Reached by the k = ${c.achieved.fromK} pass`,
            gf(c.achieved),
            'k × FLOP per token ÷ the time of the longest measured pass: what the model’s matmuls actually reach (that pass also reads the weights and runs attention).',
          ],
        ]
      : []),
    ...intRows,
    [
      'ridge',
      c.weights === 'int8' ? 'Roofline turns at k = (W / B) / (ops per token / P_int)' : 'Roofline turns at k = 2P / B',
      Number.isFinite(ridge) ? ridge.toFixed(1) : '–',
      c.weights === 'int8'
        ? 'Below this many tokens the 8-bit pass is bound by reading its weights once (W / B); above it by its integer arithmetic. About 1 byte per weight and 2 operations per weight: the turn comes about four times sooner than with f32 weights at the same peak.'
        : 'Below this many tokens a pass is bound by reading the weights once (W / B); above it by arithmetic (k F / P). F / W = ½ FLOP per byte for f32 weights, hence 2P / B.',
    ],
    ...(f32 && int8 && Number.isFinite(ridgeTokens(f32)) && Number.isFinite(ridgeTokens(int8)) && c === int8
      ? [['ridge-f32', 'float32 roofline turns at k', ridgeTokens(f32).toFixed(1)]]
      : []),
    ...(f32 && int8 && Number.isFinite(ridgeTokens(f32)) && Number.isFinite(ridgeTokens(int8)) && c === f32
      ? [['ridge-int8', '8-bit roofline turns at k', ridgeTokens(int8).toFixed(1)]]
      : []),
  ];
}

/**
 * The rows on the GPU: [id, name, value, tip].
 * @param {object} gpu  the target's GPU costs (models/vk/store.js gpuCosts)
 * @param {{ name?: string, software?: boolean, dispatchesPerPass?: number }} b  the backend (backend.js)
 */
export function gpuFactRows(gpu, b) {
  return [
    [
      'adapter',
      'Adapter',
      `${b.name || '–'}${b.software ? ' (software)' : ''}`,
      b.software
        ? 'A software adapter: the GPU’s work emulated on the CPU cores. Its timings say nothing about a GPU.'
        : 'The WebGPU adapter the browser gave the page.',
    ],
    [
      'weights',
      'Weights in GPU memory, W',
      sizeText(gpu.weightBytes),
      `${gpu.weights === 'int8' ? '8-bit blocks, four int8 to a u32 with binary16 scales' : 'f32'}, uploaded once; the KV cache is in GPU memory too.`,
    ],
    [
      'step',
      'One-token pass',
      Number.isFinite(gpu.stepMs) ? `${gpu.stepMs.toFixed(2)} ms` : '–',
      'Measured: the median target pass over one new token.',
    ],
    [
      'dispatches',
      'Kernels per pass',
      b.dispatchesPerPass ? String(b.dispatchesPerPass) : '–',
      'Compute dispatches in the one command buffer of a pass (7 per layer + 3), then one read-back of the logits.',
    ],
    [
      'v8',
      'v(8)',
      gpu.measured.find((p) => p.k === 8)?.v.toFixed(2) ?? '–',
      'A pass over 8 new tokens, in one-token passes (measured).',
    ],
  ];
}

/** The table's rows as <tr>s: the name (with its tip, if any) and the value (data-testid vk-fact-<id>). */
export function factRows(rows) {
  return rows.map(([id, name, v, tip]) =>
    h('tr', {}, [
      h('th', { scope: 'row' }, [tip ? h('span', { class: 'tip', title: tip, tabindex: '0' }, [name]) : name]),
      h('td', { 'data-testid': `vk-fact-${id}` }, [v]),
    ]),
  );
}
