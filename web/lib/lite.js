// specdec/lite for browsers and workers: the same API over a smaller single-threaded module that
// leaves out the checkpoint frontends (loadModel reads specdec's own model files, not GGUF files
// or Hugging Face folders; it says so when given one). For pages that need the lesson's
// functions, callback decoders and our own models — the explorer page's main thread loads it.
import createSpecdecModule from './wasm/specdec-lite.js';
import { instantiateSingle, loader } from './core.js';

export { SpecdecError, Rng, Model, Heads, Decoder, encode, decode, tokenText, limits } from './core.js';

/**
 * Instantiates the lite module and returns the API (one thread). Without options the instance is
 * created once and shared by every caller.
 * @type {(options?: import('./specdec').LiteLoadOptions) => Promise<any>}
 */
export const loadSpecdec = loader(
  (options) => instantiateSingle(createSpecdecModule, options, { requested: 1, reason: null }),
  ['wasmBinary', 'wasmUrl'],
);
