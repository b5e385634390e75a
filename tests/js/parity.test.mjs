// Parity with the native build: the same seed and settings give the same tokens from the
// native CLI (build/specdec ... --json) and from the WASM package. Needs the native CLI:
// skipped when it is missing, a failure when SPECDEC_REQUIRE_NATIVE=1 (scripts/test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadSpecdec } from 'specdec';
import { MODEL_FILES, NATIVE_CLI, REQUIRE_NATIVE, ROOT, modelBytes } from './support.mjs';

const sd = await loadSpecdec();
const haveNative = existsSync(NATIVE_CLI);
const skip = !haveNative && !REQUIRE_NATIVE ? `native CLI not built (${NATIVE_CLI})` : false;

function native(args) {
  assert.ok(haveNative, `native CLI missing: ${NATIVE_CLI}`);
  const out = execFileSync(NATIVE_CLI, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  return JSON.parse(out);
}

// The lesson's toy pair (src/cli/cmd_core.cc): context-free, 6 tokens, prompt [0].
const TOY_TARGET = Float32Array.from([0.4, 0.25, 0.15, 0.1, 0.06, 0.04]);
const TOY_DRAFT = Float32Array.from([0.3, 0.3, 0.2, 0.1, 0.06, 0.04]);

for (const { seed, gamma, maxTokens } of [
  { seed: 1, gamma: 4, maxTokens: 12 },
  { seed: 42, gamma: 4, maxTokens: 12 },
  { seed: 7, gamma: 1, maxTokens: 40 },
  { seed: 2 ** 40 + 3, gamma: 7, maxTokens: 100 },
]) {
  test(`toy-demo parity: seed ${seed}, gamma ${gamma}, ${maxTokens} tokens`, { skip }, () => {
    const ref = native([
      'toy-demo',
      '--seed',
      String(seed),
      '--gamma',
      String(gamma),
      '--max-tokens',
      String(maxTokens),
      '--json',
    ]);
    const dec = sd.createDecoder({
      targetStep: () => TOY_TARGET,
      draftStep: () => TOY_DRAFT,
      gamma,
      seed,
      prompt: [0],
      maxTokens,
    });
    const trace = [];
    while (!dec.done) {
      const it = dec.step();
      trace.push({ proposed: it.proposed, n_accepted: it.nAccepted, emitted: it.emitted });
    }
    assert.deepEqual(dec.generatedTokens, ref.tokens);
    assert.deepEqual(trace, ref.trace);
    dec.dispose();
  });
}

// Issue 41. Seeds over the whole 64-bit range, as in JS (a bigint there): the native CLI takes
// --seed 0..2^64 - 1 and gives the WASM package's tokens for the same seed; it used to clamp
// 2^63 and above to 2^63 - 1. Out of range or malformed, it refuses, naming --seed.
const BIG_SEEDS = [2n ** 53n + 1n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 63n + 12345n, 2n ** 64n - 1n];
for (const seed of BIG_SEEDS) {
  test(`toy-demo parity at 64-bit seed ${seed}`, { skip }, () => {
    const ref = native(['toy-demo', '--seed', String(seed), '--gamma', '3', '--max-tokens', '40', '--json']);
    const dec = sd.createDecoder({
      targetStep: () => TOY_TARGET,
      draftStep: () => TOY_DRAFT,
      gamma: 3,
      seed,
      prompt: [0],
      maxTokens: 40,
    });
    while (!dec.done) dec.step();
    assert.deepEqual(dec.generatedTokens, ref.tokens);
    dec.dispose();
  });
}
test('64-bit seeds near 2^63 decode differently (no clamping)', { skip }, () => {
  const tokens = (seed) =>
    native(['toy-demo', '--seed', String(seed), '--gamma', '3', '--max-tokens', '40', '--json']).tokens;
  assert.notDeepEqual(tokens(2n ** 64n - 1n), tokens(2n ** 63n - 1n));
  assert.notDeepEqual(tokens(2n ** 63n), tokens(2n ** 63n - 1n));
});

const BAD_SEEDS = ['18446744073709551616', '99999999999999999999999', '-1', '-0', '+5', ' 5', '5 ', '1e3', '0x10', ''];
for (const subcommand of ['toy-demo', 'generate']) {
  test(`${subcommand} refuses --seed outside [0, 2^64) or not an integer`, { skip }, () => {
    for (const seed of BAD_SEEDS) {
      const args =
        subcommand === 'toy-demo'
          ? ['toy-demo', '--json']
          : ['generate', '--target', MODEL_FILES.target, '--plain', '--prompt', 'a', '--max-tokens', '2', '--json'];
      const r = spawnSync(NATIVE_CLI, [...args, '--seed', seed], { cwd: ROOT, encoding: 'utf8' });
      assert.notEqual(r.status, 0, `--seed '${seed}' was accepted: ${r.stdout.slice(0, 80)}`);
      assert.ok(
        r.stderr.includes(`--seed: must be an integer in [0, 2^64), got '${seed}'`),
        `--seed '${seed}': ${r.stderr}`,
      );
    }
  });
}

// specdec generate with the models of support.mjs (the shipped pair when present).
const GENERATE_CASES = [
  { name: 'speculative, temperature 0.8', gamma: 4, temperature: 0.8, seed: 42, maxTokens: 60 },
  {
    name: 'speculative, gamma 2, top-k 20, top-p 0.9',
    gamma: 2,
    temperature: 1,
    topK: 20,
    topP: 0.9,
    seed: 5,
    maxTokens: 60,
  },
  { name: 'speculative, greedy', gamma: 5, temperature: 0, seed: 0, maxTokens: 60 },
  { name: 'plain, temperature 1', plain: true, temperature: 1, seed: 9, maxTokens: 60 },
];

const bytes = await modelBytes();

for (const c of GENERATE_CASES) {
  test(`generate parity (${c.name})`, { skip }, () => {
    const prompt = 'ROMEO:';
    const args = [
      'generate',
      '--target',
      MODEL_FILES.target,
      '--prompt',
      prompt,
      '--seed',
      String(c.seed),
      '--max-tokens',
      String(c.maxTokens),
      '--temperature',
      String(c.temperature),
      '--json',
    ];
    if (c.plain) args.push('--plain');
    else args.push('--draft', MODEL_FILES.draft, '--gamma', String(c.gamma));
    if (c.topK !== undefined) args.push('--top-k', String(c.topK));
    if (c.topP !== undefined) args.push('--top-p', String(c.topP));
    const ref = native(args);

    const target = sd.loadModel(bytes.target);
    const draft = c.plain ? undefined : sd.loadModel(bytes.draft);
    const options = {
      target,
      prompt,
      seed: c.seed,
      maxTokens: c.maxTokens,
      temperature: c.temperature,
    };
    if (c.plain) options.plain = true;
    else Object.assign(options, { draft, gamma: c.gamma });
    if (c.topK !== undefined) options.topK = c.topK;
    if (c.topP !== undefined) options.topP = c.topP;
    const dec = sd.createDecoder(options);
    const trace = [];
    while (!dec.done) {
      const it = dec.step();
      trace.push({ proposed: it.proposed, n_accepted: it.nAccepted, emitted: it.emitted });
    }
    assert.deepEqual(dec.generatedTokens, ref.tokens);
    assert.deepEqual(
      trace,
      ref.trace.map(({ proposed, n_accepted, emitted }) => ({ proposed, n_accepted, emitted })),
    );
    // Both decode bytes as TextDecoder does (ill-formed UTF-8 -> U+FFFD per maximal subpart).
    assert.equal(dec.generatedText, ref.text);
    assert.equal(dec.stats.accepted, ref.stats.accepted);
    dec.dispose();
    target.dispose();
    draft?.dispose();
  });
}
