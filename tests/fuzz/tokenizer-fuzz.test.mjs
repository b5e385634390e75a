// A hostile pass over specdec/tokenizer (issue 57): random tokenizer.json files and GGUF
// tokenizer metadata, some well formed and some broken on purpose, and random text. Every error
// must be a SpecdecError (never a TypeError, a RangeError or the library's own), and text that
// encodes without the unknown token must decode to itself: nothing is dropped in silence (a lone
// surrogate counts as U+FFFD, as TextEncoder writes it; SentencePiece's U+2581 as a space). A fixed seed per case; bounded to a few
// seconds. Run: node --test tests/fuzz/tokenizer-fuzz.test.mjs (FUZZ_CASES=N for more).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTokenizer, tokenizerFromGguf } from '../../web/lib/tokenizer/tokenizer.js';
import { SpecdecError } from '../../web/lib/base/errors.js';
import { seeded } from './seeded.mjs';

const CASES = Number(process.env.FUZZ_CASES ?? 200);
const { rand, int, pick, chance } = seeded(0x9e3779b9);

const BYTE_CHARS = (() => {
  let moved = 0;
  return Array.from({ length: 256 }, (_, b) => {
    const kept = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    return String.fromCodePoint(kept ? b : 256 + moved++);
  });
})();
const HEX = (b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
const ALPHABET = [
  'a',
  'b',
  'c',
  'H',
  'I',
  ' ',
  '  ',
  '\n',
  'é',
  '語',
  '🙂',
  '\u2581',
  '<',
  '|',
  '>',
  '\uD800',
  '0',
  '\u0000',
];
const randomText = (extra) =>
  Array.from({ length: int(12) }, () => (chance(0.1) && extra.length ? pick(extra) : pick(ALPHABET))).join('');

// Grows `vocab` (piece -> id) with merges of two existing pieces; returns the merges.
function growMerges(vocab, count) {
  const pieces = Object.keys(vocab);
  const merges = [];
  for (let i = 0; i < count && pieces.length > 0; i++) {
    const [a, b] = [pick(pieces), pick(pieces)];
    if (a.includes(' ') || b.includes(' ') || merges.includes(`${a} ${b}`)) continue;
    merges.push(`${a} ${b}`);
    if (!Object.hasOwn(vocab, a + b)) {
      vocab[a + b] = Object.keys(vocab).length;
      pieces.push(a + b);
    }
  }
  return merges;
}

const nest = (part, key, depth) => {
  for (let i = 0; i < depth; i++) part = { type: 'Sequence', [key]: [part] };
  return part;
};

// A tokenizer.json: byte-level or SentencePiece-style, then perhaps one hostile change.
function randomJson() {
  const vocab = {};
  const spm = chance(0.5);
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: chance(0.5) };
  if (spm) {
    for (const c of ['\u2581', 'a', 'b', 'c', 'H', 'é', '語']) if (chance(0.8)) vocab[c] = Object.keys(vocab).length;
    if (chance(0.5)) for (let b = 0; b < 256; b++) vocab[HEX(b)] = Object.keys(vocab).length;
  } else {
    for (let b = 0; b < 256; b++) if (chance(0.9)) vocab[BYTE_CHARS[b]] = Object.keys(vocab).length;
  }
  const unk = spm && chance(0.3) ? '<unk>' : null;
  if (unk && chance(0.8)) vocab[unk] = Object.keys(vocab).length;
  const merges = growMerges(vocab, int(20));
  const json = {
    added_tokens: [],
    normalizer: spm
      ? {
          type: 'Sequence',
          normalizers: [
            { type: 'Prepend', prepend: '\u2581' },
            { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' },
          ],
        }
      : null,
    pre_tokenizer: spm ? null : nest(byteLevel, 'pretokenizers', int(3)),
    decoder: spm ? { type: 'Sequence', decoders: [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] } : byteLevel,
    model: { type: 'BPE', vocab, merges, byte_fallback: spm, ...(unk ? { unk_token: unk } : {}) },
  };
  if (chance(0.3)) {
    const id = Object.keys(vocab).length;
    json.added_tokens.push({ id, content: '<|end|>', special: true });
    vocab['<|end|>'] = id;
  }
  const hostile = [
    () => json.model.merges.push('a zz'),
    () => json.model.merges.push(['a', 'b']),
    () => json.model.merges.push(7),
    () => (json.pre_tokenizer = nest(byteLevel, 'pretokenizers', 10 + int(5000))),
    () => (json.decoder = nest(byteLevel, 'decoders', 10 + int(30))),
    () => (json.model.vocab = { ...vocab, x: -1 }),
    () => (json.model.unk_token = 5),
    () => (json.model.end_of_word_suffix = '</w>'),
    () => (json.pre_tokenizer = { type: 'Sequence', pretokenizers: [null, 3, { type: 'Nope' }] }),
    () => (json.normalizer = { type: 'Replace', pattern: { Regex: '(' }, content: '' }),
    () => json.added_tokens.push({ id: 2 ** 31, content: 'x' }),
    () => (json.model.merges = 'a b'),
  ];
  if (chance(0.35)) pick(hostile)();
  if (chance(0.2)) {
    try {
      return JSON.stringify(json); // as text (JSON.stringify itself overflows on deep nesting)
    } catch {
      return json;
    }
  }
  return json;
}

// GGUF tokenizer metadata (what readGgufMetadata returns), perhaps broken.
function randomGguf() {
  const llama = chance(0.5);
  const tokens = llama
    ? ['<unk>', '<s>', '</s>', ...Array.from({ length: 256 }, (_, b) => HEX(b))]
    : BYTE_CHARS.slice();
  const types = tokens.map((_, i) => (llama ? (i === 0 ? 2 : i < 3 ? 3 : 6) : 1));
  const vocab = Object.fromEntries(tokens.map((t, i) => [t, i]));
  for (const c of ['\u2581', 'a', 'b', 'H', 'é'])
    if (llama && chance(0.8)) ((vocab[c] = tokens.length), tokens.push(c), types.push(1));
  const merges = growMerges(vocab, int(20));
  for (const [t, id] of Object.entries(vocab)) if (id >= tokens.length) ((tokens[id] = t), types.push(1));
  const meta = new Map([
    ['tokenizer.ggml.model', llama ? 'llama' : 'gpt2'],
    ['tokenizer.ggml.tokens', tokens],
    ['tokenizer.ggml.token_type', Int32Array.from(types)],
    ['tokenizer.ggml.bos_token_id', 1],
  ]);
  if (llama)
    meta.set(
      'tokenizer.ggml.scores',
      Float32Array.from(tokens, () => rand() * 10 - 5),
    );
  else (meta.set('tokenizer.ggml.pre', 'gpt-2'), meta.set('tokenizer.ggml.merges', merges));
  const hostile = [
    () =>
      meta.set(
        'tokenizer.ggml.token_type',
        // not for pieces with U+2581: an added token spelled so is matched after the normalizer
        // and stands for other text (a known gap, web/lib/README)
        Int32Array.from(types, (t, i) => (String(tokens[i]).includes('\u2581') ? t : int(9) - 1)),
      ),
    () => meta.set('tokenizer.ggml.tokens', [...tokens.slice(0, -1), 'x'.repeat(600 + int(20000))]),
    () => meta.set('tokenizer.ggml.merges', [...merges, 'q z']),
    () => meta.set('tokenizer.ggml.scores', new Float32Array(3)),
    () => meta.set('tokenizer.ggml.bos_token_id', tokens.length + int(5)),
    () =>
      meta.set(
        'tokenizer.ggml.tokens',
        tokens.map((t, i) => (i === 5 ? 42 : t)),
      ),
    () => meta.set('tokenizer.ggml.unknown_token_id', -1),
  ];
  if (chance(0.35)) pick(hostile)();
  return meta;
}

function check(make, name) {
  let tok;
  try {
    tok = make();
  } catch (e) {
    assert.ok(e instanceof SpecdecError, `${name}: built with ${e?.name}: ${e?.message}`);
    return 'refused';
  }
  const unk = tok._hf.model.unk_token_id;
  const added = [...tok._hf.get_added_tokens_decoder().values()].map((t) => t.content).filter(Boolean);
  const extra = Object.keys(tok._hf.model.tokens_to_ids ? Object.fromEntries(tok._hf.model.tokens_to_ids) : {});
  for (let i = 0; i < 8; i++) {
    const s = randomText(extra.slice(0, 50));
    let ids;
    try {
      ids = tok.encode(s, { addBos: false });
    } catch (e) {
      assert.ok(e instanceof SpecdecError, `${name}: encode(${JSON.stringify(s)}) threw ${e?.name}: ${e?.message}`);
      assert.match(e.message, /^text: no token for /, `${name}: encode(${JSON.stringify(s)})`);
      continue;
    }
    if (unk !== undefined && ids.includes(unk)) continue;
    // SentencePiece reads U+2581 in text as the space it stands for.
    let [got, want] = [tok.decode(ids), s.toWellFormed()];
    if (tok.kind === 'sentencepiece') {
      want = want.replaceAll('\u2581', ' ');
      // The normalizer puts a space before each stretch of text after an added token, as
      // Hugging Face's does ("<s>a" is "<s>", "▁a"): compare without spaces there.
      if (added.some((t) => s.includes(t))) [got, want] = [got.replaceAll(' ', ''), want.replaceAll(' ', '')];
    }
    assert.equal(got, want, `${name}: decode(encode(${JSON.stringify(s)})) lost text`);
  }
  return 'built';
}

test(`tokenizer fuzz: ${CASES} tokenizer.json and ${CASES} GGUF cases, errors typed, no text lost`, () => {
  const outcomes = { built: 0, refused: 0 };
  for (let i = 0; i < CASES; i++) {
    outcomes[check(() => createTokenizer({ tokenizer: randomJson() }), `json case ${i}`)]++;
    outcomes[check(() => tokenizerFromGguf(randomGguf()), `gguf case ${i}`)]++;
  }
  assert.ok(outcomes.built > CASES / 2 && outcomes.refused > CASES / 10, JSON.stringify(outcomes));
});
