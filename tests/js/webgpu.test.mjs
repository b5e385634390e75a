// sd.loadModel's device option and the WebGPU model's host side that runs without a GPU: option
// parsing (device 'wasm' stays synchronous, unknown devices and options are refused), the clear
// rejection where WebGPU is missing (Node has no navigator.gpu), fake adapters without one or
// with small limits, the safetensors reader against the WASM loader, and createDecoder taking a
// WebGPU model through its score callback. The GPU passes themselves: tests/e2e/webgpu.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSpecdec, SpecdecError } from 'specdec';
import { readGptSafetensors, dispatchesPerPass } from '../../web/lib/webgpu.js';
import { readFileSync } from 'node:fs';
import { TINY_MODEL, modelBytes, safetensorsParts } from './support.mjs';

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

test('the WebGPU safetensors reader agrees with the WASM loader', () => {
  for (const name of ['target', 'draft']) {
    const m = sd.loadModel(bytes[name]);
    const r = readGptSafetensors(new Uint8Array(bytes[name]));
    const { nKvHead, headDim, ...shape } = m.config; // the families' fields: one KV head per head here
    assert.deepEqual(r.config, shape);
    assert.deepEqual([nKvHead, headDim], [r.config.nHead, r.config.nEmbd / r.config.nHead]);
    let n = 0;
    for (const t of r.tensors.values()) n += t.length;
    assert.equal(n, m.nParams);
    assert.deepEqual(r.metadata, m.metadata);
    assert.equal(dispatchesPerPass(r.config.nLayer), 7 * r.config.nLayer + 3); // within the 8 per layer + 4
    m.dispose();
  }
  const bad = new Uint8Array(bytes.target);
  const header = JSON.stringify({
    __metadata__: { vocab_size: '256', n_layer: '1', n_head: '1', n_embd: '4', block_size: '8' },
  });
  const tiny = new Uint8Array(8 + header.length);
  new DataView(tiny.buffer).setBigUint64(0, BigInt(header.length), true);
  tiny.set(new TextEncoder().encode(header), 8);
  assert.throws(
    () => readGptSafetensors(tiny),
    /SpecdecError: bytes: model file: missing tensor 'transformer.wte.weight'/,
  );
  assert.throws(() => readGptSafetensors(bad.subarray(0, 5)), /too short/);
});

test('the WebGPU reader refuses what the WASM loader refuses, for the same reason', () => {
  const tiny = new Uint8Array(readFileSync(TINY_MODEL));
  const { header, data, file, edited, withHeaderLength } = safetensorsParts(tiny);
  const wte = '"transformer.wte.weight":{"dtype":"F32","shape":[256,32],"data_offsets":[0,32768]}';
  const nanData = data.slice();
  new DataView(nanData.buffer).setFloat32(4 * 5, NaN, true);
  for (const [what, bytes, reason] of [
    ['5 bytes', tiny.subarray(0, 5), /5 bytes is too short for the 8-byte header length/],
    [
      'header length 2^40',
      withHeaderLength(2n ** 40n),
      /header length 1099511627776 exceeds the limit of 1048576 bytes/,
    ],
    ['truncated in the header', tiny.subarray(0, 100), /truncated file\?/],
    ['truncated in the data', tiny.subarray(0, tiny.length - 1), /outside the data section/],
    [
      'a BF16 tensor',
      edited(wte, wte.replace('F32', 'BF16')),
      /tensor 'transformer.wte.weight' has dtype 'BF16' \(supported: F32, F16(, I8)?\)/,
    ],
    [
      'an unknown key',
      edited(wte, wte.replace('"dtype"', '"x":1,"dtype"')),
      /tensor 'transformer.wte.weight': unknown key 'x'/,
    ],
    [
      'rank 9',
      edited('"shape":[256,32]', '"shape":[256,32,1,1,1,1,1,1,1]'),
      /shape must be an array of at most 8 integers/,
    ],
    [
      'offsets not the shape',
      edited('"data_offsets":[0,32768]', '"data_offsets":[0,32764]'),
      /span 32764 bytes, but shape \[256, 32\] of F32 needs 32768/,
    ],
    [
      'overlapping tensors',
      edited('"data_offsets":[32768,114688]', '"data_offsets":[32764,114684]'),
      /tensors 'transformer.wte.weight' and 'transformer.wpe.weight' overlap/,
    ],
    [
      'metadata not a string',
      edited('"n_layer":"2"', '"n_layer":2'),
      /__metadata__ value of 'n_layer' must be a string/,
    ],
    ['n_layer 100000', edited('"n_layer":"2"', '"n_layer":"100000"'), /n_layer = 100000 is outside 1\.\.64/],
    ['vocabulary not 256', edited('"vocab_size":"256"', '"vocab_size":"50257"'), /vocab_size = 50257, expected 256/],
    ['n_head not dividing n_embd', edited('"n_head":"4"', '"n_head":"3"'), /n_head = 3 does not divide n_embd = 32/],
    [
      'a tensor too many',
      edited(wte, `${wte},"extra":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`),
      /unexpected tensor 'extra'/,
    ],
    [
      'a non-finite weight',
      file(header, nanData),
      /tensor 'transformer.wte.weight' holds a non-finite value \(nan\) at index 5/i,
    ],
  ]) {
    for (const [reader, read] of [
      ['WASM', (b) => sd.loadModel(b)],
      ['WebGPU', (b) => readGptSafetensors(b)],
    ]) {
      assert.throws(
        () => read(bytes),
        (e) =>
          e instanceof SpecdecError &&
          e.argument === 'bytes' &&
          /^bytes: model file: /.test(e.message) &&
          reason.test(e.message),
        `${what}: ${reader}`,
      );
    }
  }
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

test('readGpuModel: an 8-bit file reads through the one safetensors reader, equal to the float file quantized at load', async () => {
  const { readGpuModel } = await import('../../web/lib/webgpu-q8.js');
  const float = readFileSync(new URL('../../models/target.safetensors', import.meta.url));
  const stored = readGpuModel(
    new Uint8Array(readFileSync(new URL('../../models/target-int8.safetensors', import.meta.url))),
  );
  const atLoad = readGpuModel(new Uint8Array(float), 'int8');
  assert.equal(stored.weights, 'int8');
  assert.deepEqual(stored.config, atLoad.config);
  assert.deepEqual([...stored.q8.keys()], [...atLoad.q8.keys()]);
  for (const [key, w] of atLoad.q8) {
    const v = stored.q8.get(key);
    assert.deepEqual([v.n, v.k], [w.n, w.k], key);
    assert.ok(
      v.q.every((x, i) => x === w.q[i]),
      `${key} quants`,
    );
    assert.ok(
      v.scales.every((x, i) => x === w.scales[i]),
      `${key} scales`,
    );
  }
  // the float tensors: the same set (no 8-bit Linear weight among them) and the same values
  assert.deepEqual([...stored.tensors.keys()].sort(), [...atLoad.tensors.keys()].sort());
  assert.ok(
    ![...stored.tensors.keys()].some((n) => /\.(q8|scale)$/.test(n) || stored.q8.has(n.replace(/\.weight$/, ''))),
  );
  for (const [name, t] of atLoad.tensors)
    assert.ok(
      stored.tensors.get(name).every((x, i) => Object.is(x, t[i])),
      name,
    );
  assert.equal(stored.metadata.weights, 'int8');
  assert.throws(
    () =>
      readGpuModel(
        new Uint8Array(readFileSync(new URL('../../models/target-int8.safetensors', import.meta.url))),
        'f32',
      ),
    /holds 8-bit weights/,
  );
});
