// Bad input never aborts the wasm instance: it throws a SpecdecError whose message names the
// argument, and the module keeps working afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { loadSpecdec, SpecdecError } from 'specdec';
import { TINY_MODEL } from './support.mjs';

const sd = await loadSpecdec();
const tinyBytes = await readFile(TINY_MODEL);

const P = [0.5, 0.3, 0.2];
const Q = [0.2, 0.3, 0.5];
const toyStep = (row) => () => row;
const rng1 = sd.createRng(1);

// Proof that the instance survived: real computations give the right answers.
function assertStillWorks() {
  assert.ok(Math.abs(sd.acceptanceRate(P, Q) - 0.7) < 1e-6);
  const rng = sd.createRng(3);
  const r = sd.speculativeVerify([P, P], [Q], [2], rng);
  assert.equal(r.emitted.length, r.nAccepted + 1);
  rng.dispose();
  const dec = sd.createDecoder({
    targetStep: toyStep(P),
    draftStep: toyStep(Q),
    prompt: [0],
    seed: 1,
    maxTokens: 5,
  });
  while (!dec.done) dec.step();
  assert.equal(dec.generatedTokens.length, 5);
  dec.dispose();
}

// [name, action, argument named at the start of the message, a fragment of the message]
const CASES = [
  ['NaN in p', () => sd.acceptanceRate([0.5, NaN, 0.5], Q), 'p', 'not finite'],
  ['negative q', () => sd.totalVariation(P, [1.2, -0.2, 0]), 'q', 'negative'],
  ['unnormalised p', () => sd.residualDistribution([0.5, 0.5, 0.5], Q), 'p', 'sum to 1.5'],
  ['lengths differ', () => sd.acceptanceRate(P, [0.5, 0.5]), 'p', 'vocabulary sizes differ'],
  ['not an array', () => sd.acceptanceRate('0.5', Q), 'p', 'expected a Float32Array'],
  ['a string entry', () => sd.totalVariation([0.5, '0.5'], [0.5, 0.5]), 'p', 'not a number'],
  ['empty distribution', () => sd.acceptanceRate([], []), 'p', 'empty'],
  ['verify: too few target rows', () => sd.speculativeVerify([P], [Q], [0], rng1), 'targetProbs', 'expected 2 rows'],
  [
    'verify: too many draft rows',
    () => sd.speculativeVerify([P, P], [Q, Q], [0], rng1),
    'draftProbs',
    'expected 1 rows',
  ],
  [
    'verify: short draft row',
    () => sd.speculativeVerify([P, P], [[0.5, 0.5]], [0], rng1),
    'draftProbs[0]',
    'expected 3 entries',
  ],
  [
    'verify: unnormalised draft row',
    () => sd.speculativeVerify([P, P], [[1, 1, 1]], [0], rng1),
    'draftProbs[0]',
    'sum to 3',
  ],
  [
    'verify: NaN in a target row',
    () => sd.speculativeVerify([P, [NaN, 0.5, 0.5]], [Q], [0], rng1),
    'targetProbs[1]',
    'not finite',
  ],
  [
    'verify: token out of range',
    () => sd.speculativeVerify([P, P], [Q], [3], rng1),
    'draftTokens[0]',
    'outside [0, 3)',
  ],
  ['verify: non-integer token', () => sd.speculativeVerify([P, P], [Q], [0.5], rng1), 'draftTokens[0]', 'token id'],
  [
    'verify: token the draft cannot propose',
    () => sd.speculativeVerify([P, P], [[0, 0.5, 0.5]], [0], rng1),
    'draftTokens[0]',
    'draft probability 0',
  ],
  ['verify: gamma 0', () => sd.speculativeVerify([P], [], [], rng1), 'draftTokens.length', '1..32'],
  [
    'verify: gamma 33',
    () => sd.speculativeVerify(Array(34).fill(P), Array(33).fill(Q), Array(33).fill(0), rng1),
    'draftTokens.length',
    '1..32',
  ],
  ['verify: no rng', () => sd.speculativeVerify([P, P], [Q], [0], null), 'rng', 'expected a Rng'],
  [
    'verify: unknown option',
    () => sd.speculativeVerify([P, P], [Q], [0], rng1, { greddy: true }),
    'greddy',
    'unknown option',
  ],
  ['analytics: alpha NaN', () => sd.expectedAcceptedTokens(NaN, 4), 'alpha', 'must be in [0, 1]'],
  ['analytics: alpha > 1', () => sd.speculativeSpeedup(1.5, 4, 0.1), 'alpha', 'must be in [0, 1]'],
  ['analytics: gamma 0', () => sd.expectedAcceptedTokens(0.5, 0), 'gamma', '1..32'],
  ['analytics: gamma 2.5', () => sd.speculativeSpeedup(0.5, 2.5, 0.1), 'gamma', 'integer'],
  ['analytics: negative cost', () => sd.speculativeSpeedup(0.5, 4, -1), 'c', 'finite number >= 0'],
  ['analytics: verifyCost 0', () => sd.speculativeSpeedup(0.5, 4, 0.1, 0), 'verifyCost', '> 0'],
  ['analytics: gammaMax 40', () => sd.optimalGamma(0.5, 0.1, 40), 'gammaMax', '1..32'],
  ['analytics: unknown option', () => sd.demonstrateSpeculative({ cost: 0.1 }), 'cost', 'unknown option'],
  ['seed: negative', () => sd.createRng(-1), 'seed', 'integer in [0, 2^53]'],
  ['seed: too large', () => sd.createRng(2 ** 60), 'seed', 'integer in [0, 2^53]'],
  ['seed: bigint too large', () => sd.createRng(1n << 64n), 'seed', '[0, 2^64)'],
  ['decoder: no options', () => sd.createDecoder(), 'options', 'prompt'],
  [
    'decoder: unknown option',
    () => sd.createDecoder({ targetStep: toyStep(P), draftStep: toyStep(Q), prompt: [0], gama: 4 }),
    'gama',
    'unknown option',
  ],
  [
    'decoder: gamma 0',
    () => sd.createDecoder({ targetStep: toyStep(P), draftStep: toyStep(Q), prompt: [0], gamma: 0 }),
    'gamma',
    '1..32',
  ],
  [
    'decoder: gamma 33',
    () => sd.createDecoder({ targetStep: toyStep(P), draftStep: toyStep(Q), prompt: [0], gamma: 33 }),
    'gamma',
    '1..32',
  ],
  [
    'decoder: empty prompt',
    () => sd.createDecoder({ targetStep: toyStep(P), draftStep: toyStep(Q), prompt: [] }),
    'prompt',
    'at least one token',
  ],
  [
    'decoder: no prompt',
    () => sd.createDecoder({ targetStep: toyStep(P), draftStep: toyStep(Q) }),
    'prompt',
    'required',
  ],
  ['decoder: no draft', () => sd.createDecoder({ targetStep: toyStep(P), prompt: [0] }), 'draft', 'exactly one'],
  [
    'decoder: both target kinds',
    () => sd.createDecoder({ target: {}, targetStep: toyStep(P), draftStep: toyStep(Q), prompt: [0] }),
    'target',
    'exactly one',
  ],
  [
    'decoder: target not a Model',
    () => sd.createDecoder({ target: {}, draftStep: toyStep(Q), prompt: [0] }),
    'target',
    'expected a Model',
  ],
  [
    'decoder: step not a function',
    () => sd.createDecoder({ targetStep: P, draftStep: toyStep(Q), prompt: [0] }),
    'targetStep',
    'expected a function',
  ],
  [
    'decoder: negative temperature',
    () =>
      sd.createDecoder({
        targetStep: toyStep(P),
        draftStep: toyStep(Q),
        prompt: [0],
        temperature: -1,
      }),
    'temperature',
    '>= 0',
  ],
  [
    'decoder: topP 0',
    () => sd.createDecoder({ targetStep: toyStep(P), draftStep: toyStep(Q), prompt: [0], topP: 0 }),
    'topP',
    '(0, 1]',
  ],
  [
    'decoder: topK -1',
    () => sd.createDecoder({ targetStep: toyStep(P), draftStep: toyStep(Q), prompt: [0], topK: -1 }),
    'topK',
    'must be in',
  ],
  [
    'decoder: seed 1.5',
    () => sd.createDecoder({ targetStep: toyStep(P), draftStep: toyStep(Q), prompt: [0], seed: 1.5 }),
    'seed',
    'integer',
  ],
  [
    'decoder: bad prompt token',
    () => sd.createDecoder({ targetStep: toyStep(P), draftStep: toyStep(Q), prompt: [0, -3] }),
    'prompt[1]',
    'token id',
  ],
  ['model: not bytes', () => sd.loadModel('model.safetensors'), 'bytes', 'expected a Uint8Array'],
  ['model: too short', () => sd.loadModel(new Uint8Array(5)), 'bytes', 'model file'],
  [
    'model: header length past the end',
    () => sd.loadModel(new Uint8Array([255, 255, 0, 0, 0, 0, 0, 0, 123])),
    'bytes',
    'model file: header length',
  ],
  [
    'model: header not JSON',
    () => sd.loadModel(new Uint8Array([4, 0, 0, 0, 0, 0, 0, 0, 0x7b, 0x7b, 0x7d, 0x7d])),
    'bytes',
    'JSON',
  ],
  ['model: truncated file', () => sd.loadModel(tinyBytes.subarray(0, tinyBytes.length - 100)), 'bytes', 'model file'],
  [
    'model: corrupted header',
    () => {
      const b = Uint8Array.from(tinyBytes);
      b[20] = 0x01; // inside the JSON header
      return sd.loadModel(b);
    },
    'bytes',
    'model file',
  ],
];

for (const [name, action, argument, fragment] of CASES) {
  test(`bad input: ${name} -> SpecdecError naming ${argument}`, () => {
    assert.throws(action, (e) => {
      assert.ok(e instanceof SpecdecError, `${e?.name}: ${e?.message}`);
      assert.ok(e instanceof Error);
      assert.equal(e.name, 'SpecdecError');
      assert.equal(e.argument, argument, e.message);
      assert.ok(e.message.startsWith(argument), e.message);
      assert.ok(e.message.includes(fragment), `"${e.message}" lacks "${fragment}"`);
      return true;
    });
    assertStillWorks();
  });
}

test('a step function that returns a bad distribution is named', () => {
  for (const [bad, fragment] of [
    [() => [0.5, 0.6, 0.2], 'sum to 1.3'],
    [() => [NaN, 0.5, 0.5], 'not finite'],
    [() => [1.5, -0.5, 0], 'negative'],
  ]) {
    const dec = sd.createDecoder({ targetStep: bad, draftStep: toyStep(Q), prompt: [0], seed: 1 });
    assert.throws(
      () => dec.step(),
      (e) =>
        e instanceof SpecdecError &&
        e.message.startsWith('targetStep: returned an invalid distribution') &&
        e.message.includes(fragment),
    );
    dec.dispose();
  }
  let calls = 0;
  const changing = () => (++calls === 1 ? [0.5, 0.5] : [0.2, 0.3, 0.5]);
  const dec = sd.createDecoder({
    targetStep: toyStep(P),
    draftStep: changing,
    prompt: [0],
    seed: 1,
    gamma: 2,
  });
  assert.throws(() => dec.step(), /^SpecdecError: draftStep: returned 3 probabilities, expected 2/);
  dec.dispose();
  const wrongType = sd.createDecoder({
    targetStep: () => 'abc',
    draftStep: toyStep(Q),
    prompt: [0],
    seed: 1,
  });
  assert.throws(() => wrongType.step(), /targetStep\(…\) result: expected a Float32Array/);
  wrongType.dispose();
  const promise = sd.createDecoder({
    targetStep: async () => P,
    draftStep: toyStep(Q),
    prompt: [0],
    seed: 1,
  });
  assert.throws(() => promise.step(), /targetStep: must return the probabilities synchronously/);
  promise.dispose();
  assertStillWorks();
});

test("a step function's own exception comes out unchanged, and the decoder carries on", () => {
  const boom = new RangeError('boom');
  let fail = true;
  const dec = sd.createDecoder({
    targetStep: () => {
      if (fail) throw boom;
      return P;
    },
    draftStep: toyStep(Q),
    prompt: [0],
    seed: 5,
    maxTokens: 10,
  });
  for (let i = 0; i < 3; i++)
    assert.throws(
      () => dec.step(),
      (e) => e === boom,
    );
  fail = false;
  while (!dec.done) dec.step();
  assert.equal(dec.generatedTokens.length, 10);
  dec.dispose();
  assertStillWorks();
});

test('a disposed object used again throws a clear error; dispose is idempotent', () => {
  const rng = sd.createRng(1);
  rng.dispose();
  rng.dispose();
  assert.equal(rng.disposed, true);
  assert.throws(() => rng.uniform(), /^SpecdecError: Rng.uniform: this Rng has been disposed/);
  assert.throws(
    () => sd.speculativeVerify([P, P], [Q], [0], rng),
    (e) => e.argument === 'rng' && /disposed/.test(e.message),
  );

  const model = sd.loadModel(tinyBytes);
  model.dispose();
  assert.throws(
    () => sd.createDecoder({ target: model, draftStep: toyStep(Q), prompt: 'a' }),
    (e) => e.argument === 'target' && /this Model has been disposed/.test(e.message),
  );

  const dec = sd.createDecoder({
    targetStep: toyStep(P),
    draftStep: toyStep(Q),
    prompt: [0],
    seed: 1,
  });
  dec.dispose();
  assert.throws(() => dec.step(), /^SpecdecError: Decoder.step: this Decoder has been disposed/);
  assert.throws(() => dec.tokens, /disposed/);
  assert.throws(() => dec.stats, /disposed/);
  assertStillWorks();
});

test('step() on a finished decoder and re-entrant step() throw', () => {
  const dec = sd.createDecoder({
    targetStep: toyStep(P),
    draftStep: toyStep(Q),
    prompt: [0],
    seed: 1,
    maxTokens: 1,
  });
  dec.step();
  assert.equal(dec.done, true);
  assert.throws(() => dec.step(), /Decoder.step: the decoder is done/);
  dec.dispose();

  let inner = null;
  const reentrant = sd.createDecoder({
    targetStep: () => {
      inner = reentrant.step();
      return P;
    },
    draftStep: toyStep(Q),
    prompt: [0],
    seed: 1,
  });
  assert.throws(() => reentrant.step(), /called re-entrantly/);
  assert.equal(inner, null);
  reentrant.dispose();
  assertStillWorks();
});

test('a model from another instance is refused', async () => {
  const other = await loadSpecdec({});
  const model = other.loadModel(tinyBytes);
  assert.throws(
    () => sd.createDecoder({ target: model, plain: true, prompt: 'a' }),
    /belongs to another specdec instance/,
  );
  model.dispose();
  assertStillWorks();
});

// Issue 41. dispose() from inside a callback of the running step(): the step throws a
// SpecdecError saying so (not Embind's BindingError), the decoder is disposed, its wasm memory
// is freed once the step has returned (not under the running C++ call), and the instance works.
const V16 = (tokens, nLast) => new Float32Array(nLast * 16); // uniform logits over 16 tokens
const DISPOSED_BY_CALLBACK = [
  ['sync targetScore', (dec) => ({ draftScore: V16, targetScore: (t, n) => (dec().dispose(), V16(t, n)) })],
  ['sync draftScore', (dec) => ({ draftScore: (t, n) => (dec().dispose(), V16(t, n)), targetScore: V16 })],
  ['sync targetScore, plain', (dec) => ({ plain: true, targetScore: (t, n) => (dec().dispose(), V16(t, n)) })],
  [
    'sync targetScore.scoreTree',
    (dec) => {
      const targetScore = (t, n) => V16(t, n);
      targetScore.scoreTree = (t, tree) => (dec().dispose(), V16(t, tree.tokens.length + 1));
      return {
        draftStep: () => new Float32Array(16).fill(1 / 16),
        targetScore,
        tree: { branches: [2, 1] },
      };
    },
  ],
  ['async targetScore', (dec) => ({ draftScore: V16, targetScore: async (t, n) => (dec().dispose(), V16(t, n)) })],
  ['async draftScore', (dec) => ({ draftScore: async (t, n) => (dec().dispose(), V16(t, n)), targetScore: V16 })],
  ['targetStep', (dec) => ({ targetStep: () => (dec().dispose(), P), draftStep: toyStep(Q) })],
  ['draftStep', (dec) => ({ targetStep: toyStep(P), draftStep: () => (dec().dispose(), Q) })],
  ['targetStep, plain', (dec) => ({ plain: true, targetStep: () => (dec().dispose(), P) })],
];

for (const [what, callbacks] of DISPOSED_BY_CALLBACK) {
  test(`dispose() inside ${what}: step() throws a SpecdecError, the memory is freed`, async () => {
    const before = sd.memoryStats();
    let dec = null;
    dec = sd.createDecoder({ prompt: [1], seed: 3, gamma: 2, ...callbacks(() => dec) });
    await assert.rejects(
      async () => dec.step(),
      (e) => {
        assert.ok(e instanceof SpecdecError, `${e?.name}: ${e?.message}`);
        assert.match(e.message, /^Decoder\.step: this Decoder has been disposed/);
        return true;
      },
    );
    assert.equal(dec.disposed, true);
    assert.throws(() => dec.step(), /^SpecdecError: Decoder\.step: this Decoder has been disposed/);
    const after = sd.memoryStats();
    assert.ok(
      after.inUseBytes - before.inUseBytes < 4096,
      `in use grew by ${after.inUseBytes - before.inUseBytes} bytes`,
    );
    assertStillWorks();
  });
}

// Issue 41. Score callbacks: the vocabulary is known at their first answer (its row width);
// a prompt token id outside it is refused then, naming the prompt's entry.
const OUTSIDE_VOCABULARY = [
  ['plain targetScore', { plain: true, targetScore: V16, prompt: [3, 16] }, 'prompt[1]', 16],
  ['speculative, sync', { draftScore: V16, targetScore: V16, prompt: [200] }, 'prompt[0]', 200],
  [
    'speculative, async',
    {
      draftScore: async (t, n) => V16(t, n),
      targetScore: async (t, n) => V16(t, n),
      prompt: [0, 1, 2, 99],
    },
    'prompt[3]',
    99,
  ],
  ['prompt lookup alone', { promptLookup: true, targetScore: V16, prompt: [1, 17, 1] }, 'prompt[1]', 17],
  [
    'step model + draftScore',
    {
      targetStep: () => Float32Array.from({ length: 16 }, () => 1 / 16),
      draftScore: V16,
      prompt: [1, 16],
    },
    'prompt[1]',
    16,
  ],
];
for (const [what, options, argument, id] of OUTSIDE_VOCABULARY) {
  test(`score callbacks (${what}): a prompt token id >= the rows' vocabulary is refused`, async () => {
    const dec = sd.createDecoder({ seed: 1, gamma: 2, ...options });
    await assert.rejects(
      async () => dec.step(),
      (e) => {
        assert.ok(e instanceof SpecdecError, `${e?.name}: ${e?.message}`);
        assert.equal(e.argument, argument, e.message);
        assert.ok(e.message.includes(`token id ${id} is outside the vocabulary`), e.message);
        return true;
      },
    );
    dec.dispose();
    // Inside the vocabulary, the same decoder runs.
    const ok = sd.createDecoder({
      seed: 1,
      gamma: 2,
      ...options,
      prompt: options.prompt.map((t) => t % 16),
      maxTokens: 4,
    });
    while (!ok.done) await ok.step();
    assert.equal(ok.generatedTokens.length, 4);
    ok.dispose();
    assertStillWorks();
  });
}

// Issue 41. A detokenize that throws while a committed iteration's record is made: the step
// throws a SpecdecError naming detokenize whose record is that iteration's (the tokens are in
// the decoder already), with the caller's exception as its cause; the decoder carries on.
const DETOKENIZE_THROWS = [
  [
    'step functions',
    {
      targetStep: () => Float32Array.from({ length: 16 }, () => 1 / 16),
      draftStep: () => Float32Array.from({ length: 16 }, () => 1 / 16),
    },
    false,
  ],
  ['sync score callbacks', { targetScore: V16, draftScore: V16 }, false],
  ['async score callbacks', { targetScore: async (t, n) => V16(t, n), draftScore: V16 }, false],
  [
    'step functions, generate()',
    { targetStep: () => Float32Array.from({ length: 16 }, () => 1 / 16), plain: true },
    true,
  ],
];
for (const [what, options, viaGenerate] of DETOKENIZE_THROWS) {
  test(`a throwing detokenize (${what}): the record comes with the error`, async () => {
    const boom = new TypeError('tokenizer broke');
    let broken = true;
    const detokenize = (ids) => {
      if (broken) throw boom;
      return ids.map((t) => String.fromCharCode(97 + t)).join('');
    };
    const dec = sd.createDecoder({ prompt: [1, 2], seed: 4, gamma: 3, detokenize, ...options });
    const next = async () => {
      if (!viaGenerate) return dec.step();
      for await (const it of dec.generate({ maxTokens: 3 })) return it;
      return null;
    };
    let lost = null;
    await assert.rejects(next, (e) => {
      assert.ok(e instanceof SpecdecError, `${e?.name}: ${e?.message}`);
      assert.equal(e.argument, 'detokenize');
      assert.equal(e.cause, boom);
      lost = e.record;
      return true;
    });
    assert.ok(lost, 'the error carries the record');
    assert.equal(lost.iteration, 0);
    assert.ok(lost.emitted.length >= 1);
    assert.deepEqual(dec.generatedTokens, lost.emitted, "the record is the committed iteration's");
    assert.equal(typeof lost.ms, 'number');
    broken = false;
    const it = await next();
    assert.equal(it.iteration, 1);
    assert.deepEqual(dec.generatedTokens, [...lost.emitted, ...it.emitted]);
    assert.equal(it.emittedText, it.emitted.map((t) => String.fromCharCode(97 + t)).join(''));
    dec.dispose();
    assertStillWorks();
  });
}
