// Section 4, "What a verify pass costs": after a run, the page measures v(k) = time(target pass
// over k new tokens) / time(one-token pass) for k = 1..8 in the worker (worker.js, measureVk),
// one core's read bandwidth over the target's weight bytes (sd.measureReadBandwidth), and draws
// the measured v(k) against the lesson's v = 1 and the memory-floor roofline
// max(W/B, k F/P) / (W/B) (roofline.js). Two sentences below the chart say, with these
// numbers, why the large pair pays more than the small one on this machine.
import { frame, h, pathOf, s, onWidthChange } from './svg.js';
import { K_MAX, costAt, explainPairs, targetCosts } from './roofline.js';
import { sizeText } from './limits.js';

// Buffers larger than this are read at DRAM speed anyway; no need to allocate more in wasm.
const MAX_BANDWIDTH_BYTES = 256 * 2 ** 20;

/**
 * @param {object} o
 * @param {import('./models.js').ModelClient} o.client
 * @param {Record<string, any>} o.pairs  the build's pairs (virtual:specdec-pairs)
 * @param {(b: boolean) => void} o.setBusy  section 4's busy state (buttons)
 * @param {() => boolean} o.isBusy
 * @param {() => object} o.readOptions  section 4's generation settings
 */
export function initVk({ client, pairs, setBusy, isBusy, readOptions }) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    root: $('vk'), chart: $('chart-vk'), status: $('vk-status'), progress: $('vk-progress'),
    measure: $('vk-measure'), stop: $('vk-stop'), explain: $('vk-explain'), facts: $('vk-facts'),
    caption: $('vk-current'),
  };
  const byKey = new Map(); // 'small' | 'large' | 'own:<digest>' -> { passMs, params, stopped, label }
  const bandwidthBySize = new Map(); // bytes -> { gbPerSecond, ... } | { error }
  let k = 5; // the pass length quoted in the explanation: γ + 1 of the last run
  let measuring = false;

  const keyOf = (info) => (info?.target?.pair ? info.target.pair : `own:${info?.target?.digest}`);
  const labelOf = (key) => (key.startsWith('own:') ? 'your target' : `${key} target`);
  const pairParams = (name) => pairs[name]?.available ? pairs[name].files.target.params : null;
  const bwFor = (params) => bandwidthBySize.get(Math.min(MAX_BANDWIDTH_BYTES, 4 * params));

  function costsOf(key, params, peak) {
    const m = byKey.get(key);
    const bw = bwFor(params);
    return targetCosts({ params, passMs: m?.passMs ?? [], gbPerSecond: bw?.gbPerSecond ?? null, peak });
  }

  function bandwidthError() {
    for (const r of bandwidthBySize.values()) if (r.error) return r.error;
    return null;
  }

  function render() {
    const info = client.info;
    if (!info) return;
    const key = keyOf(info);
    const current = costsOf(key, info.target.params, null);
    const peak = current.peak?.flops ?? null;
    ui.caption.textContent = `${labelOf(key)}, ${sizeText(current.weightBytes)} of f32 weights`;
    const otherKey = key === 'large' ? 'small' : key === 'small' ? 'large' : null;
    const other = otherKey && byKey.has(otherKey) && pairParams(otherKey)
      ? { costs: costsOf(otherKey, pairParams(otherKey), peak), label: labelOf(otherKey) } : null;
    drawVk(ui.chart, { current, label: labelOf(key), other });
    ui.root.dataset.bandwidth = current.gbPerSecond ? 'measured' : (bandwidthError() ? 'unavailable' : 'pending');
    ui.root.dataset.points = String(current.measured.length);
    renderFacts(current);
    ui.measure.textContent = current.measured.length ? 'Measure v(k) again' : 'Measure v(k)';
    // The explanation: the two shipped targets, measured where measured, the roofline elsewhere.
    if (pairParams('large') && pairParams('small') && current.measured.length >= 2) {
      const costs = (name) => costsOf(name, pairParams(name), name === key ? null : peak);
      const text = explainPairs({ large: costs('large'), small: costs('small'), k, bandwidthError: bandwidthError() });
      ui.explain.replaceChildren(h('strong', {}, ['Why the large pair pays more here. ']), text);
    } else if (current.measured.length >= 2) {
      ui.explain.textContent = `v(${k}) = ${costAt(current, k)?.v.toFixed(2) ?? '–'} for this target.`;
    } else {
      ui.explain.textContent = '';
    }
  }

  function renderFacts(c) {
    const bwErr = bandwidthError();
    const rows = [
      ['weights', 'Weights in memory (f32)', sizeText(c.weightBytes)],
      ['bandwidth', 'One core’s read bandwidth over them', c.gbPerSecond ? `${c.gbPerSecond.toFixed(1)} GB/s`
        : (bwErr ? 'not measured' : '–'), bwErr && !c.gbPerSecond ? `${bwErr}. The one-token step stands in for the memory floor.` : null],
      ['floor', 'Memory floor of one step (W / B)', c.memSource === 'bandwidth' ? `${c.memMs.toFixed(2)} ms` : '–'],
      ['step', 'Measured one-token step', Number.isFinite(c.stepMs) ? `${c.stepMs.toFixed(2)} ms` : '–'],
      ['peak', 'Compute peak (estimated)', c.peak ? `${(c.peak.flops / 1e9).toFixed(1)} GFLOP/s` : '–',
        'Estimated from the longest measured pass (k = 8): k × FLOP per token (2 × parameters: a multiply and an add per weight) '
        + '÷ its time. A lower bound of the real SIMD peak, since that pass also reads the weights and runs attention; '
        + 'nothing better is measurable from a page.'],
    ];
    ui.facts.replaceChildren(...rows.map(([id, name, v, tip]) => h('tr', {}, [
      h('th', { scope: 'row' }, [tip ? h('span', { class: 'tip', title: tip, tabindex: '0' }, [name]) : name]),
      h('td', { 'data-testid': `vk-fact-${id}` }, [v]),
    ])));
  }

  function status(text, state) {
    ui.status.textContent = text;
    ui.root.dataset.state = state;
  }

  /**
   * Measures v(k) of the loaded target (a dozen iterations per k) and the read bandwidth over
   * the weight bytes of the loaded and shipped targets. The caller holds section 4's busy state.
   */
  async function measure(options, gamma) {
    const info = client.info;
    if (!info || measuring) return;
    measuring = true;
    if (gamma) k = Math.min(K_MAX, Math.max(2, gamma + 1));
    const key = keyOf(info);
    ui.stop.hidden = false;
    ui.progress.hidden = false;
    ui.progress.value = 0;
    status(`Measuring v(k) of the ${labelOf(key)}: k = 1…${K_MAX}, a dozen target passes each…`, 'measuring');
    try {
      const vk = await client.measureVk(options, (ev) => {
        ui.progress.value = ev.done / ev.total;
        status(`Measuring v(k) of the ${labelOf(key)}: ${ev.done} of ${ev.total} sweeps (k = ${ev.k})…`, 'measuring');
      });
      if (keyOf(client.info) !== key) return; // other models arrived meanwhile
      if (vk.stopped) {
        // A complete earlier measurement stays; otherwise show what there is (and measure
        // again after the next run).
        if (!byKey.get(key) || byKey.get(key).partial) byKey.set(key, { passMs: vk.passMs, partial: true });
        render();
        status(`Stopped: v(k) from ${vk.samples.filter((n) => n > 0).length} of ${K_MAX} pass lengths measured so far`
          + `${byKey.get(key).partial ? '' : '; the chart shows the earlier complete measurement'}.`, 'stopped');
        return;
      }
      byKey.set(key, { passMs: vk.passMs });
      render();
      const sizes = new Set([4 * info.target.params, ...['small', 'large'].map(pairParams).filter(Boolean).map((p) => 4 * p)]);
      const results = await client.bandwidth([...sizes].map((b) => Math.min(MAX_BANDWIDTH_BYTES, b)));
      for (const r of results) bandwidthBySize.set(r.bytes, r);
      render();
      const bw = bwFor(info.target.params);
      status(`Measured in ${(vk.ms / 1000).toFixed(1)} s: v(k) from ${vk.samples.reduce((a, b) => a + b, 0)} target passes (medians)`
        + (bw?.gbPerSecond ? `, read bandwidth ${bw.gbPerSecond.toFixed(1)} GB/s.` : `; read bandwidth not measured (${bw?.error ?? 'unknown'}).`), 'done');
    } catch (err) {
      status(`Could not measure v(k): ${err.message}`, 'error');
      console.warn(err);
    } finally {
      measuring = false;
      ui.stop.hidden = true;
      ui.progress.hidden = true;
    }
  }

  ui.measure.addEventListener('click', async () => {
    if (isBusy() || !client.info) return;
    setBusy(true);
    try {
      await measure(readOptions());
    } finally {
      setBusy(false);
    }
  });
  ui.stop.addEventListener('click', () => client.stop());
  onWidthChange(() => (client.info ? render() : drawVk(ui.chart, null)));
  drawVk(ui.chart, null);

  return {
    measure,
    /** Whether the loaded target still needs a measurement. */
    needsMeasurement: () => !!client.info && (!byKey.has(keyOf(client.info)) || byKey.get(keyOf(client.info)).partial),
    /** New models: redraw for their target (its measurement, if any, is kept). */
    onLoaded() {
      if (measuring) return;
      const key = keyOf(client.info);
      if (!byKey.has(key)) status(`Run the models to measure v(k) of the ${labelOf(key)}.`, 'empty');
      else status(`v(k) of the ${labelOf(key)}, measured earlier on this page.`, 'done');
      render();
    },
    setDisabled(b) { ui.measure.disabled = b || !client.info; },
  };
}

function drawVk(svg, data) {
  const cur = data?.current;
  const measured = cur?.measured ?? [];
  const roof = (cur?.roof ?? []).filter((p) => Number.isFinite(p.v));
  const other = data?.other?.costs.measured ?? [];
  const top = Math.max(2, ...measured.map((p) => p.v), ...roof.map((p) => p.v), ...other.map((p) => p.v));
  const yMax = Math.ceil(top * 1.1 * 2) / 2;
  const f = frame(svg, {
    height: 280, maxWidth: 560, xDomain: [0.5, K_MAX + 0.5], yDomain: [0, yMax],
    xTicks: Array.from({ length: K_MAX }, (_, i) => i + 1),
    xLabel: 'k = tokens in one target pass (γ + 1)', yLabel: 'cost in one-token steps', yFormat: (t) => String(t),
  });
  const xl = f.x(0.5);
  const xr = f.x(K_MAX + 0.5);
  f.plot.append(
    s('line', { class: 'vk-lesson', x1: xl, x2: xr, y1: f.y(1), y2: f.y(1) }, [s('title', {}, ['The lesson’s assumption: verifying γ + 1 tokens costs one step, v = 1.'])]),
    s('text', { class: 'note', x: xr - 4, y: f.y(1) + 14, 'text-anchor': 'end' }, ['lesson: v = 1']),
  );
  if (!cur || !measured.length) {
    f.plot.append(s('text', { class: 'note', x: (f.m.left + f.W - f.m.right) / 2, y: f.H / 2 - 20, 'text-anchor': 'middle' },
      ['run the models to measure v(k)']));
    return;
  }
  if (roof.length) {
    const estimated = cur.memSource !== 'bandwidth';
    f.plot.append(s('path', { class: `vk-roof${estimated ? ' estimated' : ''}`, d: pathOf(roof.map((p) => [p.k, p.v]), f.x, f.y) }, [
      s('title', {}, [estimated
        ? 'Roofline estimated without a bandwidth measurement: the one-token step stands in for the memory floor.'
        : `Memory-floor roofline: max(W/B, k·F/P) / (W/B), W = ${(cur.weightBytes / 1e6).toFixed(1)} MB, B = ${cur.gbPerSecond.toFixed(1)} GB/s, P = ${(cur.peak.flops / 1e9).toFixed(1)} GFLOP/s (estimated from k = ${cur.peak.fromK}).`]),
    ]));
  }
  if (other.length) {
    f.plot.append(s('path', { class: 'vk-other', d: pathOf(other.map((p) => [p.k, p.v]), f.x, f.y) }, [
      s('title', {}, [`${data.other.label}, measured earlier`]),
    ]));
  }
  f.plot.append(s('path', { class: 'vk-measured', d: pathOf(measured.map((p) => [p.k, p.v]), f.x, f.y) }));
  for (const p of measured) {
    f.plot.append(s('circle', { class: 'vk-dot', cx: f.x(p.k), cy: f.y(p.v), r: 4 }, [
      s('title', {}, [`k = ${p.k}: a pass over ${p.k} token${p.k > 1 ? 's' : ''} took ${p.ms.toFixed(2)} ms, v = ${p.v.toFixed(2)}`]),
    ]));
  }
  // Legend, top left.
  const items = [
    ['vk-measured', `measured v(k), ${data.label}`],
    ...(roof.length ? [['vk-roof', cur.memSource === 'bandwidth' ? 'memory-floor roofline' : 'roofline (estimated)']] : []),
    ['vk-lesson', 'lesson: v = 1'],
    ...(other.length ? [['vk-other', `${data.other.label} (measured earlier)`]] : []),
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
