// Limits at the JS level: model files over the loader's limits and malformed files are refused
// with a SpecdecError naming `bytes` and the problem (the module keeps working), and a prompt
// longer than the model's context is an error naming both lengths (speculative and plain);
// a prompt that exactly fills the context gets one token. The C++ side: tests/cpp/limits_test.cc.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { loadSpecdec } from 'specdec';
import { TINY_MODEL, safetensorsParts } from './support.mjs';

const sd = await loadSpecdec();
const tiny = new Uint8Array(await readFile(TINY_MODEL));
const { file, edited, withHeaderLength } = safetensorsParts(tiny);

const REFUSALS = [
  [
    'n_layer 100000',
    edited('"n_layer":"2"', '"n_layer":"100000"'),
    /bytes: model file: config n_layer = 100000 is outside 1\.\.128/,
  ],
  [
    'block_size 10^9',
    edited('"block_size":"640"', '"block_size":"1000000000"'),
    /block_size = 1000000000 is out of range/,
  ],
  ['n_head not dividing n_embd', edited('"n_head":"4"', '"n_head":"3"'), /n_head = 3 does not divide n_embd = 32/],
  ['vocabulary not 256', edited('"vocab_size":"256"', '"vocab_size":"50257"'), /vocab_size = 50257, expected 256/],
  [
    'parameters over 3 GiB, refused before the shapes',
    edited('"n_layer":"2","n_head":"4","n_embd":"32"', '"n_layer":"64","n_head":"4","n_embd":"4096"'),
    /the weights need \d+ bytes in memory \(int8\), over the limit of 3221225472/,
  ],
  [
    'tensor claiming 2^80 elements',
    edited(
      '"shape":[256,32],"data_offsets":[0,32768]',
      '"shape":[1099511627776,1099511627776],"data_offsets":[0,32768]',
    ),
    /is too large/,
  ],
  ['header length 2^40', withHeaderLength(2n ** 40n), /header length 1099511627776 exceeds the limit of 1048576 bytes/],
  ['truncated in the data', tiny.subarray(0, tiny.length - 1), /outside the data section/],
  ['truncated in the header', tiny.subarray(0, 100), /truncated file\?/],
  ['empty', new Uint8Array(0), /0 bytes is too short/],
  // No cap on the file itself (it is read a tensor at a time, never copied whole into wasm
  // memory): a 513 MiB buffer is refused by its header, having been read no further.
  [
    'file of 513 MiB with an empty header',
    new Uint8Array(8 + 2 ** 20 + 512 * 2 ** 20 + 1),
    /bytes: model file: header: JSON: unexpected end of input at byte 0/,
  ],
  ['not JSON', file('safetensors'), /header: JSON: unexpected character at byte 0/],
];

for (const [what, bytes, message] of REFUSALS) {
  test(`loadModel refuses: ${what}`, () => {
    assert.throws(
      () => sd.loadModel(bytes),
      (e) => {
        assert.ok(e instanceof sd.SpecdecError, `a SpecdecError, got ${e}`);
        assert.equal(e.argument, 'bytes');
        assert.match(e.message, /^bytes: model file: /);
        assert.match(e.message, message);
        return true;
      },
    );
  });
}

test('the module keeps working after the refusals', () => {
  const model = sd.loadModel(tiny);
  assert.deepEqual(model.config, {
    vocabSize: 256,
    nLayer: 2,
    nHead: 4,
    nEmbd: 32,
    blockSize: 640,
    nKvHead: 4,
    headDim: 8,
  });
  model.dispose();
});

test('a prompt longer than the context is a clear error (speculative and plain)', () => {
  const model = sd.loadModel(tiny);
  try {
    const prompt = new Array(641).fill(97);
    for (const opts of [{ draft: model, gamma: 4 }, { plain: true }]) {
      assert.throws(
        () => sd.createDecoder({ target: model, prompt, ...opts }),
        (e) => {
          assert.ok(e instanceof sd.SpecdecError);
          assert.equal(e.argument, 'prompt');
          assert.equal(e.message, 'prompt: 641 tokens exceed the model context of 640 tokens');
          return true;
        },
      );
    }
    // As text: 'é' is two bytes, so 321 of them are 642 tokens.
    assert.throws(
      () => sd.createDecoder({ target: model, plain: true, prompt: 'é'.repeat(321) }),
      /prompt: 642 tokens exceed the model context of 640 tokens/,
    );
  } finally {
    model.dispose();
  }
});

test('a prompt that fills the context exactly gets one token, then the decoder is done', () => {
  const model = sd.loadModel(tiny);
  try {
    for (const opts of [{ draft: model, gamma: 8 }, { plain: true }]) {
      const dec = sd.createDecoder({
        target: model,
        prompt: new Array(640).fill(97),
        seed: 1,
        ...opts,
      });
      const it = dec.step();
      assert.deepEqual(it.proposed, [], 'no room to draft');
      assert.equal(it.emitted.length, 1);
      assert.equal(dec.done, true);
      assert.throws(() => dec.step(), /the decoder is done/);
      dec.dispose();
    }
  } finally {
    model.dispose();
  }
});

// Issue 41. maxTokens means the same in createDecoder and in generate(): an integer
// 0..2^53 - 1 or Infinity, where 0, Infinity and leaving it out set no limit; anything else is
// refused with the same message in both.
const uniform = () => Float32Array.from([0.25, 0.25, 0.25, 0.25]);
const stepDecoder = (maxTokens) =>
  sd.createDecoder({
    targetStep: uniform,
    draftStep: uniform,
    gamma: 3,
    seed: 2,
    prompt: [0],
    maxTokens,
  });
const MAX_TOKENS_MESSAGE =
  /^maxTokens: expected an integer in 0\.\.9007199254740991 \(0 = no limit\) or Infinity, got /;
const MAX_TOKENS_CASES = [
  // [value, the limit it sets (null: none) or a refusal]
  [undefined, null],
  [0, null],
  [Infinity, null],
  [1, 1],
  [7, 7],
  [Number.MAX_SAFE_INTEGER, null], // a limit too far to reach here
  [-1, 'refused'],
  [1.5, 'refused'],
  [NaN, 'refused'],
  [-Infinity, 'refused'],
  [2 ** 53, 'refused'],
  ['5', 'refused'],
  [5n, 'refused'],
];
for (const [value, limit] of MAX_TOKENS_CASES) {
  const shown = typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value));
  test(`maxTokens ${String(value)} (${shown}): ${limit === 'refused' ? 'refused' : limit === null ? 'no limit' : `${limit} tokens`}, in createDecoder and generate() alike`, async () => {
    if (limit === 'refused') {
      const check = (e) =>
        e instanceof sd.SpecdecError && e.argument === 'maxTokens' && MAX_TOKENS_MESSAGE.test(e.message);
      assert.throws(() => stepDecoder(value), check);
      const dec = stepDecoder(undefined);
      await assert.rejects(dec.generate({ maxTokens: value }).next(), check);
      dec.dispose();
      return;
    }
    const made = stepDecoder(value);
    for (let i = 0; i < 40 && !made.done; i++) made.step();
    const dec = stepDecoder(undefined);
    let n = 0;
    for await (const it of dec.generate({ maxTokens: value })) if ((n += it.emitted.length) >= 60) break;
    if (limit === null) {
      assert.equal(made.done, false);
      assert.ok(made.generatedTokens.length >= 40);
      assert.ok(dec.generatedTokens.length >= 60);
    } else {
      assert.equal(made.generatedTokens.length, limit);
      assert.equal(dec.generatedTokens.length, limit);
    }
    made.dispose();
    dec.dispose();
  });
}

test('limits: the frozen defaults and caps equal what the module reports, and load without it', async () => {
  const { limits } = await import('specdec/limits');
  assert.ok(Object.isFrozen(limits));
  assert.deepEqual({ ...limits }, sd._coreLimits());
  assert.equal(sd.limits, limits);
  assert.equal(sd.maxGamma, limits.maxGamma);
  const { limits: fromIndex } = await import('specdec');
  assert.equal(fromIndex, limits);
  // The defaults are the decoder's: gamma and gammaMax left out draft limits.gamma tokens.
  const step = (tokens) => Float32Array.from({ length: 4 }, (_, i) => (i === tokens.length % 4 ? 0.7 : 0.1));
  const dec = sd.createDecoder({
    targetStep: step,
    draftStep: step,
    prompt: [0],
    maxTokens: 20,
    seed: 1,
  });
  assert.equal(dec.step().proposed.length, limits.gamma);
  dec.dispose();
  assert.throws(
    () =>
      sd.createDecoder({
        targetStep: step,
        draftStep: step,
        prompt: [0],
        gamma: limits.maxGamma + 1,
      }),
    new RegExp(`gamma: must be in 1\\.\\.${limits.maxGamma}`),
  );
});
