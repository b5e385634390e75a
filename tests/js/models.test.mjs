// Real models through the package: loading, greedy speculative == greedy plain, the context
// window, KV-cache lengths in the records, and the WASM speed of one token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSpecdec } from 'specdec';
import { MODEL_FILES, USING_SHIPPED_MODELS, modelBytes } from './support.mjs';

const sd = await loadSpecdec();
const bytes = await modelBytes();
const target = sd.loadModel(bytes.target);
const draft = sd.loadModel(bytes.draft);

test('loadModel reads the configuration and metadata', (t) => {
  t.diagnostic(`models: ${MODEL_FILES.target}, ${MODEL_FILES.draft} (shipped: ${USING_SHIPPED_MODELS})`);
  for (const m of [target, draft]) {
    assert.equal(m.config.vocabSize, 256);
    assert.ok(m.config.nLayer >= 1 && m.config.nHead >= 1 && m.config.nEmbd >= m.config.nHead);
    assert.ok(m.config.blockSize >= 16);
    assert.equal(typeof m.metadata, 'object');
    assert.ok(m.nParams > 0);
    assert.equal(m.fileBytes, m === target ? bytes.target.length : bytes.draft.length);
  }
  // Accepted as Uint8Array, ArrayBuffer or any view.
  const copy = bytes.target.buffer.slice(bytes.target.byteOffset, bytes.target.byteOffset + bytes.target.length);
  const again = sd.loadModel(copy);
  assert.deepEqual(again.config, target.config);
  again.dispose();
});

function decodeAll(options) {
  const dec = sd.createDecoder(options);
  const records = [];
  while (!dec.done) records.push(dec.step());
  const out = { tokens: dec.generatedTokens, text: dec.text, stats: dec.stats, records };
  dec.dispose();
  return out;
}

test('greedy speculative decoding gives exactly the greedy plain tokens', () => {
  const prompts = ['ROMEO:', 'First Citizen:\nWe are', '\n'];
  for (const prompt of prompts) {
    const plain = decodeAll({ target, plain: true, temperature: 0, prompt, maxTokens: 120 });
    for (const gamma of [1, 3, 6]) {
      const spec = decodeAll({ target, draft, gamma, temperature: 0, prompt, maxTokens: 120 });
      assert.deepEqual(spec.tokens, plain.tokens, `gamma ${gamma}, prompt ${JSON.stringify(prompt)}`);
      assert.ok(spec.stats.targetPasses <= plain.stats.targetPasses);
    }
  }
});

test('greedy with a draft that is often wrong (a JS step function) still gives the greedy tokens', () => {
  // A draft that always proposes the same byte: rejected almost every time.
  const stubborn = new Float32Array(256);
  stubborn[101] = 1; // 'e'
  const plain = decodeAll({ target, plain: true, temperature: 0, prompt: 'KING', maxTokens: 60 });
  const spec = decodeAll({
    target,
    draftStep: () => stubborn,
    gamma: 4,
    temperature: 0,
    prompt: 'KING',
    maxTokens: 60,
  });
  assert.deepEqual(spec.tokens, plain.tokens);
  assert.ok(spec.stats.accepted < spec.stats.drafted);
  const rejection = spec.records.find((r) => r.correction !== null);
  assert.ok(rejection, 'some iteration rejected');
  assert.equal(rejection.residual[rejection.correction], 1); // greedy residual: one-hot argmax
});

test('records carry KV-cache lengths, timings and the rows; decoding stops at the context window', () => {
  const { blockSize } = target.config;
  const dec = sd.createDecoder({ target, draft, gamma: 4, temperature: 1, seed: 3, prompt: 'a' });
  let last = null;
  let steps = 0;
  while (!dec.done) {
    last = dec.step();
    steps++;
    assert.ok(last.targetCached >= 1 && last.targetCached <= blockSize);
    assert.ok(last.draftCached >= 1 && last.draftCached <= blockSize);
    assert.ok(last.targetMs >= 0 && last.draftMs >= 0 && last.ms >= last.targetMs);
    assert.equal(last.targetProbs.length, last.proposed.length + 1);
    assert.equal(last.draftProbs.length, last.proposed.length);
    assert.equal(last.targetProbs[0].length, 256);
  }
  // The window holds blockSize tokens; the last token is emitted, never scored.
  assert.equal(dec.tokens.length, blockSize + 1);
  // Near the end the decoder drafts only what the window can still score.
  assert.ok(last.proposed.length <= 4);
  assert.equal(dec.stats.iterations, steps);
  assert.throws(
    () => sd.createDecoder({ target, draft, prompt: new Array(blockSize + 1).fill(97) }),
    /exceed the model context/,
  );
  dec.dispose();
});

test('prompt ids outside the vocabulary are refused at creation', () => {
  assert.throws(
    () => sd.createDecoder({ target, draft, prompt: [97, 300] }),
    /prompt\[1\]: token id 300 outside the target model's vocabulary/,
  );
});

test('ms per token in WASM (diagnostic)', (t) => {
  const run = (options) => {
    const dec = sd.createDecoder({
      prompt: 'ROMEO:',
      seed: 1,
      temperature: 0.8,
      maxTokens: 200,
      ...options,
    });
    while (!dec.done) dec.step();
    const s = dec.stats;
    dec.dispose();
    return s;
  };
  run({ target, plain: true }); // warm-up: V8 tiers up the wasm code
  run({ target, draft, gamma: 4 });
  const plain = run({ target, plain: true });
  const spec = run({ target, draft, gamma: 4 });
  t.diagnostic(
    `plain: ${plain.msPerToken.toFixed(3)} ms/token; speculative (gamma 4): ${spec.msPerToken.toFixed(3)} ms/token, ` +
      `${spec.tokensPerPass.toFixed(2)} tokens/pass, acceptance ${spec.acceptanceRate.toFixed(3)}`,
  );
  assert.ok(plain.msPerToken > 0 && spec.msPerToken > 0);
});
