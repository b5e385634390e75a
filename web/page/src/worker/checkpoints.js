// Checkpoints a learner gives in section 4 (a GGUF file or a Hugging Face folder's files) are
// loaded by worker/sources.js with the full specdec module's sd.loadPretrained and their own
// tokenizer (specdec/tokenizer). Both come in one chunk imported the first time a checkpoint is
// given (worker/full-module.js): the page's own pairs need only specdec/lite, and the page's
// first load stays small. The threaded build is the full module already: a worker on threads
// keeps its instance (the chunk only adds loadPretrained's code); a single-threaded one (the lite
// module) starts the full one, which becomes the worker's instance (state.sd) for every model
// that follows once a checkpoint is in use, the page's own pair included (it reads our files too).
import { state, ensureSd } from './state.js';

let full = null; // { sd, tok }: the instance that reads checkpoints and specdec/tokenizer, once loaded

/** The instance that reads checkpoints (made the worker's by useFullModule) and specdec/tokenizer. */
export async function fullModule() {
  if (full) return full;
  const tok = await import('./full-module.js');
  const own = await ensureSd();
  const sd = own.threaded ? own : await tok.loadSpecdec({ threads: state.threadsOption });
  full = { sd, tok };
  return full;
}

/** Makes the full module's instance the one the worker decodes with (the old models disposed by install). */
export function useFullModule() {
  state.sd = full.sd;
  state.sdLoading = Promise.resolve(full.sd);
}

/**
 * Why two tokenizers cannot make a pair (null: they can), as a sentence: the library's check
 * (specdec/tokenizer's vocabularyMismatch, the one createDecoder runs), naming the first id
 * whose token differs.
 * @param {import('specdec/tokenizer').Tokenizer} a  the target's
 * @param {import('specdec/tokenizer').Tokenizer} b  the draft's
 */
export function vocabularyMismatch(a, b) {
  const why = full.tok.vocabularyMismatch(a, b);
  return why && `${why[0].toUpperCase()}${why.slice(1)}.`;
}

/**
 * A step-through view's text in a checkpoint's tokens: { pieces: { [id]: text }, contextText }
 * for every token the view names (`token`, `finalToken`, `emitted`), and the context decoded.
 * @param {object} view  recordToView's
 * @param {import('specdec/tokenizer').Tokenizer} tok
 */
export function viewText(view, tok) {
  const ids = new Set(view.emitted ?? []);
  const walk = (x) => {
    if (Array.isArray(x)) x.forEach(walk);
    else if (x && typeof x === 'object') {
      for (const [k, v] of Object.entries(x)) {
        if ((k === 'token' || k === 'finalToken') && Number.isInteger(v) && v >= 0) ids.add(v);
        else if (typeof v === 'object') walk(v);
      }
    }
  };
  walk(view);
  const pieces = {};
  for (const id of ids) if (id < tok.vocabSize) pieces[id] = tok.pieceText(id);
  return { pieces, contextText: tok.decode(view.context ?? []) };
}
