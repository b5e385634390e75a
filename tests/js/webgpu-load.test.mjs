// sd.loadModel(bytes, { device: 'webgpu' }) reads the file with the WASM module's one loader
// (src/bindings/checkpoint_reader.cc, web/lib/webgpu/webgpu-checkpoint.js) and uploads it a tensor at a
// time, on a stand-in device (fake-gpu.mjs): what the GPU model tells of its file against the
// WASM model of the same file, the uploads, a file the loader refuses refused on both devices
// in the same words (a header, a config, a tensor set, a value met mid-upload), a GGUF file
// refused by the GPU after the loader read it, and 8-bit weights stored or quantized at load
// uploaded the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadSpecdec, SpecdecError } from 'specdec';
import { dispatchesPerPass, loadGpuModel } from '../../web/lib/webgpu/webgpu.js';
import { readSafetensorsHeader, tensorFloat32 } from '../../models/tools/safetensors.mjs';
import { exportGguf } from '../../models/tools/export_gguf.mjs';
import { fakeGpu } from './fake-gpu.mjs';
import { ROOT, TINY_MODEL, modelBytes, safetensorsParts } from './support.mjs';

const sd = await loadSpecdec();
const bytes = await modelBytes();
const file = (name) => new Uint8Array(readFileSync(path.join(ROOT, 'models', `${name}.safetensors`)));

// A GPU load on a fresh stand-in device: { model, uploads, live }, or { error }.
async function onGpu(b, options = {}) {
  const gpu = fakeGpu();
  try {
    const model = await sd.loadModel(b, { device: 'webgpu', adapter: gpu.adapter, ...options });
    return { model, ...gpu };
  } catch (error) {
    return { error, ...gpu };
  }
}

test('a GPU model tells of its file what the WASM model tells, and uploads its weights', async () => {
  for (const name of ['target', 'draft']) {
    const m = sd.loadModel(bytes[name]);
    const { model: g, uploads, live } = await onGpu(bytes[name]);
    assert.deepEqual(Object.keys(g.config), ['vocabSize', 'nLayer', 'nHead', 'nEmbd', 'blockSize']);
    for (const [key, value] of Object.entries(g.config)) assert.equal(value, m.config[key], `${name}: ${key}`);
    assert.deepEqual([m.config.nKvHead, m.config.headDim], [g.config.nHead, g.config.nEmbd / g.config.nHead]);
    assert.deepEqual(
      [g.nParams, g.fileBytes, g.metadata, g.weights],
      [m.nParams, m.fileBytes, m.metadata, 'f32'],
      name,
    );
    assert.equal(dispatchesPerPass(g.config.nLayer), 7 * g.config.nLayer + 3);
    // the embedding, uploaded as the file holds it (float32)
    const u8 = new Uint8Array(bytes[name]);
    const h = readSafetensorsHeader(u8);
    const wte = tensorFloat32(u8, h, h.tensors.get('transformer.wte.weight'));
    assert.ok(
      uploads.some((u) => u.byteLength === wte.byteLength && Buffer.from(u).equals(Buffer.from(wte.buffer))),
      `${name}: wte uploaded`,
    );
    assert.ok(live() > 0);
    g.dispose();
    assert.equal(live(), 0, 'dispose() destroys every buffer');
    m.dispose();
  }
  // the fingerprint the heads of the target record (tests/js/webgpu.test.mjs's decoder checks it)
  const { model } = await onGpu(bytes.target);
  assert.equal(model.fingerprint, 'a96fa93c7691b6e7');
  // a stream: its chunks read where they are (never joined), the same model
  const u8 = new Uint8Array(bytes.target);
  const third = Math.floor(u8.length / 3);
  const stream = new ReadableStream({
    start(c) {
      for (const at of [0, third, 2 * third]) c.enqueue(u8.slice(at, at === 2 * third ? u8.length : at + third));
      c.close();
    },
  });
  const streamed = await sd.loadModel(stream, {
    device: 'webgpu',
    adapter: fakeGpu().adapter,
  });
  assert.deepEqual([streamed.fingerprint, streamed.nParams], ['a96fa93c7691b6e7', model.nParams]);
  streamed.dispose();
  // loadGpuModel(sd, bytes, options): the same load
  const gpu = fakeGpu();
  const viaEntry = await loadGpuModel(sd, bytes.draft, { adapter: gpu.adapter });
  assert.equal(viaEntry.device, 'webgpu');
  // specdec/lite (the page's module) reads our files for the GPU too
  const lite = await (await import('specdec/lite')).loadSpecdec();
  const viaLite = await lite.loadModel(bytes.draft, { device: 'webgpu', adapter: fakeGpu().adapter });
  assert.deepEqual([viaLite.nParams, viaLite.fingerprint], [viaEntry.nParams, viaEntry.fingerprint]);
  viaLite.dispose();
  viaEntry.dispose();
  model.dispose();
  await assert.rejects(loadGpuModel(bytes.draft), /SpecdecError: sd: expected a specdec instance/);
});

test('a file the loader refuses is refused on the GPU with the same message as on the CPU', async () => {
  const tiny = new Uint8Array(readFileSync(TINY_MODEL));
  const { header, data, file: withData, edited, withHeaderLength } = safetensorsParts(tiny);
  const wte = '"transformer.wte.weight":{"dtype":"F32","shape":[256,32],"data_offsets":[0,32768]}';
  const nan = data.slice();
  new DataView(nan.buffer).setFloat32(4 * 5, NaN, true);
  const lnf = data.slice();
  new DataView(lnf.buffer).setFloat32(lnf.length - 4, Infinity, true); // the last tensor's last value
  for (const [what, b] of [
    ['5 bytes', tiny.subarray(0, 5)],
    ['header length 2^40', withHeaderLength(2n ** 40n)],
    ['truncated in the header', tiny.subarray(0, 100)],
    ['truncated in the data', tiny.subarray(0, tiny.length - 1)],
    ['a BF16 tensor', edited(wte, wte.replace('F32', 'BF16'))],
    ['rank 9', edited('"shape":[256,32]', '"shape":[256,32,1,1,1,1,1,1,1]')],
    ['n_layer 100000', edited('"n_layer":"2"', '"n_layer":"100000"')],
    ['vocabulary not 256', edited('"vocab_size":"256"', '"vocab_size":"50257"')],
    ['n_head not dividing n_embd', edited('"n_head":"4"', '"n_head":"3"')],
    ['a tensor too many', edited(wte, `${wte},"extra":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`)],
    ['a tensor missing', edited('transformer.ln_f.bias', 'transformer.ln_g.bias')],
    ['a non-finite weight (the first tensor)', withData(header, nan)],
    ['a non-finite weight (the last tensor)', withData(header, lnf)],
  ]) {
    let cpu;
    try {
      sd.loadModel(b).dispose();
    } catch (e) {
      cpu = e;
    }
    assert.ok(cpu instanceof SpecdecError && /^bytes: model file: /.test(cpu.message), `${what}: ${cpu}`);
    const { error, live } = await onGpu(b);
    assert.ok(error instanceof SpecdecError, `${what}: ${error}`);
    assert.equal(error.message, cpu.message, what);
    assert.equal(error.argument, 'bytes');
    assert.equal(live(), 0, `${what}: no buffer left`);
  }
});

test("a GGUF file: loaded on the CPU, refused on the GPU after the loader's checks", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'specdec-webgpu-'));
  try {
    const out = path.join(dir, 'draft.gguf');
    exportGguf(path.join(ROOT, 'models/draft.safetensors'), out, 'f32');
    const gguf = new Uint8Array(readFileSync(out));
    sd.loadModel(gguf).dispose();
    const { error } = await onGpu(gguf);
    assert.ok(error instanceof SpecdecError);
    assert.match(
      error.message,
      /^bytes: device 'webgpu' runs specdec's own GPT files \(nanoGPT safetensors\) only today; this GGUF file \(gpt2\) loads with device: 'wasm'/,
    );
    // refused by the loader first: the CPU's words
    const cut = gguf.subarray(0, 200);
    let cpu;
    try {
      sd.loadModel(cut);
    } catch (e) {
      cpu = e;
    }
    assert.ok(cpu instanceof SpecdecError);
    assert.equal((await onGpu(cut)).error?.message, cpu.message);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('8-bit: the 8-bit file and its float file quantized at load upload the same GPU weights', async () => {
  for (const name of ['target', 'draft']) {
    const stored = await onGpu(file(`${name}-int8`));
    const atLoad = await onGpu(file(name), { weights: 'int8' });
    assert.equal(stored.model.weights, 'int8');
    assert.equal(atLoad.model.weights, 'int8');
    assert.equal(stored.model.weightBytes, atLoad.model.weightBytes);
    assert.equal(stored.uploads.length, atLoad.uploads.length);
    stored.uploads.forEach((u, i) =>
      assert.ok(Buffer.from(u).equals(Buffer.from(atLoad.uploads[i])), `${name}: upload ${i}`),
    );
    stored.model.dispose();
    atLoad.model.dispose();
  }
  // 'f32' asked of an 8-bit file: its blocks widened, as on the CPU
  const widened = await onGpu(file('draft-int8'), { weights: 'f32' });
  const cpu = sd.loadModel(file('draft-int8'), { weights: 'f32' });
  assert.deepEqual([widened.model.weights, cpu.weights], ['f32', 'f32']);
  assert.equal(widened.model.weightBytes, (await onGpu(file('draft'))).model.weightBytes);
  widened.model.dispose();
  cpu.dispose();
});
