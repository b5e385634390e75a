// specdec for browsers and workers (the package's default entry). The wasm file is located
// next to the glue with new URL('specdec-core.wasm', import.meta.url), which bundlers such as
// Vite recognise and emit as an asset.
import createSpecdecModule from './wasm/specdec-core.js';
import { instantiate, SpecdecError } from './core.js';

export { SpecdecError, Rng, Model, Heads, Decoder, encode, decode, tokenText } from './core.js';

let shared = null;

/**
 * Instantiates the WebAssembly module and returns the API. Without options the instance is
 * created once and shared by every caller.
 * @param {{ wasmBinary?: ArrayBuffer | Uint8Array, wasmUrl?: string | URL }} [options]
 *   wasmBinary: the module's bytes (no fetch); wasmUrl: where to fetch it from instead.
 */
export function loadSpecdec(options) {
  if (options === undefined) {
    shared ??= instantiate(createSpecdecModule, {}).catch((e) => {
      shared = null;
      throw e;
    });
    return shared;
  }
  return (async () => instantiate(createSpecdecModule, moduleArg(options)))();
}

function moduleArg(options) {
  if (typeof options !== 'object' || options === null) {
    throw new SpecdecError('options: loadSpecdec options must be an object');
  }
  for (const key of Object.keys(options)) {
    if (key !== 'wasmBinary' && key !== 'wasmUrl') {
      throw new SpecdecError(`${key}: unknown option of loadSpecdec (known: wasmBinary, wasmUrl)`);
    }
  }
  const arg = {};
  if (options.wasmBinary !== undefined) arg.wasmBinary = options.wasmBinary;
  if (options.wasmUrl !== undefined) {
    const url = String(options.wasmUrl);
    arg.locateFile = (path, prefix) => (path.endsWith('.wasm') ? url : prefix + path);
  }
  return arg;
}
