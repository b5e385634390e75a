// Section 4's threads: how many the decoding worker's passes use (a select, 1 … the threads
// the worker has), and a line that says why not more — not cross-origin isolated (isolation.js
// says why), one logical core, or chosen.
import { h } from '../shared/svg.js';

/**
 * The threads line, from the worker's threads (worker.js threadInfo: { threads, maxThreads,
 * isolated, reason, cores }) or null before it has said; `isolationReason`: the page's own
 * reason for not being cross-origin isolated (isolation.js), when it has one.
 */
export function threadsText(t, isolationReason = null, used = null) {
  if (!t) return 'Threads: starting the decoding worker…';
  // The last runs used fewer than chosen (compare.js: 1 thread was faster by more than 10% then).
  const ran =
    used && used !== t.threads
      ? ` The last runs used ${used} thread${used === 1 ? '' : 's'}: faster by more than 10% just then (the status line beside the Run buttons has the times).`
      : '';
  if (t.threads > 1)
    return `${t.threads} threads, cross-origin isolated${t.maxThreads > t.threads ? ` (${t.maxThreads} available)` : ''}.${ran}`;
  if (t.maxThreads > 1) return `1 thread (chosen; ${t.maxThreads} available), cross-origin isolated.`;
  if (t.isolated) {
    return t.reason
      ? `1 thread: ${t.reason}.`
      : `1 thread, cross-origin isolated: this machine reports ${t.cores} logical core${t.cores === 1 ? '' : 's'}.`;
  }
  const why =
    isolationReason ??
    String(t.reason ?? 'SharedArrayBuffer is unavailable').replace(/^not cross-origin isolated: /, '');
  return `1 thread: not cross-origin isolated (${why}).`;
}

/**
 * @param {object} o
 * @param {import('../shared/client.js').ModelClient} o.client
 * @param {{ reason: string | null, on: (fn: Function) => void } | null} o.isolation  isolation.js
 * @param {() => boolean} o.isBusy  section 4 is running or measuring
 * @param {() => void} o.onChange  the thread count in use changed
 */
export function initThreads({ client, isolation, isBusy, onChange }) {
  const select = document.getElementById('gen-threads');
  const status = document.getElementById('threads-status');
  let threadInfo = null; // the worker's threads (worker.js threadInfo), once it has said
  let shownThreads = null; // the count the page last showed
  let usedThreads = null; // the count the last runs used, when compare.js chose fewer

  /** Shows the worker's threads `t` (null: the ones it said last). */
  function show(t) {
    if (t) threadInfo = t;
    const info = threadInfo;
    status.textContent = threadsText(info, isolation?.reason, usedThreads);
    status.dataset.used = usedThreads ? String(usedThreads) : '';
    if (!info) return;
    status.dataset.threads = String(info.threads);
    status.dataset.maxThreads = String(info.maxThreads);
    status.dataset.isolated = String(info.isolated);
    if (select.options.length !== info.maxThreads) {
      select.replaceChildren(
        ...Array.from({ length: info.maxThreads }, (_, i) => h('option', { value: String(i + 1) }, [String(i + 1)])),
      );
    }
    const changed = info.threads !== shownThreads;
    shownThreads = info.threads;
    select.value = String(info.threads);
    select.dataset.ready = 'true';
    select.disabled = isBusy() || info.maxThreads < 2;
    if (changed) onChange();
  }

  select.addEventListener('change', async () => {
    const n = Number(select.value);
    if (isBusy()) {
      show(null); // back to the count in use; the select is disabled while busy anyway
      return;
    }
    try {
      show(await client.threads(n));
    } catch (err) {
      show(null);
      status.textContent += ` (${err.message})`;
    }
  });
  isolation?.on(() => show(null));
  show(null);

  return {
    show,
    /** The count the last runs used (compare.js pickThreads), or null: the threads line says so when it differs. */
    setUsed(n) {
      usedThreads = n;
      show(null);
    },
    /** The worker's threads, or null before it has said. */
    info: () => threadInfo,
    setDisabled(b) {
      select.disabled = b || !threadInfo || threadInfo.maxThreads < 2;
    },
  };
}
