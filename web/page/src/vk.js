// Section 4, "What a verify pass costs": after a run, the page measures v(k) = time(target pass
// over k new tokens) / time(one-token pass) for k = 1..8 in the worker (worker.js, measureVk) on
// the thread count T the run used, the read bandwidth B(T) of T threads over the target's weight
// bytes (sd.measureReadBandwidth) and the compute peak P(T) (sd.measurePeak) — and B(1), P(1)
// beside them — and draws the measured v(k) at T against the lesson's v = 1 and the roofline
// v(k, T) = max(W/B(T), k F/P(T)) / (W/B(T)) (roofline.js). Measurements are kept per target and
// thread count. Sentences below the chart say, with these numbers, why the large pair pays more
// than the small one, how many tokens a pass verifies for about the price of one with T threads,
// and what that predicts for E/(γc + v) of the last run. With the target on the GPU (WebGPU) the
// same measurement gives the GPU's v(k), kept apart from the CPU's and drawn beside it once both
// are measured; no roofline there (the page cannot measure a GPU's bandwidth), and the sentences
// say what the GPU's pass cost and why (roofline.js explainGpu).
import { frame, h, pathOf, s, onWidthChange } from './svg.js';
import { K_MAX, costAt, explainGpu, explainPairs, explainThreads, ridgeTokens, targetCosts } from './roofline.js';
import { curveVerifyCost } from './costmodel.js';
import { sizeText } from './limits.js';

// Buffers larger than this are read at DRAM speed anyway; no need to allocate more in wasm.
const MAX_BANDWIDTH_BYTES = 256 * 2 ** 20;

const threadsText = (t) => `${t} thread${t === 1 ? '' : 's'}`;

/**
 * @param {object} o
 * @param {import('./models.js').ModelClient} o.client
 * @param {Record<string, any>} o.pairs  the build's pairs (virtual:specdec-pairs)
 * @param {(b: boolean) => void} o.setBusy  section 4's busy state (buttons)
 * @param {() => boolean} o.isBusy
 * @param {() => object} o.readOptions  section 4's generation settings
 * @param {() => number} [o.threadsNow]  the thread count the worker's passes use now
 * @param {() => object | null} [o.runFacts]  the last comparison's { alpha, gamma, c, E, threads, target }
 * @param {(alpha: number, gamma: number, c: number, v: number) => number} [o.speedup]  E / (γc + v)
 * @param {() => { backend: 'gpu' | 'cpu', name?: string, software?: boolean, dispatchesPerPass?: number }} [o.backendNow]
 *   where the target runs now (backend.js)
 */
export function initVk({ client, pairs, setBusy, isBusy, readOptions, threadsNow = () => 1, runFacts = () => null, speedup = null, backendNow = () => ({ backend: 'cpu' }) }) {
  const $ = (id) => document.getElementById(id);
  const ui = {
    root: $('vk'), chart: $('chart-vk'), status: $('vk-status'), progress: $('vk-progress'),
    measure: $('vk-measure'), stop: $('vk-stop'), explain: $('vk-explain'), facts: $('vk-facts'),
    caption: $('vk-current'), roofCaption: $('vk-roof-cap'),
  };
  const byKey = new Map(); // '<target>@<T>' ('small' | 'large' | 'own:<digest>'), '<target>@gpu' -> { passMs, partial, gpu? }
  const bandwidthBy = new Map(); // '<bytes>@<T>' -> { gbPerSecond, ... } | { error }
  const peakBy = new Map(); // T -> { gflops, ... } | { error }
  let k = 5; // the pass length quoted in the explanation: γ + 1 of the last run
  let measuring = false;

  const keyOf = (info) => (info?.target?.pair ? info.target.pair : `own:${info?.target?.digest}`);
  const at = (key, T) => `${key}@${T}`;
  const onGpu = () => backendNow()?.backend === 'gpu';
  // The measurement of `key` on the backend in use: the GPU's, or the CPU's at T threads.
  const slot = (key, T) => (onGpu() ? `${key}@gpu` : at(key, T));
  const labelOf = (key) => (key.startsWith('own:') ? 'your target' : `${key} target`);
  const pairParams = (name) => pairs[name]?.available ? pairs[name].files.target.params : null;
  const bwBytes = (params) => Math.min(MAX_BANDWIDTH_BYTES, 4 * params);
  const bwFor = (params, T) => bandwidthBy.get(at(bwBytes(params), T));
  const peakFor = (T) => (peakBy.get(T)?.gflops > 0 ? peakBy.get(T).gflops * 1e9 : null);
  const currentThreads = () => Math.max(1, threadsNow() || 1);

  function costsOf(key, params, T, borrowedPeak = null) {
    const m = byKey.get(at(key, T));
    const bw = bwFor(params, T);
    const P = peakFor(T);
    return targetCosts({
      params, passMs: m?.passMs ?? [], gbPerSecond: bw?.gbPerSecond ?? null,
      peak: P ?? borrowedPeak, peakMeasured: !!P, threads: T,
    });
  }

  function bandwidthError() {
    for (const r of bandwidthBy.values()) if (r.error) return r.error;
    return null;
  }

  // The GPU's v(k) of a target (no roofline: its bandwidth and peak are not measured here).
  function gpuCostsOf(key, params) {
    const m = byKey.get(`${key}@gpu`);
    if (!m) return null;
    return { ...targetCosts({ params, passMs: m.passMs }), roof: [], gpu: m.gpu };
  }

  function renderGpu(info, key, T) {
    const gpu = gpuCostsOf(key, info.target.params) ?? { ...targetCosts({ params: info.target.params }), roof: [] };
    const cpu = byKey.has(at(key, T)) ? costsOf(key, info.target.params, T) : null;
    const b = backendNow();
    ui.caption.textContent = `${labelOf(key)} on the GPU (${b.name || 'WebGPU'})`;
    ui.roofCaption.hidden = true; // no roofline for a GPU
    drawVk(ui.chart, {
      current: gpu, label: `${labelOf(key)}, GPU`, threads: T, gpu: true,
      backend: cpu ? { costs: cpu, label: `CPU (WebAssembly), ${threadsText(T)}` } : null,
    });
    ui.root.dataset.bandwidth = 'none';
    ui.root.dataset.points = String(gpu.measured.length);
    ui.root.dataset.threads = String(T);
    ui.root.dataset.backend = 'gpu';
    ui.root.dataset.curves = cpu?.measured.length ? 'gpu,cpu' : 'gpu';
    const rows = [
      ['adapter', 'Adapter', `${b.name || '–'}${b.software ? ' (software)' : ''}`,
        b.software ? 'A software adapter: the GPU’s work emulated on the CPU cores. Its timings say nothing about a GPU.' : 'The WebGPU adapter the browser gave the page.'],
      ['weights', 'Weights in GPU memory, W', sizeText(gpu.weightBytes), 'f32, uploaded once; the KV cache is in GPU memory too.'],
      ['step', 'One-token pass', Number.isFinite(gpu.stepMs) ? `${gpu.stepMs.toFixed(2)} ms` : '–', 'Measured: the median target pass over one new token.'],
      ['dispatches', 'Kernels per pass', b.dispatchesPerPass ? String(b.dispatchesPerPass) : '–', 'Compute dispatches in the one command buffer of a pass (7 per layer + 3), then one read-back of the logits.'],
      ['v8', 'v(8)', gpu.measured.find((p) => p.k === 8)?.v.toFixed(2) ?? '–', 'A pass over 8 new tokens, in one-token passes (measured).'],
    ];
    ui.facts.replaceChildren(...rows.map(([id, name, v, tip]) => h('tr', {}, [
      h('th', { scope: 'row' }, [h('span', { class: 'tip', title: tip, tabindex: '0' }, [name])]),
      h('td', { 'data-testid': `vk-fact-${id}` }, [v]),
    ])));
    ui.measure.textContent = gpu.measured.length ? 'Measure v(k) again' : 'Measure v(k)';
    const text = explainGpu({ costs: gpu, gpu: b, cpu, threads: T, k });
    ui.explain.replaceChildren(...(text ? [h('strong', {}, ['Why a verify pass costs what it does on the GPU. ']), h('span', { 'data-testid': 'vk-gpu-explanation' }, [text])] : []));
  }

  function render() {
    const info = client.info;
    if (!info) return;
    const key = keyOf(info);
    const T = currentThreads();
    if (onGpu()) return renderGpu(info, key, T);
    ui.root.dataset.backend = 'cpu';
    ui.roofCaption.hidden = false;
    const current = costsOf(key, info.target.params, T);
    // Another target's roofline borrows this one's peak when P(T) is not measured.
    const peak = current.peak?.flops ?? null;
    ui.caption.textContent = `${labelOf(key)}, ${sizeText(current.weightBytes)} of f32 weights, ${threadsText(T)}`;
    const otherKey = key === 'large' ? 'small' : key === 'small' ? 'large' : null;
    const other = otherKey && byKey.has(at(otherKey, T)) && pairParams(otherKey)
      ? { costs: costsOf(otherKey, pairParams(otherKey), T, peak), label: labelOf(otherKey) } : null;
    const one = T > 1 ? costsOf(key, info.target.params, 1) : null;
    // The same target's GPU curve, once measured there.
    const gpuSide = gpuCostsOf(key, info.target.params);
    const backend = gpuSide?.measured.length ? { costs: gpuSide, label: `GPU (${gpuSide.gpu?.name || 'WebGPU'})` } : null;
    ui.root.dataset.curves = backend ? 'cpu,gpu' : 'cpu';
    drawVk(ui.chart, { current, label: labelOf(key), other, one, threads: T, backend });
    ui.root.dataset.bandwidth = current.gbPerSecond ? 'measured' : (bandwidthError() ? 'unavailable' : 'pending');
    ui.root.dataset.points = String(current.measured.length);
    ui.root.dataset.threads = String(T);
    renderFacts(current, one, T);
    ui.measure.textContent = current.measured.length ? 'Measure v(k) again' : 'Measure v(k)';
    // The explanation: the two shipped targets, measured where measured, the roofline elsewhere;
    // then what T threads make of a pass.
    const run = runFacts();
    const threadsPart = explainThreads({
      costs: current, threads: T, one, speedup,
      run: run && run.target === info.target.digest ? run : null,
    });
    const extra = threadsPart ? [' ', h('span', { class: 'vk-threads', 'data-testid': 'vk-threads-explanation' }, [threadsPart])] : [];
    if (pairParams('large') && pairParams('small') && current.measured.length >= 2) {
      const costs = (name) => costsOf(name, pairParams(name), T, name === key ? null : peak);
      const text = explainPairs({ large: costs('large'), small: costs('small'), k, bandwidthError: bandwidthError(), threads: T });
      ui.explain.replaceChildren(h('strong', {}, ['Why the large pair pays more here. ']), h('span', { 'data-testid': 'vk-pairs-explanation' }, [text]), ...extra);
    } else if (current.measured.length >= 2) {
      ui.explain.replaceChildren(h('span', { 'data-testid': 'vk-pairs-explanation' }, [`v(${k}) = ${costAt(current, k)?.v.toFixed(2) ?? '–'} for this target.`]), ...extra);
    } else {
      ui.explain.textContent = '';
    }
  }

  function renderFacts(c, one, T) {
    const bwErr = bandwidthError();
    const gb = (x) => (x ? `${x.toFixed(1)} GB/s` : (bwErr ? 'not measured' : '–'));
    const gf = (p) => (p ? `${(p.flops / 1e9).toFixed(1)} GFLOP/s` : '–');
    const ridge = ridgeTokens(c);
    const peakTip = c.peak?.measured
      ? `Measured (sd.measurePeak): multiply-adds in registers on ${threadsText(T)} at once, with no memory traffic. `
        + 'An upper bound of what a matmul reaches, so the roofline drawn from it is a floor.'
      : 'Estimated from the longest measured pass (k = 8): k × FLOP per token (2 × parameters: a multiply and an add per weight) '
        + '÷ its time. A lower bound of the real SIMD peak, since that pass also reads the weights and runs attention '
        + '(this build of the module cannot measure the peak itself).';
    const rows = [
      ['weights', 'Weights in memory (f32), W', sizeText(c.weightBytes)],
      ['bandwidth', `Read bandwidth over them, ${threadsText(T)}: B(${T})`, gb(c.gbPerSecond),
        bwErr && !c.gbPerSecond ? `${bwErr}. The one-token step stands in for the memory floor.` : `${threadsText(T)} reading at once, each its own part of a ${sizeText(bwBytes(c.params))} buffer (sd.measureReadBandwidth).`],
      ...(one ? [['bandwidth-1', 'Read bandwidth, 1 thread: B(1)', gb(one.gbPerSecond)]] : []),
      ['floor', `Memory floor of one step, W / B(${T})`, c.memSource === 'bandwidth' ? `${c.memMs.toFixed(2)} ms` : '–'],
      ['step', `Measured one-token step, ${threadsText(T)}`, Number.isFinite(c.stepMs) ? `${c.stepMs.toFixed(2)} ms` : '–'],
      ['peak', `Compute peak, ${threadsText(T)}: P(${T})${c.peak?.measured ? '' : ' (estimated)'}`, gf(c.peak), peakTip],
      ...(one ? [['peak-1', `Compute peak, 1 thread: P(1)${one.peak?.measured ? '' : ' (estimated)'}`, gf(one.peak)]] : []),
      ...(c.peak?.measured && c.achieved ? [['achieved', `Reached by the k = ${c.achieved.fromK} pass`, gf(c.achieved),
        'k × FLOP per token ÷ the time of the longest measured pass: what the model’s matmuls actually reach (that pass also reads the weights and runs attention).']] : []),
      ['ridge', 'Roofline turns at k = 2P / B', Number.isFinite(ridge) ? ridge.toFixed(1) : '–',
        'Below this many tokens a pass is bound by reading the weights once (W / B); above it by arithmetic (k F / P). F / W = ½ FLOP per byte for f32 weights, hence 2P / B.'],
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
   * Measures v(k) of the loaded target (a dozen iterations per k) at the thread count of
   * `options` (the one in use when not given), then B(T) over the weight bytes of the loaded and
   * shipped targets and P(T) — and B(1), P(1) when T > 1. The caller holds section 4's busy state.
   */
  async function measure(options, gamma) {
    const info = client.info;
    if (!info || measuring) return;
    measuring = true;
    if (gamma) k = Math.min(K_MAX, Math.max(2, gamma + 1));
    const key = keyOf(info);
    const asked = options.threads ?? currentThreads();
    const gpuRun = options.backend === 'gpu';
    const where = gpuRun ? `the GPU (${backendNow().name || 'WebGPU'})` : threadsText(asked);
    ui.stop.hidden = false;
    ui.progress.hidden = false;
    ui.progress.value = 0;
    status(`Measuring v(k) of the ${labelOf(key)} on ${where}: k = 1…${K_MAX}, a dozen target passes each…`, 'measuring');
    try {
      const vk = await client.measureVk(options, (ev) => {
        ui.progress.value = ev.done / ev.total;
        status(`Measuring v(k) of the ${labelOf(key)} on ${where}: ${ev.done} of ${ev.total} sweeps (k = ${ev.k})…`, 'measuring');
      });
      if (keyOf(client.info) !== key) return; // other models arrived meanwhile
      if (gpuRun) {
        const slotKey = `${key}@gpu`;
        if (vk.stopped) {
          if (!byKey.get(slotKey) || byKey.get(slotKey).partial) byKey.set(slotKey, { passMs: vk.passMs, partial: true, gpu: vk.backend });
          render();
          status(`Stopped: the GPU's v(k) from ${vk.samples.filter((n) => n > 0).length} of ${K_MAX} pass lengths measured so far.`, 'stopped');
          return;
        }
        byKey.set(slotKey, { passMs: vk.passMs, gpu: vk.backend });
        render();
        status(`Measured in ${(vk.ms / 1000).toFixed(1)} s on ${where}: v(k) from ${vk.samples.reduce((a, b) => a + b, 0)} target passes (medians)`
          + `${vk.backend?.software ? '; a software adapter: these are the emulation’s timings, not a GPU’s' : ''}.`, 'done');
        return;
      }
      const T = vk.threads ?? asked;
      if (vk.stopped) {
        // A complete earlier measurement stays; otherwise show what there is (and measure
        // again after the next run).
        if (!byKey.get(at(key, T)) || byKey.get(at(key, T)).partial) byKey.set(at(key, T), { passMs: vk.passMs, partial: true });
        render();
        status(`Stopped: v(k) from ${vk.samples.filter((n) => n > 0).length} of ${K_MAX} pass lengths measured so far`
          + `${byKey.get(at(key, T)).partial ? '' : '; the chart shows the earlier complete measurement'}.`, 'stopped');
        return;
      }
      byKey.set(at(key, T), { passMs: vk.passMs });
      render();
      const sizes = [...new Set([info.target.params, ...['small', 'large'].map(pairParams).filter(Boolean)].map(bwBytes))];
      const counts = T > 1 ? [T, 1] : [1];
      for (const t of counts) {
        // B(T) afresh with every measurement at T; B(1) once.
        const want = t === T ? sizes : sizes.filter((b) => !bandwidthBy.has(at(b, t)));
        if (!want.length) continue;
        for (const r of await client.bandwidth(want, t)) bandwidthBy.set(at(r.bytes, t), r);
      }
      const peaks = counts.filter((t) => t === T || !peakBy.has(t));
      for (const r of await client.peak(peaks)) peakBy.set(r.threads, r);
      render();
      const bw = bwFor(info.target.params, T);
      const P = peakBy.get(T);
      status(`Measured in ${(vk.ms / 1000).toFixed(1)} s on ${threadsText(T)}: v(k) from ${vk.samples.reduce((a, b) => a + b, 0)} target passes (medians)`
        + (bw?.gbPerSecond ? `, read bandwidth ${bw.gbPerSecond.toFixed(1)} GB/s` : `; read bandwidth not measured (${bw?.error ?? 'unknown'})`)
        + (P?.gflops ? `, compute peak ${P.gflops.toFixed(1)} GFLOP/s.` : `; compute peak not measured (${P?.error ?? 'unknown'}).`), 'done');
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

  function statusForCurrent() {
    if (measuring || !client.info) return;
    const key = keyOf(client.info);
    const T = currentThreads();
    const where = onGpu() ? 'the GPU' : threadsText(T);
    if (!byKey.has(slot(key, T))) status(`Run the models to measure v(k) of the ${labelOf(key)} on ${where}.`, 'empty');
    else status(`v(k) of the ${labelOf(key)} on ${where}, measured earlier on this page.`, 'done');
  }

  return {
    measure,
    /** Whether the loaded target still needs a measurement at this thread count (default: the one in use). */
    needsMeasurement(threads) {
      if (!client.info) return false;
      const m = byKey.get(slot(keyOf(client.info), threads ?? currentThreads()));
      return !m || !!m.partial;
    },
    /**
     * v(k) of the loaded target measured at this thread count, as a function of k (measured for
     * k = 1..8, extended along its line beyond), or null when not measured (completely) there.
     */
    verifyCurve(threads) {
      if (!client.info) return null;
      const key = keyOf(client.info);
      const m = byKey.get(slot(key, threads ?? currentThreads()));
      if (!m || m.partial) return null;
      if (onGpu()) return curveVerifyCost(gpuCostsOf(key, client.info.target.params).measured);
      return curveVerifyCost(costsOf(key, client.info.target.params, threads ?? currentThreads()).measured);
    },
    /** New models: redraw for their target (its measurements, if any, are kept). */
    onLoaded() {
      statusForCurrent();
      if (!measuring) render();
    },
    /** Another thread count: the chart and the facts are those of that count. */
    onThreads() {
      statusForCurrent();
      if (!measuring) render();
    },
    /** The target moved to the GPU or back: the chart is that backend's. */
    onBackend() {
      statusForCurrent();
      if (!measuring) render();
    },
    /** The last run changed (the explanation quotes it). */
    refresh() { if (!measuring) render(); },
    setDisabled(b) { ui.measure.disabled = b || !client.info; },
  };
}

function drawVk(svg, data) {
  const cur = data?.current;
  const T = data?.threads ?? 1;
  const measured = cur?.measured ?? [];
  const roof = (cur?.roof ?? []).filter((p) => Number.isFinite(p.v));
  const other = data?.other?.costs.measured ?? [];
  // The same target measured on the other backend (GPU beside CPU, or CPU beside GPU).
  const side = data?.backend?.costs.measured ?? [];
  // At T > 1: the same target's v(k) measured on 1 thread (if it was) and the 1-thread roofline.
  const oneMeasured = data?.one?.measured ?? [];
  const oneRoof = data?.one && data.one.memSource === 'bandwidth' ? data.one.roof.filter((p) => Number.isFinite(p.v)) : [];
  const top = Math.max(2, ...measured.map((p) => p.v), ...roof.map((p) => p.v), ...other.map((p) => p.v), ...oneMeasured.map((p) => p.v), ...side.map((p) => p.v));
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
      [`run the models to measure v(k) on ${data?.gpu ? 'the GPU' : threadsText(T)}`]));
    return;
  }
  if (oneRoof.length) {
    f.plot.append(s('path', { class: 'vk-roof-one', d: pathOf(oneRoof.map((p) => [p.k, p.v]), f.x, f.y) }, [
      s('title', {}, [`Roofline with 1 thread: B(1) = ${data.one.gbPerSecond.toFixed(1)} GB/s, P(1) = ${(data.one.peak.flops / 1e9).toFixed(1)} GFLOP/s.`]),
    ]));
  }
  if (roof.length) {
    const estimated = cur.memSource !== 'bandwidth';
    const peakWhence = cur.peak?.measured ? `measured on ${threadsText(T)}` : (cur.peak?.fromK ? `estimated from k = ${cur.peak.fromK}` : 'estimated');
    f.plot.append(s('path', { class: `vk-roof${estimated ? ' estimated' : ''}`, d: pathOf(roof.map((p) => [p.k, p.v]), f.x, f.y) }, [
      s('title', {}, [estimated
        ? 'Roofline estimated without a bandwidth measurement: the one-token step stands in for the memory floor.'
        : `Memory-floor roofline with ${threadsText(T)}: max(W/B(${T}), k·F/P(${T})) / (W/B(${T})), W = ${(cur.weightBytes / 1e6).toFixed(1)} MB, B(${T}) = ${cur.gbPerSecond.toFixed(1)} GB/s, P(${T}) = ${(cur.peak.flops / 1e9).toFixed(1)} GFLOP/s (${peakWhence}).`]),
    ]));
  }
  if (other.length) {
    f.plot.append(s('path', { class: 'vk-other', d: pathOf(other.map((p) => [p.k, p.v]), f.x, f.y) }, [
      s('title', {}, [`${data.other.label}, measured earlier on ${threadsText(T)}`]),
    ]));
  }
  if (oneMeasured.length) {
    f.plot.append(s('path', { class: 'vk-one', d: pathOf(oneMeasured.map((p) => [p.k, p.v]), f.x, f.y) }, [
      s('title', {}, [`${data.label}, measured on 1 thread`]),
    ]));
  }
  if (side.length) {
    f.plot.append(s('path', { class: 'vk-backend', 'data-testid': 'vk-backend-curve', d: pathOf(side.map((p) => [p.k, p.v]), f.x, f.y) }, [
      s('title', {}, [`${data.backend.label}: the same target, measured earlier`]),
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
    ['vk-measured', data.gpu ? `measured v(k), ${data.label}` : `measured v(k), ${data.label}, ${threadsText(T)}`],
    ...(roof.length ? [['vk-roof', cur.memSource === 'bandwidth' ? `memory-floor roofline, ${threadsText(T)}` : 'roofline (estimated)']] : []),
    ...(oneRoof.length ? [['vk-roof-one', 'roofline, 1 thread']] : []),
    ...(oneMeasured.length ? [['vk-one', 'measured, 1 thread']] : []),
    ['vk-lesson', 'lesson: v = 1'],
    ...(other.length ? [['vk-other', `${data.other.label} (measured earlier)`]] : []),
    ...(side.length ? [['vk-backend', `${data.backend.label} (measured earlier)`]] : []),
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
