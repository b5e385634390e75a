// sd.loadPretrained: a checkpoint people have (a GGUF file or a Hugging Face folder) as a Model
// that knows its tokenizer (model.tokenizer, from specdec/tokenizer, imported on first use so
// that the package's main module stays small). createDecoder then takes a text prompt, streams
// text in the model's own tokens and stops at its EOS ids.
//
// The order is the cheap checks first: the model is loaded (the C++ loader checks the header,
// the tokenizer's size against the embedding's rows included, before it reads any weight) and
// only then the tokenizer built, which takes seconds for a large vocabulary. A folder's
// tokenizer.json is parsed first for the number of tokens it defines, which the loader checks
// with the config; a GGUF file's tokens are in its header.
import { SpecdecError, checkOptions, describe, fail } from '../base/errors.js';
import * as sources from './sources.js';

const { ChunkedBytes, isAsyncSource, isFolder } = sources;

/** The head of a GGUF file read for its tokenizer: its metadata is at most this large. */
const GGUF_META_BYTES = 64 * 2 ** 20;
/** The files of a Hugging Face folder that make its tokenizer. */
const TOKENIZER_FILES = {
  tokenizer: 'tokenizer.json',
  tokenizerConfig: 'tokenizer_config.json',
  config: 'config.json',
  generationConfig: 'generation_config.json',
};

// A tokenizer error names the file it came from, as a loader error does: `where`, or for a
// folder ('files') the file of the option createTokenizer's message starts with (config:
// config.json, ...; tokenizer.json else).
function named(where, make) {
  try {
    return make();
  } catch (e) {
    if (!(e instanceof SpecdecError)) throw e;
    const key = e.message.split(':', 1)[0];
    const file = Object.hasOwn(TOKENIZER_FILES, key) ? TOKENIZER_FILES[key] : 'tokenizer.json';
    throw new SpecdecError(`${where === 'files' ? `files: '${file}'` : where}: ${e.message}`);
  }
}

// tokenizer.json parsed (from its text, bytes or chunks), for its count and then the tokenizer.
function parsedTokenizer(value) {
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) value = new TextDecoder().decode(value);
  else if (value instanceof ChunkedBytes) value = value.text();
  if (typeof value !== 'string') return value; // the parsed JSON (createTokenizer checks it)
  try {
    return JSON.parse(value);
  } catch (e) {
    return fail(`files: 'tokenizer.json': tokenizer: not valid JSON (${e.message})`);
  }
}

const isId = (id) => Number.isInteger(id) && id >= 0 && id < 2 ** 31;

/**
 * The tokens a tokenizer.json defines, cheaply: one past the largest id of model.vocab (an
 * object token -> id, or a Unigram's array of pieces) and of added_tokens. Ids that are not
 * integers are skipped here: building the tokenizer refuses them by name.
 */
export function tokenizerTokens(json) {
  let n = 0;
  const vocab = json?.model?.vocab;
  if (Array.isArray(vocab)) n = vocab.length;
  else if (vocab !== null && typeof vocab === 'object') {
    for (const id of Object.values(vocab)) if (isId(id)) n = Math.max(n, id + 1);
  }
  if (Array.isArray(json?.added_tokens)) for (const t of json.added_tokens) if (isId(t?.id)) n = Math.max(n, t.id + 1);
  return n;
}

// The createTokenizer options of a folder: its tokenizer files (chunks as text), tokenizer.json
// parsed.
function folderTokenizerOptions(files, addBos) {
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
    options[key] = value instanceof ChunkedBytes ? value.text() : value;
  }
  options.tokenizer = parsedTokenizer(options.tokenizer);
  return options;
}

// The model with its tokenizer, made by make(tk); the model is disposed if that throws.
async function withTokenizer(model, make) {
  try {
    model.tokenizer = make(await import('../tokenizer/tokenizer.js'));
    return model;
  } catch (e) {
    model.dispose();
    throw e;
  }
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
  if (isFolder(source)) {
    let entries = sources.folderEntries(source);
    if (entries.some(([, value]) => isAsyncSource(value))) entries = await sources.readFolder(entries, report);
    const tokenizer = folderTokenizerOptions(entries, addBos);
    const tokens = tokenizerTokens(tokenizer.tokenizer);
    const model = await loadModel(entries, loadOptions, { tokenizerTokens: tokens });
    return withTokenizer(model, (tk) => named('files', () => tk.createTokenizer(tokenizer)));
  }
  // Read once: the weights and the tokenizer come from the same bytes.
  let bytes = isAsyncSource(source) ? await sources.readSource(source, 'source', report) : source;
  if (bytes instanceof ArrayBuffer) bytes = new Uint8Array(bytes);
  if (!(bytes instanceof Uint8Array || bytes instanceof ChunkedBytes))
    fail(
      `source: expected a GGUF file (bytes, Blob, Response, stream) or a Hugging Face folder, got ${describe(source)}`,
    );
  const model = await loadModel(bytes, loadOptions, { arg: 'source' });
  if (model.metadata.format !== 'gguf') {
    model.dispose();
    fail(
      'source: not a GGUF file (no GGUF magic); give a .gguf file or a Hugging Face folder (specdec files load with sd.loadModel)',
    );
  }
  const head = bytes.subarray(0, GGUF_META_BYTES);
  const opts = addBos === undefined ? {} : { addBos };
  return withTokenizer(model, (tk) => named('source', () => tk.tokenizerFromGguf(head, opts)));
}
