// Byte-level text: tokens are UTF-8 bytes (the models' vocabulary of 256).

import { describe, fail, isNumericArray } from './errors.js';

// ---------------------------------------------------------------------------- text

export const utf8Encoder = new TextEncoder();

/** Byte-level tokenizer: UTF-8 bytes are the token ids 0..255. */
export function encode(text) {
  if (typeof text !== 'string') fail(`text: expected a string, got ${describe(text)}`);
  return Array.from(utf8Encoder.encode(text));
}

// Token ids outside 0..255 (non-byte vocabularies) become 0xFF, never valid in UTF-8, so they
// decode to U+FFFD.
export function bytesOf(tokens) {
  const bytes = new Uint8Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    bytes[i] = t >= 0 && t <= 255 ? t : 0xff;
  }
  return bytes;
}

/** Decodes byte tokens as UTF-8 (invalid or incomplete sequences become U+FFFD). */
export function decode(tokens) {
  if (!isNumericArray(tokens)) fail(`tokens: expected an array of token ids, got ${describe(tokens)}`);
  return new TextDecoder().decode(bytesOf(tokens));
}

/**
 * Streams the text of token ids through detokenize (any tokenizer): push(ids) returns the text
 * they complete — a trailing U+FFFD (a character split across tokens) is held back until a
 * later push completes it; end() returns the rest. It decodes the tokens since the last line
 * break, so a line costs what its tokens do.
 */
export function detokenizeStream(detokenize) {
  let window = [];
  let shown = 0;
  const take = (final) => {
    let text = detokenize(window);
    if (!final) text = text.replace(/\uFFFD+$/, '');
    const delta = text.length > shown ? text.slice(shown) : '';
    shown = Math.max(shown, text.length);
    if (text.endsWith('\n')) {
      window = [];
      shown = 0;
    }
    return delta;
  };
  return {
    push(ids) {
      for (const id of ids) window.push(Number(id));
      return take(false);
    },
    end() {
      const rest = window.length ? take(true) : '';
      window = [];
      shown = 0;
      return rest;
    },
  };
}

/**
 * How one token shows on its own: the character for ASCII bytes (control characters
 * included), "\xNN" for a byte of a multi-byte UTF-8 sequence, "<id>" outside 0..255.
 */
export function tokenText(token) {
  if (token >= 0 && token < 0x80) return String.fromCharCode(token);
  if (token >= 0x80 && token <= 0xff) return `\\x${token.toString(16).toUpperCase().padStart(2, '0')}`;
  return `<${token}>`;
}
