// sd.loadModel's device option and the WebGPU model's host side that runs without a GPU: option
// parsing (device 'wasm' stays synchronous, unknown devices and options are refused), the clear
// rejection where WebGPU is missing (Node has no navigator.gpu), fake adapters without one or
// with small limits, and createDecoder taking a WebGPU model through its score callback. The
// file read by the WASM loader for the GPU: webgpu-load.test.mjs; the GPU passes themselves:
// tests/e2e/webgpu.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSpecdec, SpecdecError } from 'specdec';
import { modelBytes } from './support.mjs';

const sd = await loadSpecdec();
const bytes = await modelBytes();

test("loadModel: no options and { device: 'wasm' } load synchronously, as before", () => {
  const a = sd.loadModel(bytes.target);
  const b = sd.loadModel(bytes.target, { device: 'wasm' });
  const c = sd.loadModel(bytes.target, {});
  for (const m of [a, b, c]) {
    assert.ok(m instanceof sd.Model);
    assert.equal(typeof m.then, 'undefined');
  }
  assert.deepEqual(b.config, a.config);
  a.dispose();
  b.dispose();
  c.dispose();
});

test('loadModel: an unknown device or option is a SpecdecError naming it', () => {
  for (const [options, arg, re] of [
    [{ device: 'cuda' }, 'device', /^device: expected 'wasm' or 'webgpu', got the string "cuda"/],
    [{ device: 1 }, 'device', /^device: expected 'wasm' or 'webgpu'/],
    [{ precision: 'f16' }, 'precision', /^precision: unknown option of loadModel/],
    [{ device: 'wasm', adapter: {} }, 'adapter', /^adapter: applies to device: 'webgpu' only/],
    ['webgpu', 'loadModel', /options must be an object/],
  ]) {
    assert.throws(
      () => sd.loadModel(bytes.target, options),
      (e) => e instanceof SpecdecError && e.argument === arg && re.test(e.message),
      JSON.stringify(options),
    );
  }
});

test("loadModel { device: 'webgpu' } without WebGPU rejects with a clear SpecdecError", async () => {
  assert.equal(globalThis.navigator?.gpu, undefined, 'this Node has no WebGPU');
  const p = sd.loadModel(bytes.target, { device: 'webgpu' });
  assert.equal(typeof p.then, 'function');
  await assert.rejects(
    p,
    (e) =>
      e instanceof SpecdecError &&
      e.argument === 'device' &&
      /WebGPU is not available in this browser\/context/.test(e.message),
  );
});

test('loadModel webgpu: no adapter, limits too small, a bad file', async () => {
  await assert.rejects(
    sd.loadModel(bytes.target, { device: 'webgpu', gpu: { requestAdapter: async () => null } }),
    (e) => e instanceof SpecdecError && /no WebGPU adapter/.test(e.message),
  );
  const adapter = (limit) => ({
    limits: { maxStorageBufferBindingSize: limit, maxBufferSize: limit },
    info: { vendor: 'test' },
    requestDevice: async () => {
      throw new Error('the test adapter has no device');
    },
  });
  await assert.rejects(
    sd.loadModel(bytes.target, { device: 'webgpu', adapter: adapter(1 << 18) }),
    (e) =>
      e instanceof SpecdecError &&
      e.argument === 'bytes' &&
      /too large for this WebGPU adapter: a buffer of 1048576 bytes exceeds maxStorageBufferBindingSize/.test(
        e.message,
      ),
  );
  await assert.rejects(
    sd.loadModel(bytes.target, { device: 'webgpu', adapter: adapter(2 ** 30) }),
    (e) =>
      e instanceof SpecdecError && /the adapter refused a device \(the test adapter has no device\)/.test(e.message),
  );
  await assert.rejects(
    sd.loadModel(bytes.target.subarray(0, 4000), { device: 'webgpu', adapter: adapter(2 ** 30) }),
    (e) => e instanceof SpecdecError && e.argument === 'bytes' && /^bytes: model file/.test(e.message),
  );
  // options are checked at once, before anything asynchronous
  assert.throws(
    () =>
      sd.loadModel(bytes.target, {
        device: 'webgpu',
        gpu: { requestAdapter: async () => null },
        lanes: 4,
      }),
    (e) => e instanceof SpecdecError && e.argument === 'lanes',
  );
});

test('createDecoder takes a WebGPU model as target through its score callback (async decoder)', async () => {
  const target = sd.loadModel(bytes.target);
  const draft = sd.loadModel(bytes.draft);
  const step = sd.modelStep(target);
  let calls = 0;
  // A stand-in with the WebGPU model's brand: its scorer answers log-probabilities (logits up
  // to a constant) of the WASM target, asynchronously.
  const fake = {
    [Symbol.for('specdec.webgpuModel')]: true,
    config: target.config,
    disposed: false,
    scorer: () => async (tokens, nLast) => {
      calls++;
      return Float32Array.from(step(tokens, nLast), Math.log);
    },
  };
  const prompt = 'ROMEO:\nWhat light';
  const plain = sd.createDecoder({ target, plain: true, temperature: 0, prompt, maxTokens: 40 });
  while (!plain.done) plain.step();
  const dec = sd.createDecoder({
    target: fake,
    draft,
    gamma: 3,
    temperature: 0,
    prompt,
    maxTokens: 40,
  });
  const first = dec.step();
  assert.equal(typeof first.then, 'function', 'step() returns a Promise');
  await first;
  while (!dec.done) await dec.step();
  assert.deepEqual(dec.generatedTokens, plain.generatedTokens);
  assert.equal(calls, dec.stats.targetPasses);
  assert.throws(
    () =>
      sd.createDecoder({
        target: fake,
        targetScore: async () => new Float32Array(256),
        prompt,
        draft,
      }),
    /SpecdecError: target: give a WebGPU model or targetScore, not both/,
  );
  assert.throws(
    () => sd.createDecoder({ target: fake, draft, prompt, scoreOutput: 'probs' }),
    /SpecdecError: scoreOutput: 'probs' does not apply with a WebGPU target/,
  );
  // Heads with a WebGPU target: its weights' fingerprint must be the one the heads record, and
  // its answers must carry the hidden states ({ logits, hidden }); the stand-in has none.
  const { readFile } = await import('node:fs/promises');
  const heads = sd.loadHeads(await readFile(new URL('../../models/target-heads.safetensors', import.meta.url)), target);
  assert.throws(
    () => sd.createDecoder({ target: { ...fake, fingerprint: '0123456789abcdef' }, heads, prompt }),
    /SpecdecError: heads: made for another target than this WebGPU model \(the heads' target_fingerprint a96fa93c7691b6e7, this model's weights 0123456789abcdef\)/,
  );
  let asked = null;
  const withHeads = sd.createDecoder({
    target: {
      ...fake,
      fingerprint: 'a96fa93c7691b6e7',
      scorer: () => async (tokens, nLast, options) => {
        asked = options;
        return new Float32Array(256 * nLast);
      },
    },
    heads,
    prompt,
    maxTokens: 5,
  });
  await assert.rejects(
    withHeads.step(),
    /SpecdecError: targetScore: heads draft from this target: expected \{ logits, hidden \}, got a Float32Array/,
  );
  assert.deepEqual(asked, { hidden: true }, 'the target is asked for its hidden states');
  withHeads.dispose();
  heads.dispose();
  // A tree goes to the scorer's scoreTree (here: each path scored as a sequence), one call per
  // tree; without scoreTree the decoder says trees need one.
  const bare = {
    ...fake,
    scorer: () => async (tokens, nLast) => Float32Array.from(step(tokens, nLast), Math.log),
  };
  assert.throws(
    () => sd.createDecoder({ target: bare, draft, prompt, tree: { branches: [2, 1] } }),
    /SpecdecError: tree: targetScore scores one sequence per call; a tree needs a built-in target or a callback that scores trees/,
  );
  let treeCalls = 0;
  const treeFake = {
    ...fake,
    scorer: () => {
      const fn = fake.scorer();
      fn.scoreTree = async (tokens, tree) => {
        treeCalls++;
        const paths = [];
        if (tree.withRoot) paths.push([...tokens]);
        for (let v = tree.first; v < tree.tokens.length; v++) {
          const path = [];
          for (let u = v; u >= 0; u = tree.parents[u]) path.unshift(tree.tokens[u]);
          paths.push([...tokens, ...path]);
        }
        const out = new Float32Array(paths.length * 256);
        paths.forEach((seq, i) => out.set(Float32Array.from(step(seq, 1), Math.log), i * 256));
        return out;
      };
      return fn;
    },
  };
  const treeDec = sd.createDecoder({
    target: treeFake,
    draft,
    tree: { branches: [2, 2, 1] },
    temperature: 0,
    prompt,
    maxTokens: 40,
  });
  while (!treeDec.done) await treeDec.step();
  assert.deepEqual(
    treeDec.generatedTokens,
    plain.generatedTokens,
    'a tree with the stand-in emits greedy plain tokens',
  );
  assert.equal(treeCalls, treeDec.stats.targetPasses, 'one scoreTree call per target pass');
  assert.ok(treeDec.stats.accepted > 0);
  treeDec.dispose();
  assert.throws(
    () => sd.createDecoder({ target: { ...fake, disposed: true }, draft, prompt }),
    /SpecdecError: target: this WebGPU model has been disposed/,
  );
  // plain, nothing else to cap the context: the decoder stops at the model's block size
  const long = sd.createDecoder({
    target: fake,
    plain: true,
    temperature: 0,
    prompt: Array.from({ length: 250 }, () => 65),
    maxTokens: 40,
  });
  while (!long.done) await long.step();
  assert.equal(long.generatedTokens.length, target.config.blockSize - 250 + 1);
  long.dispose();
  dec.dispose();
  plain.dispose();
  step.dispose();
  target.dispose();
  draft.dispose();
});
