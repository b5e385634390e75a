// specdec for browsers and workers (the package's default entry). The wasm files are located
// next to the glue with new URL('…', import.meta.url), which bundlers such as Vite recognise and
// emit as assets. Two builds: the single-threaded module (specdec-core.*), statically imported,
// and the threaded one (threaded.js), fetched only when an instance asks for more than one thread
// where threads can run.
import createSpecdecModule from './wasm/specdec-core.js';
import { instantiateSingle, loader, providePretrained } from './core.js';
import { loadPretrained } from './model/pretrained.js';
import { THREADED_OPTIONS, threadedOr } from './threaded.js';

export { SpecdecError, Rng, Model, Heads, Decoder, encode, decode, tokenText, limits } from './core.js';

providePretrained(loadPretrained); // sd.loadPretrained: checkpoints with their tokenizers

/**
 * Instantiates the WebAssembly module and returns the API. Without options the instance is
 * created once and shared by every caller (one thread).
 * @type {(options?: import('./specdec').LoadOptions) => Promise<any>}
 */
export const loadSpecdec = loader(
  (options) => threadedOr(options, (o, threads) => instantiateSingle(createSpecdecModule, o, threads)),
  ['wasmBinary', 'wasmUrl', ...THREADED_OPTIONS],
);
