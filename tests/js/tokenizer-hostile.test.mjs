// specdec/tokenizer on bad input: GGUF metadata that is truncated, oversized, of unknown types or
// of an unsupported tokenizer, and tokenizer.json files specdec cannot read, are refused with a
// SpecdecError naming the key or field — never a RangeError or an allocation from a hostile count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTokenizer, readGgufMetadata, tokenizerFromGguf } from '../../web/lib/tokenizer/tokenizer.js';
import { SpecdecError } from '../../web/lib/base/errors.js';
import { ggufMetadata as gguf, u32, u64 } from '../fixtures/makers/gguf_metadata.mjs';

const BYTES = Array.from({ length: 256 }, (_, b) =>
  String.fromCodePoint(b < 33 || (b > 126 && b < 161) || b === 173 ? 256 + b : b),
);
const GPT2_PAIRS = [
  ['tokenizer.ggml.model', 'string', 'gpt2'],
  ['tokenizer.ggml.pre', 'string', 'gpt-2'],
  ['tokenizer.ggml.tokens', 'strings', [...BYTES, 'he', '<|end|>']],
  ['tokenizer.ggml.token_type', 'i32s', [...BYTES.map(() => 1), 1, 3]],
  ['tokenizer.ggml.merges', 'strings', ['h e']],
  ['tokenizer.ggml.eos_token_id', 'u32', 257],
];
const replace = (key, kind, value) => GPT2_PAIRS.map((p) => (p[0] === key ? [key, kind, value] : p));
const refused = (fn, re) =>
  assert.throws(fn, (e) => e instanceof SpecdecError && re.test(e.message), `expected a SpecdecError matching ${re}`);

test('a small GGUF tokenizer reads; its ids are bytes and merges', () => {
  const tok = tokenizerFromGguf(gguf(GPT2_PAIRS));
  assert.deepEqual(
    [tok.kind, tok.vocabSize, tok.bosId, tok.addsBos, [...tok.eosIds]],
    ['byte-level', 258, null, false, [257]],
  );
  assert.deepEqual(Array.from(tok.encode('hehe!<|end|>')), [256, 256, 33, 257]);
  assert.equal(tok.decode(tok.encode('héé')), 'héé');
});

test('a token "__proto__" is a token like any other; unknown options are refused', () => {
  const pairs = replace('tokenizer.ggml.tokens', 'strings', [...BYTES, 'he', '__proto__']).map((p) =>
    p[0].endsWith('token_type') ? [p[0], 'i32s', [...BYTES.map(() => 1), 1, 1]] : p,
  );
  const tok = tokenizerFromGguf(gguf(pairs));
  assert.equal(tok.decode([257]), '__proto__'); // a normal token: in the vocabulary object
  refused(() => tokenizerFromGguf(gguf(GPT2_PAIRS), { add_bos: true }), /add_bos: unknown option of tokenizerFromGguf/);
  refused(
    () => createTokenizer({ tokenizer: {}, tokenizer_config: {} }),
    /tokenizer_config: unknown option of createTokenizer/,
  );
});

const HEADER_CASES = [
  ['bad magic', () => gguf([], { magic: 'GGUG' }), /not a GGUF file: the magic is 47 47 55 47/],
  ['version 1', () => gguf([], { version: 1 }), /gguf: version 1 is not supported/],
  ['big-endian', () => gguf([], { version: 3 << 24 }), /big-endian/],
  [
    'too many pairs',
    () => Uint8Array.from([...gguf([]).subarray(0, 16), ...u64(1e9)]),
    /1000000000 metadata pairs exceed/,
  ],
  [
    'unknown value type',
    () => gguf([['a', 'u32', 1]]).map((b, i, a) => (i === a.length - 8 ? 13 : b)),
    /gguf: a: unknown value type 13/,
  ],
  [
    'duplicate key',
    () =>
      gguf([
        ['k', 'u32', 1],
        ['k', 'u32', 2],
      ]),
    /gguf: k: the key appears twice/,
  ],
  [
    'bool 2',
    () => gguf([['b', 'bool', true]]).map((b, i, a) => (i === a.length - 1 ? 2 : b)),
    /gguf: b: a bool must be 0 or 1/,
  ],
  [
    'key not UTF-8',
    () => gguf([['k\u00e9', 'u32', 1]]).map((b) => (b === 0xa9 ? 0xff : b)),
    /gguf: pair 0: the key at offset 32 is not valid UTF-8/,
  ],
  ['empty key', () => gguf([['', 'u32', 1]]), /gguf: pair 0: key length 0/],
];
for (const [name, make, re] of HEADER_CASES)
  test(`GGUF metadata refused: ${name}`, () => refused(() => readGgufMetadata(make()), re));

test('GGUF metadata refused: a length or count beyond the bytes left', () => {
  const huge = (kind) => {
    const b = gguf([['k', kind, kind === 'string' ? 'abc' : ['abc']]]);
    b.set(u64(2n ** 62n), b.length - 11 - (kind === 'string' ? 0 : 8)); // the string's length / the array's count
    return b;
  };
  refused(
    () => readGgufMetadata(huge('string')),
    /gguf: k: the string length 4611686018427387904 .* exceeds the \d+ bytes left/,
  );
  refused(() => readGgufMetadata(huge('strings')), /gguf: k: the string array length 4611686018427387904 .* exceeds/);
  const nested = gguf([['k', 'i32s', [1]]]);
  nested.set(u32(9), 33 + 4); // the element type: an array of arrays
  refused(() => readGgufMetadata(nested), /gguf: k: arrays of arrays are not supported/);
});

test('GGUF metadata: every truncation is refused by name; byte flips never throw anything else', () => {
  const file = gguf(GPT2_PAIRS);
  for (let n = 0; n < file.length; n++)
    refused(() => readGgufMetadata(file.subarray(0, n)), /^gguf: .*(truncated|not a GGUF)/);
  let seed = 12345; // a fixed LCG: the same flips every run
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let i = 0; i < 300; i++) {
    const b = file.slice();
    for (let k = 0; k < 3; k++) b[next() % b.length] = next() & 0xff;
    try {
      tokenizerFromGguf(b);
    } catch (e) {
      assert.ok(e instanceof SpecdecError, `flip ${i}: ${e}`);
    }
  }
});

const TOKENIZER_CASES = [
  ['no tokenizer', [['general.architecture', 'string', 'llama']], /tokenizer\.ggml\.model: missing/],
  ['model bert', replace('tokenizer.ggml.model', 'string', 'bert'), /tokenizer\.ggml\.model: "bert" is not supported/],
  [
    'pre unknown',
    replace('tokenizer.ggml.pre', 'string', 'falcon'),
    /tokenizer\.ggml\.pre: "falcon" is not supported \(known: gpt-2,/,
  ],
  [
    'types short',
    replace('tokenizer.ggml.token_type', 'i32s', [1]),
    /tokenizer\.ggml\.token_type: expected an integer array of 258 types/,
  ],
  [
    'merge without a space',
    replace('tokenizer.ggml.merges', 'strings', ['he']),
    /tokenizer\.ggml\.merges\[0\]: "he" is not two tokens/,
  ],
  [
    'eos out of range',
    replace('tokenizer.ggml.eos_token_id', 'u32', 258),
    /tokenizer\.ggml\.eos_token_id: expected a token id below 258/,
  ],
  [
    'BOS wanted, none',
    [...GPT2_PAIRS, ['tokenizer.ggml.add_bos_token', 'bool', true]],
    /bos_token_id: missing, but BOS is to be added/,
  ],
  [
    'duplicate tokens',
    replace('tokenizer.ggml.tokens', 'strings', [...BYTES, 'he', 'he']).map((p) =>
      p[0].endsWith('token_type') ? [p[0], 'i32s', BYTES.map(() => 1).concat([1, 1])] : p,
    ),
    /tokens: "he" is both token 256 and token 257/,
  ],
  ['llama without scores', replace('tokenizer.ggml.model', 'string', 'llama'), /tokenizer\.ggml\.scores: missing/],
];
for (const [name, pairs, re] of TOKENIZER_CASES)
  test(`GGUF tokenizer refused: ${name}`, () => refused(() => tokenizerFromGguf(gguf(pairs)), re));

const BPE = { type: 'BPE', vocab: { a: 0, b: 1, ab: 2 }, merges: ['a b'] };
const JSON_CASES = [
  ['not JSON', '{"model":', /tokenizer: not valid JSON/],
  ['no model', {}, /tokenizer\.json: model: expected an object/],
  ['Unigram', { model: { type: 'Unigram', vocab: [] } }, /model\.type "Unigram" is not supported/],
  ['WordPiece', { model: { type: 'WordPiece', vocab: {} } }, /model\.type "WordPiece" is not supported/],
  ['no merges', { model: { type: 'BPE', vocab: {} } }, /model\.merges: expected an array/],
  [
    'bad id',
    { model: { ...BPE, vocab: { a: -1 } }, decoder: { type: 'ByteLevel' } },
    /model\.vocab\["a"\]: id -1 is not an integer/,
  ],
  [
    'huge id',
    { model: BPE, decoder: { type: 'ByteLevel' }, added_tokens: [{ id: 2 ** 40, content: 'x' }] },
    /added_tokens\[0\]: id 1099511627776/,
  ],
  [
    'bytes unknown',
    { model: BPE, pre_tokenizer: { type: 'Whitespace' } },
    /neither a ByteLevel .* \(pre_tokenizer \[Whitespace\], decoder \[\]\)/,
  ],
  [
    'unknown part',
    { model: BPE, pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Nope' }, { type: 'ByteLevel' }] } },
    /tokenizer\.json: Unknown PreTokenizer type: Nope/,
  ],
];
for (const [name, json, re] of JSON_CASES)
  test(`tokenizer.json refused: ${name}`, () => refused(() => createTokenizer({ tokenizer: json }), re));

test('tokenizer_config.json: BOS to add but not a token; bad arguments', () => {
  const json = { model: BPE, decoder: { type: 'ByteLevel' } };
  refused(
    () => createTokenizer({ tokenizer: json, tokenizerConfig: { add_bos_token: true, bos_token: '<s>' } }),
    /bos_token: "<s>" is not a token/,
  );
  refused(() => createTokenizer({}), /tokenizer: missing/);
  refused(() => createTokenizer({ tokenizer: json, addBos: 1 }), /addBos: expected a boolean/);
  const tok = createTokenizer({ tokenizer: json });
  refused(() => tok.encode(3), /text: expected a string/);
  refused(() => tok.decode([0, -1]), /ids\[1\]: expected a token id/);
  refused(() => tok.detokenizer().push('ab'), /ids: expected token ids/);
  refused(() => tok.encode('a', { add_bos: true }), /add_bos: unknown option of encode \(known: addBos\)/);
  refused(() => tok.decode([0], { skip_special_tokens: true }), /skip_special_tokens: unknown option of detokenizer/);
});
