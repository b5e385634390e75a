// The page's one client of the decoding worker (worker.js): promise-based requests over its
// message protocol, the load of a pair of the build (or a learner's files) with progress
// events, and the worker's measurements. Section 4 (models.js) and the step-through
// (stepper.js) share one instance; the pitfalls lab (pitfalls.js) has its own on a second
// worker. Nothing here reads the page's controls: callers pass the options.
// The pairs the build ships (models.config.js, vite.config.js): sizes, shapes, URLs.
import { PAIRS, DEFAULT_PAIR } from 'virtual:specdec-pairs';
import { chosenWeights } from './weights.js';

export { PAIRS, DEFAULT_PAIR };

const absolute = (url) => new URL(url, document.baseURI).href;

/** A pair's files for these weights ('f32': the float files; 'int8': the 8-bit ones), or null. */
export function pairFiles(name, weights = 'f32') {
  const p = PAIRS[name];
  if (!p?.available) return null;
  if (weights !== 'int8') return { files: p.files, bytes: p.bytes, precached: p.precached };
  return p.int8?.available ? { files: p.int8.files, bytes: p.int8.bytes, precached: false } : null;
}

/** What the worker needs to load a pair: absolute URLs, expected sizes, its name, its weights. */
function pairRequest(name, weights = 'f32') {
  const p = PAIRS[name];
  if (!p?.available) throw new Error(`the ${name} pair is not in this build`);
  const f = pairFiles(name, weights);
  if (!f) throw new Error(`the ${name} pair's 8-bit files are not in this build`);
  return {
    urls: { target: absolute(f.files.target.url), draft: absolute(f.files.draft.url) },
    sizes: { target: f.files.target.bytes, draft: f.files.draft.bytes },
    pair: name,
    weights,
    // The pair's heads, if the build has them: the worker loads them on first use.
    heads: p.heads ? { url: absolute(p.heads.url), count: p.heads.count } : null,
  };
}

/** Whether both files of a pair (with these weights) are in a cache of the service worker (usable offline). */
export async function pairIsCached(name, weights = 'f32') {
  const f = pairFiles(name, weights);
  if (!f || !('caches' in window)) return false;
  try {
    const hits = await Promise.all(['target', 'draft'].map((r) => caches.match(absolute(f.files[r].url))));
    return hits.every(Boolean);
  } catch {
    return false;
  }
}

/**
 * Calls `listener()` each time the service worker reports a file saved to its cache (sw.js:
 * the cache write of a pair's file ends after the pair has loaded), so that "saved for offline
 * use" can be checked again then.
 */
export function onFileSaved(listener) {
  if (!('serviceWorker' in navigator)) return;
  navigator.serviceWorker.addEventListener('message', (e) => {
    if (e.data?.type === 'specdec:saved') listener(e.data.url);
  });
  navigator.serviceWorker.startMessages();
}

// A pair fetched on demand is kept by the service worker's runtime cache, so it must go
// through the service worker: on a first visit, wait (briefly) until it controls the page.
async function serviceWorkerInControl(timeoutMs = 10000) {
  if (!('serviceWorker' in navigator) || !window.isSecureContext || import.meta.env.DEV) return;
  if (navigator.serviceWorker.controller) return;
  const reg = await navigator.serviceWorker.getRegistration().catch(() => null);
  if (!reg) return;
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    navigator.serviceWorker.addEventListener(
      'controllerchange',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/**
 * Promise-based client of worker.js. `worker`: another instance of worker.js to talk to (the
 * pitfalls lab has its own, so that its runs and section 4's never wait for each other).
 * `threads`: loadSpecdec's threads option for that instance ('auto' when not given).
 */
export class ModelClient {
  constructor(worker = null, { threads } = {}) {
    this.worker =
      worker ??
      new Worker(new URL('../worker/worker.js', import.meta.url), {
        type: 'module',
        name: 'specdec-models',
      });
    if (threads !== undefined) this.worker.postMessage({ type: 'init', threads });
    this.nextId = 1;
    this.pending = new Map(); // id -> { resolve, reject, onEvent }
    this.info = null;
    this.loading = null;
    this.pair = DEFAULT_PAIR; // the pair loaded (or to load); a learner's files may replace it
    this.weights = chosenWeights(); // its weights: 'f32' or 'int8' (weights.js: the default and why)
    this.listeners = new Set();
    this.worker.onmessage = (e) => this.onMessage(e.data);
    this.worker.onerror = (e) => {
      const err = new Error(e.message || 'worker failed');
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.emit({ type: 'worker-error', message: err.message });
    };
  }

  onMessage(msg) {
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.type === 'error') {
      this.pending.delete(msg.id);
      const err = new Error(msg.message);
      if (msg.fallback) {
        // The GPU failed: the target runs on the CPU from now on (backend.js shows why).
        err.fallback = msg.fallback;
        this.emit({ type: 'backend-fallback', reason: msg.fallback });
      }
      p.reject(err);
    } else if (
      ['progress', 'chunk', 'started', 'vk-progress', 'warm-progress', 'pitfall-progress'].includes(msg.type)
    ) {
      p.onEvent?.(msg);
    } else {
      this.pending.delete(msg.id);
      p.resolve(msg);
    }
  }

  request(msg, onEvent) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onEvent });
      this.worker.postMessage({ ...msg, id });
    });
  }

  on(fn) {
    this.listeners.add(fn);
  }
  emit(ev) {
    for (const fn of this.listeners) fn(ev);
  }

  /** Loads the current pair (the default one at first) once; later calls share the promise. */
  ensureLoaded() {
    if (!this.loading) {
      const name = this.pair;
      const req = pairRequest(name, this.weights);
      this.emit({ type: 'load-start', pair: name, weights: this.weights });
      this.loading = this.request({ type: 'load', ...req }, (ev) => this.emit({ ...ev, pair: name }))
        .then((msg) => {
          this.info = msg.info;
          this.emit({ type: 'loaded', info: msg.info });
          return msg.info;
        })
        .catch((err) => {
          this.loading = null;
          this.emit({ type: 'load-error', message: err.message });
          throw err;
        });
    }
    return this.loading;
  }

  /**
   * Loads a learner's model files ({ target?: File, draft?: File }) in the worker, through the
   * same loader as the page's models; a role without a file keeps its model. Rejects with the
   * loader's message (nothing changes then).
   */
  async loadFiles(files, onEvent) {
    // Let a download of the page's models finish first (it would not replace these anyway).
    await this.loading?.catch(() => {});
    const msg = await this.request({ type: 'load-files', files }, onEvent);
    this.info = msg.info;
    this.emit({ type: 'loaded', info: msg.info });
    return msg.info;
  }

  /**
   * Switches to another pair of the build (PAIRS), or to the same pair's other weights ('f32' |
   * 'int8'; the 8-bit files are loaded as they are, stored quantized): fetched with progress
   * events (files that are not precached are fetched through the service worker, which keeps
   * them for offline use), then loaded in the worker, which disposes the models it replaces. On
   * failure nothing changes.
   */
  async loadPair(name, weights = this.weights) {
    await this.loading?.catch(() => {});
    const req = pairRequest(name, weights);
    if (!pairFiles(name, weights).precached) await serviceWorkerInControl();
    this.emit({ type: 'load-start', pair: name, weights });
    let msg;
    try {
      msg = await this.request({ type: 'load', ...req, replace: true }, (ev) => this.emit({ ...ev, pair: name }));
    } catch (err) {
      this.emit({ type: 'load-error', message: err.message, pair: name, kept: this.info });
      throw err;
    }
    this.pair = name;
    this.weights = weights;
    this.info = msg.info;
    this.loading = Promise.resolve(msg.info);
    this.emit({ type: 'loaded', info: msg.info });
    return msg.info;
  }

  /** Back to the current pair's model files (after loadFiles). */
  resetModels() {
    return this.loadPair(this.pair);
  }

  run(mode, options, onEvent) {
    return this.request({ type: 'run', mode, options }, onEvent);
  }
  stop() {
    this.worker.postMessage({ type: 'stop' });
  }
  /**
   * Untimed passes with these run options until the engine is warm (worker/measure.js warmup):
   * { skipped, warm, rounds, passes, ms }; onEvent gets each round ('warm-progress').
   */
  warmup(options, onEvent, { force = false } = {}) {
    return this.request({ type: 'warmup', options, force }, onEvent).then((m) => m.warm);
  }
  calibrate(options) {
    return this.request({ type: 'calibrate', options }).then((m) => m.stepMs);
  }
  /** Why the models' tokenizer cannot encode `text` (the character and its offset), or null. */
  checkPrompt(text) {
    return this.request({ type: 'check-prompt', text }).then((m) => m.problem);
  }
  /** One plain step's mean ms and each of its 12 steps' ms ({ ms, samples }), with these options. */
  calibrateSteps(options) {
    return this.request({ type: 'calibrate', options }).then((m) => ({
      ms: m.stepMs,
      samples: m.samples ?? [],
    }));
  }
  /**
   * Target pass times over k = 1..8 new tokens (roofline.js, worker.js measureVk); `iterations`:
   * the passes per k (default the worker's: 16, 8 on a GPU).
   */
  measureVk(options, onEvent, { iterations } = {}) {
    return this.request({ type: 'measure-vk', options, ...(iterations ? { iterations } : {}) }, onEvent).then(
      (m) => m.vk,
    );
  }
  /**
   * Read bandwidth B(T) of `threads` threads at once (default: the threads in use) over buffers
   * of these sizes ([{ bytes, threads, gbPerSecond } | { bytes, threads, error }]).
   */
  bandwidth(sizes, threads) {
    return this.request({ type: 'bandwidth', sizes, threads }).then((m) => m.results);
  }
  /** Compute peak P(T) for each thread count ([{ threads, gflops } | { threads, error }], sd.measurePeak). */
  peak(threads) {
    return this.request({ type: 'peak', threads }).then((m) => m.results);
  }
  /** The worker's threads ({ threads, maxThreads, requested, threaded, reason, isolated, cores }); with n, sets them first. */
  threads(n) {
    return this.request({ type: 'threads', n }).then((m) => m.info);
  }
  /** sd.memoryStats() of the worker's WASM instance (tests: no leak when switching pairs). */
  memory() {
    return this.request({ type: 'memory' }).then((m) => m.stats);
  }
  /** Loads the current target's heads in the worker (resolves to their count; rejects with the loader's message). */
  loadHeads() {
    return this.request({ type: 'heads' }).then((m) => m.count);
  }
  stepStart(options) {
    return this.request({ type: 'step-start', options });
  }
  stepNext() {
    return this.request({ type: 'step-next' }).then((m) => m.view);
  }
  stepDispose() {
    this.worker.postMessage({ type: 'step-dispose' });
  }
  /** Is there a WebGPU adapter in the worker ({ available, name, adapter, software, reason })? */
  gpuProbe() {
    return this.request({ type: 'gpu-probe' }).then((m) => m.probe);
  }
  /** Puts the target on 'gpu' (loads it there now) or 'cpu'; resolves to where it runs ({ backend, name, reason, ... }). */
  backend(want) {
    return this.request({ type: 'backend', want }).then((m) => m.info);
  }
  /** Diagnostics: destroys the worker's GPU device (what a driver reset does). */
  gpuLose() {
    return this.request({ type: 'gpu-lose' });
  }
}
