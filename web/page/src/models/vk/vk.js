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
// say what the GPU's pass cost and why (roofline-explain.js explainGpu). A pair measured with
// both weight types (float32 and int8, the "Weights" choice) has both curves drawn, each with its
// roofline (the 8-bit one: max(W/B(T), k (I/P_int(T) + F'/P(T)))), and a sentence on how 8-bit
// weights moved the physics (roofline-explain.js explainWeights); the first such measurement of
// both decides the weights' default (weights.js).
// The measurements are kept in models/vk/store.js, drawn by models/vk/chart.js, tabled by
// models/vk/facts.js; the panel as a whole (chart, facts, sentences) by models/vk/render.js.
import { onWidthChange } from '../../shared/svg.js';
import { K_MAX } from '../../shared/roofline.js';
import { bwBytes, createVkStore, labelOf, otherWeightsKey, targetKey } from './store.js';
import { decideDefault, keepDefault } from '../../shared/weights.js';
import { threadsText } from './facts.js';
import { both } from '../../shared/trust.js';
import { drawVk } from './chart.js';
import { vkPanel } from './panel.js';
import { pairParams, renderCpu, renderGpu } from './render.js';

/**
 * @param {object} o
 * @param {import('../../shared/client.js').ModelClient} o.client
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
export function initVk({
  client,
  pairs,
  setBusy,
  isBusy,
  readOptions,
  threadsNow = () => 1,
  runFacts = () => null,
  speedup = null,
  backendNow = () => ({ backend: 'cpu' }),
}) {
  const $ = (id) => document.getElementById(id);
  $('vk').replaceChildren(...vkPanel());
  const ui = {
    root: $('vk'),
    chart: $('chart-vk'),
    status: $('vk-status'),
    progress: $('vk-progress'),
    measure: $('vk-measure'),
    stop: $('vk-stop'),
    explain: $('vk-explain'),
    facts: $('vk-facts'),
    caption: $('vk-current'),
    roofCaption: $('vk-roof-cap'),
  };
  const store = createVkStore();
  let k = 5; // the pass length quoted in the explanation: γ + 1 of the last run
  let measuring = false;

  const onGpu = () => backendNow()?.backend === 'gpu';
  const currentThreads = () => Math.max(1, threadsNow() || 1);
  // Where a measurement of the loaded target is kept: the GPU, or the CPU at T threads.
  const whereOf = (T) => (onGpu() ? 'gpu' : T);

  function render() {
    const info = client.info;
    if (!info) return;
    const view = { ui, store, pairs, info, key: targetKey(info), T: currentThreads(), k };
    if (onGpu()) renderGpu(view, backendNow());
    else renderCpu(view, { run: runFacts(), speedup });
  }

  function status(text, state) {
    ui.status.textContent = text;
    ui.root.dataset.state = state;
  }

  // After a measurement on the GPU: keep it, draw it, say what was measured.
  function measuredGpu(info, key, vk, where) {
    store.record(key, 'gpu', vk, info.target);
    render();
    if (vk.stopped) {
      status(
        `Stopped: the GPU's v(k) from ${vk.samples.filter((n) => n > 0).length} of ${K_MAX} pass lengths measured so far.`,
        'stopped',
      );
      return;
    }
    status(
      `Measured in ${(vk.ms / 1000).toFixed(1)} s on ${where}: v(k) from ${vk.samples.reduce((a, b) => a + b, 0)} target passes (each k's fastest)` +
        `${vk.backend?.software ? '; a software adapter: these are the emulation’s timings, not a GPU’s' : ''}.`,
      'done',
    );
    decideWeights(key, 'gpu');
  }

  // The first complete measurement of both weight types of a pair, on the same backend and
  // thread count, decides the weights' default: int8 only when its one-token pass is the faster.
  function decideWeights(key, where) {
    const wk = otherWeightsKey(key);
    if (!wk) return;
    const [fk, ik] = key.endsWith(':int8') ? [wk, key] : [key, wk];
    const f = store.get(fk, where);
    const i = store.get(ik, where);
    if (!f || !i || f.partial || i.partial) return;
    // No default from timings that failed the checks (trust.js).
    if (!store.judge(fk, where).ok || !store.judge(ik, where).ok) return;
    const rec = decideDefault({
      pair: fk,
      where: where === 'gpu' ? 'the GPU' : `CPU, ${threadsText(where)}`,
      f32Ms: f.passMs[1],
      int8Ms: i.passMs[1],
    });
    if (!rec) return;
    keepDefault(rec);
    window.dispatchEvent(new CustomEvent('specdec-weights-default', { detail: rec }));
  }

  // After a measurement on the CPU at T threads: keep it, then measure B(T) and P(T) (and B(1),
  // P(1) once), draw it all, say what was measured.
  async function measuredCpu(info, key, vk, T) {
    const kept = store.record(key, T, vk, info.target);
    render();
    if (vk.stopped) {
      // A complete earlier measurement stays; otherwise show what there is (and measure
      // again after the next run).
      status(
        `Stopped: v(k) from ${vk.samples.filter((n) => n > 0).length} of ${K_MAX} pass lengths measured so far` +
          `${kept.partial ? '' : '; the chart shows the earlier complete measurement'}.`,
        'stopped',
      );
      return;
    }
    // B(T) over this target's weight bytes, the shipped float targets' and the other weights' of this pair (if measured).
    const other = otherWeightsKey(key) && store.model(otherWeightsKey(key));
    const sizes = [
      ...new Set(
        [
          info.target,
          ...['small', 'large'].map((n) => pairParams(pairs, n)).filter(Boolean),
          ...(other ? [other] : []),
        ].map(bwBytes),
      ),
    ];
    await measureMemory(client, store, sizes, T, () => store.judgeRoof(key, T).ok);
    render();
    decideWeights(key, T);
    const bw = store.bandwidth(info.target, T);
    const P = store.peakResult(T);
    const judged = both(store.judge(key, T), store.judgeRoof(key, T));
    status(
      `${judged.ok ? '' : 'Measured on a busy machine (some timings failed the checks, below). '}Measured in ${(vk.ms / 1000).toFixed(1)} s on ${threadsText(T)}: v(k) from ${vk.samples.reduce((a, b) => a + b, 0)} target passes in ${vk.rounds ?? '–'} rounds (each pass its fastest repeat; the estimates from the even and from the odd repeats ${judged.ok ? 'agreed' : 'compared below'})` +
        (bw?.gbPerSecond
          ? `, read bandwidth ${bw.gbPerSecond.toFixed(1)} GB/s`
          : `; read bandwidth not measured (${bw?.error ?? 'unknown'})`) +
        (P?.gflops
          ? `, compute peak ${P.gflops.toFixed(1)} GFLOP/s.`
          : `; compute peak not measured (${P?.error ?? 'unknown'}).`),
      'done',
    );
  }

  /**
   * Measures v(k) of the loaded target (the worker's passes per k, taking turns) at the thread count of
   * `options` (the one in use when not given), then B(T) over the weight bytes of the loaded and
   * shipped targets and P(T) — and B(1), P(1) when T > 1. The caller holds section 4's busy state.
   */
  async function measure(options, gamma) {
    const info = client.info;
    if (!info || measuring) return;
    measuring = true;
    if (gamma) k = Math.min(K_MAX, Math.max(2, gamma + 1));
    const key = targetKey(info);
    const asked = options.threads ?? currentThreads();
    const gpuRun = options.backend === 'gpu';
    const where = gpuRun ? `the GPU (${backendNow().name || 'WebGPU'})` : threadsText(asked);
    ui.stop.hidden = false;
    ui.progress.hidden = false;
    ui.progress.value = 0;
    status(`Measuring v(k) of the ${labelOf(key)} on ${where}: k = 1…${K_MAX}, taking turns…`, 'measuring');
    try {
      const vk = await client.measureVk(options, (ev) => {
        if (ev.type === 'warm-progress') {
          status(
            `Measuring v(k) of the ${labelOf(key)} on ${where}: warming up first (round ${ev.round})…`,
            'measuring',
          );
          return;
        }
        ui.progress.value = ev.done / ev.total;
        status(
          `Measuring v(k) of the ${labelOf(key)} on ${where}: k = 1…${K_MAX} taking turns, round ${ev.round} ` +
            `(at least ${ev.minRounds}, then until each k's estimates from the even and from the odd repeats agree; at most ${ev.maxRounds})…`,
          'measuring',
        );
      });
      if (targetKey(client.info) !== key) return; // other models arrived meanwhile
      if (gpuRun) measuredGpu(info, key, vk, where);
      else await measuredCpu(info, key, vk, vk.threads ?? asked);
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
      // At the thread count the runs use now (the faster of 1 and T at the last run: compare.js).
      await measure(onGpu() ? readOptions() : { ...readOptions(), threads: currentThreads() });
    } finally {
      setBusy(false);
    }
  });
  ui.stop.addEventListener('click', () => client.stop());
  onWidthChange(() => (client.info ? render() : drawVk(ui.chart, null)));
  drawVk(ui.chart, null);

  // New models, threads or backend: the status and the chart are those of what is in use now.
  function showCurrent() {
    if (!measuring && client.info) {
      const key = targetKey(client.info);
      const where = onGpu() ? 'the GPU' : threadsText(currentThreads());
      if (!store.has(key, whereOf(currentThreads())))
        status(`Run the models to measure v(k) of the ${labelOf(key)} on ${where}.`, 'empty');
      else status(`v(k) of the ${labelOf(key)} on ${where}, measured earlier on this page.`, 'done');
    }
    if (!measuring) render();
  }

  return {
    measure,
    /** Whether the loaded target still needs a measurement at this thread count (default: the one in use). */
    needsMeasurement(threads) {
      if (!client.info) return false;
      return store.needs(targetKey(client.info), whereOf(threads ?? currentThreads()));
    },
    /**
     * v(k) of the loaded target measured at this thread count, as a function of k (measured for
     * k = 1..8, extended along its line beyond), or null when not measured (completely) there.
     */
    verifyCurve(threads) {
      if (!client.info) return null;
      return store.verifyCurve(targetKey(client.info), client.info.target, whereOf(threads ?? currentThreads()));
    },
    /**
     * v(k) of the loaded target at this thread count when measured and trusted (trust.js), else
     * NaN: what compare.js checks a run's v against.
     */
    measuredV(threads, kk) {
      const curve = this.verifyCurve(threads);
      return curve && kk <= K_MAX ? curve(kk) : NaN;
    },
    /** A run disagreed with the loaded target's measurement at this thread count: measure it again (models/vk/store.js invalidate). */
    invalidate(threads) {
      if (client.info) store.invalidate(targetKey(client.info), whereOf(threads ?? currentThreads()));
    },
    /** Whether the loaded target's measurement at this thread count failed the checks. */
    untrusted(threads) {
      if (!client.info) return false;
      return !store.judge(targetKey(client.info), whereOf(threads ?? currentThreads())).ok;
    },
    /** New models: redraw for their target (its measurements, if any, are kept). */
    onLoaded: showCurrent,
    /** Another thread count: the chart and the facts are those of that count. */
    onThreads: showCurrent,
    /** The target moved to the GPU or back: the chart is that backend's. */
    onBackend: showCurrent,
    /** The last run changed (the explanation quotes it). */
    refresh() {
      if (!measuring) render();
    },
    setDisabled(b) {
      ui.measure.disabled = b || !client.info;
    },
  };
}

/** Rounds of B(T), P(T) (and B(1), P(1)) that measureMemory takes at most. */
const MEMORY_ROUNDS = 4;

/**
 * B(T) over buffers of these sizes and P(T) at T threads, and B(1), P(1) (T > 1), in turns, each
 * the fastest of its tries (another process only slows a read or a multiply down): a round more,
 * up to MEMORY_ROUNDS, while `judged()` says they fail the checks (store.judge: the memory floor
 * above the measured pass, or T threads slower than one).
 */
async function measureMemory(client, store, sizes, T, judged) {
  const counts = T > 1 ? [T, 1] : [1];
  const best = new Map(); // '<bytes>@<t>' -> the fastest answer
  const peaks = new Map(); // t -> the fastest answer
  for (let round = 0; round < MEMORY_ROUNDS; round++) {
    for (const t of counts) {
      // The first round measures B(1) only for sizes not measured before; later rounds all.
      const want = round ? sizes : store.bandwidthWanted(sizes, t, T);
      for (const r of want.length ? await client.bandwidth(want, t) : []) {
        const was = best.get(`${r.bytes}@${t}`);
        if (!was || (r.gbPerSecond ?? 0) > (was.gbPerSecond ?? 0)) best.set(`${r.bytes}@${t}`, r);
      }
      const wantPeak = round ? [t] : store.peaksWanted([t], T);
      for (const r of wantPeak.length ? await client.peak(wantPeak) : []) {
        const was = peaks.get(r.threads);
        if (!was || (r.gflops ?? 0) > (was.gflops ?? 0)) peaks.set(r.threads, r);
      }
    }
    for (const t of counts) {
      store.setBandwidth(
        [...best.entries()].filter(([k]) => k.endsWith(`@${t}`)).map(([, r]) => r),
        t,
      );
    }
    store.setPeaks([...peaks.values()]);
    if (judged()) break;
  }
}
