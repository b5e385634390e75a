// A Tokenizer from a GGUF file's `tokenizer.ggml.*` metadata (families-design.md §1.7, §4.2):
// the file holds no tokenizer.json, so one is built here and handed to hf-tokenizer.js.
// - model "gpt2": byte-level BPE (vocab + merges as written), the pre-tokenizer chosen by
//   `tokenizer.ggml.pre` from the table below (as in the checkpoints' own tokenizer.json); an
//   unknown `pre` is refused by name, as llama.cpp refuses it.
// - model "llama": SentencePiece-style BPE with byte fallback (`<0xNN>` tokens); the file has
//   scores, not merges: every split l|r of a normal token whose halves are both tokens is a
//   merge, ranked by the merged token's score (highest first), ties by the merged token's id,
//   then by the ids of l and r, the order in which Hugging Face's converter writes them.
// Token types (token_type): 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte;
// 2 and 3 become special added tokens, 4 plain added tokens (matched whole in text).

import { checkOptions, describe, fail } from '../base/errors.js';
import { readGgufMetadata } from './gguf-meta.js';
import { hfTokenizer, Tokenizer } from './hf-tokenizer.js';
import { checkMerges, MAX_VOCAB } from './vocabulary.js';

const K = 'tokenizer.ggml.';
const byteLevel = (useRegex) => ({
  type: 'ByteLevel',
  add_prefix_space: false,
  trim_offsets: true,
  use_regex: useRegex,
});
const split = (regex) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false });
const LLAMA3_REGEX = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
const QWEN2_REGEX = LLAMA3_REGEX.replace(String.raw`\p{N}{1,3}`, String.raw`\p{N}`);

const llama3 = {
  pre_tokenizer: { type: 'Sequence', pretokenizers: [split(LLAMA3_REGEX), byteLevel(false)] },
  ignore_merges: true,
  addsBos: true,
};
/** `tokenizer.ggml.pre` values read, and the tokenizer.json parts each stands for. */
export const GGUF_PRE_TOKENIZERS = Object.freeze({
  'gpt-2': { pre_tokenizer: byteLevel(true) },
  'llama-bpe': llama3,
  llama3,
  qwen2: {
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [split(QWEN2_REGEX), byteLevel(false)] },
  },
  // SmolLM / StarCoder: digits one by one, then GPT-2's regex (llama.cpp groups them so; SmolLM2's
  // tokenizer.json: Digits{individual_digits} then ByteLevel{use_regex}; no fixture tests it).
  smollm: {
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, byteLevel(true)] },
  },
});

function get(meta, key, check, what, required = true) {
  const v = meta.get(K + key);
  if (v === undefined) {
    if (required) fail(`gguf: ${K}${key}: missing (${what})`);
    return undefined;
  }
  if (!check(v)) fail(`gguf: ${K}${key}: expected ${what}, got ${describe(v)}`);
  return v;
}

const isId = (n) => (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < n;
const INT_ARRAYS = [Int8Array, Uint8Array, Int16Array, Uint16Array, Int32Array, Uint32Array];
const isIntArray = (n) => (v) => INT_ARRAYS.some((T) => v instanceof T) && v.length === n;

/** A normal token of a SentencePiece vocabulary has at most this many characters (the trainer's max_sentencepiece_length is at most 512; Llama 2's longest has 16). */
export const MAX_PIECE_CHARS = 512;
/** The merges implied by a vocabulary's scores may total this many characters per character of its tokens (Llama 2: 2). */
export const MAX_MERGE_RATIO = 16;

// Polynomial hashes of strings in two prime fields below 2^26 (products stay exact in a double),
// with bases drawn at random when the module loads: a file cannot be made to collide. A hash
// only finds candidates; each is compared with the string itself.
const P1 = 67108859;
const P2 = 67108837;
const B1 = 65537 + Math.floor(Math.random() * (P1 - 131074));
const B2 = 65537 + Math.floor(Math.random() * (P2 - 131074));
const LONGEST = 2 * MAX_PIECE_CHARS; // UTF-16 units of the longest normal token
const POW1 = new Float64Array(LONGEST + 1);
const POW2 = new Float64Array(LONGEST + 1);
POW1[0] = POW2[0] = 1;
for (let i = 1; i <= LONGEST; i++) [POW1[i], POW2[i]] = [(POW1[i - 1] * B1) % P1, (POW2[i - 1] * B2) % P2];

/**
 * The merges of a SentencePiece vocabulary, from its scores (see the top of the file), as [left,
 * right] pairs. Linear in the tokens' characters: each split of a normal token is looked up by
 * the hashes of its halves, updated one character at a time. A normal token longer than
 * MAX_PIECE_CHARS, or merges totalling more than MAX_MERGE_RATIO x the tokens' characters, are
 * refused. `work.steps` (when given) counts the splits examined and the characters compared.
 */
export function mergesFromScores(tokens, scores, types, work = { steps: 0 }) {
  const byHash = new Map(); // h1 * 2^26 + h2 -> the first id of a string, or the ids of several
  let chars = 0;
  for (let id = 0; id < tokens.length; id++) {
    const t = tokens[id];
    chars += t.length;
    if (types[id] === 1 && t.length > MAX_PIECE_CHARS) {
      const n = [...t].length; // code points, as SentencePiece counts
      if (n > MAX_PIECE_CHARS) {
        fail(
          `gguf: ${K}tokens[${id}]: a normal token of ${n} characters; SentencePiece pieces have at most ${MAX_PIECE_CHARS} (max_sentencepiece_length)`,
        );
      }
    }
    if (t.length >= LONGEST) continue; // too long to be half of a normal token
    let h1 = 0;
    let h2 = 0;
    for (let i = 0; i < t.length; i++) {
      h1 = (h1 * B1 + t.charCodeAt(i)) % P1;
      h2 = (h2 * B2 + t.charCodeAt(i)) % P2;
    }
    const key = h1 * 67108864 + h2;
    const seen = byHash.get(key);
    if (seen === undefined) byHash.set(key, id);
    else if (typeof seen === 'number') tokens[seen] !== t && byHash.set(key, [seen, id]);
    else if (!seen.some((i) => tokens[i] === t)) seen.push(id);
  }
  // The first token with this hash, `len` units long, that `matches`, or -1.
  const find = (key, len, matches) => {
    const seen = byHash.get(key);
    if (seen === undefined) return -1;
    for (const id of typeof seen === 'number' ? [seen] : seen) {
      if (tokens[id].length === len && ((work.steps += len), matches(tokens[id]))) return id;
    }
    return -1;
  };
  const budget = MAX_MERGE_RATIO * chars + 65536;
  const suffix1 = new Float64Array(LONGEST + 1);
  const suffix2 = new Float64Array(LONGEST + 1);
  const found = []; // [merged id, left id, right id]
  let total = 0;
  for (let id = 0; id < tokens.length; id++) {
    const t = tokens[id];
    const n = t.length;
    if (types[id] !== 1 || n < 2) continue;
    suffix1[n] = suffix2[n] = 0;
    for (let k = n - 1; k > 0; k--) {
      suffix1[k] = (t.charCodeAt(k) * POW1[n - 1 - k] + suffix1[k + 1]) % P1;
      suffix2[k] = (t.charCodeAt(k) * POW2[n - 1 - k] + suffix2[k + 1]) % P2;
    }
    let h1 = 0;
    let h2 = 0;
    for (let k = 1; k < n; k++) {
      h1 = (h1 * B1 + t.charCodeAt(k - 1)) % P1;
      h2 = (h2 * B2 + t.charCodeAt(k - 1)) % P2;
      work.steps++;
      const c = t.charCodeAt(k);
      if (c >= 0xdc00 && c <= 0xdfff) continue; // inside a surrogate pair
      const l = find(h1 * 67108864 + h2, k, (p) => t.startsWith(p));
      if (l < 0) continue;
      const r = find(suffix1[k] * 67108864 + suffix2[k], n - k, (q) => t.endsWith(q));
      if (r < 0) continue;
      found.push([id, l, r]);
      total += n;
      if (total > budget) {
        fail(
          `gguf: ${K}tokens: the merges its scores imply exceed ${MAX_MERGE_RATIO} x the ${chars} characters of its tokens (tokens that split into tokens in many ways; Llama 2's: 2 x)`,
        );
      }
    }
  }
  found.sort((a, b) => scores[b[0]] - scores[a[0]] || a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
  return found.map(([, l, r]) => [tokens[l], tokens[r]]);
}

function addedTokens(tokens, types) {
  const out = [];
  for (let id = 0; id < tokens.length; id++) {
    const t = types[id];
    if (t === 2 || t === 3 || t === 4) {
      const special = t !== 4;
      out.push({
        id,
        content: tokens[id],
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special,
      });
    }
  }
  return out;
}

// The tokenizer.json of model "gpt2" (byte-level BPE).
function gpt2Json(meta, tokens, vocab) {
  const pre = get(
    meta,
    'pre',
    (v) => typeof v === 'string',
    `a pre-tokenizer name (${Object.keys(GGUF_PRE_TOKENIZERS)})`,
  );
  const parts = GGUF_PRE_TOKENIZERS[pre];
  if (!Object.hasOwn(GGUF_PRE_TOKENIZERS, pre)) {
    fail(
      `gguf: ${K}pre: ${JSON.stringify(pre)} is not supported (known: ${Object.keys(GGUF_PRE_TOKENIZERS).join(', ')})`,
    );
  }
  const merges = get(meta, 'merges', Array.isArray, 'a string array (it may be empty)');
  // Split at the first space after the first character, as llama.cpp does ("a b c" is "a", "b c").
  const pairs = merges.map((m, i) => {
    const space = typeof m === 'string' ? m.indexOf(' ', 1) : -1;
    if (space < 0) fail(`gguf: ${K}merges[${i}]: ${JSON.stringify(m)} is not two tokens "a b"`);
    return [m.slice(0, space), m.slice(space + 1)];
  });
  checkMerges(pairs, vocab, (i) => `gguf: ${K}merges[${i}]`);
  return {
    json: {
      normalizer: parts.normalizer ?? null,
      pre_tokenizer: parts.pre_tokenizer,
      model: { type: 'BPE', vocab, merges: pairs, ignore_merges: parts.ignore_merges ?? false, byte_fallback: false },
      decoder: byteLevel(true),
    },
    defaultBos: parts.addsBos ?? false,
  };
}

// The tokenizer.json of model "llama" (SentencePiece-style BPE with byte fallback).
function llamaJson(meta, tokens, vocab, types) {
  const n = tokens.length;
  const scores = get(meta, 'scores', (v) => v instanceof Float32Array && v.length === n, `a f32 array of ${n} scores`);
  const firstUnk = types.indexOf(2);
  const unk = get(meta, 'unknown_token_id', isId(n), `a token id below ${n}`, false) ?? (firstUnk >= 0 ? firstUnk : 0);
  const prefix = get(meta, 'add_space_prefix', (v) => typeof v === 'boolean', 'a bool', false) ?? true;
  const replace = (from, to) => ({ type: 'Replace', pattern: { String: from }, content: to });
  const decoders = [replace('\u2581', ' '), { type: 'ByteFallback' }, { type: 'Fuse' }];
  if (prefix) decoders.push({ type: 'Strip', content: ' ', start: 1, stop: 0 });
  const normalizers = [...(prefix ? [{ type: 'Prepend', prepend: '\u2581' }] : []), replace(' ', '\u2581')];
  return {
    json: {
      normalizer: { type: 'Sequence', normalizers },
      pre_tokenizer: null,
      model: {
        type: 'BPE',
        vocab,
        merges: mergesFromScores(tokens, scores, types),
        unk_token: tokens[unk],
        byte_fallback: true,
        fuse_unk: true,
      },
      decoder: { type: 'Sequence', decoders },
    },
    defaultBos: true,
  };
}

function metadataOf(source) {
  if (source instanceof Map) return source;
  if (source && source.metadata instanceof Map) return source.metadata;
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return readGgufMetadata(source).metadata;
  return fail(`gguf: expected the file's bytes or readGgufMetadata()'s result, got ${describe(source)}`);
}

/**
 * A Tokenizer from a GGUF file: `source` is its bytes (the whole file or a first part holding
 * the metadata), or what readGgufMetadata returned. BOS: `addBos`, else the file's
 * add_bos_token, else llama.cpp's default (SentencePiece and Llama 3 yes, others no). EOS ids:
 * eos_token_id, eot_token_id and eom_token_id.
 */
export function tokenizerFromGguf(source, options) {
  const { addBos } = checkOptions(options, ['addBos'], 'tokenizerFromGguf');
  const meta = metadataOf(source);
  const model = get(meta, 'model', (v) => typeof v === 'string', 'the tokenizer model ("gpt2" or "llama")');
  if (model !== 'gpt2' && model !== 'llama') {
    fail(`gguf: ${K}model: ${JSON.stringify(model)} is not supported (specdec reads "gpt2" and "llama")`);
  }
  const tokens = get(
    meta,
    'tokens',
    (v) => Array.isArray(v) && v.length > 0 && v.length <= MAX_VOCAB && v.every((t) => typeof t === 'string'),
    `1..${MAX_VOCAB} strings`,
  );
  const n = tokens.length;
  const given = get(meta, 'token_type', isIntArray(n), `an integer array of ${n} types`, false);
  const typeOf = given ? Int32Array.from(given) : new Int32Array(n).fill(1);
  const vocab = Object.create(null); // a token may be "__proto__"
  for (let id = 0; id < n; id++) {
    const t = tokens[id];
    if (Object.hasOwn(vocab, t) && typeOf[id] === 1 && typeOf[vocab[t]] === 1) {
      fail(`gguf: ${K}tokens: ${JSON.stringify(t)} is both token ${vocab[t]} and token ${id}`);
    }
    if (!Object.hasOwn(vocab, t)) vocab[t] = id;
  }
  const built = model === 'gpt2' ? gpt2Json(meta, tokens, vocab) : llamaJson(meta, tokens, vocab, typeOf);
  built.json.added_tokens = addedTokens(tokens, typeOf);
  const hf = hfTokenizer(built.json, {}, `gguf: ${K}*`, model === 'gpt2' ? 'byte-level' : 'sentencepiece');
  const idKey = (key) => get(meta, key, isId(n), `a token id below ${n}`, false);
  const bosId = idKey('bos_token_id') ?? null;
  const fileBos = get(meta, 'add_bos_token', (v) => typeof v === 'boolean', 'a bool', false);
  let addsBos = built.defaultBos;
  let bosSource = `llama.cpp default for ${model}`;
  if (addBos !== undefined) {
    if (typeof addBos !== 'boolean') fail(`addBos: expected a boolean, got ${describe(addBos)}`);
    [addsBos, bosSource] = [addBos, 'option'];
  } else if (fileBos !== undefined) {
    [addsBos, bosSource] = [fileBos, `${K}add_bos_token`];
  }
  if (addsBos && bosId === null) fail(`gguf: ${K}bos_token_id: missing, but BOS is to be added (${bosSource})`);
  const eosIds = ['eos_token_id', 'eot_token_id', 'eom_token_id'].map(idKey).filter((id) => id !== undefined);
  const kind = model === 'gpt2' ? 'byte-level' : 'sentencepiece';
  const stripsPrefixSpace = kind === 'sentencepiece' && built.json.decoder.decoders.some((d) => d.type === 'Strip');
  return new Tokenizer(hf, { kind, bosId, addsBos, bosSource, eosIds, stripsPrefixSpace });
}
