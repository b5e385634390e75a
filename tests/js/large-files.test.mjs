// Files past 4 GiB through the one reader: sizes and offsets stay 64-bit from the chunks to the
// C++ loader (wasm32's size_t is 32 bits: a 5.1 GB GGUF file was refused "outside the data
// section of 801292288 bytes", its size modulo 2^32). Each file here is a tiny fixture whose
// header places its tensors 4 GiB + 1 MiB into the file, held as ChunkedBytes whose gap is one
// zeroed 64 MiB buffer repeated (nothing of 4 GiB is allocated, and the gap is never read); it
// must give the probabilities of the file without the gap, bit for bit. A real 5 GB F32 load
// (int8 at load): bench/big-file.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSpecdec, SpecdecError } from 'specdec';
import { readGgufMetadata } from 'specdec/tokenizer';
import { ChunkedBytes } from '../../web/lib/model/sources.js';
import { hfKvs } from '../../models/tools/export_gguf_hf.mjs';
import { TINYLLAMA, llamaTensors, withZeros, zeroGguf, zeroSafetensors } from '../fixtures/makers/zero_files.mjs';
import { ROOT, exportGgufFile, familyDir, familyFiles, probsOf, sameBits } from './support.mjs';

const sd = await loadSpecdec();
const GAP = 2 ** 32 + 2 ** 20; // a multiple of GGUF's alignment

// `head`, then GAP zero bytes, then `tail`.
const withGap = (head, tail) => new ChunkedBytes([...withZeros(head, GAP).chunks, tail]);

// A GGUF file with every tensor's offset moved GAP further into its data section.
function ggufWithGap(bytes) {
  const { tensorCount, metadata, metadataBytes } = readGgufMetadata(bytes);
  const head = bytes.slice(); // the header keeps its length: offsets are u64
  const view = new DataView(head.buffer);
  let o = metadataBytes;
  for (let i = 0; i < tensorCount; i++) {
    o += 8 + Number(view.getBigUint64(o, true)); // the name
    const dims = view.getUint32(o, true);
    o += 4 + 8 * dims + 4; // dims, type
    view.setBigUint64(o, view.getBigUint64(o, true) + BigInt(GAP), true);
    o += 8;
  }
  const alignment = metadata.get('general.alignment') ?? 32;
  const dataStart = Math.ceil(o / alignment) * alignment;
  return withGap(head.subarray(0, dataStart), bytes.subarray(dataStart));
}

// A safetensors file with every tensor's data_offsets moved GAP further.
function safetensorsWithGap(bytes) {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  for (const [name, t] of Object.entries(header))
    if (name !== '__metadata__') t.data_offsets = t.data_offsets.map((x) => x + GAP);
  const json = new TextEncoder().encode(JSON.stringify(header));
  const head = new Uint8Array(8 + json.byteLength);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  head.set(json, 8);
  return withGap(head, bytes.subarray(8 + n));
}

test('a GGUF file past 4 GiB loads from its chunks, as f32 and int8, with 64-bit offsets', () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'specdec-large-'));
  try {
    const file = path.join(tmp, 'llama.gguf');
    exportGgufFile(familyDir('llama'), file, 'f32');
    const gguf = new Uint8Array(readFileSync(file));
    const big = ggufWithGap(gguf);
    assert.ok(big.length > 2 ** 32);
    for (const weights of ['f32', 'int8']) {
      const model = sd.loadModel(big, { weights });
      assert.equal(model.fileBytes, gguf.byteLength + GAP);
      assert.equal(model.metadata.format, 'gguf');
      assert.ok(sameBits(probsOf(sd, model), probsOf(sd, sd.loadModel(gguf, { weights }))), weights);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('a folder whose model.safetensors is past 4 GiB loads from its chunks, never joined', () => {
  const files = familyFiles('qwen2');
  const big = { ...files, 'model.safetensors': safetensorsWithGap(files['model.safetensors']) };
  for (const weights of ['f32', 'int8']) {
    const model = sd.loadModel(big, { weights });
    assert.equal(model.metadata.format, 'hf');
    assert.ok(sameBits(probsOf(sd, model), probsOf(sd, sd.loadModel(files, { weights }))), weights);
  }
});

test('our own file past 4 GiB loads from its chunks and keeps its description', () => {
  const ours = new Uint8Array(readFileSync(path.join(ROOT, 'tests/fixtures/tiny_f32.safetensors')));
  const plain = sd.loadModel(ours);
  const big = safetensorsWithGap(ours);
  const model = sd.loadModel(big);
  assert.deepEqual(model.metadata, plain.metadata);
  assert.equal(model.nParams, plain.nParams);
  assert.equal(model.fileBytes, big.length);
  assert.ok(sameBits(probsOf(sd, model), probsOf(sd, plain)));
});

test('a file past 4 GiB whose weights do not fit is refused by its header, before a weight is read', () => {
  // The TinyLlama-1.1B shape in F32: 4.4 GB of weights, over the 3 GiB limit as f32.
  const list = llamaTensors(TINYLLAMA);
  const limit = /model file: the weights need 4402663424 bytes in memory \(f32\), over the limit of 3221225472$/;
  const refused = (load, file, arg) => {
    let furthest = 0; // the furthest byte read
    const watched = Object.assign(Object.create(file), {
      subarray(begin, end) {
        furthest = Math.max(furthest, end);
        return file.subarray(begin, end);
      },
    });
    assert.ok(file.length > 2 ** 32);
    assert.throws(
      () => load(watched),
      (e) => e instanceof SpecdecError && e.message.startsWith(`${arg}: `) && limit.test(e.message),
    );
    assert.ok(furthest < file.chunks[1].byteLength + file.chunks[0].byteLength, `read to ${furthest}: the header only`);
  };
  const folder = zeroSafetensors(list);
  refused((f) => sd.loadModel({ 'config.json': JSON.stringify(TINYLLAMA), 'model.safetensors': f }), folder, 'files');
  refused((f) => sd.loadModel(f), zeroGguf(hfKvs('llama', TINYLLAMA, 'f32', 2048), list), 'bytes');
});
