// The decoding worker's own state (worker.js and its worker-*.js modules): its WASM instance,
// the two loaded models, the flags of the one request that may run at a time, and the small
// helpers every part uses (post a message, yield, the thread count). One object, `state`, so
// that every module reads and writes the same fields.
import { loadSpecdec } from 'specdec/lite';

export const state = {
  sd: null, // this worker's WASM instance (ensureSd)
  sdLoading: null,
  threadsOption: 'auto', // loadSpecdec's threads ('init' may change it before the first load)
  models: null, // { target, draft, info, parts: { target, draft }, heads } (parts: see install)
  stopRequested: false,
  running: false, // a run or a measurement holds the models
  stepper: null, // the step-through's decoder: { dec, topRows }
  warmFor: [], // the keys the engine was last warmed up for (worker/measure.js warmup)
};

export const post = (msg) => self.postMessage(msg);

/** This worker's WASM instance, loaded once (with state.threadsOption). */
export async function ensureSd() {
  if (state.sd) return state.sd;
  state.sdLoading ??= loadSpecdec({ threads: state.threadsOption }).then(
    (x) => (state.sd = x),
    (e) => {
      state.sdLoading = null;
      throw e;
    },
  );
  return state.sdLoading;
}

/** The threads this instance has, and why not more: what the page shows. */
export function threadInfo() {
  const { sd } = state;
  return {
    threads: sd.threads,
    maxThreads: sd.maxThreads,
    requested: sd.threadsRequested,
    threaded: sd.threaded,
    reason: sd.threadsUnavailableReason,
    isolated: self.crossOriginIsolated === true,
    cores: self.navigator?.hardwareConcurrency ?? 1,
  };
}

/** Uses n threads from now on (clamped to 1..maxThreads; nothing given: unchanged). */
export function useThreads(n) {
  if (n === undefined || n === null) return;
  const { sd } = state;
  const t = Math.max(1, Math.min(sd.maxThreads, Math.round(Number(n)) || 1));
  if (sd.threads !== t) sd.setThreads(t);
}

/** A thread count as given (the one in use when none is), clamped to 1..maxThreads. */
export const clampThreads = (t) =>
  Math.max(1, Math.min(state.sd.maxThreads, Math.round(Number(t ?? state.sd.threads)) || 1));

/** The thread pool's counters (zeros for a build without them), and their change over a run. */
export const poolStats = () =>
  typeof state.sd.threadStats === 'function' ? state.sd.threadStats() : { runs: 0, serial: 0, wakeups: 0, shed: 0 };
// shed: regions the pool ran on one thread because its ledger found threads losing (a busy machine).
export const poolDelta = (a, b) => ({
  runs: b.runs - a.runs,
  serial: b.serial - a.serial,
  wakeups: b.wakeups - a.wakeups,
  shed: (b.shed ?? 0) - (a.shed ?? 0),
});

/** Throws unless the models are loaded and no run or measurement is going on. */
export function requireIdleModels() {
  if (!state.models) throw new Error('models are not loaded');
  if (state.running) throw new Error('a run is already in progress');
}

// Yields to the event loop without the 4 ms timer clamp, so 'stop' gets through quickly.
const channel = new MessageChannel();
const waiters = [];
channel.port1.onmessage = () => waiters.shift()?.();
export const yieldNow = () =>
  new Promise((resolve) => {
    waiters.push(resolve);
    channel.port2.postMessage(0);
  });

// One step: the record, or (the GPU target) a Promise of it; awaited only then, so that a CPU
// run's timing is what it was.
export const isPromise = (x) => typeof x?.then === 'function';
