// Types of specdec/lite (web/lib/lite.js, lite-node.js): specdec's API over a smaller
// single-threaded module without the checkpoint frontends. loadModel reads specdec's own model
// files; a GGUF file or a Hugging Face folder throws a SpecdecError saying to use 'specdec'.
//
//   import { loadSpecdec } from 'specdec/lite';
//   const sd = await loadSpecdec();
//   sd.acceptanceRate([0.5, 0.5], [0.9, 0.1]); // 0.6

import type { LiteLoadOptions, Specdec } from './specdec';

export {
  SpecdecError,
  Rng,
  Model,
  Heads,
  Decoder,
  encode,
  decode,
  tokenText,
  limits,
  LiteLoadOptions,
} from './specdec';

/** Instantiates the lite module (with threads in a browser, the threaded build); without options one instance is shared. */
export function loadSpecdec(options?: LiteLoadOptions): Promise<Specdec>;
