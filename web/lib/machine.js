// The API's machine part (core.js's createApi): threads, bandwidth and peak measurements,
// memory diagnostics, over an instantiated module M.

import { checkOptions, fail, integer } from './base/errors.js';

/** The machine's part of the API (threadInfo: what loadSpecdec asked for, and why not). */
export function machineApi(M, threadInfo) {
  return {
    /**
     * Diagnostics: how fast one core reads a stream of `bytes` bytes from inside wasm (a SIMD
     * sum, the access pattern of the decoding matmuls without their multiplies), GB/s, median
     * of `repeats` runs. For a buffer the size of a model's weights it is that model's memory
     * floor: one decoding step cannot take less than weight bytes / this.
     */
    measureReadBandwidth(options) {
      const o = checkOptions(options, ['bytes', 'repeats', 'threads'], 'measureReadBandwidth');
      const bytes = integer(o.bytes ?? 64 * 2 ** 20, 'bytes', 4096, 1024 * 2 ** 20);
      const repeats = integer(o.repeats ?? 5, 'repeats', 1, 1000);
      const threads = integer(o.threads ?? M.threadsInUse(), 'threads', 1, M.maxThreads());
      if (typeof M.measureReadBandwidth !== 'function') fail('measureReadBandwidth: not in this build of the module');
      const r = M.measureReadBandwidth(bytes, repeats, threads);
      return { gbPerSecond: r.median, min: r.min, max: r.max, runs: r.runs, bytes, threads };
    },

    /**
     * Diagnostics: multiply-add GFLOP/s of `threads` threads at once (registers only, the
     * matmul kernel's 128-bit vectors): the arithmetic ceiling P(T) of a pass.
     */
    measurePeak(options) {
      const o = checkOptions(options, ['repeats', 'threads'], 'measurePeak');
      const repeats = integer(o.repeats ?? 5, 'repeats', 1, 1000);
      const threads = integer(o.threads ?? M.threadsInUse(), 'threads', 1, M.maxThreads());
      const r = M.measurePeakGflops(repeats, threads);
      // The 8-bit kernels' integer multiply-adds (i32x4.dot_i16x8_s), 2 operations each.
      const i = M.measurePeakIntGops(repeats, threads);
      return {
        gflops: r.median,
        min: r.min,
        max: r.max,
        runs: r.runs,
        threads,
        intGops: i.median,
        intMin: i.min,
        intMax: i.max,
      };
    },

    /** Threads every pass uses now (1 .. maxThreads). */
    get threads() {
      return M.threadsInUse();
    },
    /** Threads this instance started (the caller's included): what setThreads can use. */
    get maxThreads() {
      return M.maxThreads();
    },
    /** What loadSpecdec was asked for (after 'auto' was resolved). */
    threadsRequested: threadInfo.requested,
    /** Why fewer threads run than were asked for, or null. */
    threadsUnavailableReason: threadInfo.reason,
    /** Whether this is the threaded build of the module. */
    threaded: M.hasThreads(),
    /**
     * Sets how many of the started threads each pass uses (1 .. maxThreads); results do not
     * depend on it (every output is computed as on one thread).
     */
    setThreads(n) {
      M.setThreads(integer(n, 'threads', 1, M.maxThreads()));
    },
    /** Diagnostics of the thread pool: parallel regions run, run serially, worker wake-ups. */
    threadStats() {
      return M.threadStats();
    },
    /** @internal tests: the limits as the module reports them (base/limits.js must equal them). */
    _coreLimits() {
      return M.limits();
    },
    /** @internal tests: the module's record wire layout ({ name: index, ..., length }; decoder/records.js). */
    _recordWire() {
      return M.recordWire();
    },
    /** @internal benchmarks: microseconds a worker spins for more work before it sleeps. */
    _setSpinMicros(us) {
      M.setSpinMicros(integer(us, 'us', 0, 1e6));
    },

    /**
     * Diagnostics: { heapBytes: wasm memory size, inUseBytes: bytes allocated (malloc),
     * jsHandles: JS values held by C++ (Embind handles) }.
     */
    memoryStats() {
      const stats = M.memoryStats();
      stats.jsHandles = typeof M.count_emval_handles === 'function' ? M.count_emval_handles() : 0;
      return stats;
    },
  };
}
