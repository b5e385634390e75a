// sd.loadPretrained and the decoder with a checkpoint's tokenizer: a GGUF file (bytes, Blob,
// Response) or a Hugging Face folder with tokenizer.json becomes a Model that knows its
// tokenizer; a text prompt is encoded with it, text decoded with it, generation stops at its
// EOS ids (stopTokens) exactly where they come out; a draft whose tokens differ is refused,
// naming the first token that does. Tiny fixtures (tests/fixtures/families, vocabulary of 80:
// byte tokens 0..79, so ASCII text up to 'O').
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSpecdec, SpecdecError, limits } from 'specdec';
import { readGgufMetadata, tokenizerFromGguf } from 'specdec/tokenizer';
import { bytesToUnicode } from '../../models/tools/gguf_file.mjs';
import { writeRandomLlamaFolder } from '../fixtures/makers/random_gguf.mjs';
import { ROOT, exportGgufFile, familyDir, familyFiles } from './support.mjs';

const sd = await loadSpecdec();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'specdec-pretrained-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

/** The GGUF twin of a family fixture (export_gguf.mjs writes a byte tokenizer of its vocabulary). */
function gguf(family) {
  return readFileSync(exportGgufFile(familyDir(family), path.join(tmp, `${family}.gguf`), 'f32'));
}
const llamaGguf = gguf('llama');

/** A byte-level tokenizer.json of `size` tokens (token i = byte i), ids `swap` exchanged. */
function tokenizerJson(size, swap = []) {
  const chars = bytesToUnicode().slice(0, size);
  const [a, b] = swap;
  if (swap.length) [chars[a], chars[b]] = [chars[b], chars[a]];
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return JSON.stringify({
    version: '1.0',
    added_tokens: [],
    pre_tokenizer: byteLevel,
    decoder: byteLevel,
    model: { type: 'BPE', vocab: Object.fromEntries(chars.map((c, i) => [c, i])), merges: [] },
  });
}

const generate = (options) => {
  const dec = sd.createDecoder({ temperature: 0, seed: 1, ...options });
  const records = [];
  try {
    while (!dec.done) records.push(dec.step());
    return { tokens: dec.tokens, generated: dec.generatedTokens, text: dec.generatedText, records };
  } finally {
    dec.dispose();
  }
};

test('loadPretrained: a GGUF file from bytes, a Blob and a Response knows its tokenizer', async () => {
  for (const source of [llamaGguf, new Blob([llamaGguf]), new Response(llamaGguf)]) {
    const events = [];
    const model = await sd.loadPretrained(source, { onProgress: (e) => events.push(e.phase) });
    try {
      assert.equal(model.metadata.format, 'gguf');
      assert.equal(model.tokenizer.kind, 'byte-level');
      assert.equal(model.tokenizer.vocabSize, model.config.vocabSize);
      assert.deepEqual([...model.tokenizer.encode('HELLO')], [72, 69, 76, 76, 79]);
      assert.equal(events.at(-1), 'build');
    } finally {
      model.dispose();
    }
  }
});

test('loadPretrained: a Hugging Face folder with tokenizer.json; refusals name what is wrong', async () => {
  const model = await sd.loadPretrained({ ...familyFiles('qwen2'), 'tokenizer.json': tokenizerJson(80) });
  try {
    assert.equal(model.metadata.format, 'hf');
    assert.deepEqual(model.tokenizer.eosIds, [2, 3]); // config.json's eos_token_id
  } finally {
    model.dispose();
  }
  const refused = (promise, re) => assert.rejects(promise, (e) => e instanceof SpecdecError && re.test(e.message));
  await refused(sd.loadPretrained(familyFiles('qwen2')), /files: a Hugging Face folder needs its 'tokenizer.json'/);
  await refused(
    sd.loadPretrained({ ...familyFiles('qwen2'), 'tokenizer.json': '{"model":' }),
    /files: 'tokenizer.json': tokenizer: not valid JSON/,
  );
  await refused(
    sd.loadPretrained(readFileSync(path.join(ROOT, 'tests/fixtures/tiny_f32.safetensors'))),
    /not a GGUF file/,
  );
  await refused(sd.loadPretrained(42), /source: expected a GGUF file/);
  await refused(sd.loadPretrained(llamaGguf, { addBos: 'yes' }), /addBos: expected a boolean/);
  await refused(sd.loadPretrained(llamaGguf, { weigths: 'int8' }), /weigths/);
});

// A folder's JSON file that is not JSON is named in the refusal (issue 57, item 6: a
// tokenizer_config.json was reported as 'tokenizer.json'), and a name given twice is refused (the
// tokenizer read the last config.json, the model the first).
const FOLDER_REFUSALS = [
  ['config.json not JSON', { 'config.json': '{"model_type":' }, /^files: config\.json: /],
  ['tokenizer_config.json not JSON', { 'tokenizer_config.json': '{' }, /^files: 'tokenizer_config\.json': /],
  ['generation_config.json not JSON', { 'generation_config.json': '{' }, /^files: 'generation_config\.json': /],
  ['config.json twice, the second not JSON', [['config.json', '{']], /^files\[\d+\]: 'config\.json' is given twice/],
  ['tokenizer.json twice', [['tokenizer.json', tokenizerJson(80)]], /^files\[\d+\]: 'tokenizer\.json' is given twice/],
];
for (const [what, change, re] of FOLDER_REFUSALS) {
  test(`loadPretrained of a folder refuses, naming the file: ${what}`, async () => {
    const good = { ...familyFiles('qwen2'), 'tokenizer.json': tokenizerJson(80) };
    const folder = Array.isArray(change) ? [...Object.entries(good), ...change] : { ...good, ...change };
    await assert.rejects(sd.loadPretrained(folder), (e) => e instanceof SpecdecError && re.test(e.message));
  });
}

// The model's header is checked before the tokenizer is built (which takes seconds for a large
// vocabulary): each file below has a tokenizer that cannot be built, so a refusal naming the
// header (not the tokenizer) shows that nothing was built first.
const refusedWith = (promise, re) =>
  assert.rejects(promise, (e) => e instanceof SpecdecError && re.test(e.message), `expected ${re}`);

test("a folder's tokenizer.json with more tokens than the model's rows is refused before the weights", async () => {
  const rows = 80;
  const over = (n, edit = (j) => j) => ({
    ...familyFiles('qwen2'),
    'tokenizer.json': JSON.stringify(edit(JSON.parse(tokenizerJson(n)))),
  });
  const message = (n) => new RegExp(`^files: model file: the tokenizer has ${n} tokens, more than the ${rows} rows`);
  await refusedWith(sd.loadPretrained(over(81)), message(81));
  // An added token past the rows counts too (one past the largest id).
  await refusedWith(
    sd.loadPretrained(over(80, (j) => ({ ...j, added_tokens: [{ id: 99, content: '<x>', special: true }] }))),
    message(100),
  );
  // A tokenizer.json that cannot be built (no merges array): the count's refusal comes first.
  const unbuildable = (j) => ({ ...j, model: { ...j.model, merges: 'none' } });
  await refusedWith(sd.loadPretrained(over(256, unbuildable)), message(256));
  await refusedWith(sd.loadPretrained(over(80, unbuildable)), /files: 'tokenizer.json': .*merges: expected an array/);
});

// A copy of a GGUF file with the value of `key` rewritten in place by write(view, at) (at: the
// value's first byte, after its type).
function patchedGguf(bytes, key, write) {
  const out = Uint8Array.from(bytes);
  const at = Buffer.from(out.buffer).indexOf(Buffer.from(key)) + key.length + 4;
  write(new DataView(out.buffer), at);
  return out;
}

test('loadPretrained of a GGUF file the header refuses builds no tokenizer', async () => {
  const noTokenizer = patchedGguf(llamaGguf, 'tokenizer.ggml.pre', (v, at) => v.setUint8(at + 8 + 4, 0x58)); // 'gpt-X'
  await refusedWith(sd.loadPretrained(noTokenizer), /^source: gguf: tokenizer\.ggml\.pre: "gpt-X" is not supported/);
  const badEps = patchedGguf(noTokenizer, 'llama.attention.layer_norm_rms_epsilon', (v, at) =>
    v.setFloat32(at, 0, true),
  );
  for (const source of [badEps, new Blob([badEps])])
    await refusedWith(
      sd.loadPretrained(source),
      /^source: model file: config norm_eps = 0 must be finite and in \(0, 1\)/,
    );
});

test('a text prompt goes through the tokenizer, text comes back through it, pieces are its pieces', async () => {
  const target = await sd.loadPretrained(llamaGguf);
  const draft = await sd.loadPretrained(gguf('qwen2'));
  try {
    const r = generate({ target, draft, prompt: 'HELLO, ', maxTokens: 24, stopTokens: [] });
    assert.deepEqual(r.tokens.slice(0, 7), [...target.tokenizer.encode('HELLO, ')]);
    assert.equal(r.text, target.tokenizer.decode(r.generated, { continues: true, skipSpecial: true }));
    assert.equal(r.records.map((x) => x.text).join(''), r.text);
    const pos = r.records.flatMap((x) => x.positions);
    assert.ok(pos.length > 0);
    for (const p of pos) assert.equal(p.text, target.tokenizer.pieceText(p.token));
    // The same run with ids and no tokenizer gives the same tokens.
    target.tokenizer = null;
    draft.tokenizer = null;
    const ids = generate({ target, draft, prompt: r.tokens.slice(0, 7), maxTokens: 24 });
    assert.deepEqual(ids.tokens, r.tokens);
  } finally {
    target.dispose();
    draft.dispose();
  }
});

test('stopTokens: generation ends where a stop token first comes out (default: the EOS ids)', async () => {
  const target = await sd.loadPretrained(llamaGguf);
  const draft = await sd.loadPretrained(gguf('qwen2'));
  try {
    const costModel = { c: 0.2, verifyCost: [1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8] }; // 'auto' replays
    for (const mode of [
      { plain: true },
      { draft, gamma: 4 },
      { draft, gamma: 'auto', costModel },
      { promptLookup: true },
    ]) {
      const base = { target, prompt: 'HELLO', maxTokens: 40, temperature: 0.9, seed: 7, ...mode };
      const label = JSON.stringify({ ...mode, draft: undefined });
      const all = generate({ ...base, stopTokens: [] });
      assert.equal(all.generated.length, 40, label);
      // The token whose first appearance is latest: the cut falls inside the run.
      const cut = Math.max(...[...new Set(all.generated)].map((t) => all.generated.indexOf(t)));
      const stop = all.generated[cut];
      const stopped = generate({ ...base, stopTokens: [stop, 1000] });
      assert.deepEqual(stopped.generated, all.generated.slice(0, cut + 1), label);
      assert.deepEqual(
        stopped.records.map((x) => x.stopped),
        [...Array(stopped.records.length - 1).fill(false), true],
        label,
      );
      // The tokenizer's EOS ids are the default stops.
      const eos = Object.create(target.tokenizer, { eosIds: { value: [stop] } });
      assert.deepEqual(generate({ ...base, tokenizer: eos }).generated, stopped.generated, label);
    }
  } finally {
    target.dispose();
    draft.dispose();
  }
  const step = () => new Float32Array([0.5, 0.5]);
  assert.throws(
    () => sd.createDecoder({ targetStep: step, plain: true, prompt: [0], stopTokens: [-1] }),
    /stopTokens\[0\]: expected a token id/,
  );
  assert.throws(
    () =>
      sd.createDecoder({
        targetStep: step,
        plain: true,
        prompt: [0],
        stopTokens: new Array(limits.maxStopTokens + 1).fill(1),
      }),
    /stopTokens: at most 256 tokens, got 257/,
  );
});

test("a draft whose tokens differ from the target's is refused, naming the first that does", async () => {
  const target = await sd.loadPretrained(llamaGguf);
  const draft = await sd.loadPretrained({ ...familyFiles('qwen2'), 'tokenizer.json': tokenizerJson(80, [72, 73]) });
  try {
    assert.throws(
      () => sd.createDecoder({ target, draft, prompt: 'HI' }),
      (e) =>
        e instanceof SpecdecError &&
        /^draft: the target and the draft must share a vocabulary: token 72 is "H" for the target, "I" for the draft$/.test(
          e.message,
        ),
    );
    // Fewer tokens: the first one the draft lacks.
    const meta = new Map(readGgufMetadata(llamaGguf).metadata);
    meta.set('tokenizer.ggml.tokens', meta.get('tokenizer.ggml.tokens').slice(0, 70));
    meta.set('tokenizer.ggml.token_type', meta.get('tokenizer.ggml.token_type').slice(0, 70));
    draft.tokenizer = tokenizerFromGguf(meta);
    assert.throws(
      () => sd.createDecoder({ target, draft, prompt: 'HI' }),
      /target's tokenizer has 80 tokens, the draft's 70 \(the first the draft lacks: 70 "F"\)/,
    );
    // Same tokens: the pair decodes; plain decoding ignores the draft's.
    draft.tokenizer = target.tokenizer;
    sd.createDecoder({ target, draft, prompt: 'HI' }).dispose();
    assert.throws(
      () => sd.createDecoder({ target, draft, prompt: 'HI', tokenizer: {} }),
      /tokenizer: expected a Tokenizer/,
    );
    assert.throws(
      () => sd.createDecoder({ target, draft, prompt: [1], tokenizer: target.tokenizer, detokenize: () => '' }),
      /give a tokenizer or detokenize, not both/,
    );
  } finally {
    target.dispose();
    draft.dispose();
  }
});

test('examples/pretrained.mjs decodes a GGUF file with itself as the draft', () => {
  const file = exportGgufFile(familyDir('llama'), path.join(tmp, 'example.gguf'), 'q8_0');
  const out = execFileSync(
    process.execPath,
    ['examples/pretrained.mjs', file, file, '--prompt', 'HELLO', '--max-tokens', '12'],
    {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  assert.match(out, /^HELLO[^]*\n12 tokens, [\d.]+ per target pass, α = 1\.00\n$/);
});

test('a draft whose vocab_size is padded differently but whose tokens agree decodes, exactly', async () => {
  // The draft: 96 rows (16 padded) with the target's 80 tokens; random weights.
  const dir = path.join(tmp, 'padded');
  const { vocab_size: _, ...shape } = JSON.parse(readFileSync(path.join(familyDir('llama'), 'config.json'), 'utf8'));
  writeRandomLlamaFolder(dir, { ...shape, vocab_size: 96 });
  const files = {
    'config.json': readFileSync(path.join(dir, 'config.json')),
    'model.safetensors': readFileSync(path.join(dir, 'model.safetensors')),
  };
  const target = await sd.loadPretrained(llamaGguf);
  const draft = await sd.loadPretrained({ ...files, 'tokenizer.json': tokenizerJson(80) });
  try {
    assert.deepEqual([target.config.vocabSize, draft.config.vocabSize], [80, 96]);
    const base = { target, prompt: 'HELLO', maxTokens: 24, stopTokens: [] };
    const plain = generate({ ...base, plain: true });
    const spec = generate({ ...base, draft, gamma: 3 });
    assert.deepEqual(spec.tokens, plain.tokens); // greedy: the target's own tokens
    const sampled = generate({ ...base, draft, gamma: 3, temperature: 1, seed: 5 });
    assert.equal(sampled.generated.length, 24);
    for (const r of sampled.records) for (const t of r.proposed) assert.ok(t < 80, `proposed ${t}`);
    // Without tokenizers nothing says the rows are padding: the widths are refused.
    target.tokenizer = draft.tokenizer = null;
    assert.throws(() => generate({ ...base, draft, gamma: 3 }), /draft and target vocabularies differ: 96 vs 80/);
  } finally {
    target.dispose();
    draft.dispose();
  }
});
