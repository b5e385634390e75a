// sd.loadPretrained: a checkpoint people have (a GGUF file or a Hugging Face folder) as a Model
// that knows its tokenizer (model.tokenizer, from specdec/tokenizer, imported on first use so
// that the package's main module stays small). createDecoder then takes a text prompt, streams
// text in the model's own tokens and stops at its EOS ids.
import { SpecdecError, checkOptions, describe, fail } from './errors.js';
import * as sources from './sources.js';

const { ChunkedBytes, isAsyncSource, isFolder, isGguf } = sources;

/** The head of a GGUF file read for its tokenizer: its metadata is at most this large. */
const GGUF_META_BYTES = 64 * 2 ** 20;
/** The files of a Hugging Face folder that make its tokenizer. */
const TOKENIZER_FILES = {
  tokenizer: 'tokenizer.json',
  tokenizerConfig: 'tokenizer_config.json',
  config: 'config.json',
  generationConfig: 'generation_config.json',
};

// A tokenizer error names the file it came from, as a loader error does.
function named(where, make) {
  try {
    return make();
  } catch (e) {
    if (e instanceof SpecdecError) throw new SpecdecError(`${where}: ${e.message}`);
    throw e;
  }
}

async function ggufTokenizer(tk, source, addBos) {
  let head;
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    head = new Uint8Array(await source.slice(0, Math.min(source.size, GGUF_META_BYTES)).arrayBuffer());
  } else {
    head = source instanceof ChunkedBytes ? source.subarray(0, GGUF_META_BYTES) : source;
  }
  if (head instanceof ArrayBuffer) head = new Uint8Array(head);
  if (!(head instanceof Uint8Array))
    fail(
      `source: expected a GGUF file (bytes, Blob, Response, stream) or a Hugging Face folder, got ${describe(source)}`,
    );
  if (!isGguf(head))
    fail(
      'source: not a GGUF file (no GGUF magic); give a .gguf file or a Hugging Face folder (specdec files load with sd.loadModel)',
    );
  return named('source', () => tk.tokenizerFromGguf(head, addBos === undefined ? {} : { addBos }));
}

function folderTokenizer(tk, files, addBos) {
  const byName = new Map(files);
  if (!byName.has('tokenizer.json')) {
    fail(
      `files: a Hugging Face folder needs its 'tokenizer.json' for loadPretrained (given: ${[...byName.keys()].join(', ')})`,
    );
  }
  const options = addBos === undefined ? {} : { addBos };
  for (const [key, name] of Object.entries(TOKENIZER_FILES)) {
    if (!byName.has(name)) continue;
    const value = byName.get(name);
    options[key] = value instanceof ChunkedBytes ? sources.wholeBytes(value) : value;
  }
  return named("files: 'tokenizer.json'", () => tk.createTokenizer(options));
}

/**
 * sd.loadPretrained(source, options) with loadModel the instance's sd.loadModel.
 * @param {Function} loadModel
 * @param {any} source  a GGUF file (bytes, Blob / File, Response, stream) or a Hugging Face
 *   folder ({ name: bytes | Blob | Response | ... }, a Map, or [name, value] pairs)
 * @param {{ weights?: 'f32' | 'int8', onProgress?: Function, addBos?: boolean }} [options]
 */
export async function loadPretrained(loadModel, source, options = {}) {
  const { addBos, ...loadOptions } = checkOptions(options, ['weights', 'onProgress', 'addBos'], 'loadPretrained');
  if (addBos !== undefined && typeof addBos !== 'boolean') fail(`addBos: expected a boolean, got ${describe(addBos)}`);
  const report = sources.progressOption(loadOptions.onProgress);
  const tk = await import('./tokenizer.js');
  let tokenizer;
  let weights = source;
  if (isFolder(source)) {
    let entries = sources.folderEntries(source);
    if (entries.some(([, value]) => isAsyncSource(value))) entries = await sources.readFolder(entries, report);
    tokenizer = folderTokenizer(tk, entries, addBos);
    weights = entries;
  } else {
    // Read once: a Blob is sliced for its head, a Response or stream is read into memory first.
    if (isAsyncSource(source) && !(typeof Blob !== 'undefined' && source instanceof Blob)) {
      weights = await sources.readSource(source, 'source', report);
    }
    tokenizer = await ggufTokenizer(tk, weights, addBos);
  }
  const model = await loadModel(weights, loadOptions);
  model.tokenizer = tokenizer;
  return model;
}
