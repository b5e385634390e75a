// The decoding worker's measurements (worker.js): one plain target step (c and v when no
// plain run exists), v(k) the target pass time over k new tokens, the read bandwidth B(T) and
// the compute peak P(T) of T threads. Only the public API of the package is used.
import { decoderDone } from '../shared/records.js';
import { K_MAX, median } from '../shared/roofline.js';
import { state, post, useThreads, clampThreads, requireIdleModels, yieldNow, isPromise } from './state.js';
import { targetFor, gpuFault, backendOf } from './gpu.js';
import { decoderOptions } from './decoding.js';
import { gammaDepth } from '../shared/gamma.js';
import { PASS_CYCLE, judgeVk, steadyEstimate } from '../shared/trust.js';

// v(k) is a property of the target pass alone: always measured with the draft model drafting
// fixed-length chains, whatever the page's drafter, tree or γ policy.
const CHAIN = { drafter: 'draft', tree: null };

// The 'calibrate' request: a quick measurement of one plain target step: { ms, samples, cycle }
// (ms: the mean of the whole step() calls; samples: each step's one-token target pass, ms, in
// order, in cycles of CALIBRATE.cycle passes from the prompt — the same passes every cycle, as
// the v(k) measurement times them: compare.js compares thread counts by trust.js steadyEstimate
// of them, the estimate v(k)'s one-token pass is).
export const CALIBRATE = Object.freeze({ cycle: PASS_CYCLE, cycles: 3 });

export async function calibrate(options) {
  requireIdleModels();
  useThreads(options.threads);
  let dec;
  try {
    const target = await targetFor(options);
    let ms = 0;
    let n = 0;
    const samples = [];
    for (let c = 0; c < CALIBRATE.cycles; c++) {
      dec?.dispose();
      dec = null;
      dec = state.sd.createDecoder(decoderOptions({ ...options, ...CHAIN, gamma: 1 }, true, false, target));
      const first = dec.step(); // reads the prompt: not timed
      if (isPromise(first)) await first;
      for (let j = 0; j < CALIBRATE.cycle; j++) {
        const t0 = performance.now();
        let r = decoderDone(dec) ? null : dec.step();
        if (isPromise(r)) r = await r;
        const dt = performance.now() - t0;
        samples.push(r && Number.isFinite(r.targetMs) ? r.targetMs : r ? dt : NaN);
        if (r) {
          ms += dt;
          n++;
        }
      }
    }
    return { ms: n ? ms / n : NaN, samples, cycle: CALIBRATE.cycle };
  } catch (e) {
    throw gpuFault(e, options);
  } finally {
    dec?.dispose();
  }
}

// The engine is warm when two consecutive rounds of untimed passes agree within this fraction.
export const WARM_AGREE = 0.05;
// At most this long warming up (ms): a machine too noisy to settle still gets timed.
export const WARM_MAX_MS = 6000;

/**
 * Untimed passes until the engine is warm, as the timed ones will be: V8 compiles WebAssembly
 * in a baseline tier first and optimises it later, in the background (on a 2-core machine, on
 * the cores the pool's threads need), so the first repeat after a load, a change of threads or
 * of backend runs slower than the rest. A round decodes with the run's own settings, plain and
 * speculative, from the run's prompt; the engine is warm once two consecutive rounds agree
 * within WARM_AGREE (plain ms per step and speculative ms per iteration both), or after
 * WARM_MAX_MS. Before the rounds, one plain and one speculative decode as long as a timed
 * repeat (the run's maxTokens): short rounds alone left the first timed repeat ~25% slower
 * than the next on the large pair (bench/browser.mjs, idle EPYC Zen 5: plain 113-222 tokens/s
 * against 174-264 for the second repeat, 20 loads of 20), as the library's own warm-up of
 * whole decodes does not: the positions past the rounds' few dozen (attention over a longer
 * cache, the cache's memory growing) are first reached there. Progress as 'warm-progress' events. Does nothing when the worker is already warm
 * for this target, thread count, backend and drafter (state.warmFor; a warm-up at T threads
 * holds for 1 thread too).
 */
export async function warmup(msg) {
  requireIdleModels();
  const o = msg.options ?? {};
  useThreads(o.threads);
  const key = warmKey(o);
  if (!msg.force && state.warmFor.includes(key)) return { skipped: true, rounds: [], passes: 0, ms: 0, key };
  state.running = true;
  state.stopRequested = false;
  const t0 = performance.now();
  const rounds = [];
  let passes = 0;
  let warm = false;
  try {
    const target = await targetFor(o);
    const specOpts =
      o.drafter === 'lookup' || o.drafter === 'both' || o.drafter === 'heads' || o.tree ? { ...o, ...CHAIN } : o;
    const whole = t0 + WARM_MAX_MS / 2; // the whole-length decodes take at most half the time
    passes += await wholeDecode(state.sd.createDecoder(decoderOptions(o, true, false, target)), o.maxTokens, whole);
    passes += await wholeDecode(
      state.sd.createDecoder(decoderOptions({ ...specOpts, gamma: gammaDepth(specOpts) }, false, false, target)),
      o.maxTokens,
      whole,
    );
    while (!state.stopRequested) {
      const deadline = t0 + WARM_MAX_MS;
      const plain = await timedSteps(state.sd.createDecoder(decoderOptions(o, true, false, target)), 12, deadline);
      const spec = await timedSteps(
        state.sd.createDecoder(decoderOptions({ ...specOpts, gamma: gammaDepth(specOpts) }, false, false, target)),
        6,
        deadline,
      );
      const plainMs = plain.ms;
      const specMs = spec.ms;
      passes += plain.n + spec.n;
      rounds.push({ plainMs, specMs });
      const prev = rounds[rounds.length - 2];
      warm = !!prev && agree(prev.plainMs, plainMs) && agree(prev.specMs, specMs);
      post({ type: 'warm-progress', id: msg.id, round: rounds.length, plainMs, specMs, warm });
      if (warm || performance.now() - t0 > WARM_MAX_MS) break;
    }
  } catch (e) {
    throw gpuFault(e, o);
  } finally {
    state.running = false;
  }
  const stopped = state.stopRequested;
  state.stopRequested = false;
  // Warm at T threads is warm at 1 too: the same compiled code and decoders' memory, the caller
  // taking every chunk (compare.js may run at 1 after this, and measureVk warm-up at 1 then).
  if (!stopped) state.warmFor = [key, warmKey(o, 1)];
  return { skipped: false, warm, stopped, rounds, passes, ms: performance.now() - t0, key };
}

/** What a warm-up holds for: the target, the thread count, the backend and the drafter. */
const warmKey = (o, threads = state.sd.threads) =>
  [state.models?.info?.target?.digest ?? '', threads, o.backend === 'gpu' ? 'gpu' : 'cpu', o.drafter ?? 'draft'].join(
    '|',
  );

const agree = (a, b) => Number.isFinite(a) && Number.isFinite(b) && Math.abs(a - b) <= WARM_AGREE * Math.min(a, b);

/**
 * Steps a decoder, untimed, until it has emitted `maxTokens` tokens (a timed repeat's length),
 * is done, is stopped or passes the deadline (at least two steps); disposes it. The steps taken.
 */
async function wholeDecode(dec, maxTokens, deadline) {
  let n = 0;
  let emitted = 0;
  try {
    while (
      emitted < (maxTokens ?? 0) &&
      !decoderDone(dec) &&
      !state.stopRequested &&
      (n < 2 || performance.now() < deadline)
    ) {
      let r = dec.step();
      if (isPromise(r)) r = await r;
      emitted += r?.emitted?.length ?? 1;
      n++;
      if (n % 8 === 0) await yieldNow();
    }
  } finally {
    dec.dispose();
  }
  return n;
}

/**
 * { ms, n }: the median ms of up to `n` steps of a decoder after its first (which reads the
 * prompt), fewer past the deadline (a slow backend: at least two); disposes it.
 */
async function timedSteps(dec, n, deadline) {
  const ms = [];
  try {
    let first = dec.step();
    if (isPromise(first)) first = await first;
    for (
      let i = 0;
      i < n && !decoderDone(dec) && !state.stopRequested && (i < 2 || performance.now() < deadline);
      i++
    ) {
      const t0 = performance.now();
      const r = dec.step();
      if (isPromise(r)) await r;
      ms.push(performance.now() - t0);
      if (i % 4 === 3) await yieldNow();
    }
  } finally {
    dec.dispose();
  }
  return { ms: median(ms), n: ms.length + 1 };
}

// The 'measure-vk' request, measured as the runs measure their passes: v(k) through the public
// API only. The target pass of a speculative iteration with a fixed γ always forwards γ + 1 new
// tokens (the last emitted token and γ drafts) and each IterationRecord carries its targetMs,
// the same field a run's statistics add up; plain decoding gives k = 1. The worker is warmed
// first (warmup, as before a run). One decoder per k, from the run's prompt and settings, made
// anew every VK_ROUNDS.cycle passes, so that every cycle repeats the same work (the same seed:
// the same tokens at the same positions); the k take turns, one pass each per round, the order
// reversed every round, so that a burst of other load lands on every k alike. Each k's time is
// trust.js steadyEstimate: each pass of the cycle its fastest repeat (another process only ever
// adds to a timing), averaged over the cycle. Rounds go on, at least VK_ROUNDS.min (8 on a GPU),
// until every k's estimates from the even and from the odd cycles agree and v(k) passes
// trust.js's checks — at most VK_ROUNDS.max, or VK_ROUNDS.maxMs. The first step of each decoder
// reads the prompt and is not counted. Stoppable between passes.
export const VK_ROUNDS = Object.freeze({ cycle: PASS_CYCLE, min: 16, max: 160, maxMs: 12000 });

export async function measureVk(msg) {
  const o = msg.options;
  const w = await warmup({ id: msg.id, options: o });
  requireIdleModels();
  state.running = true;
  state.stopRequested = !!w.stopped; // a Stop during the warm-up stops the measurement too
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
  const gpuRun = o.backend === 'gpu';
  const W = VK_ROUNDS.cycle;
  // (8 on a GPU, no more: a software adapter's passes take a third of a second and more)
  const minRounds = Math.max(2 * W, msg.iterations ?? (gpuRun ? 8 : VK_ROUNDS.min));
  const maxRounds = gpuRun ? minRounds : Math.max(minRounds, VK_ROUNDS.max);
  const ks = Array.from({ length: kMax }, (_, i) => i + 1);
  // Keep the prompt short enough that every decoder has room for its cycle.
  const context = Math.min(info.target.blockSize ?? 256, info.draft.blockSize ?? 256);
  const room = Math.max(1, context - (W + 1) * kMax - 1);
  const prompt = Array.from(o.prompt ?? [10]).slice(-room);
  const samples = ks.map(() => []);
  let done = 0;
  const t0 = performance.now();
  const decs = [];
  const fresh = async (k) => {
    decs[k - 1]?.dispose();
    decs[k - 1] = null;
    const dec = state.sd.createDecoder(
      decoderOptions({ ...o, ...CHAIN, prompt, gamma: Math.max(1, k - 1) }, k === 1, false, target),
    );
    decs[k - 1] = dec;
    let first = dec.step(); // reads the prompt: not a k-token pass
    if (isPromise(first)) await first;
    return dec;
  };
  const estimate = (xs) => steadyEstimate(xs, W).ms;
  const settled = () => judgeVk({ passMs: [NaN, ...samples.map(estimate)], sampleMs: samples, cycle: W }).ok;
  let rounds = 0;
  try {
    for (let r = 0; r < maxRounds && !state.stopRequested; r++) {
      if (r >= minRounds && r % W === 0 && (settled() || performance.now() - t0 > VK_ROUNDS.maxMs)) break;
      const order = r % 2 ? [...ks].reverse() : ks;
      for (const k of order) {
        if (state.stopRequested) break;
        // A new cycle: the same work again, from the prompt.
        const dec = r % W === 0 || !decs[k - 1] ? await fresh(k) : decs[k - 1];
        let rec = dec.step();
        if (isPromise(rec)) rec = await rec;
        // (A decoder near the end of the context drafts fewer tokens: not a k-token pass.)
        samples[k - 1].push(k === 1 || rec.proposed.length === k - 1 ? rec.targetMs : NaN);
        done++;
      }
      // Once a round, as a run yields every ~25 ms: a yield after every pass let the pool's
      // threads fall asleep between passes, and each pass then paid their waking (2 threads: a
      // one-token pass 0.9–1.0 ms here against 0.5–0.7 ms in the thread comparison's loop).
      post({ type: 'vk-progress', id: msg.id, done, total: maxRounds * ks.length, round: r + 1, minRounds, maxRounds });
      await yieldNow();
      rounds = r + 1;
    }
  } catch (e) {
    throw gpuFault(e, o);
  } finally {
    for (const dec of decs) dec?.dispose();
    state.running = false;
  }
  const stopped = state.stopRequested;
  state.stopRequested = false;
  const passMs = [NaN, ...samples.map((xs) => steadyEstimate(xs, W).ms)];
  return {
    passMs,
    rounds,
    cycle: W,
    samples: samples.map((xs) => xs.filter(Number.isFinite).length),
    sampleMs: samples, // every timed pass per k, in order, in cycles of W (trust.js judges their halves)
    stopped,
    ms: performance.now() - t0,
    threads: state.sd.threads,
    backend: backendOf(o),
    target: {
      params: info.target.params,
      digest: info.target.digest,
      pair: info.target.pair,
      weights: info.target.weights ?? 'f32',
    },
  };
}

// The 'bandwidth' request: the read bandwidth B(T) of T threads reading at once (each its own
// part of the buffer), the fastest of its repeats, over buffers of these sizes (the weight bytes of a target), with
// sd.measureReadBandwidth; an older build of the module without it says so in `error`.
export function bandwidth(sizes, threads) {
  const { sd } = state;
  const T = clampThreads(threads);
  return sizes.map((bytes) => {
    // (A package older than the function itself: the same words as a module without it.)
    if (typeof sd.measureReadBandwidth !== 'function')
      return { bytes, threads: T, error: 'measureReadBandwidth: not in this build of the module' };
    try {
      // The fastest of its repeats (max GB/s): another process only slows a read down.
      const r = sd.measureReadBandwidth({ bytes, repeats: 5, threads: T });
      return { bytes, ...r, median: r.gbPerSecond, gbPerSecond: Math.max(r.gbPerSecond, r.max ?? 0) };
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
    if (typeof sd.measurePeak !== 'function')
      return { threads: T, error: 'measurePeak: not in this build of the module' };
    try {
      // The fastest of its repeats, as for the bandwidth.
      const r = sd.measurePeak({ repeats: 5, threads: T });
      return { ...r, gflops: Math.max(r.gflops, r.max ?? 0), intGops: Math.max(r.intGops ?? 0, r.intMax ?? 0) };
    } catch (e) {
      return { threads: T, error: String(e?.message || e) };
    }
  });
}
