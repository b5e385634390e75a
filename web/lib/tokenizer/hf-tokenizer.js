// The Tokenizer of a checkpoint over @huggingface/tokenizers (the code transformers.js bundles),
// and what specdec adds around the library's tokenizer:
// - a per-token byte table (token id -> the UTF-8 bytes it stands for), from which decode() and
//   the streaming detokenizer make text: a TextDecoder in stream mode holds back half a
//   character until the token that completes it arrives, so a valid sequence cut anywhere never
//   shows U+FFFD (prefix decode() of the library does);
// - text it cannot spell refused by name (vocabulary.js guards the library's model).
// Two kinds are read: byte-level BPE (a ByteLevel pre-tokenizer or decoder: GPT-2's byte <->
// character map) and SentencePiece-style BPE (byte_fallback / ▁: `<0xNN>` tokens are bytes, ▁ is
// a space, the first piece's prefix space is dropped as the decoder's Strip does).
// Built by createTokenizer (tokenizer.js, from tokenizer.json) and tokenizerFromGguf
// (gguf-tokenizer.js, from a GGUF file's metadata), both through hfTokenizer below.

import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { checkOptions, describe, fail, SpecdecError } from '../base/errors.js';
import { guardModel, Uncovered } from './vocabulary.js';

const SPACE = 0x20;

// GPT-2's bytes_to_unicode, inverted: the character a byte-level vocabulary writes for each
// byte. Printable Latin-1 bytes stand for themselves; the other 68 are moved to U+0100.. in order.
const BYTE_OF_CHAR = (() => {
  const table = new Int16Array(324).fill(-1);
  let moved = 0;
  for (let b = 0; b < 256; b++) {
    const kept = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    table[kept ? b : 256 + moved++] = b;
  }
  return table;
})();

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }); // a token may be U+FEFF

// Writers of one token's bytes into out at o; they return the new end. `out` has room for 3
// bytes per UTF-16 unit of the piece (UTF-8's most), more than either needs.
function writeByteLevel(piece, out, o) {
  for (let i = 0; i < piece.length; i++) {
    const c = piece.charCodeAt(i);
    const b = c < BYTE_OF_CHAR.length ? BYTE_OF_CHAR[c] : -1;
    if (b >= 0) out[o++] = b;
    else {
      const ch = String.fromCodePoint(piece.codePointAt(i)); // not from the byte map: the character itself
      o += utf8.encodeInto(ch, out.subarray(o)).written;
      i += ch.length - 1;
    }
  }
  return o;
}

function writeSentencePiece(piece, out, o) {
  const m = piece.length === 6 && piece.startsWith('<0x') ? /^<0x([0-9A-Fa-f]{2})>$/.exec(piece) : null;
  if (m) {
    out[o] = parseInt(m[1], 16);
    return o + 1;
  }
  return o + utf8.encodeInto(piece.replaceAll('\u2581', ' '), out.subarray(o)).written;
}

/** The tokenizer of a checkpoint. Build it with createTokenizer() or tokenizerFromGguf(). */
export class Tokenizer {
  /** @internal Use createTokenizer / tokenizerFromGguf. */
  constructor(hf, info) {
    this._hf = hf;
    /** 'byte-level' (GPT-2, Llama 3, Qwen) or 'sentencepiece' (Llama 2, Mistral, TinyLlama). */
    this.kind = info.kind;
    /** Ids 0..vocabSize-1 have tokens (a model's vocab_size may be larger: padded rows). */
    this.vocabSize = hf.model.vocab.length;
    /** The BOS id, null when the tokenizer has none. */
    this.bosId = info.bosId;
    /** Whether encode() prepends BOS by default, and which rule decided it. */
    this.addsBos = info.addsBos;
    this.bosSource = info.bosSource;
    /** The ids that end generation (sorted, unique). */
    this.eosIds = Object.freeze([...new Set(info.eosIds)].sort((a, b) => a - b));
    /** The ids of special tokens (BOS, EOS, chat markers...), sorted. */
    const added = [...hf.get_added_tokens_decoder()];
    this.specialIds = Object.freeze(
      added
        .filter(([, t]) => t.special)
        .map(([id]) => id)
        .sort((a, b) => a - b),
    );
    /** SentencePiece: the decoder drops the space the normalizer put before the first piece. */
    this.stripsPrefixSpace = info.stripsPrefixSpace;
    this._special = new Set(this.specialIds);
    this._table = null;
  }

  /**
   * Token ids of `text`. BOS is prepended when `addBos` (default: this.addsBos); no other special
   * token is added, and special tokens written in the text are matched as such.
   * @returns {Int32Array}
   */
  encode(text, options) {
    const { addBos = this.addsBos } = checkOptions(options, ['addBos'], 'encode');
    if (typeof text !== 'string') fail(`text: expected a string, got ${describe(text)}`);
    if (typeof addBos !== 'boolean') fail(`addBos: expected a boolean, got ${describe(addBos)}`);
    if (addBos && this.bosId === null) fail('addBos: this tokenizer has no BOS token');
    const ids = this._ids(text);
    const start = addBos ? 1 : 0;
    const out = new Int32Array(ids.length + start);
    if (addBos) out[0] = this.bosId;
    for (let i = 0; i < ids.length; i++) {
      if (ids[i] === undefined) fail(`text: no token for piece ${i} and no unknown token to stand for it`);
      out[i + start] = ids[i];
    }
    return out;
  }

  // The library's ids of `text`; text the vocabulary cannot spell is refused naming its first
  // character (guardModel), an error of the library's own becomes a SpecdecError.
  _ids(text) {
    try {
      return this._hf.encode(text, { add_special_tokens: false }).ids;
    } catch (e) {
      if (e instanceof SpecdecError) throw e;
      if (!(e instanceof Uncovered)) return fail(`text: the tokenizer failed: ${e.message}`);
      const at = this._firstUncovered(text);
      const what = at
        ? `"${at.ch}" (U+${at.ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}) at offset ${at.offset}`
        : `the piece ${JSON.stringify(e.piece)}`;
      return fail(`text: no token for ${what}, and the tokenizer has no unknown token to stand for it`);
    }
  }

  // The first character outside an added token that the vocabulary cannot spell on its own
  // (each distinct character tried once), or null (then the loss came from its neighbours).
  _firstUncovered(text) {
    const inAdded = new Uint8Array(text.length);
    for (const [, t] of this._hf.get_added_tokens_decoder()) {
      if (!t.content) continue;
      for (let i = text.indexOf(t.content); i >= 0; i = text.indexOf(t.content, i + 1)) {
        inAdded.fill(1, i, i + t.content.length);
      }
    }
    const tried = new Map();
    for (let i = 0; i < text.length;) {
      const ch = String.fromCodePoint(text.codePointAt(i));
      if (!inAdded[i]) {
        if (!tried.has(ch)) {
          let ok = true;
          try {
            this._hf.encode(ch, { add_special_tokens: false });
          } catch (e) {
            ok = !(e instanceof Uncovered);
          }
          tried.set(ch, ok);
        }
        if (!tried.get(ch)) return { ch, offset: i };
      }
      i += ch.length;
    }
    return null;
  }

  /**
   * The text of `ids` (the byte table through one TextDecoder; invalid bytes become U+FFFD).
   * `skipSpecial` drops special tokens; `continues` says the ids follow earlier text (a
   * SentencePiece first piece then keeps its space).
   */
  decode(ids, options) {
    const d = this.detokenizer(options);
    return d.push(ids) + d.end();
  }

  /**
   * A streaming detokenizer: push(ids or one id) returns the text they complete; an incomplete
   * UTF-8 character is held back until the token that completes it; end() flushes (U+FFFD only
   * if the sequence itself is invalid UTF-8).
   * @returns {{ push(ids: ArrayLike<number> | number): string, end(): string }}
   */
  detokenizer(options) {
    const { skipSpecial = false, continues = false } = checkOptions(
      options,
      ['skipSpecial', 'continues'],
      'detokenizer',
    );
    const table = this.byteTable();
    const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
    let atStart = this.stripsPrefixSpace && !continues;
    let count = 0;
    const push = (ids) => {
      const list = typeof ids === 'number' ? [ids] : ids;
      if (list === null || typeof list !== 'object' || typeof list.length !== 'number') {
        fail(`ids: expected token ids (an array or one id), got ${describe(ids)}`);
      }
      const parts = [];
      for (let i = 0; i < list.length; i++, count++) {
        const id = list[i];
        if (!Number.isInteger(id) || id < 0 || id > 0x7fffffff) {
          fail(`ids[${count}]: expected a token id (integer >= 0), got ${describe(id)}`);
        }
        if (id >= this.vocabSize || (skipSpecial && this._special.has(id))) continue;
        let b = table.bytes.subarray(table.offsets[id], table.offsets[id + 1]);
        if (atStart) {
          if (b[0] === SPACE && !this._special.has(id)) b = b.subarray(1);
          atStart = false;
        }
        parts.push(decoder.decode(b, { stream: true }));
      }
      return parts.join('');
    };
    return { push, end: () => decoder.decode() };
  }

  /** The UTF-8 bytes token `id` stands for (a copy; empty for ids without a token). */
  tokenBytes(id) {
    const t = this.byteTable();
    if (!Number.isInteger(id) || id < 0) fail(`id: expected a token id, got ${describe(id)}`);
    return id < this.vocabSize ? t.bytes.slice(t.offsets[id], t.offsets[id + 1]) : new Uint8Array(0);
  }

  /**
   * How token `id` shows on its own: its text when its bytes are valid UTF-8, else the bytes
   * with the non-ASCII ones as <0xNN>; `<id N>` for an id without a token.
   */
  pieceText(id) {
    if (Number.isInteger(id) && id >= this.vocabSize) return `<id ${id}>`;
    const b = this.tokenBytes(id);
    try {
      return strictUtf8.decode(b);
    } catch {
      return Array.from(b, (x) => (x < 0x80 ? String.fromCharCode(x) : `<0x${x.toString(16).toUpperCase()}>`)).join('');
    }
  }

  isSpecial(id) {
    return this._special.has(id);
  }

  /**
   * Every token's bytes: token id's bytes are bytes[offsets[id] .. offsets[id + 1]). Built on
   * first use (40-90 ms for 128k-151k tokens), then kept. Special and added tokens stand for
   * their text.
   * @returns {{ bytes: Uint8Array, offsets: Uint32Array }}
   */
  byteTable() {
    if (this._table) return this._table;
    const added = this._hf.get_added_tokens_decoder();
    const vocab = this._hf.model.vocab;
    const pieceOf = (id) => (added.has(id) ? added.get(id).content : vocab[id]);
    let room = 0;
    for (let id = 0; id < this.vocabSize; id++) room += 3 * (pieceOf(id)?.length ?? 0);
    const out = new Uint8Array(room);
    const offsets = new Uint32Array(this.vocabSize + 1);
    let o = 0;
    for (let id = 0; id < this.vocabSize; id++) {
      const piece = pieceOf(id);
      if (added.has(id)) o += utf8.encodeInto(piece, out.subarray(o)).written;
      else if (typeof piece === 'string') {
        o = this.kind === 'byte-level' ? writeByteLevel(piece, out, o) : writeSentencePiece(piece, out, o);
      } // else a hole in the ids: no bytes
      offsets[id + 1] = o;
    }
    this._table = { bytes: out.slice(0, o), offsets };
    return this._table;
  }
}

/** @internal Builds the library's tokenizer, wrapping its errors; its model refuses text it cannot spell. */
export function hfTokenizer(json, tconf, what, kind) {
  const full = { normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null, ...json };
  let hf;
  try {
    hf = new HfTokenizer(full, tconf);
  } catch (e) {
    if (e instanceof SpecdecError) throw e;
    return fail(`${what}: ${e.message}`);
  }
  guardModel(hf.model, hf.added_tokens_map, kind);
  return hf;
}
