// Nothing leaks: creating and disposing 1000 models and decoders (and going through the error
// paths 1000 times) leaves the wasm heap where it was, up to a small bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { loadSpecdec } from 'specdec';
import { TINY_MODEL } from './support.mjs';

const sd = await loadSpecdec({}); // an instance of its own: nothing else allocates in it
const tinyBytes = await readFile(TINY_MODEL);
const P = Float32Array.from([0.5, 0.3, 0.2]);
const Q = Float32Array.from([0.2, 0.3, 0.5]);

// Bytes malloc'ed and not freed may move by allocator bookkeeping, never by a lost object:
// one leaked model alone would be ~220 KB, one decoder's KV caches ~650 KB.
const BOUND = 64 * 1024;

function round(i) {
  const target = sd.loadModel(tinyBytes);
  const draft = sd.loadModel(tinyBytes);
  const spec = sd.createDecoder({ target, draft, gamma: 3, seed: i, prompt: 'ab', maxTokens: 6 });
  while (!spec.done) spec.step();
  const plain = sd.createDecoder({ target, plain: true, seed: i, prompt: [104, 105], maxTokens: 2 });
  plain.step();
  // Disposing the model first is allowed: the decoders share the weights.
  target.dispose();
  plain.step();
  spec.dispose();
  plain.dispose();
  draft.dispose();

  const toy = sd.createDecoder({ targetStep: () => P, draftStep: () => Q, gamma: 4, seed: i, prompt: [0], maxTokens: 9 });
  toy.step();
  toy.dispose();
  const rng = sd.createRng(i);
  sd.speculativeVerify([P, P], [Q], [1], rng);
  rng.dispose();
}

function errorRound(i) {
  const rng = sd.createRng(i);
  const attempts = [
    () => sd.loadModel(tinyBytes.subarray(0, 5000)),
    () => sd.acceptanceRate([0.5, NaN], [0.5, 0.5]),
    () => sd.speculativeVerify([P, [2, 0, 0]], [Q], [0], rng),
    () => sd.createDecoder({ targetStep: () => P, draftStep: () => Q, gamma: 40, prompt: [0] }),
    () => sd.createDecoder({ targetStep: () => P, draftStep: () => Q, prompt: [0], topP: 2 }),
  ];
  for (const attempt of attempts) assert.throws(attempt);
  rng.dispose();
  const throwing = sd.createDecoder({
    targetStep: () => {
      throw new Error('from JS');
    },
    draftStep: () => Q,
    gamma: 2,
    prompt: [0],
    seed: i,
  });
  assert.throws(() => throwing.step(), /from JS/);
  throwing.dispose();
  const invalid = sd.createDecoder({ targetStep: () => [1, 1, 1], draftStep: () => Q, prompt: [0], seed: i });
  assert.throws(() => invalid.step(), /invalid distribution/);
  invalid.dispose();
}

test('1000 models and decoders created and disposed: the wasm heap does not grow', () => {
  // Warm-up: first-use allocations (statics, allocator arenas) happen here.
  for (let i = 0; i < 5; i++) round(i);
  const before = sd.memoryStats();
  for (let i = 0; i < 1000; i++) round(i);
  const after = sd.memoryStats();
  const grown = after.inUseBytes - before.inUseBytes;
  assert.ok(grown <= BOUND, `in use grew by ${grown} bytes (${before.inUseBytes} -> ${after.inUseBytes})`);
  assert.equal(after.jsHandles, before.jsHandles, 'JS values held by C++');
  // The memory itself only grows while something big is alive at once (a few MB here).
  assert.ok(after.heapBytes <= Math.max(before.heapBytes, 64 << 20), `wasm memory ${after.heapBytes} bytes`);
});

test('1000 rounds of errors (C++ and JS exceptions through wasm): nothing leaks', () => {
  for (let i = 0; i < 5; i++) errorRound(i);
  const before = sd.memoryStats();
  for (let i = 0; i < 1000; i++) errorRound(i);
  const after = sd.memoryStats();
  const grown = after.inUseBytes - before.inUseBytes;
  assert.ok(grown <= BOUND, `in use grew by ${grown} bytes (${before.inUseBytes} -> ${after.inUseBytes})`);
  assert.equal(after.jsHandles, before.jsHandles, 'JS values held by C++');
});
