// The decoding worker's measurements (worker.js): one plain target step (c and v when no
// plain run exists), v(k) the target pass time over k new tokens, the read bandwidth B(T) and
// the compute peak P(T) of T threads. Only the public API of the package is used.
import { decoderDone } from './records.js';
import { K_MAX, median } from './roofline.js';
import { state, post, useThreads, clampThreads, requireIdleModels, yieldNow, isPromise } from './worker-state.js';
import { targetFor, gpuFault, backendOf } from './worker-gpu.js';
import { decoderOptions } from './worker-decoding.js';

// v(k) is a property of the target pass alone: always measured with the draft model drafting
// fixed-length chains, whatever the page's drafter, tree or γ policy.
const CHAIN = { drafter: 'draft', tree: null, gammaMode: 'fixed' };

// The 'calibrate' request: a quick measurement of one plain target step (ms).
export async function calibrate(options) {
  requireIdleModels();
  useThreads(options.threads);
  let dec;
  try {
    dec = state.sd.createDecoder(decoderOptions({ ...options, ...CHAIN, gamma: 1 }, true, false, await targetFor(options)));
    const first = dec.step(); // warm-up
    if (isPromise(first)) await first;
    let ms = 0;
    let n = 0;
    while (n < 12 && !decoderDone(dec)) {
      const t0 = performance.now();
      const r = dec.step();
      if (isPromise(r)) await r;
      ms += performance.now() - t0;
      n++;
    }
    return n ? ms / n : NaN;
  } catch (e) {
    throw gpuFault(e, options);
  } finally {
    dec?.dispose();
  }
}

/** The k-token passes of one decoder: target pass times pushed to `samples` (ms). */
async function samplePasses(dec, k, perSweep, samples) {
  const plain = k === 1;
  try {
    for (let i = 0; i <= perSweep && !decoderDone(dec) && !state.stopRequested; i++) {
      let rec = dec.step();
      if (isPromise(rec)) rec = await rec;
      // Near the end of the context the decoder drafts fewer tokens: not a k-token pass.
      if (i > 0 && (plain || rec.proposed.length === k - 1)) samples.push(rec.targetMs);
      await yieldNow();
    }
  } finally {
    dec.dispose();
  }
}

// The 'measure-vk' request. v(k) through the public API only: the target pass of a speculative
// iteration with a fixed γ always forwards γ + 1 new tokens (the last emitted token and γ
// drafts) and each IterationRecord carries its targetMs; plain decoding gives k = 1. For every
// k, a dozen iterations after one warm-up iteration (the first pass also reads the prompt); the
// k are swept up and then down, six iterations each way, so a machine whose speed drifts (other
// load, clock changes) biases no k. Medians. Stoppable between iterations ('stop').
export async function measureVk(msg) {
  requireIdleModels();
  state.running = true;
  state.stopRequested = false;
  const o = msg.options;
  let target;
  try {
    useThreads(o.threads);
    target = await targetFor(o);
  } catch (e) {
    state.running = false;
    throw gpuFault(e, o);
  }
  const { info } = state.models;
  const kMax = Math.min(K_MAX, msg.kMax ?? K_MAX);
  const perSweep = Math.max(1, Math.round((msg.iterations ?? 12) / 2));
  const ks = Array.from({ length: kMax }, (_, i) => i + 1);
  const sweeps = [ks, [...ks].reverse()];
  // Keep the prompt short enough that every iteration has room for k new tokens.
  const context = Math.min(info.target.blockSize ?? 256, info.draft.blockSize ?? 256);
  const room = Math.max(1, context - (perSweep + 1) * kMax - 1);
  const prompt = Array.from(o.prompt ?? [10]).slice(-room);
  const samples = ks.map(() => []);
  const total = sweeps.length * ks.length;
  let done = 0;
  const t0 = performance.now();
  try {
    for (const sweep of sweeps) {
      for (const k of sweep) {
        if (state.stopRequested) break;
        const dec = state.sd.createDecoder(decoderOptions({ ...o, ...CHAIN, prompt, gamma: Math.max(1, k - 1) }, k === 1, false, target));
        await samplePasses(dec, k, perSweep, samples[k - 1]);
        done++;
        post({ type: 'vk-progress', id: msg.id, done, total, k });
      }
    }
  } catch (e) {
    throw gpuFault(e, o);
  } finally {
    state.running = false;
  }
  const stopped = state.stopRequested;
  state.stopRequested = false;
  const passMs = [NaN, ...samples.map((xs) => median(xs))];
  return {
    passMs,
    samples: samples.map((xs) => xs.length),
    stopped,
    ms: performance.now() - t0,
    threads: state.sd.threads,
    backend: backendOf(o),
    target: { params: info.target.params, digest: info.target.digest, pair: info.target.pair },
  };
}

// The 'bandwidth' request: the read bandwidth B(T) of T threads reading at once (each its own
// part of the buffer) over buffers of these sizes (the weight bytes of a target), with
// sd.measureReadBandwidth; an older build of the module without it says so in `error`.
export function bandwidth(sizes, threads) {
  const { sd } = state;
  const T = clampThreads(threads);
  return sizes.map((bytes) => {
    // (A package older than the function itself: the same words as a module without it.)
    if (typeof sd.measureReadBandwidth !== 'function') return { bytes, threads: T, error: 'measureReadBandwidth: not in this build of the module' };
    try {
      return { bytes, ...sd.measureReadBandwidth({ bytes, repeats: 5, threads: T }) };
    } catch (e) {
      return { bytes, threads: T, error: String(e?.message || e) };
    }
  });
}

// The 'peak' request: the compute peak P(T) of T threads at once (sd.measurePeak: multiply-adds
// in registers, GFLOP/s).
export function peak(threadCounts) {
  const { sd } = state;
  return threadCounts.map((t) => {
    const T = clampThreads(t);
    if (typeof sd.measurePeak !== 'function') return { threads: T, error: 'measurePeak: not in this build of the module' };
    try {
      return sd.measurePeak({ repeats: 5, threads: T });
    } catch (e) {
      return { threads: T, error: String(e?.message || e) };
    }
  });
}
