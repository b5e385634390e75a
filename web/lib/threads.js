// How many threads a specdec instance gets (shared by index.js and node.js): the option
// `threads` of loadSpecdec checked and resolved against what the environment allows.
//
//   threads: 1 (default) | N (1..64) | 'auto' (the machine's logical cores, at most 16)
//
// Asking for N > 1 where it cannot be had is not an error: the instance runs on one thread and
// says why in threadsUnavailableReason. Bad values are.
import { SpecdecError } from './base/errors.js';

export const MAX_THREADS = 64;
export const AUTO_CAP = 16;

/**
 * @param {unknown} threads the option as given
 * @param {number} cores logical cores of this machine (navigator.hardwareConcurrency, Node's
 *   os.availableParallelism())
 * @returns {number} the count asked for, 1..64
 */
export function requestedThreads(threads, cores) {
  if (threads === undefined) return 1;
  if (threads === 'auto') return Math.max(1, Math.min(AUTO_CAP, Math.floor(cores) || 1));
  if (typeof threads !== 'number' || !Number.isInteger(threads) || threads < 1 || threads > MAX_THREADS) {
    const shown = typeof threads === 'string' ? JSON.stringify(threads) : String(threads);
    throw new SpecdecError(`threads: must be 'auto' or an integer in 1..${MAX_THREADS}, got ${shown}`);
  }
  return threads;
}

/**
 * Why WebAssembly threads cannot run here, or null when they can (browsers and workers need
 * SharedArrayBuffer, which only cross-origin isolated documents get).
 */
export function browserThreadsBlocker() {
  if (typeof SharedArrayBuffer !== 'function') {
    return globalThis.crossOriginIsolated === false
      ? 'not cross-origin isolated: SharedArrayBuffer, which WebAssembly threads need, is only ' +
          'given to pages served with Cross-Origin-Opener-Policy: same-origin and ' +
          'Cross-Origin-Embedder-Policy: require-corp (or credentialless)'
      : 'this JavaScript engine has no SharedArrayBuffer, which WebAssembly threads need';
  }
  if (globalThis.crossOriginIsolated === false) {
    return (
      'not cross-origin isolated: WebAssembly threads need Cross-Origin-Opener-Policy: ' +
      'same-origin and Cross-Origin-Embedder-Policy: require-corp (or credentialless)'
    );
  }
  if (typeof WebAssembly !== 'object' || typeof WebAssembly.Memory !== 'function') {
    return 'no WebAssembly in this environment';
  }
  try {
    // Shared memory must be constructible (some embedders disable it).
    new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  } catch (e) {
    return `shared WebAssembly memory is unavailable here (${e?.message ?? e})`;
  }
  return null;
}

/** The thread facts an instance reports (see createApi's threads section). */
export function threadFacts(requested, started, reason) {
  return { requested, started, reason: started < requested ? reason : null };
}
