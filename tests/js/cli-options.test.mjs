// Issue 57, item 6: every integer option of the native CLI is refused when out of its range,
// naming the option and the value as given. Before, int-sized options were cast first
// (--min-ngram 4294967297 ran as 1, --repeats 4294967297 as 1), --stop clamped 99999999999 to
// 2^31 - 1, and --tree 5000 was clamped to 1000 and then refused as "got 1000". A float option
// refused is printed with the digits that tell it from the bound (--top-p 1.0000001 was "got
// 1"). Needs the native CLI: skipped when missing, a failure when SPECDEC_REQUIRE_NATIVE=1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { MODEL_FILES, NATIVE_CLI, REQUIRE_NATIVE, ROOT } from './support.mjs';

const skip = !existsSync(NATIVE_CLI) && !REQUIRE_NATIVE ? `native CLI not built (${NATIVE_CLI})` : false;

const GENERATE = ['generate', '--target', MODEL_FILES.target, '--prompt', 'a', '--max-tokens', '2'];
const LOOKUP = [...GENERATE, '--lookup'];
const TREE = [...GENERATE, '--draft', MODEL_FILES.draft];
const BIG = '4294967297'; // 2^32 + 1: 1 once cast to a 32-bit int
const HUGE = '99999999999999999999'; // past 2^64

// [arguments, the message expected on stderr]
const CASES = [
  [[...LOOKUP, '--min-ngram', BIG], `--min-ngram: must be in 1..32, got ${BIG}`],
  [[...LOOKUP, '--max-ngram', BIG], `--max-ngram: must be in 1..32, got ${BIG}`],
  [[...LOOKUP, '--min-ngram', '-4294967295'], '--min-ngram: must be in 1..32, got -4294967295'],
  [[...LOOKUP, '--max-ngram', HUGE], `--max-ngram: must be in 1..32, got ${HUGE}`],
  [[...GENERATE, '--plain', '--stop', '99999999999'], '--stop: must be in 0..2147483647, got 99999999999'],
  [[...GENERATE, '--plain', '--stop', '2,-1'], '--stop: must be in 0..2147483647, got -1'],
  [[...GENERATE, '--plain', '--stop', 'x'], "--stop: expected token ids like 2,32000, got 'x'"],
  [[...TREE, '--tree', `3,${BIG}`], `--tree: must be in 1..8, got ${BIG}`],
  [[...TREE, '--tree', '5000'], '--tree: must be in 1..8, got 5000'],
  [[...TREE, '--gamma', BIG], `--gamma: must be auto, heuristic or in 1..32, got ${BIG}`],
  [[...TREE, '--gamma-max', BIG], `--gamma-max: must be in 1..32, got ${BIG}`],
  [[...GENERATE, '--plain', '--top-k', BIG], `--top-k: must be in 0..1000000, got ${BIG}`],
  [[...GENERATE, '--plain', '--threads', BIG], `--threads: must be in 1..64, got ${BIG}`],
  [[...GENERATE, '--plain', '--max-tokens', HUGE], `--max-tokens: must be in 1..9007199254740991, got ${HUGE}`],
  [[...GENERATE, '--plain', '--max-tokens', '0'], '--max-tokens: must be in 1..9007199254740991, got 0'],
  [[...GENERATE, '--plain', '--threads', '2.5'], "--threads: not an integer: '2.5'"],
  [[...GENERATE, '--plain', '--top-p', '1.0000001'], 'topP: must be in (0, 1] (1 = off), got 1.0000001'],
  [[...GENERATE, '--plain', '--temperature', '-1e-7'], 'temperature: must be a finite number >= 0, got -1e-07'],
  [['toy-demo', '--gamma', BIG], `--gamma: must be in 1..32, got ${BIG}`],
  [['toy-demo', '--max-tokens', BIG], `--max-tokens: must be in 1..100000, got ${BIG}`],
  [['analytics', '--gamma-max', BIG], `--gamma-max: must be in 1..1000, got ${BIG}`],
  [['bench', '--repeats', BIG], `--repeats: must be in 1..1000, got ${BIG}`],
  [['bench', '--gamma-max', BIG], `--gamma-max: must be in 1..16, got ${BIG}`],
  [['bench', '--max-tokens', '-1'], '--max-tokens: must be in 1..100000, got -1'],
  [['bench', '--threads', BIG], `--threads: must be in 1..64, got ${BIG}`],
  [
    ['bench', '--threads', '2', '--thread-counts', `1,${BIG}`],
    `--thread-counts: must be counts in 1..2 (--threads), got ${BIG}`,
  ],
];

for (const [args, message] of CASES) {
  const shown = args.filter((a) => !a.includes('/'));
  test(`specdec ${shown.join(' ')} is refused: ${message}`, { skip }, () => {
    const r = spawnSync(NATIVE_CLI, args, { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    assert.notEqual(r.status, 0, `accepted: ${r.stdout.slice(0, 120)}`);
    assert.ok(r.stderr.includes(message), `expected "${message}", got: ${r.stderr}`);
  });
}

test('in-range values of the same options still run', { skip }, () => {
  const args = [...LOOKUP, '--min-ngram', '1', '--max-ngram', '32', '--stop', '2147483647', '--top-k', '1000000'];
  const r = spawnSync(NATIVE_CLI, [...args, '--threads', '2', '--top-p', '1', '--json'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).tokens.length, 2);
});
