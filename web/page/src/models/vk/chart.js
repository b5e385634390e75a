// Section 4's v(k) chart (vk.js): the measured cost of a target pass over k = 1..8 new tokens, in
// one-token steps, against the lesson's v = 1 and the memory-floor roofline at T threads; with,
// when measured, the 1-thread curve and roofline, the other shipped target, and the same target
// on the other backend (GPU beside CPU), and the same pair with the other weights (float32 beside
// int8) with its own roofline. A legend top left names what is drawn.
import { frame, pathOf, s } from '../../shared/svg.js';
import { K_MAX } from '../../shared/roofline.js';

const threadsText = (t) => `${t} thread${t === 1 ? '' : 's'}`;

// The curve through points { k, v } in frame f, with attributes attrs and, if given, a tooltip.
const curve = (f, points, attrs, title) =>
  s(
    'path',
    {
      ...attrs,
      d: pathOf(
        points.map((p) => [p.k, p.v]),
        f.x,
        f.y,
      ),
    },
    title ? [s('title', {}, [title])] : [],
  );

/**
 * @param {SVGSVGElement} svg
 * @param {object | null} data  { current, label, other?, one?, threads, gpu?, backend?, weights? }: the
 *   costs (roofline.js targetCosts) of what to draw, or null before any measurement
 */
export function drawVk(svg, data) {
  const cur = data?.current;
  const T = data?.threads ?? 1;
  const measured = cur?.measured ?? [];
  const roof = (cur?.roof ?? []).filter((p) => Number.isFinite(p.v));
  const other = data?.other?.costs.measured ?? [];
  // The same target measured on the other backend (GPU beside CPU, or CPU beside GPU).
  const side = data?.backend?.costs.measured ?? [];
  // The same pair with the other weights (float32 beside int8), and its roofline (CPU only).
  const wMeasured = data?.weights?.costs.measured ?? [];
  const wRoof =
    data?.weights && !data.gpu && data.weights.costs.memSource === 'bandwidth'
      ? data.weights.costs.roof.filter((p) => Number.isFinite(p.v))
      : [];
  // At T > 1: the same target's v(k) measured on 1 thread (if it was) and the 1-thread roofline.
  const oneMeasured = data?.one?.measured ?? [];
  const oneRoof =
    data?.one && data.one.memSource === 'bandwidth' ? data.one.roof.filter((p) => Number.isFinite(p.v)) : [];
  const top = Math.max(
    2,
    ...measured.map((p) => p.v),
    ...roof.map((p) => p.v),
    ...other.map((p) => p.v),
    ...oneMeasured.map((p) => p.v),
    ...side.map((p) => p.v),
    ...wMeasured.map((p) => p.v),
    ...wRoof.map((p) => p.v),
  );
  const yMax = Math.ceil(top * 1.1 * 2) / 2;
  const f = frame(svg, {
    height: 280,
    maxWidth: 560,
    xDomain: [0.5, K_MAX + 0.5],
    yDomain: [0, yMax],
    xTicks: Array.from({ length: K_MAX }, (_, i) => i + 1),
    xLabel: 'k = tokens in one target pass (γ + 1)',
    yLabel: 'cost in one-token steps',
    yFormat: (t) => String(t),
  });
  const xl = f.x(0.5);
  const xr = f.x(K_MAX + 0.5);
  f.plot.append(
    s('line', { class: 'vk-lesson', x1: xl, x2: xr, y1: f.y(1), y2: f.y(1) }, [
      s('title', {}, ['The lesson’s assumption: verifying γ + 1 tokens costs one step, v = 1.']),
    ]),
    s('text', { class: 'note', x: xr - 4, y: f.y(1) + 14, 'text-anchor': 'end' }, ['lesson: v = 1']),
  );
  if (!cur || !measured.length) {
    f.plot.append(
      s(
        'text',
        {
          class: 'note',
          x: (f.m.left + f.W - f.m.right) / 2,
          y: f.H / 2 - 20,
          'text-anchor': 'middle',
        },
        [`run the models to measure v(k) on ${data?.gpu ? 'the GPU' : threadsText(T)}`],
      ),
    );
    return;
  }
  if (oneRoof.length) {
    const title = `Roofline with 1 thread: B(1) = ${data.one.gbPerSecond.toFixed(1)} GB/s, P(1) = ${(data.one.peak.flops / 1e9).toFixed(1)} GFLOP/s.`;
    f.plot.append(curve(f, oneRoof, { class: 'vk-roof-one' }, title));
  }
  if (roof.length) {
    const estimated = cur.memSource !== 'bandwidth';
    const peakWhence = cur.peak?.measured
      ? `measured on ${threadsText(T)}`
      : cur.peak?.fromK
        ? `estimated from k = ${cur.peak.fromK}`
        : 'estimated';
    const title = estimated
      ? 'Roofline estimated without a bandwidth measurement: the one-token step stands in for the memory floor.'
      : `Memory-floor roofline with ${threadsText(T)}: max(W/B(${T}), k·F/P(${T})) / (W/B(${T})), W = ${(cur.weightBytes / 1e6).toFixed(1)} MB, B(${T}) = ${cur.gbPerSecond.toFixed(1)} GB/s, P(${T}) = ${(cur.peak.flops / 1e9).toFixed(1)} GFLOP/s (${peakWhence}).`;
    f.plot.append(curve(f, roof, { class: `vk-roof${estimated ? ' estimated' : ''}` }, title));
  }
  if (other.length) {
    const title = `${data.other.label}, measured earlier on ${threadsText(T)}`;
    f.plot.append(curve(f, other, { class: 'vk-other' }, title));
  }
  if (oneMeasured.length) {
    f.plot.append(curve(f, oneMeasured, { class: 'vk-one' }, `${data.label}, measured on 1 thread`));
  }
  if (side.length) {
    const title = `${data.backend.label}: the same target, measured earlier`;
    f.plot.append(curve(f, side, { class: 'vk-backend', 'data-testid': 'vk-backend-curve' }, title));
  }
  const wText = (c) => (c.weights === 'int8' ? '8-bit' : 'float32');
  if (wRoof.length) {
    const w = data.weights.costs;
    const title =
      `Roofline of the ${wText(w)} weights with ${threadsText(T)}: W = ${(w.weightBytes / 1e6).toFixed(1)} MB, B(${T}) = ${w.gbPerSecond.toFixed(1)} GB/s` +
      `${w.intPeak ? `, P_int(${T}) = ${(w.intPeak.ops / 1e9).toFixed(1)} GOP/s` : w.peak ? `, P(${T}) = ${(w.peak.flops / 1e9).toFixed(1)} GFLOP/s` : ''}.`;
    f.plot.append(curve(f, wRoof, { class: 'vk-roof-weights', 'data-testid': 'vk-weights-roof' }, title));
  }
  if (wMeasured.length) {
    const title = `${data.weights.label}: the same pair with ${wText(data.weights.costs)} weights, measured earlier`;
    f.plot.append(curve(f, wMeasured, { class: 'vk-weights', 'data-testid': 'vk-weights-curve' }, title));
    for (const p of wMeasured) {
      f.plot.append(
        s('circle', { class: 'vk-weights-dot', cx: f.x(p.k), cy: f.y(p.v), r: 3 }, [
          s('title', {}, [`${data.weights.label}, k = ${p.k}: ${p.ms.toFixed(2)} ms, v = ${p.v.toFixed(2)}`]),
        ]),
      );
    }
  }
  f.plot.append(curve(f, measured, { class: 'vk-measured', 'data-testid': 'vk-current-curve' }));
  for (const p of measured) {
    f.plot.append(
      s('circle', { class: 'vk-dot', cx: f.x(p.k), cy: f.y(p.v), r: 4 }, [
        s('title', {}, [
          `k = ${p.k}: a pass over ${p.k} token${p.k > 1 ? 's' : ''} took ${p.ms.toFixed(2)} ms, v = ${p.v.toFixed(2)}`,
        ]),
      ]),
    );
  }
  // Legend, top left.
  const items = [
    ['vk-measured', data.gpu ? `measured v(k), ${data.label}` : `measured v(k), ${data.label}, ${threadsText(T)}`],
    ...(roof.length
      ? [
          [
            'vk-roof',
            cur.memSource === 'bandwidth' ? `memory-floor roofline, ${threadsText(T)}` : 'roofline (estimated)',
          ],
        ]
      : []),
    ...(oneRoof.length ? [['vk-roof-one', 'roofline, 1 thread']] : []),
    ...(oneMeasured.length ? [['vk-one', 'measured, 1 thread']] : []),
    ['vk-lesson', 'lesson: v = 1'],
    ...(other.length ? [['vk-other', `${data.other.label} (measured earlier)`]] : []),
    ...(side.length ? [['vk-backend', `${data.backend.label} (measured earlier)`]] : []),
    ...(wMeasured.length ? [['vk-weights', `${data.weights.label} (measured earlier)`]] : []),
    ...(wRoof.length ? [['vk-roof-weights', `its roofline, ${threadsText(T)}`]] : []),
  ];
  const lx = f.m.left + 10;
  items.forEach(([cls, label], i) => {
    const y = f.m.top + 8 + i * 16;
    f.plot.append(
      s('line', { class: cls, x1: lx, x2: lx + 22, y1: y, y2: y }),
      s('text', { class: 'legend-text', x: lx + 28, y, 'dominant-baseline': 'middle' }, [label]),
    );
  });
}
