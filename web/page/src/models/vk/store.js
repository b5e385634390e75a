// What section 4's v(k) measurement has measured on this page (vk.js): the pass times of each
// target over k = 1..8 new tokens, per thread count T and on the GPU; the read bandwidth B(T)
// over buffers of the targets' weight bytes; the compute peak P(T). Kept while the page is
// open, so a target or a thread count measured before shows again at once. Plain logic over
// roofline.js: no DOM, no worker.
import { linearParamsOf, targetCosts, weightBytesOf } from '../../shared/roofline.js';
import { curveVerifyCost } from '../costmodel.js';
import { both, judgeFloor, judgeThreads, judgeVk } from '../../shared/trust.js';

// Buffers larger than this are read at DRAM speed anyway; no need to allocate more in wasm.
const MAX_BANDWIDTH_BYTES = 256 * 2 ** 20;

/**
 * A target as the roofline needs it: { params, weights, weightBytes, nLayer, nEmbd }, from a
 * loaded model's info (records.js modelInfoOf) or a shipped pair's file entry; a number is the
 * parameter count of a float32 target.
 */
export function modelOf(m) {
  if (typeof m === 'number') return { params: m, weights: 'f32', weightBytes: weightBytesOf(m), intParams: 0 };
  const params = m?.params ?? 0;
  const weights = m?.weights === 'int8' ? 'int8' : 'f32';
  const nLayer = m?.nLayer ?? m?.config?.nLayer ?? 0;
  const nEmbd = m?.nEmbd ?? m?.config?.nEmbd ?? 0;
  return {
    params,
    weights,
    weightBytes: weights === 'int8' && m?.weightBytes > 0 ? m.weightBytes : weightBytesOf(params),
    intParams: weights === 'int8' ? linearParamsOf({ params, nLayer, nEmbd }) : 0,
  };
}

/** The bytes B(T) is measured over for a target (its weight bytes in memory, capped); a number: f32 parameters. */
export const bwBytes = (m) => Math.min(MAX_BANDWIDTH_BYTES, modelOf(m).weightBytes);

/**
 * The key of a loaded target (client.info): its pair ('small' | 'large'), with ':int8' for 8-bit
 * weights, or 'own:<digest>'.
 */
export const targetKey = (info) =>
  info?.target?.pair
    ? `${info.target.pair}${info.target.weights === 'int8' ? ':int8' : ''}`
    : `own:${info?.target?.digest}`;

/** The same pair's key with the other weights ('small' <-> 'small:int8'), or null (own files). */
export const otherWeightsKey = (key) =>
  key.startsWith('own:') ? null : key.endsWith(':int8') ? key.slice(0, -5) : `${key}:int8`;

/** "small target" / "small target (int8)" / "your target". */
export const labelOf = (key) =>
  key.startsWith('own:')
    ? 'your target'
    : key.endsWith(':int8')
      ? `${key.slice(0, -5)} target (int8)`
      : `${key} target`;

export function createVkStore() {
  const byKey = new Map(); // '<target>@<T>', '<target>@gpu' -> { passMs, partial?, gpu? }
  const modelBy = new Map(); // '<target>' -> modelOf(...) of the target measured under that key
  const bandwidthBy = new Map(); // '<bytes>@<T>' -> { gbPerSecond, ... } | { error }
  const peakBy = new Map(); // T -> { gflops, ... } | { error }
  const at = (key, where) => `${key}@${where}`;

  const store = {
    /** The pass times of a target on `where` (a thread count, or 'gpu'), if measured. */
    get: (key, where) => byKey.get(at(key, where)),
    has: (key, where) => byKey.has(at(key, where)),
    /**
     * Whether a target still needs a (complete) measurement on `where`: none yet, a stopped one,
     * one that failed the checks (judge, judgeRoof: measured on a busy machine), or one a run
     * disagreed with (invalidate).
     */
    needs(key, where) {
      const m = byKey.get(at(key, where));
      return !m || !!m.partial || !!m.stale || !store.judge(key, where).ok || !store.judgeRoof(key, where).ok;
    },
    /**
     * A run's v disagreed with this measurement (trust.js judgeRun): one of them was timed on a
     * busy machine, so it is measured again (needs) — shown until then.
     */
    invalidate(key, where) {
      const m = byKey.get(at(key, where));
      if (m) byKey.set(at(key, where), { ...m, stale: true });
    },
    /**
     * Keeps a measurement (worker.js measureVk's answer) of a target on `where`. A stopped one is
     * kept as partial, unless a complete one is there already. Returns what is kept now.
     */
    record(key, where, vk, model = null) {
      if (model) modelBy.set(key, modelOf(model));
      const slot = at(key, where);
      // sampleMs: every timed pass per k, when the worker sent them (judge reads their spread).
      const samples = vk.sampleMs ? { sampleMs: vk.sampleMs, cycle: vk.cycle ?? 1 } : {};
      const m =
        where === 'gpu' ? { passMs: vk.passMs, ...samples, gpu: vk.backend } : { passMs: vk.passMs, ...samples };
      if (!vk.stopped) byKey.set(slot, m);
      else if (!byKey.get(slot) || byKey.get(slot).partial) byKey.set(slot, { ...m, partial: true });
      return byKey.get(slot);
    },
    /**
     * Whether the v(k) measured of a target on `where` can be trusted (trust.js judgeVk): each
     * k's fastest passes of the even and the odd rounds agree, v(k) is at least ~1 and rises.
     * { ok, reasons }; ok when nothing is measured.
     */
    judge(key, where) {
      const m = byKey.get(at(key, where));
      return m ? judgeVk(m) : { ok: true, reasons: [] };
    },
    /**
     * Whether the roofline of a target on the CPU at `where` threads can be trusted: the memory
     * floor W / B(T) is not above its one-token pass, and at T > 1, B(T) over its weight bytes
     * and P(T) are not below B(1) and P(1) (trust.js judgeFloor, judgeThreads). The v(k) curve
     * does not depend on them: it is drawn (and used) without the roofline when only these fail.
     */
    judgeRoof(key, where) {
      if (where === 'gpu' || !byKey.has(at(key, where))) return { ok: true, reasons: [] };
      const t = modelOf(modelBy.get(key) ?? 0);
      const c = store.costs(key, null, where);
      const floor = judgeFloor({
        T: where,
        memMs: c.memSource === 'bandwidth' ? c.memMs : NaN,
        stepMs: c.stepMs,
        gbPerSecond: c.gbPerSecond,
      });
      if (where === 1) return floor;
      return both(
        floor,
        judgeThreads({
          T: where,
          B1: store.bandwidth(t, 1)?.gbPerSecond ?? null,
          BT: store.bandwidth(t, where)?.gbPerSecond ?? null,
          P1: peakBy.get(1)?.gflops ?? null,
          PT: peakBy.get(where)?.gflops ?? null,
        }),
      );
    },
    /** The target measured under this key (modelOf), if one was recorded with its model. */
    model: (key) => modelBy.get(key) ?? null,
    /** B(T) over the weight bytes of a target (modelOf's input), if measured. */
    bandwidth: (m, T) => bandwidthBy.get(at(bwBytes(m), T)),
    /** The sizes of `sizes` still to measure at t threads (at T itself: all of them, afresh). */
    bandwidthWanted: (sizes, t, T) => (t === T ? sizes : sizes.filter((b) => !bandwidthBy.has(at(b, t)))),
    /** Keeps the worker's bandwidth answers at t threads ([{ bytes, gbPerSecond } | { bytes, error }]). */
    setBandwidth(results, t) {
      for (const r of results) bandwidthBy.set(at(r.bytes, t), r);
    },
    /** The first bandwidth measurement's error, if one failed. */
    bandwidthError() {
      for (const r of bandwidthBy.values()) if (r.error) return r.error;
      return null;
    },
    /** The worker's answer for P(T) ({ gflops } | { error }), if asked. */
    peakResult: (T) => peakBy.get(T),
    /** The thread counts of `counts` whose peak is still to measure (T itself: afresh). */
    peaksWanted: (counts, T) => counts.filter((t) => t === T || !peakBy.has(t)),
    setPeaks(results) {
      for (const r of results) peakBy.set(r.threads, r);
    },
    /** P(T) in FLOP/s, or null when not measured. */
    peak: (T) => (peakBy.get(T)?.gflops > 0 ? peakBy.get(T).gflops * 1e9 : null),
    /** P_int(T), the integer ops/s of 8-bit weights (sd.measurePeak's intGops), or null. */
    intPeak: (T) => (peakBy.get(T)?.intGops > 0 ? peakBy.get(T).intGops * 1e9 : null),
    /**
     * The costs of a target at T threads (roofline.js targetCosts); `borrowedPeak`: another
     * target's peak, used when P(T) is not measured.
     */
    costs(key, model, T, borrowedPeak = null) {
      const t = modelOf(model ?? modelBy.get(key));
      const m = byKey.get(at(key, T));
      const bw = store.bandwidth(t, T);
      const P = store.peak(T);
      return targetCosts({
        ...t,
        passMs: m?.passMs ?? [],
        gbPerSecond: bw?.gbPerSecond ?? null,
        peak: P ?? borrowedPeak,
        peakMeasured: !!P,
        threads: T,
        intPeak: store.intPeak(T),
      });
    },
    /** The GPU's v(k) of a target (no roofline: its bandwidth and peak are not measured here). */
    gpuCosts(key, model) {
      const m = byKey.get(at(key, 'gpu'));
      if (!m) return null;
      return {
        ...targetCosts({ ...modelOf(model ?? modelBy.get(key)), passMs: m.passMs }),
        roof: [],
        gpu: m.gpu,
      };
    },
    /**
     * v(k) of a target on `where` as a function of k (measured for k = 1..8, extended along its
     * line beyond), or null when not measured (completely) there, or when what was measured
     * fails the checks (judge): nothing is predicted from it then.
     */
    verifyCurve(key, params, where) {
      const m = byKey.get(at(key, where));
      if (!m || m.partial || !store.judge(key, where).ok) return null;
      if (where === 'gpu') return curveVerifyCost(store.gpuCosts(key, params).measured);
      return curveVerifyCost(store.costs(key, params, where).measured);
    },
  };
  return store;
}
