// What a tokenizer file's vocabulary must be for specdec to read it, and whether two tokenizers
// share one.
// - The checks of a tokenizer.json (and of the one tokenizerFromGguf builds) before
//   @huggingface/tokenizers sees it: ids in range, a BPE model of a kind whose bytes are known,
//   every merge made of tokens and making a token, parts nested at most MAX_NESTING deep.
// - guardModel: text the vocabulary cannot spell (no token, no byte fallback, no unknown token)
//   is refused, not dropped.
// - vocabularyMismatch: a target and a draft share a vocabulary, the condition of exact
//   speculation (the draft proposes token ids that the target scores; the same id must be the
//   same token). Tokenizers are compared by what each id stands for (their byte tables), so two
//   tokenizer files that differ only in formatting or in their pre-tokenizer still pair.
//   Duck-typed on specdec/tokenizer's Tokenizer (vocabSize, byteTable(), pieceText()):
//   createDecoder calls it without importing the tokenizer library.

import { describe, fail } from '../base/errors.js';

/** Ids are below this (4,194,304; real vocabularies have up to 262,144 tokens). */
export const MAX_VOCAB = 2 ** 22;
/** How deep Sequences may nest in a tokenizer.json's normalizer, pre_tokenizer, decoder, post_processor (real files: 2). */
export const MAX_NESTING = 16;

// The lists a Sequence of each part holds its parts in.
const NESTED = {
  normalizer: 'normalizers',
  pre_tokenizer: 'pretokenizers',
  decoder: 'decoders',
  post_processor: 'processors',
};

/** The `type`s in a part and the parts it nests (refused when deeper than MAX_NESTING), depth first. */
export function partTypes(json, field) {
  const key = NESTED[field];
  const types = [];
  const stack = [[json[field], 1]]; // no recursion: a hostile file may nest 10,000 deep
  while (stack.length) {
    const [part, depth] = stack.pop();
    if (!part) continue;
    if (depth > MAX_NESTING) {
      fail(`tokenizer.json: ${field}: parts nest more than ${MAX_NESTING} deep (Sequence in Sequence...)`);
    }
    types.push(part.type);
    const inner = part[key];
    if (Array.isArray(inner)) for (let i = inner.length - 1; i >= 0; i--) stack.push([inner[i], depth + 1]);
  }
  return types;
}

/** @internal Refuses ids outside 0..MAX_VOCAB-1 in model.vocab and added_tokens. */
export function checkIds(json) {
  const bad = (where, id) =>
    fail(
      `tokenizer.json: ${where}: id ${typeof id === 'number' ? id : describe(id)} is not an integer in 0..${MAX_VOCAB - 1}`,
    );
  const ok = (id) => Number.isInteger(id) && id >= 0 && id < MAX_VOCAB;
  for (const [piece, id] of Object.entries(json.model.vocab))
    if (!ok(id)) bad(`model.vocab[${JSON.stringify(piece)}]`, id);
  json.added_tokens.forEach((t, i) => {
    if (typeof t !== 'object' || t === null || typeof t.content !== 'string') {
      fail(`tokenizer.json: added_tokens[${i}]: expected { id, content }, got ${describe(t)}`);
    }
    if (!ok(t.id)) bad(`added_tokens[${i}]`, t.id);
  });
}

/**
 * @internal Refuses a merge that is not two tokens of `vocab` making a third, as the Rust
 * library does when it loads the file (a merge to a missing token would drop text). `merges`:
 * "a b" strings or [a, b] pairs, one form throughout; `name(i)` names merge i in messages.
 */
export function checkMerges(merges, vocab, name) {
  const pairs = merges.length > 0 && Array.isArray(merges[0]);
  const quote = (t) => JSON.stringify(t.length > 40 ? t.slice(0, 40) + '…' : t);
  for (let i = 0; i < merges.length; i++) {
    const m = merges[i];
    let a;
    let b;
    if (pairs) {
      if (!Array.isArray(m) || m.length !== 2 || typeof m[0] !== 'string' || typeof m[1] !== 'string') {
        fail(`${name(i)}: expected a pair of tokens [a, b] as the first merge is, got ${describe(m)}`);
      }
      [a, b] = m;
    } else {
      const space = typeof m === 'string' ? m.indexOf(' ') : -1;
      if (space < 0 || m.indexOf(' ', space + 1) >= 0) {
        fail(`${name(i)}: expected two tokens "a b" (one space) as the first merge is, got ${describe(m)}`);
      }
      [a, b] = [m.slice(0, space), m.slice(space + 1)];
    }
    for (const [t, what] of [
      [a, 'its left part'],
      [b, 'its right part'],
      [a + b, 'the token it makes'],
    ]) {
      if (!Object.hasOwn(vocab, t))
        fail(`${name(i)}: ${quote(a)} + ${quote(b)}: ${what}, ${quote(t)}, is not in the vocabulary`);
    }
  }
}

/** @internal Which kind of BPE a tokenizer.json is; anything else is refused naming the field. */
export function kindOf(json) {
  const m = json.model;
  if (typeof m !== 'object' || m === null) fail(`tokenizer.json: model: expected an object, got ${describe(m)}`);
  if (m.type !== 'BPE') {
    fail(
      `tokenizer.json: model.type ${JSON.stringify(m.type)} is not supported (specdec reads "BPE": byte-level as GPT-2, Llama 3, Qwen; SentencePiece-style with byte_fallback as Llama 2, Mistral)`,
    );
  }
  if (typeof m.vocab !== 'object' || m.vocab === null || Array.isArray(m.vocab)) {
    fail(`tokenizer.json: model.vocab: expected an object token -> id, got ${describe(m.vocab)}`);
  }
  if (!Array.isArray(m.merges)) fail(`tokenizer.json: model.merges: expected an array, got ${describe(m.merges)}`);
  if (!Array.isArray(json.added_tokens)) {
    fail(`tokenizer.json: added_tokens: expected an array, got ${describe(json.added_tokens)}`);
  }
  for (const key of ['end_of_word_suffix', 'continuing_subword_suffix', 'continuing_subword_prefix']) {
    if (m[key] !== undefined && m[key] !== null && m[key] !== '') {
      fail(
        `tokenizer.json: model.${key} ${describe(m[key])} is not supported (byte-level and SentencePiece BPE have none)`,
      );
    }
  }
  if (m.unk_token !== undefined && m.unk_token !== null && typeof m.unk_token !== 'string') {
    fail(`tokenizer.json: model.unk_token: expected a token or null, got ${describe(m.unk_token)}`);
  }
  const [pre, dec] = [partTypes(json, 'pre_tokenizer'), partTypes(json, 'decoder')];
  partTypes(json, 'normalizer');
  partTypes(json, 'post_processor');
  if (pre.includes('ByteLevel') || dec.includes('ByteLevel')) {
    if (m.byte_fallback === true) {
      fail(
        'tokenizer.json: model.byte_fallback with a ByteLevel pre_tokenizer or decoder: its <0xNN> tokens would be text',
      );
    }
    return 'byte-level';
  }
  if (m.byte_fallback === true || pre.includes('Metaspace') || dec.includes('Metaspace')) return 'sentencepiece';
  return fail(
    `tokenizer.json: a BPE with neither a ByteLevel pre_tokenizer/decoder nor model.byte_fallback or Metaspace: its tokens' bytes are unknown (pre_tokenizer [${pre}], decoder [${dec}])`,
  );
}

const utf8 = new TextEncoder();

/** @internal A piece of text the vocabulary has no token for (thrown inside the library's encode). */
export class Uncovered extends Error {
  constructor(piece) {
    super('uncovered');
    this.piece = piece;
  }
}

/**
 * @internal The library's BPE model drops a piece that is not a token when it has no unknown token (and
 * byte fallback fails); this encode of the model's words does what it does, but refuses such a
 * piece (Uncovered) instead. An unk_token that is not a token counts as none. A piece spelled as
 * an added token (`added`: the library's map) whose text means other bytes is refused too: a
 * GGUF user-defined "ð" is not byte F0 of a byte-level vocabulary, nor "▁a" the text " a".
 */
export function guardModel(model, added, kind) {
  // Whether a piece's bytes differ from the text of the added token spelled the same.
  const differs =
    kind === 'byte-level'
      ? (piece) => !/^[\x21-\x7e]*$/.test(piece)
      : (piece) => piece.includes('\u2581') || /^<0x[0-9A-Fa-f]{2}>$/.test(piece);
  if (typeof model.bpe !== 'function' || !(model.tokens_to_ids instanceof Map)) {
    return fail('@huggingface/tokenizers: its BPE model has no bpe(): this version is not one specdec knows');
  }
  const ids = model.tokens_to_ids;
  const unk = typeof model.unk_token === 'string' && ids.has(model.unk_token) ? model.unk_token : null;
  const hex = (b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
  // A byte-level piece is GPT-2's byte characters; another (a normalizer's U+2581) has no bytes.
  const byteChars = /^[\x21-\x7e\xa1-\xac\xae-\u0143]*$/;
  const spells = (piece) =>
    ids.has(piece) && !(added.has(piece) && differs(piece)) && (kind !== 'byte-level' || byteChars.test(piece));
  model.encode = (words) => {
    const out = [];
    for (const word of words) {
      if (model.ignore_merges && ids.has(word)) {
        out.push(word);
        continue;
      }
      for (const piece of model.bpe(word)) {
        if (spells(piece)) out.push(piece);
        else {
          // (not U+2581 of SentencePiece: its bytes would decode as "▁", not the space it stands for)
          const fallback = model.byte_fallback && !(kind === 'sentencepiece' && piece.includes('\u2581'));
          const bytes = fallback ? Array.from(utf8.encode(piece), hex) : [];
          if (bytes.length > 0 && bytes.every(spells)) out.push(...bytes);
          else if (unk !== null) out.push(unk);
          else throw new Uncovered(piece);
        }
      }
    }
    return out;
  };
}

const quote = (tok, id) => JSON.stringify(tok.pieceText(id));
const isTokenizer = (t) =>
  t !== null &&
  typeof t === 'object' &&
  Number.isInteger(t.vocabSize) &&
  typeof t.byteTable === 'function' &&
  typeof t.pieceText === 'function';

/**
 * Why two tokenizers cannot make a pair, in one sentence, or null when they can.
 * @param {import('./hf-tokenizer.js').Tokenizer} target
 * @param {import('./hf-tokenizer.js').Tokenizer} draft
 * @returns {string | null}
 */
export function vocabularyMismatch(target, draft) {
  for (const [t, name] of [
    [target, 'target'],
    [draft, 'draft'],
  ]) {
    if (!isTokenizer(t)) fail(`${name}: expected a Tokenizer (specdec/tokenizer), got ${describe(t)}`);
  }
  if (target === draft) return null;
  const head = 'the target and the draft must share a vocabulary:';
  const a = target.byteTable();
  const b = draft.byteTable();
  const n = Math.min(target.vocabSize, draft.vocabSize);
  for (let id = 0; id < n; id++) {
    const len = a.offsets[id + 1] - a.offsets[id];
    let same = len === b.offsets[id + 1] - b.offsets[id];
    for (let i = 0; same && i < len; i++) same = a.bytes[a.offsets[id] + i] === b.bytes[b.offsets[id] + i];
    if (!same) return `${head} token ${id} is ${quote(target, id)} for the target, ${quote(draft, id)} for the draft`;
  }
  if (target.vocabSize !== draft.vocabSize) {
    const [longer, role] = target.vocabSize > draft.vocabSize ? [target, 'target'] : [draft, 'draft'];
    return `${head} the target's tokenizer has ${target.vocabSize} tokens, the draft's ${draft.vocabSize} (the first the ${role === 'target' ? 'draft' : 'target'} lacks: ${n} ${quote(longer, n)})`;
  }
  return null;
}
