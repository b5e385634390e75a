// 8-bit weights through the JS API: loading (quantized at load, or a quantized file as it is),
// what a model reports, refusals, bit-identity (load-time == file, one-thread == threaded build,
// k-token pass == k one-token passes), the shipped 8-bit files, and exactness: what a
// speculative decoder with an 8-bit target emits follows the 8-bit target's own law.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadSpecdec, SpecdecError } from 'specdec';
import { ROOT, FALSE_ALARM, chiSquare, applySampling, sameBits } from './support.mjs';

const sd = await loadSpecdec();
const read = (rel) => readFile(path.join(ROOT, rel));
const tinyF32 = await read('tests/fixtures/tiny_f32.safetensors');
const tinyInt8 = await read('tests/fixtures/tiny_int8.safetensors');
const tinyDraft = await read('tests/fixtures/tiny_draft_f16.safetensors');
const prompt = Array.from(Buffer.from('ROMEO: hello'));

test('loadModel: weights int8 quantizes at load; a quantized file loads as it is', () => {
  const f32 = sd.loadModel(tinyF32);
  const atLoad = sd.loadModel(tinyF32, { weights: 'int8' });
  const stored = sd.loadModel(tinyInt8);
  const asked = sd.loadModel(tinyInt8, { weights: 'int8' });
  try {
    assert.equal(f32.weights, 'f32');
    assert.equal(atLoad.weights, 'int8');
    assert.equal(stored.weights, 'int8');
    assert.equal(asked.weights, 'int8');
    assert.ok(atLoad.weightBytes < f32.weightBytes, `${atLoad.weightBytes} < ${f32.weightBytes}`);
    assert.equal(atLoad.weightBytes, stored.weightBytes);
    assert.equal(stored.nParams, f32.nParams, 'the scales are not counted as parameters');
    assert.equal(stored.metadata.weights, 'int8');
    assert.deepEqual(stored.config, f32.config);
    const rows = (m) => {
      const step = sd.modelStep(m);
      try {
        return step(prompt, prompt.length);
      } finally {
        step.dispose();
      }
    };
    const a = rows(atLoad),
      b = rows(stored),
      c = rows(asked),
      f = rows(f32);
    assert.ok(sameBits(a, b) && sameBits(b, c), 'load-time quantization == the quantized file');
    let diff = 0;
    for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i] - f[i]));
    assert.ok(diff > 0 && diff < 0.05, `8-bit probabilities near float32 ones, not equal (max |diff| ${diff})`);
  } finally {
    for (const m of [f32, atLoad, stored, asked]) m.dispose();
  }
});

test('quantizeModelFile gives the file specdec quantize ships, byte for byte', async () => {
  for (const name of ['target', 'draft']) {
    const made = sd.quantizeModelFile(await read(`models/${name}.safetensors`));
    const shipped = await read(`models/${name}-int8.safetensors`);
    assert.ok(made instanceof Uint8Array);
    assert.equal(Buffer.compare(Buffer.from(made), shipped), 0, `models/${name}-int8.safetensors`);
  }
});

test('refusals name what is wrong', () => {
  const cases = [
    [() => sd.loadModel(tinyF32, { weights: 'int4' }), /weights: expected 'f32' or 'int8', got the string "int4"/],
    [
      () => sd.loadModel(tinyDraft, { weights: 'int8' }),
      /8-bit weights need every Linear input width \(n_embd 8, .*\) to be a multiple of 32/,
    ],
    [() => sd.quantizeModelFile(tinyInt8), /bytes: model file: stores 8-bit weights already/],
    [() => sd.quantizeModelFile(new Uint8Array(3)), /bytes: model file: 3 bytes is too short/],
  ];
  for (const [fn, message] of cases) {
    assert.throws(fn, (e) => e instanceof SpecdecError && message.test(e.message), String(message));
  }
});

test('weights: int8 goes on to the WebGPU loader (Node has no WebGPU: that is what it rejects for)', async () => {
  await assert.rejects(
    sd.loadModel(tinyF32, { device: 'webgpu', weights: 'int8' }),
    (e) => e instanceof SpecdecError && /WebGPU/i.test(e.message) && !/weights/.test(e.message),
  );
  assert.throws(
    () => sd.loadModel(tinyF32, { device: 'webgpu', weights: 'int4' }),
    /weights: expected 'f32' or 'int8'/,
  );
});

test('8-bit rows are batch invariant and equal in the threaded build at 1-3 threads', async () => {
  const model = sd.loadModel(tinyInt8);
  const step = sd.modelStep(model);
  const all = step(prompt, prompt.length);
  const V = 256;
  for (let t = 1; t <= prompt.length; t++) {
    const fresh = sd.modelStep(model);
    const row = fresh(prompt.slice(0, t), 1);
    fresh.dispose();
    assert.ok(sameBits(row, all.subarray((t - 1) * V, t * V)), `prefix ${t}`);
  }
  step.dispose();
  model.dispose();
  const mt = await loadSpecdec({ threads: 3 });
  assert.ok(mt.threaded);
  const m = mt.loadModel(tinyF32, { weights: 'int8' });
  for (const threads of [1, 2, 3]) {
    mt.setThreads(threads);
    const s = mt.modelStep(m);
    assert.ok(sameBits(s(prompt, prompt.length), all), `${threads} threads`);
    s.dispose();
  }
  m.dispose();
});

test('the shipped 8-bit pair decodes: greedy speculative == greedy plain, and it drafts well', async () => {
  const target = sd.loadModel(await read('models/target-int8.safetensors'));
  const draft = sd.loadModel(await read('models/draft-int8.safetensors'));
  const run = (options) => {
    const dec = sd.createDecoder({ target, prompt: 'ROMEO:', temperature: 0, seed: 1, ...options });
    const tokens = [];
    while (tokens.length < 80) tokens.push(...dec.step().emitted);
    const stats = dec.stats;
    dec.dispose();
    return { tokens: tokens.slice(0, 80), stats };
  };
  const plain = run({ plain: true });
  const spec = run({ draft, gamma: 4 });
  assert.deepEqual(spec.tokens, plain.tokens);
  assert.ok(spec.stats.tokensPerPass > 2, `tokens per pass ${spec.stats.tokensPerPass}`);
  draft.dispose();
  target.dispose();
});

// The joint law of the first two tokens (top-k 4 at T 1: 16 cells) of an 8-bit target, from the
// target's own rows, against what speculative decoding emits with a rejecting float draft, in
// chain, tree and heads modes.
test('exact: speculative decoding with an 8-bit target follows the 8-bit target', async () => {
  const target = sd.loadModel(tinyInt8);
  const draft = sd.loadModel(tinyDraft);
  const heads = sd.loadHeads(await read('tests/fixtures/tiny_heads.safetensors'), target);
  const sampling = { temperature: 1, topK: 4 };
  const step = sd.modelStep(target);
  const first = applySampling(Array.from(step(prompt, 1)), sampling);
  const joint = new Map();
  first.forEach((p1, a) => {
    if (p1 <= 0) return;
    const second = applySampling(Array.from(step([...prompt, a], 1)), sampling);
    second.forEach((p2, b) => {
      if (p2 > 0) joint.set(`${a},${b}`, p1 * p2);
    });
  });
  step.dispose();
  assert.equal(joint.size, 16);
  const modes = [
    ['chain, gamma 3', { draft, gamma: 3 }],
    ['tree [2, 2]', { draft, tree: { branches: [2, 2] } }],
    ['heads', { heads, gamma: 2 }],
  ];
  for (const [name, options] of modes) {
    const counts = new Map();
    const n = 1200;
    for (let seed = 0; seed < n; seed++) {
      const dec = sd.createDecoder({ target, prompt, seed, ...sampling, ...options });
      const out = [];
      while (out.length < 2) out.push(...dec.step().emitted);
      dec.dispose();
      const key = `${out[0]},${out[1]}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const unexpected = [...counts.keys()].filter((k) => !joint.has(k));
    assert.deepEqual(unexpected, [], `${name}: tokens outside the target's support`);
    const keys = [...joint.keys()];
    const { pValue } = chiSquare([
      { counts: keys.map((k) => counts.get(k) ?? 0), probs: keys.map((k) => joint.get(k)) },
    ]);
    assert.ok(pValue > FALSE_ALARM, `${name}: p = ${pValue}`);
  }
  heads.dispose();
  draft.dispose();
  target.dispose();
});
