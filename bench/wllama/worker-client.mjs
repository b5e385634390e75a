// A module Worker (bench/wllama/specdec-worker.mjs) as one function: call(message) posts the
// message with an id and the fields of `extra`, and resolves with the worker's result or rejects
// with its error (every pending call, if the worker itself fails). The pages of bench/wllama.mjs,
// bench/load.mjs and bench/chromium-weights.mjs talk to their workers through it.
/**
 * @param {string | URL} url the worker's module
 * @param {object} [extra] fields added to every message (e.g. { threads })
 * @param {string} [label] names the worker in the error of a failed worker
 * @returns {(message: object) => Promise<unknown>}
 */
export function workerClient(url, extra = {}, label = 'worker') {
  const worker = new Worker(url, { type: 'module' });
  const pending = new Map();
  let next = 0;
  worker.onmessage = ({ data }) => {
    const p = pending.get(data.id);
    pending.delete(data.id);
    if (data.error) p.reject(new Error(data.error));
    else p.resolve(data.result);
  };
  worker.onerror = (e) => {
    for (const p of pending.values()) p.reject(new Error(`${label}: ${e.message}`));
    pending.clear();
  };
  return (message) =>
    new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      worker.postMessage({ ...message, id, ...extra });
    });
}
