// sd.loadModel from what a page or a server has in hand: a Blob / File, a fetch Response (or its
// Promise), a ReadableStream, a folder of such files. Each loads what the same bytes load, bit
// for bit, with progress events that end at the file's size; bad sources are refused by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSpecdec, SpecdecError } from 'specdec';
import { ChunkedBytes, readSource } from '../../web/lib/model/sources.js';
import { writeRandomLlamaGguf } from '../fixtures/makers/random_gguf.mjs';
import { ROOT, exportGgufFile, familyDir, familyFiles, probsOf, sameBits } from './support.mjs';

const sd = await loadSpecdec();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'specdec-sources-'));
const GGUF = path.join(tmp, 'llama.gguf');
exportGgufFile(familyDir('llama'), GGUF, 'q8_0');
const gguf = new Uint8Array(readFileSync(GGUF));
const ours = new Uint8Array(readFileSync(path.join(ROOT, 'tests/fixtures/tiny_f32.safetensors')));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

// A stream of the bytes in chunks of `size` (the last one shorter).
function chunked(bytes, size) {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

test('ChunkedBytes.subarray gives the bytes of the whole, across chunk boundaries', () => {
  const whole = Uint8Array.from({ length: 100 }, (_, i) => (i * 7) & 255);
  const chunks = new ChunkedBytes([whole.slice(0, 1), whole.slice(1, 40), whole.slice(40, 41), whole.slice(41)]);
  assert.equal(chunks.length, 100);
  for (const [b, e] of [
    [0, 0],
    [0, 1],
    [0, 100],
    [1, 40],
    [39, 42],
    [40, 41],
    [5, 99],
    [99, 100],
    [90, 200],
  ]) {
    assert.deepEqual([...chunks.subarray(b, e)], [...whole.subarray(b, e)], `[${b}, ${e})`);
  }
  assert.deepEqual([...chunks.subarray(0, chunks.length)], [...whole]);
});

test('a known length is read into one buffer of that length; an unknown one is kept by chunks', async () => {
  const fromBlob = await readSource(new Blob([gguf]), 'bytes', () => {});
  assert.ok(fromBlob instanceof Uint8Array && fromBlob.byteLength === gguf.byteLength);
  assert.equal(fromBlob.buffer.byteLength, gguf.byteLength, 'one buffer, the size of the file');
  const fromStream = await readSource(chunked(gguf, 4096), 'bytes', () => {});
  assert.ok(fromStream instanceof ChunkedBytes);
  assert.ok(sameBits(fromStream.subarray(0, fromStream.length), gguf));
  // A Content-Length that is too small: the extra bytes are kept all the same.
  const short = new Response(chunked(gguf, 1000), { headers: { 'content-length': '100' } });
  assert.ok(sameBits(wholeOf(await readSource(short, 'bytes', () => {})), gguf));
});
const wholeOf = (b) => (b instanceof ChunkedBytes ? b.subarray(0, b.length) : b);

test('a GGUF file loads from a Blob, a Response, its Promise and a stream as from its bytes', async () => {
  const expected = probsOf(sd, sd.loadModel(gguf));
  const sources = {
    blob: () => new Blob([gguf]),
    response: () => new Response(gguf),
    promise: () => Promise.resolve(new Response(gguf)),
    'stream of 777-byte chunks': () => chunked(gguf, 777),
  };
  for (const [name, make] of Object.entries(sources)) {
    const events = [];
    const model = await sd.loadModel(make(), { onProgress: (e) => events.push(e) });
    assert.equal(model.metadata.format, 'gguf', name);
    assert.equal(model.fileBytes, gguf.byteLength, name);
    assert.ok(sameBits(probsOf(sd, model), expected), `${name}: the same probabilities`);
    const read = events.filter((e) => e.phase === 'read');
    const build = events.filter((e) => e.phase === 'build');
    assert.ok(read.length >= 2 && build.length >= 2, `${name}: read and build events`);
    assert.equal(events.indexOf(build[0]), read.length, `${name}: reading comes before building`);
    for (const phase of [read, build]) {
      phase.forEach((e, i) => assert.ok(i === 0 || e.loaded >= phase[i - 1].loaded, `${name}: loaded never goes back`));
    }
    assert.equal(read.at(-1).loaded, gguf.byteLength, `${name}: every byte read`);
    assert.deepEqual(build.at(-1), { phase: 'build', loaded: gguf.byteLength, total: gguf.byteLength }, name);
  }
});

test("our own files and a folder's files load from sources too", async () => {
  assert.ok(sameBits(probsOf(sd, await sd.loadModel(chunked(ours, 5000))), probsOf(sd, sd.loadModel(ours))));
  const files = familyFiles('qwen2');
  // Weights as Blobs, the first one as a stream of chunks (kept as chunks: the loader reads them).
  const asBlobs = Object.entries(files).map(([name, bytes]) => [
    name,
    name.endsWith('.json') ? bytes : new Blob([bytes]),
  ]);
  const first = asBlobs.find(([, v]) => v instanceof Blob);
  first[1] = chunked(files[first[0]], 333);
  const events = [];
  const model = await sd.loadModel(new Map(asBlobs), { weights: 'int8', onProgress: (e) => events.push(e) });
  assert.equal(model.weights, 'int8');
  assert.ok(sameBits(probsOf(sd, model), probsOf(sd, sd.loadModel(files, { weights: 'int8' }))));
  const names = new Set(events.filter((e) => e.phase === 'read').map((e) => e.file));
  assert.deepEqual(
    [...names].sort(),
    asBlobs
      .filter(([, v]) => !ArrayBuffer.isView(v))
      .map(([n]) => n)
      .sort(),
  );
  const total = Object.values(files).reduce((n, b) => n + b.byteLength, 0);
  const build = events.filter((e) => e.phase === 'build');
  assert.ok(build.length > 3, 'the folder is read tensor by tensor');
  assert.deepEqual(build.at(-1), { phase: 'build', loaded: total, total });
});

test('bad sources and options are refused with a SpecdecError that names them', async () => {
  const refused = async (source, options, pattern) => {
    await assert.rejects(
      async () => sd.loadModel(source, options),
      (e) => e instanceof SpecdecError && pattern.test(e.message),
    );
  };
  await refused(new Response('gone', { status: 404, statusText: 'Not Found' }), undefined, /^bytes: .*HTTP 404/);
  const used = new Response(gguf);
  await used.arrayBuffer();
  await refused(used, undefined, /already read/);
  const text = new ReadableStream({
    start(c) {
      c.enqueue('GGUF');
      c.close();
    },
  });
  await refused(text, undefined, /Uint8Array chunks/);
  await refused(Promise.resolve(42), undefined, /^bytes: expected .*Blob/);
  await refused(new Blob([gguf.subarray(0, 200)]), undefined, /^bytes: /);
  await refused(gguf, { onProgress: 'yes' }, /^onProgress: expected a function/);
  await refused(new Blob([gguf]), { onProgress: 1 }, /^onProgress: expected a function/);
});

// A file past the loader's first read (16 MiB), whose last tensor (the LM head) is read after the
// others are converted: an exception at that read leaves them held by the C++ loader.
const BIG = path.join(tmp, 'big.gguf');
writeRandomLlamaGguf(BIG, {
  hidden_size: 512,
  intermediate_size: 1024,
  num_hidden_layers: 1,
  num_attention_heads: 8,
  num_key_value_heads: 4,
  vocab_size: 9000,
  tie_word_embeddings: false,
  rms_norm_eps: 1e-5,
  max_position_embeddings: 64,
});

test('an onProgress that throws stops the load with its error and leaks nothing', async () => {
  const big = new Uint8Array(readFileSync(BIG));
  const stop = new Error('stop');
  const events = [];
  const throwing = (phase) => ({
    onProgress: (e) => {
      events.push(e);
      if (e.phase === phase && e.loaded === e.total) throw stop; // the last read: the LM head's
    },
  });
  const load = () =>
    assert.throws(
      () => sd.loadModel(big, throwing('build')),
      (e) => e === stop,
    );
  load(); // the first load sizes the heap
  assert.ok(events.filter((e) => e.phase === 'build').length >= 4, 'the tensors after the first read come one by one');
  const before = sd.memoryStats();
  for (let i = 0; i < 4; i++) load();
  const after = sd.memoryStats();
  assert.ok(after.inUseBytes <= before.inUseBytes, 'no bytes left allocated by the failed loads');
  assert.equal(after.jsHandles, before.jsHandles, 'no JS value left held by the C++ side');
  await assert.rejects(
    async () => sd.loadModel(new Blob([big]), throwing('read')),
    (e) => e === stop,
  );
  probsOf(sd, sd.loadModel(big)); // the module goes on
});
