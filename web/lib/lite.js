// specdec/lite for browsers and workers: the same API over a smaller single-threaded module that
// leaves out the checkpoint frontends (loadModel reads specdec's own model files, not GGUF files
// or Hugging Face folders; it says so when given one). For pages that need the lesson's
// functions, callback decoders and our own models — the explorer page loads it, on its main
// thread and in its worker. Asked for more than one thread where threads can run, it starts the
// one threaded build there is (threaded.js, the full module: it reads checkpoints too); the lite
// module is what one thread gets.
import createSpecdecModule from './wasm/specdec-lite.js';
import { instantiateSingle, loader } from './core.js';
import { THREADED_OPTIONS, threadedOr } from './threaded.js';

export { SpecdecError, Rng, Model, Heads, Decoder, encode, decode, tokenText, limits } from './core.js';

/**
 * Instantiates the lite module (or, with threads, the threaded build) and returns the API.
 * Without options the instance is created once and shared by every caller.
 * @type {(options?: import('./specdec').LiteLoadOptions) => Promise<any>}
 */
export const loadSpecdec = loader(
  (options) => threadedOr(options, (o, threads) => instantiateSingle(createSpecdecModule, o, threads)),
  ['wasmBinary', 'wasmUrl', ...THREADED_OPTIONS],
);
