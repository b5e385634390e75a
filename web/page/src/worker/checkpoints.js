// Checkpoints a learner gives in section 4 (worker/loading.js loadFiles): a GGUF file or a
// Hugging Face folder's files, loaded by the full specdec module's sd.loadPretrained with their
// own tokenizer (specdec/tokenizer). Both are imported the first time a checkpoint is given (worker/full-module.js,
// a separate chunk): the page's own pair needs only specdec/lite, and the page's first load stays
// small. Once the full module is loaded it becomes the worker's instance (state.sd) for every
// model that follows, the page's own pair included (it loads our files too).
import { limits } from 'specdec/limits';
import { state } from './state.js';
import { fileSizeProblem, sizeText } from '../shared/limits.js';

/**
 * A GGUF file may be this large: the library's limit on a checkpoint's weights in memory (the
 * wasm module grows to 4 GB), which a file's bytes approach.
 */
export const MAX_GGUF_BYTES = limits.maxCheckpointWeightBytes;
/** Files of a Hugging Face folder the page reads (others are ignored). */
const FOLDER_FILE =
  /^(config\.json|generation_config\.json|tokenizer\.json|tokenizer_config\.json|model\.safetensors\.index\.json|.+\.safetensors)$/;

const isGgufMagic = async (file) =>
  new TextDecoder().decode(new Uint8Array(await file.slice(0, 4).arrayBuffer())) === 'GGUF';

/**
 * What a role's files are: 'ours' (one specdec safetensors file), 'gguf' (one GGUF file) or
 * 'folder' (a Hugging Face folder's files); throws, naming the role, for a mix.
 * @param {string} role
 * @param {File[]} files
 */
export async function kindOf(role, files) {
  const gguf = [];
  for (const f of files) if (/\.gguf$/i.test(f.name) || (await isGgufMagic(f))) gguf.push(f);
  if (gguf.length && files.length > 1) {
    throw new Error(`${role}: give a GGUF file (“${gguf[0].name}”) alone, not with other files.`);
  }
  if (gguf.length) return 'gguf';
  if (files.length === 1 && !/\.json$/i.test(files[0].name) && files[0].name !== 'model.safetensors') return 'ours';
  return 'folder';
}

let full = null; // { sd, tok }: the full module's instance and specdec/tokenizer, once loaded

/** The full specdec module (made the worker's instance) and specdec/tokenizer. */
export async function fullModule() {
  if (full) return full;
  const tok = await import('./full-module.js');
  const sd = await tok.loadSpecdec({ threads: state.threadsOption });
  full = { sd, tok };
  return full;
}

/** Makes the full module's instance the one the worker decodes with (the old models disposed by install). */
export function useFullModule() {
  state.sd = full.sd;
  state.sdLoading = Promise.resolve(full.sd);
}

// The library's message without its argument name (the page names the role and the files).
const message = (e) => String(e.message).replace(/^(bytes|files|source): /, '');

/**
 * One role's checkpoint: { model, tokenizer, bytes, file, digest }, loaded by the library's
 * sd.loadPretrained (the model and its own tokenizer), after the page's own checks of the files.
 * @param {string} role
 * @param {'gguf' | 'folder'} kind
 * @param {File[]} files
 * @param {(e: object) => void} onProgress  the library's progress events, with the role
 */
export async function loadCheckpoint(role, kind, files, onProgress) {
  const { sd } = await fullModule();
  const progress = (e) => onProgress({ ...e, role });
  if (kind === 'gguf') {
    const file = files[0];
    const where = `${role} file “${file.name}”`;
    if (file.size > MAX_GGUF_BYTES) {
      throw new Error(
        `${where}: ${sizeText(file.size)} is more than a GGUF file may have here (${sizeText(MAX_GGUF_BYTES)})`,
      );
    }
    try {
      const model = await sd.loadPretrained(file, { onProgress: progress });
      const { tokenizer } = model;
      return { model, tokenizer, bytes: file.size, file: file.name, digest: `${file.size}:${file.name}` };
    } catch (e) {
      throw new Error(`${where}: ${message(e)}`);
    }
  }
  const byName = new Map(files.filter((f) => FOLDER_FILE.test(f.name)).map((f) => [f.name, f]));
  const names = files.map((f) => `“${f.name}”`).join(', ');
  for (const need of ['config.json', 'tokenizer.json']) {
    if (!byName.has(need)) {
      throw new Error(`${role}: a Hugging Face folder needs ${need} (given: ${names}).`);
    }
  }
  for (const f of byName.values()) {
    const tooBig = fileSizeProblem(f.size);
    if (tooBig) throw new Error(`${role} file “${f.name}”: ${tooBig}`);
  }
  const bytes = [...byName.values()].reduce((a, f) => a + f.size, 0);
  try {
    const model = await sd.loadPretrained(byName, { onProgress: progress });
    const { tokenizer } = model;
    return { model, tokenizer, bytes, file: `${names} (folder)`, digest: `${bytes}:${names}` };
  } catch (e) {
    throw new Error(`${role} folder (${names}): ${message(e)}`);
  }
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
