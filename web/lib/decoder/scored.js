// Score callbacks' side of a Decoder (decoder.js): calling the callback a query is for, and
// turning its answer into the flat rows the C++ decoder checks; plus the event-loop yield that
// generate() takes between iterations.

import { describe, fail, isNumericArray } from '../base/errors.js';

/** Yields to the event loop (scheduler.yield, setImmediate, a MessageChannel, or a timer). */
export const yieldToEventLoop = (() => {
  if (typeof globalThis.scheduler?.yield === 'function') return () => globalThis.scheduler.yield();
  if (typeof globalThis.setImmediate === 'function') {
    return () => new Promise((resolve) => globalThis.setImmediate(resolve));
  }
  if (typeof globalThis.MessageChannel === 'function') {
    const channel = new MessageChannel();
    const waiting = [];
    channel.port1.onmessage = () => waiting.shift()?.();
    return () =>
      new Promise((resolve) => {
        waiting.push(resolve);
        channel.port2.postMessage(0);
      });
  }
  return () => new Promise((resolve) => setTimeout(resolve, 0));
})();

/** Whether x is a Promise or another thenable. */
export function isThenable(x) {
  return x !== null && (typeof x === 'object' || typeof x === 'function') && typeof x.then === 'function';
}

/**
 * Calls the score callback a query is for (its scoreTree for a tree query) and reports the time
 * it took, awaiting included, to addMs. Returns its answer (or the Promise of it).
 */
export function callScore(scores, query, addMs) {
  const fn = query.target ? scores.target : scores.draft;
  const t = performance.now();
  // (hidden: heads draft for this target, which hands its hidden states over with the rows)
  const extra = query.hidden ? [{ hidden: true }] : [];
  const out = query.tree ? fn.scoreTree(query.tokens, query.tree, ...extra) : fn(query.tokens, query.nLast, ...extra);
  if (!isThenable(out)) {
    addMs(performance.now() - t);
    return out;
  }
  return Promise.resolve(out).then(
    (rows) => {
      addMs(performance.now() - t);
      return rows;
    },
    (e) => {
      addMs(performance.now() - t);
      throw e;
    },
  );
}

/**
 * A callback's answer as { flat: Float32Array of rows, hidden: Float32Array | null }. Only the
 * types are checked here; the rows' shape and values are checked in C++ (errors name the
 * callback).
 */
export function scoredRows(query, answer) {
  let rows = answer;
  let hidden = null;
  if (query.hidden) {
    if (answer === null || typeof answer !== 'object' || !('logits' in answer) || !('hidden' in answer))
      fail(`${query.source}: heads draft from this target: expected { logits, hidden }, got ${describe(answer)}`);
    rows = answer.logits;
    hidden =
      answer.hidden instanceof Float32Array
        ? answer.hidden
        : isNumericArray(answer.hidden)
          ? Float32Array.from(answer.hidden)
          : fail(
              `${query.source}: hidden: expected a Float32Array of nLast × nEmbd values, got ${describe(answer.hidden)}`,
            );
  }
  if (rows instanceof Float32Array) return { flat: rows, hidden };
  const what = query.tree ? `${query.source}.scoreTree` : query.source;
  const shape = query.tree ? `${query.nLast} rows (the root row and the nodes' rows asked)` : 'nLast';
  if (!isNumericArray(rows))
    fail(`${what}: expected a Float32Array of ${shape} × vocabulary values, got ${describe(rows)}`);
  return { flat: Float32Array.from(rows), hidden };
}
