// The threaded build for browsers and workers (specdec-core-mt.*: glue, pthread worker script,
// wasm), shared by the browser entries: index.js falls back to the full single-threaded module,
// lite.js to the lite one. It is fetched only when an instance asks for more than one thread where
// SharedArrayBuffer is usable (a cross-origin isolated page or worker). Its glue is imported at run
// time from its own URL, never bundled, so that every pthread worker imports that same file.
import { instantiate, SpecdecError } from './core.js';
import { browserThreadsBlocker, requestedThreads } from './threads.js';

const MT_GLUE = new URL('./wasm/specdec-core-mt.js', import.meta.url).href;
const MT_WORKER = new URL('./wasm/specdec-core-mt.worker.js', import.meta.url).href;
const MT_WASM = new URL('./wasm/specdec-core-mt.wasm', import.meta.url).href;

/** The options this file reads (on top of an entry's own). */
export const THREADED_OPTIONS = ['threads', 'threadedWasmBinary', 'threadedWasmUrl'];

// A bundler may inline the small pthread worker script as a data: URL (Vite does below its
// assetsInlineLimit, 4 KiB by default); a Worker cannot start from one, but it can from a blob:
// URL of the same bytes, which is same-origin.
function startableWorkerUrl(url) {
  if (!url.startsWith('data:')) return url;
  const comma = url.indexOf(',');
  const meta = url.slice(5, comma),
    body = url.slice(comma + 1);
  const text = meta.endsWith(';base64') ? atob(body) : decodeURIComponent(body);
  const bytes = Uint8Array.from(text, (c) => c.charCodeAt(0));
  return URL.createObjectURL(new Blob([bytes], { type: 'text/javascript' }));
}

/**
 * The threaded instance when options.threads asks for more than one thread and threads can run
 * here; otherwise single(options, threads), with the reason threads were not had.
 * @param {object} options loadSpecdec's options (checked against the entry's known keys)
 * @param {(options: object, threads: { requested: number, reason: string | null }) => Promise<any>} single
 */
export async function threadedOr(options, single) {
  const cores = globalThis.navigator?.hardwareConcurrency ?? 1;
  const requested = requestedThreads(options.threads, cores);
  let reason = null;
  if (requested > 1) {
    reason = browserThreadsBlocker();
    if (reason === null) {
      try {
        const { default: factory } = await import(/* @vite-ignore */ MT_GLUE);
        const wasmUrl = options.threadedWasmUrl !== undefined ? String(options.threadedWasmUrl) : MT_WASM;
        const worker = startableWorkerUrl(MT_WORKER);
        const arg = {
          specdecPoolSize: requested - 1,
          mainScriptUrlOrBlob: MT_GLUE,
          locateFile: (path) => (path.endsWith('.worker.js') ? worker : path.endsWith('.wasm') ? wasmUrl : path),
        };
        if (options.threadedWasmBinary !== undefined) arg.wasmBinary = options.threadedWasmBinary;
        return await instantiate(factory, arg, { requested, reason: null });
      } catch (e) {
        if (e instanceof SpecdecError) throw e;
        reason = `the threaded build did not start (${e?.message ?? e})`;
      }
    }
  }
  return single(options, { requested, reason });
}
