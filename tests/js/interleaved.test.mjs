// bench/interleaved.mjs, the two-threads-against-one measurement of bench/load.mjs: decoders
// stepped in turn (A B B A ..., chunks of a given time), the first step untimed, tokens compared, each decoder's pool
// counters its own, every decoder disposed, bad input refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { loadSpecdec } from 'specdec';
import { decodeInterleaved } from '../../bench/interleaved.mjs';
import { MODEL_FILES } from './support.mjs';

// A decoder that logs its steps: `steps` steps, one token each, tokens from `tokens`.
function fakeDecoder(name, log, steps, tokens = [...Array(steps).keys()]) {
  const generatedTokens = [];
  return {
    get done() {
      return generatedTokens.length === steps;
    },
    generatedTokens,
    step() {
      log.push(name);
      generatedTokens.push(tokens[generatedTokens.length]);
    },
    dispose() {
      log.push(`${name} disposed`);
    },
  };
}

test('interleaved: chunks alternate A B B A, the first step untimed, both disposed', () => {
  const run = (chunkMs) => {
    const log = [];
    const r = decodeInterleaved(
      [
        { threads: 1, decoder: fakeDecoder('a', log, 5) },
        { threads: 2, decoder: fakeDecoder('b', log, 5) },
      ],
      { chunkMs },
    );
    assert.deepEqual(
      r.map((x) => [x.threads, x.timedTokens, x.pool]),
      [
        [1, 4, null],
        [2, 4, null],
      ],
    );
    assert.ok(r.every((x) => x.ms >= 0 && x.msPerToken === x.ms / 4));
    return log.join(' ');
  };
  // A chunk of 0 ms is one step; a chunk longer than the decode is the rest of it.
  assert.equal(run(0), 'a b a b b a a b b a a disposed b disposed');
  assert.equal(run(1e9), 'a b a a a a b b b b a disposed b disposed');
});

test('interleaved: other tokens throw, and the decoders are still disposed', () => {
  const log = [];
  assert.throws(
    () =>
      decodeInterleaved([
        { threads: 1, decoder: fakeDecoder('a', log, 3, [5, 6, 7]) },
        { threads: 2, decoder: fakeDecoder('b', log, 3, [5, 6, 8]) },
      ]),
    /2 thread\(s\) decoded other tokens than 1/,
  );
  assert.deepEqual(log.slice(-2), ['a disposed', 'b disposed']);
  assert.throws(() => decodeInterleaved([], { chunkMs: -1 }), RangeError);
});

test("interleaved: one package instance at 1 and 2 threads, each decoder's pool counters its own", async () => {
  const sd = await loadSpecdec({ threads: 2 });
  const target = sd.loadModel(await readFile(MODEL_FILES.target));
  try {
    const open = (threads) => ({
      threads,
      before: () => sd.setThreads(threads),
      poolStats: () => sd.threadStats(),
      decoder: sd.createDecoder({ target, plain: true, prompt: 'To be', temperature: 0, maxTokens: 24, seed: 1 }),
    });
    const [one, two] = decodeInterleaved([open(1), open(2)], { chunkMs: 1 });
    assert.equal(one.timedTokens, 23);
    assert.equal(two.timedTokens, 23);
    // One thread's passes never reach the ledger; two threads' all do (on the workers or shed).
    assert.deepEqual(one.pool, { runs: 0, shed: 0 });
    assert.ok(two.pool.runs + two.pool.shed > 23 * 10, JSON.stringify(two.pool));
  } finally {
    target.dispose();
  }
});
