// Limits at the JS level: model files over the loader's limits and malformed files are refused
// with a SpecdecError naming `bytes` and the problem (the module keeps working), and a prompt
// longer than the model's context is an error naming both lengths (speculative and plain);
// a prompt that exactly fills the context gets one token. The C++ side: tests/cpp/limits_test.cc.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { loadSpecdec } from 'specdec';
import { TINY_MODEL } from './support.mjs';

const sd = await loadSpecdec();
const tiny = new Uint8Array(await readFile(TINY_MODEL));
const headerLength = Number(new DataView(tiny.buffer, tiny.byteOffset).getBigUint64(0, true));
const header = new TextDecoder().decode(tiny.subarray(8, 8 + headerLength));
const data = tiny.subarray(8 + headerLength);

function file(headerText, body = data) {
  const h = new TextEncoder().encode(headerText);
  const out = new Uint8Array(8 + h.length + body.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  out.set(body, 8 + h.length);
  return out;
}
const edited = (from, to) => {
  assert.ok(header.includes(from), `'${from}' in the fixture's header`);
  return file(header.replace(from, to));
};

const REFUSALS = [
  ['n_layer 100000', edited('"n_layer":"2"', '"n_layer":"100000"'), /bytes: model file: n_layer = 100000 is outside 1\.\.64/],
  ['block_size 10^9', edited('"block_size":"640"', '"block_size":"1000000000"'), /block_size = 1000000000 is outside 1\.\.8192/],
  ['n_head not dividing n_embd', edited('"n_head":"4"', '"n_head":"3"'), /n_head = 3 does not divide n_embd = 32/],
  ['vocabulary not 256', edited('"vocab_size":"256"', '"vocab_size":"50257"'), /vocab_size = 50257, expected 256/],
  ['parameters over 512 MiB', edited('"n_layer":"2","n_head":"4","n_embd":"32"', '"n_layer":"64","n_head":"4","n_embd":"4096"'),
    /exceed the limit of 536870912 bytes/],
  ['tensor claiming 2^80 elements', edited('"shape":[256,32],"data_offsets":[0,32768]', '"shape":[1099511627776,1099511627776],"data_offsets":[0,32768]'),
    /is too large/],
  ['header length 2^40', (() => { const b = tiny.slice(); new DataView(b.buffer).setBigUint64(0, 2n ** 40n, true); return b; })(),
    /header length 1099511627776 exceeds the limit of 1048576 bytes/],
  ['truncated in the data', tiny.subarray(0, tiny.length - 1), /outside the data section/],
  ['truncated in the header', tiny.subarray(0, 100), /truncated file\?/],
  ['empty', new Uint8Array(0), /0 bytes is too short/],
  // Refused by its size before being copied into wasm memory (which never shrinks).
  ['file over 513 MiB', new Uint8Array(8 + 2 ** 20 + 512 * 2 ** 20 + 1), /bytes: model file: 537919497 bytes exceed the limit of 537919496/],
  ['not JSON', file('safetensors'), /header: JSON: unexpected character at byte 0/],
];

for (const [what, bytes, message] of REFUSALS) {
  test(`loadModel refuses: ${what}`, () => {
    assert.throws(() => sd.loadModel(bytes), (e) => {
      assert.ok(e instanceof sd.SpecdecError, `a SpecdecError, got ${e}`);
      assert.equal(e.argument, 'bytes');
      assert.match(e.message, /^bytes: model file: /);
      assert.match(e.message, message);
      return true;
    });
  });
}

test('the module keeps working after the refusals', () => {
  const model = sd.loadModel(tiny);
  assert.deepEqual(model.config, { vocabSize: 256, nLayer: 2, nHead: 4, nEmbd: 32, blockSize: 640 });
  model.dispose();
});

test('a prompt longer than the context is a clear error (speculative and plain)', () => {
  const model = sd.loadModel(tiny);
  try {
    const prompt = new Array(641).fill(97);
    for (const opts of [{ draft: model, gamma: 4 }, { plain: true }]) {
      assert.throws(() => sd.createDecoder({ target: model, prompt, ...opts }), (e) => {
        assert.ok(e instanceof sd.SpecdecError);
        assert.equal(e.argument, 'prompt');
        assert.equal(e.message, 'prompt: 641 tokens exceed the model context of 640 tokens');
        return true;
      });
    }
    // As text: 'é' is two bytes, so 321 of them are 642 tokens.
    assert.throws(() => sd.createDecoder({ target: model, plain: true, prompt: 'é'.repeat(321) }),
      /prompt: 642 tokens exceed the model context of 640 tokens/);
  } finally {
    model.dispose();
  }
});

test('a prompt that fills the context exactly gets one token, then the decoder is done', () => {
  const model = sd.loadModel(tiny);
  try {
    for (const opts of [{ draft: model, gamma: 8 }, { plain: true }]) {
      const dec = sd.createDecoder({ target: model, prompt: new Array(640).fill(97), seed: 1, ...opts });
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
