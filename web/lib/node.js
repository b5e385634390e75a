// specdec for Node (the package's "node" entry). Emscripten 3.1.6's loader would fetch() the
// wasm by file path under Node, so the bytes are read here and handed over as wasmBinary.
import { readFile } from 'node:fs/promises';
import createSpecdecModule from './wasm/specdec-core.js';
import { instantiate, SpecdecError } from './core.js';

export { SpecdecError, Rng, Model, Heads, Decoder, encode, decode, tokenText } from './core.js';

const WASM_URL = new URL('./wasm/specdec-core.wasm', import.meta.url);
let shared = null;

/**
 * Instantiates the WebAssembly module and returns the API. Without options the instance is
 * created once and shared by every caller.
 * @param {{ wasmBinary?: ArrayBuffer | Uint8Array }} [options]
 */
export function loadSpecdec(options) {
  if (options === undefined) {
    shared ??= create({}).catch((e) => {
      shared = null;
      throw e;
    });
    return shared;
  }
  return create(options);
}

async function create(options) {
  if (typeof options !== 'object' || options === null) {
    throw new SpecdecError('options: loadSpecdec options must be an object');
  }
  for (const key of Object.keys(options)) {
    if (key !== 'wasmBinary') throw new SpecdecError(`${key}: unknown option of loadSpecdec (known: wasmBinary)`);
  }
  const wasmBinary = options.wasmBinary ?? (await readFile(WASM_URL));
  return instantiate(createSpecdecModule, { wasmBinary });
}
