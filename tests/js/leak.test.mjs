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
  const plain = sd.createDecoder({
    target,
    plain: true,
    seed: i,
    prompt: [104, 105],
    maxTokens: 2,
  });
  plain.step();
  // Disposing the model first is allowed: the decoders share the weights.
  target.dispose();
  plain.step();
  spec.dispose();
  plain.dispose();
  draft.dispose();

  const toy = sd.createDecoder({
    targetStep: () => P,
    draftStep: () => Q,
    gamma: 4,
    seed: i,
    prompt: [0],
    maxTokens: 9,
  });
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
  const invalid = sd.createDecoder({
    targetStep: () => [1, 1, 1],
    draftStep: () => Q,
    prompt: [0],
    seed: i,
  });
  assert.throws(() => invalid.step(), /invalid distribution/);
  invalid.dispose();
}

/**
 * Runs `round(i)` 5 times (the warm-up: first-use allocations such as statics and allocator
 * arenas happen there), then 1000 times, and asserts that the wasm heap in use grew by at most
 * BOUND bytes and that C++ holds no more JS values than before; returns the memory stats around
 * the 1000 rounds.
 */
function assertRoundsLeakNothing(round) {
  for (let i = 0; i < 5; i++) round(i);
  const before = sd.memoryStats();
  for (let i = 0; i < 1000; i++) round(i);
  const after = sd.memoryStats();
  const grown = after.inUseBytes - before.inUseBytes;
  assert.ok(grown <= BOUND, `in use grew by ${grown} bytes (${before.inUseBytes} -> ${after.inUseBytes})`);
  assert.equal(after.jsHandles, before.jsHandles, 'JS values held by C++');
  return { before, after };
}

test('1000 models and decoders created and disposed: the wasm heap does not grow', () => {
  const { before, after } = assertRoundsLeakNothing(round);
  // The memory itself only grows while something big is alive at once (a few MB here).
  assert.ok(after.heapBytes <= Math.max(before.heapBytes, 64 << 20), `wasm memory ${after.heapBytes} bytes`);
});

test('1000 rounds of errors (C++ and JS exceptions through wasm): nothing leaks', () => {
  assertRoundsLeakNothing(errorRound);
});

// A failed load frees everything it took, to the byte: 1000 failed loads of each kind (and of
// every file of the fuzzers' seed corpora that is refused) leave inUseBytes where it was. A lost
// allocation per load, however small (the smallest malloc chunk is 16 bytes), shows as >= 16,000
// bytes; the bound allows allocator bookkeeping only.
const FAILED_LOADS = 1000;
const PER_LOAD_BOUND = FAILED_LOADS; // < 1 byte per failed load
const nanWeight = (() => {
  // The first weight of the fixture (f32) set to NaN: refused by the loader's finiteness check.
  const b = Uint8Array.from(tinyBytes);
  const headerLength = Number(new DataView(b.buffer).getBigUint64(0, true));
  new DataView(b.buffer).setFloat32(8 + headerLength, NaN, true);
  return b;
})();
const json = (text) => {
  const h = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + h.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  return out;
};
const FAILED_LOAD_CASES = [
  ['truncated', () => sd.loadModel(tinyBytes.subarray(0, 5000))],
  ['truncated, weights f32', () => sd.loadModel(tinyBytes.subarray(0, 5000), { weights: 'f32' })],
  ['truncated, weights int8', () => sd.loadModel(tinyBytes.subarray(0, 5000), { weights: 'int8' })],
  ['bad JSON', () => sd.loadModel(json('{"a": [1, 2'))],
  ['NaN weight', () => sd.loadModel(nanWeight)],
  ['empty', () => sd.loadModel(new Uint8Array(0))],
  ['heads: truncated', () => sd.loadHeads(tinyBytes.subarray(0, 5000), leakTarget())],
  ['quantizeModelFile: truncated', () => sd.quantizeModelFile(tinyBytes.subarray(0, 5000))],
];
let heldTarget = null;
const leakTarget = () => (heldTarget ??= sd.loadModel(tinyBytes));

for (const [what, load] of FAILED_LOAD_CASES) {
  test(`${FAILED_LOADS} failed loads (${what}): inUseBytes unchanged`, () => {
    leakTarget();
    for (let i = 0; i < 5; i++) assert.throws(load, sd.SpecdecError);
    const before = sd.memoryStats();
    for (let i = 0; i < FAILED_LOADS; i++) assert.throws(load, sd.SpecdecError);
    const after = sd.memoryStats();
    const grown = after.inUseBytes - before.inUseBytes;
    assert.ok(
      grown < PER_LOAD_BOUND,
      `in use grew by ${grown} bytes over ${FAILED_LOADS} failed loads (${before.inUseBytes} -> ${after.inUseBytes})`,
    );
    assert.equal(after.jsHandles, before.jsHandles, 'JS values held by C++');
  });
}

// The fuzzers' seed corpora (tests/fuzz/corpus): hostile model and heads files. Each is loaded
// 200 times through the package (disposed when it loads); the heap must not move.
test('the fuzz corpora through loadModel / loadHeads: no leak per load, failed or not', async () => {
  const { readdir } = await import('node:fs/promises');
  const { ROOT } = await import('./support.mjs');
  const target = leakTarget();
  const files = [];
  for (const [dir, load] of [
    ['model', (b) => sd.loadModel(b)],
    ['model', (b) => sd.loadModel(b, { weights: 'int8' })],
    ['heads', (b) => sd.loadHeads(b, target)],
  ]) {
    for (const name of await readdir(`${ROOT}/tests/fuzz/corpus/${dir}`)) {
      files.push({
        name: `${dir}/${name}`,
        bytes: await readFile(`${ROOT}/tests/fuzz/corpus/${dir}/${name}`),
        load,
      });
    }
  }
  const once = ({ bytes, load }) => {
    try {
      load(bytes).dispose();
      return true;
    } catch (e) {
      if (!(e instanceof sd.SpecdecError)) throw e;
      return false;
    }
  };
  let refused = 0;
  for (const f of files) {
    for (let i = 0; i < 3; i++) once(f);
    const before = sd.memoryStats();
    let loaded = 0;
    for (let i = 0; i < 200; i++) loaded += once(f) ? 1 : 0;
    const after = sd.memoryStats();
    if (loaded === 0) refused++;
    const grown = after.inUseBytes - before.inUseBytes;
    assert.ok(grown < 200, `${f.name}: in use grew by ${grown} bytes over 200 loads (${loaded} loaded)`);
    assert.equal(after.jsHandles, before.jsHandles, `${f.name}: JS values held by C++`);
  }
  assert.ok(refused >= 20, `the corpora hold hostile files (${refused} refused)`);
});
