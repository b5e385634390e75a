// specdec/lite for Node: the lite module's bytes read from the package and handed over as
// wasmBinary (Emscripten 3.1.6's loader would fetch() a file path). See lite.js.
import { readFile } from 'node:fs/promises';
import createSpecdecModule from './wasm/specdec-lite.js';
import { instantiateSingle, loader } from './core.js';

export { SpecdecError, Rng, Model, Heads, Decoder, encode, decode, tokenText, limits } from './core.js';

const WASM_URL = new URL('./wasm/specdec-lite.wasm', import.meta.url);

/** @type {(options?: import('./specdec').LiteLoadOptions) => Promise<any>} */
export const loadSpecdec = loader(
  async (options) =>
    instantiateSingle(
      createSpecdecModule,
      { wasmBinary: options.wasmBinary ?? (await readFile(WASM_URL)) },
      { requested: 1, reason: null },
    ),
  ['wasmBinary'],
);
