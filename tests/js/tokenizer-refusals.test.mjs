// What a tokenizer refuses (issue 57, items 1, 2 and 4), each a table: text the vocabulary cannot
// spell is refused naming the character and its offset (or stands as the unknown token), a
// merge to a missing token is refused when the tokenizer is built; a SentencePiece GGUF
// vocabulary's merges cost work linear in its characters, and a piece longer than SentencePiece
// allows is refused by name; nesting, a non-tokenizer to vocabularyMismatch and a model whose
// tokenizer is not one are SpecdecErrors, not a RangeError or a TypeError.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { loadSpecdec } from 'specdec';
import { createTokenizer, tokenizerFromGguf, vocabularyMismatch } from '../../web/lib/tokenizer/tokenizer.js';
import { mergesFromScores } from '../../web/lib/tokenizer/gguf-tokenizer.js';
import { SpecdecError } from '../../web/lib/base/errors.js';
import { TINY_MODEL } from './support.mjs';

const refused = (fn, re) =>
  assert.throws(fn, (e) => e instanceof SpecdecError && re.test(e.message), `expected a SpecdecError matching ${re}`);

// GPT-2's byte -> character map; the 80-token fixture's tokenizer.json has bytes 0..79.
const BYTE_CHARS = (() => {
  let moved = 0;
  return Array.from({ length: 256 }, (_, b) => {
    const kept = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    return String.fromCodePoint(kept ? b : 256 + moved++);
  });
})();
const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
const bytesJson = (size, model = {}) => ({
  added_tokens: [],
  pre_tokenizer: byteLevel,
  decoder: byteLevel,
  model: {
    type: 'BPE',
    vocab: Object.fromEntries(BYTE_CHARS.slice(0, size).map((c, i) => [c, i])),
    merges: [],
    ...model,
  },
});
// A SentencePiece-style tokenizer.json: ▁, A, B, C, AB (+ <unk> and byte tokens when asked).
function spmJson({ unk = false, bytes = false } = {}) {
  const pieces = [...(unk ? ['<unk>'] : []), '▁', 'A', 'B', 'C', 'AB'];
  if (bytes) for (let b = 0; b < 256; b++) pieces.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  return {
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'Prepend', prepend: '▁' },
        { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
      ],
    },
    decoder: { type: 'Sequence', decoders: [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    added_tokens: unk ? [{ id: 0, content: '<unk>', special: true }] : [],
    model: {
      type: 'BPE',
      vocab: Object.fromEntries(pieces.map((p, i) => [p, i])),
      merges: ['A B'],
      byte_fallback: true,
      ...(unk ? { unk_token: '<unk>' } : {}),
    },
  };
}

// Item 1: [name, tokenizer.json, text, ids or the refusal].
const ENCODE_CASES = [
  ['80 tokens, covered', bytesJson(80), 'HI', [72, 73]],
  [
    '80 tokens, "P" last',
    bytesJson(80),
    'HIP',
    /^text: no token for "P" \(U\+0050\) at offset 2, and the tokenizer has no unknown/,
  ],
  ['80 tokens, "P" alone', bytesJson(80), 'P', /no token for "P" \(U\+0050\) at offset 0/],
  ['80 tokens, é after an emoji', bytesJson(80), 'H🙂', /no token for "🙂" \(U\+1F642\) at offset 1/],
  ['256 tokens, é', bytesJson(256), 'é', [0xc3, 0xa9]],
  ['SentencePiece, no unk, no bytes', spmJson(), 'AB D', /no token for "D" \(U\+0044\) at offset 3/],
  ['SentencePiece, unk', spmJson({ unk: true }), 'AB D', [1, 5, 1, 0]],
  ['SentencePiece, byte fallback', spmJson({ bytes: true }), 'AB D', [0, 4, 0, 5 + 0x44]],
];
for (const [name, json, text, want] of ENCODE_CASES) {
  test(`encode: ${name}`, () => {
    const tok = createTokenizer({ tokenizer: json });
    if (want instanceof RegExp) refused(() => tok.encode(text), want);
    else assert.deepEqual(Array.from(tok.encode(text, { addBos: false })), want);
  });
}

test('encode: an added token covers characters the vocabulary lacks; the first uncovered one is named', () => {
  const json = bytesJson(80);
  json.added_tokens = [{ id: 80, content: '<|end|>', special: true }];
  json.model.vocab['<|end|>'] = 80;
  const tok = createTokenizer({ tokenizer: { ...json, model: { ...json.model, vocab: { ...json.model.vocab } } } });
  assert.deepEqual(Array.from(tok.encode('HI<|end|>')), [72, 73, 80]);
  refused(() => tok.encode('<|end|>zP'), /no token for "z" \(U\+007A\) at offset 7/);
});

const MERGE_CASES = [
  [
    'to a missing token',
    ['A B'],
    /^tokenizer\.json: model\.merges\[0\]: "A" \+ "B": the token it makes, "AB", is not in the vocabulary/,
  ],
  ['of a missing token', ['H P'], /merges\[0\]: "H" \+ "P": its right part, "P", is not in the vocabulary/],
  ['with two spaces', ['H I J'], /merges\[0\]: expected two tokens "a b" \(one space\)/],
  ['of mixed forms', [['H', 'I'], 'H I'], /merges\[1\]: expected a pair of tokens \[a, b\]/, { HI: 80 }],
];
for (const [name, merges, re, more = {}] of MERGE_CASES) {
  test(`tokenizer.json refused: a merge ${name}`, () =>
    refused(() => {
      const json = bytesJson(80, { merges });
      Object.assign(json.model.vocab, more);
      createTokenizer({ tokenizer: json });
    }, re));
}

test('GGUF refused: a merge to a missing token', () => {
  const tokens = BYTE_CHARS.slice(0, 80);
  const meta = new Map([
    ['tokenizer.ggml.model', 'gpt2'],
    ['tokenizer.ggml.pre', 'gpt-2'],
    ['tokenizer.ggml.tokens', tokens],
    ['tokenizer.ggml.merges', ['H I', 'A B']],
  ]);
  refused(() => tokenizerFromGguf(meta), /tokenizer\.ggml\.merges\[0\]: "H" \+ "I": the token it makes, "HI"/);
});

// Item 2: the work of mergesFromScores and the longest piece.
const spmTokens = (normal) => ['<unk>', '<s>', '</s>', ...normal];
const spmTypes = (tokens) => Int32Array.from(tokens, (_, id) => (id === 0 ? 2 : id < 3 ? 3 : 1));
test('SentencePiece merges: the work is linear in the characters; a piece over 512 characters is refused', () => {
  // Tokens of 400 characters, each with many tokens as prefixes (x, xx, ..., x^64): each of the
  // 64 x 400 splits cost 400 characters before (a slice and a hash per half: 10M for 28k
  // characters); now one step per split plus the characters of the candidates compared.
  const normal = [];
  for (let n = 1; n <= 64; n++) normal.push('x'.repeat(n));
  for (let i = 0; i < 64; i++) normal.push('x'.repeat(336) + 'y'.repeat(i + 1).padEnd(64, 'z'));
  const tokens = spmTokens(normal);
  const work = { steps: 0 };
  const merges = mergesFromScores(
    tokens,
    Float32Array.from(tokens, (_, i) => -i),
    spmTypes(tokens),
    work,
  );
  const chars = tokens.reduce((n, t) => n + t.length, 0);
  assert.equal(merges.length, (64 * 63) / 2); // x^n = x^k + x^(n-k)
  assert.ok(work.steps < 10 * chars, `${work.steps} steps for ${chars} characters`);
  const long = spmTokens(['▁', 'a'.repeat(513)]);
  refused(
    () => mergesFromScores(long, new Float32Array(5), spmTypes(long)),
    /^gguf: tokenizer\.ggml\.tokens\[4\]: a normal token of 513 characters; SentencePiece pieces have at most 512/,
  );
  const pairs = spmTokens(['😀', '😀'.repeat(256), '😀'.repeat(512)]); // 512 code points, 1024 UTF-16 units
  assert.deepEqual(
    mergesFromScores(pairs, new Float32Array(6), spmTypes(pairs)).map((m) => m.map((t) => t.length)),
    [[512, 512]],
  );
});

test('SentencePiece merges: a vocabulary whose tokens split many ways is refused by name', () => {
  const normal = [];
  for (let c = 0; c < 4; c++) for (let n = 1; n <= 512; n++) normal.push(String.fromCharCode(0x61 + c).repeat(n));
  const tokens = spmTokens(normal);
  refused(
    () => mergesFromScores(tokens, new Float32Array(tokens.length), spmTypes(tokens)),
    /tokenizer\.ggml\.tokens: the merges its scores imply exceed 16 x the \d+ characters of its tokens/,
  );
});

// Item 4.
const nested = (depth, key = 'pretokenizers') => {
  let part = byteLevel;
  for (let i = 0; i < depth; i++) part = { type: 'Sequence', [key]: [part] };
  return part;
};
const nestedText = (depth) =>
  JSON.stringify(bytesJson(80)).replace(
    /"pre_tokenizer":\{[^}]*\}/,
    `"pre_tokenizer":${'{"type":"Sequence","pretokenizers":['.repeat(depth)}{"type":"ByteLevel"}${']}'.repeat(depth)}`,
  );
const UNTYPED_CASES = [
  [
    '10,000 nested Sequences',
    () => createTokenizer({ tokenizer: { ...bytesJson(80), pre_tokenizer: nested(10000) } }),
    /^tokenizer\.json: pre_tokenizer: parts nest more than 16 deep/,
  ],
  [
    '10,000 nested, as JSON text',
    () => createTokenizer({ tokenizer: nestedText(10000) }),
    /pre_tokenizer: parts nest more than 16 deep/,
  ],
  [
    '17 nested decoders',
    () => createTokenizer({ tokenizer: { ...bytesJson(80), decoder: nested(17, 'decoders') } }),
    /^tokenizer\.json: decoder: parts nest more than 16 deep/,
  ],
  [
    'vocabularyMismatch(null, tok)',
    () => vocabularyMismatch(null, createTokenizer({ tokenizer: bytesJson(80) })),
    /^target: expected a Tokenizer/,
  ],
  [
    'vocabularyMismatch(tok, 42)',
    () => vocabularyMismatch(createTokenizer({ tokenizer: bytesJson(80) }), 42),
    /^draft: expected a Tokenizer/,
  ],
];
UNTYPED_CASES.push(
  [
    'byte_fallback with ByteLevel',
    () => createTokenizer({ tokenizer: bytesJson(80, { byte_fallback: true }) }),
    /^tokenizer\.json: model\.byte_fallback with a ByteLevel/,
  ],
  [
    'end_of_word_suffix',
    () => createTokenizer({ tokenizer: bytesJson(80, { end_of_word_suffix: '</w>' }) }),
    /model\.end_of_word_suffix the string "<\/w>" is not supported/,
  ],
);
for (const [name, fn, re] of UNTYPED_CASES) test(`refused, typed: ${name}`, () => refused(fn, re));

test('16 nested Sequences are read', () => {
  const tok = createTokenizer({ tokenizer: { ...bytesJson(80), pre_tokenizer: nested(15) } });
  assert.deepEqual(Array.from(tok.encode('HI')), [72, 73]);
});

test('createDecoder: a model whose tokenizer is not a Tokenizer is refused by name', async () => {
  const sd = await loadSpecdec();
  const model = sd.loadModel(await readFile(TINY_MODEL));
  try {
    model.tokenizer = 42;
    refused(() => sd.createDecoder({ target: model, prompt: 'HI' }), /^target\.tokenizer: expected a Tokenizer/);
    model.tokenizer = createTokenizer({ tokenizer: bytesJson(256) });
    const draft = sd.loadModel(await readFile(TINY_MODEL));
    try {
      draft.tokenizer = {};
      refused(
        () => sd.createDecoder({ target: model, draft, prompt: 'HI' }),
        /^draft\.tokenizer: expected a Tokenizer/,
      );
    } finally {
      draft.dispose();
    }
  } finally {
    model.dispose();
  }
});
