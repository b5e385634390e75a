// specdec for Node (the package's "node" entry). Emscripten 3.1.6's loader would fetch() the
// wasm by file path under Node, so the bytes are read here and handed over as wasmBinary. More
// than one thread: the threaded build (specdec-core-mt-node.mjs, the same .wasm as the
// browser's threaded build), whose pthreads are worker_threads; they are unref()'d once the
// module is ready, so that an idle pool never keeps the process alive.
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import createSpecdecModule from './wasm/specdec-core.js';
import { instantiate, loader, providePretrained, SpecdecError } from './core.js';
import { loadPretrained } from './model/pretrained.js';
import { requestedThreads } from './threads.js';

export { SpecdecError, Rng, Model, Heads, Decoder, encode, decode, tokenText, limits } from './core.js';

providePretrained(loadPretrained); // sd.loadPretrained: checkpoints with their tokenizers

const WASM_URL = new URL('./wasm/specdec-core.wasm', import.meta.url);
const MT_GLUE = new URL('./wasm/specdec-core-mt-node.mjs', import.meta.url);
const MT_WORKER = new URL('./wasm/specdec-core-mt-node.worker.cjs', import.meta.url);
const MT_WASM = new URL('./wasm/specdec-core-mt.wasm', import.meta.url);
const KNOWN = ['wasmBinary', 'threads', 'threadedWasmBinary'];

/**
 * Instantiates the WebAssembly module and returns the API. Without options the instance is
 * created once and shared by every caller (one thread).
 * @type {(options?: import('./specdec').LoadOptions) => Promise<any>}
 */
export const loadSpecdec = loader(create, KNOWN);

// Idle pthread workers must not keep Node running: unref each, including ones made later.
function unrefWorkers(M) {
  const P = M.PThread;
  if (!P) return;
  for (const w of [...P.unusedWorkers, ...P.runningWorkers]) w.unref?.();
  const load = P.loadWasmModuleToWorker;
  P.loadWasmModuleToWorker = function (worker, onFinished) {
    load.call(this, worker, onFinished);
    worker.unref?.();
  };
}

async function create(options) {
  const requested = requestedThreads(options.threads, availableParallelism());
  let reason = null;
  if (requested > 1) {
    try {
      const { default: factory } = await import(MT_GLUE.href);
      const wasmBinary = options.threadedWasmBinary ?? (await readFile(MT_WASM));
      const worker = fileURLToPath(MT_WORKER);
      return await instantiate(
        factory,
        {
          wasmBinary,
          specdecPoolSize: requested - 1,
          locateFile: (path, prefix) => (path.endsWith('.worker.js') ? worker : prefix + path),
        },
        { requested, reason: null, onReady: unrefWorkers },
      );
    } catch (e) {
      if (e instanceof SpecdecError) throw e;
      reason = `the threaded build did not start (${e?.message ?? e})`;
    }
  }
  const wasmBinary = options.wasmBinary ?? (await readFile(WASM_URL));
  return instantiate(createSpecdecModule, { wasmBinary }, { requested, reason });
}
