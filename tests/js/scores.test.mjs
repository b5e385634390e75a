// Score callbacks (targetScore / draftScore): the decoder asks the caller for logits or
// probabilities — synchronously or through a Promise — one target call per iteration over
// gamma + 1 positions and one draft call per drafted token. Exactness with async callbacks and
// random delays, equality with the built-in engine, interleaved decoders, abort mid-iteration,
// clear errors. Also sd.modelStep (the lesson's model_step).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSpecdec } from 'specdec';
import { MARKOV_TARGET, MARKOV_DRAFT, applySampling, assertTransitionsFit, modelBytes } from './support.mjs';

const sd = await loadSpecdec();
const bytes = await modelBytes();
const target = sd.loadModel(bytes.target);
const draft = sd.loadModel(bytes.draft);

// A seeded generator for the tests' own delays (not the decoder's randomness).
function lcg(seed) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

// Resolves after a random wait: mostly a few microtask hops, sometimes a timer.
function delayer(seed) {
  const rand = lcg(seed);
  return async () => {
    const r = rand();
    if (r < 0.03) await new Promise((resolve) => setTimeout(resolve, 1));
    else for (let i = 0; i < Math.floor(r * 4); i++) await null;
  };
}

// Markov toys as score callbacks returning logits: log p, with a large finite negative logit
// where p is 0 (a finite "minus infinity").
const logRow = (row) => Float32Array.from(row, (p) => (p > 0 ? Math.log(p) : -1e4));
const TARGET_LOGITS = MARKOV_TARGET.map(logRow);
const DRAFT_LOGITS = MARKOV_DRAFT.map(logRow);
function markovScore(table, wait) {
  return async (tokens, nLast) => {
    await wait();
    const out = new Float32Array(nLast * 4);
    for (let i = 0; i < nLast; i++) out.set(table[tokens[tokens.length - nLast + i]], i * 4);
    return out;
  };
}

async function drain(dec) {
  const tokens = [];
  for await (const r of dec.generate()) tokens.push(...r.emitted);
  return tokens;
}

// One decoder of a law test, run to its maxTokens from its one-token prompt without keeping
// distributions: adds its transitions to counts[s][t] and returns its stats.
async function countTransitions(counts, options) {
  const dec = sd.createDecoder({ ...options, distributions: false });
  const tokens = [...options.prompt, ...(await drain(dec))];
  assert.equal(tokens.length, options.maxTokens + 1);
  for (let i = 1; i < tokens.length; i++) counts[tokens[i - 1]][tokens[i]]++;
  const stats = dec.stats;
  dec.dispose();
  return stats;
}

// ------------------------------------------------------------------ exactness

// 100 decoders x 500 tokens, all running at once on one event loop, each callback answering
// after a random wait: the emitted chain's transitions follow the target's filtered rows.
const CASES = [
  { name: 'gamma 2', gamma: 2 },
  { name: 'gamma 4, temperature 0.7, topK 3', gamma: 4, temperature: 0.7, topK: 3 },
  {
    name: "gamma 'auto' (given costs)",
    gamma: 'auto',
    gammaMax: 5,
    costModel: { c: 0.2, verifyCost: [1, 1.1, 1.2, 1.3, 1.4, 1.5] },
  },
  { name: 'plain decoding', plain: true },
];

for (const [k, c] of CASES.entries()) {
  test(`async score callbacks with random delays follow the target's law (${c.name})`, async () => {
    const { name, ...settings } = c;
    const expected = MARKOV_TARGET.map((row) => applySampling(row, settings));
    const counts = MARKOV_TARGET.map(() => new Array(4).fill(0));
    let drafted = 0;
    let accepted = 0;
    const runs = Array.from({ length: 100 }, async (_, run) => {
      const scores = { targetScore: markovScore(TARGET_LOGITS, delayer(run * 7 + k)) };
      if (!c.plain) scores.draftScore = markovScore(DRAFT_LOGITS, delayer(run * 13 + k));
      const seed = 9_000_000 + 1000 * k + run;
      const stats = await countTransitions(counts, { ...scores, ...settings, prompt: [run % 4], seed, maxTokens: 500 });
      drafted += stats.drafted;
      accepted += stats.accepted;
    });
    await Promise.all(runs);
    assertTransitionsFit(counts, expected);
    if (!c.plain) assert.ok(accepted < 0.9 * drafted, `accepted ${accepted} of ${drafted}`);
  });
}

// Score callbacks with a scoreTree method get trees (one call per tree: the root row, then a
// row per node, each row the Markov row of the path's last token). The emitted chain follows the
// target's law; every target call of a tree iteration is a scoreTree call.
function markovTree(table, wait, calls) {
  const score = markovScore(table, wait);
  score.scoreTree = async (tokens, tree) => {
    await wait();
    calls.push({ nodes: tree.tokens.length, first: tree.first, withRoot: tree.withRoot });
    const rows = [];
    if (tree.withRoot) rows.push(table[tokens[tokens.length - 1]]);
    for (let v = tree.first; v < tree.tokens.length; v++) {
      assert.ok(tree.parents[v] < v, 'parents come first');
      rows.push(table[tree.tokens[v]]);
    }
    const out = new Float32Array(rows.length * 4);
    rows.forEach((r, i) => out.set(r, i * 4));
    return out;
  };
  return score;
}

for (const [k, c] of [
  { name: 'tree 2x2, both callbacks', tree: { branches: [2, 2] } },
  {
    name: 'tree 3x1 with replacement, temperature 0.8',
    tree: { branches: [3, 1], replacement: true },
    temperature: 0.8,
  },
].entries()) {
  test(`async score callbacks that score trees follow the target's law (${c.name})`, async () => {
    const { name, ...settings } = c;
    const expected = MARKOV_TARGET.map((row) => applySampling(row, settings));
    const counts = MARKOV_TARGET.map(() => new Array(4).fill(0));
    const targetCalls = [];
    const draftCalls = [];
    let iterations = 0;
    const runs = Array.from({ length: 40 }, async (_, run) => {
      const targetScore = markovTree(TARGET_LOGITS, delayer(run * 7 + k), targetCalls);
      const draftScore = markovTree(DRAFT_LOGITS, delayer(run * 13 + k), draftCalls);
      const seed = 7_000_000 + 1000 * k + run;
      const options = { targetScore, draftScore, ...settings, prompt: [run % 4], seed, maxTokens: 400 };
      const stats = await countTransitions(counts, options);
      iterations += stats.iterations;
      assert.equal(stats.targetPasses, stats.iterations);
    });
    await Promise.all(runs);
    assertTransitionsFit(counts, expected);
    // every target pass was one scoreTree call over the root and every node
    assert.equal(targetCalls.length, iterations);
    for (const q of targetCalls) assert.deepEqual([q.first, q.withRoot], [0, true]);
    // the draft's depth 2 was a scoreTree call over depth 1's nodes (no root row)
    assert.ok(draftCalls.length > 0 && draftCalls.every((q) => !q.withRoot && q.first === 0));
  });
}

test('a scoreTree that is not a function, or rows of the wrong count, are refused by name', async () => {
  const bad = markovScore(TARGET_LOGITS, async () => {});
  bad.scoreTree = 3;
  assert.throws(
    () => sd.createDecoder({ prompt: [1], targetScore: bad, draft, tree: { branches: [2] } }),
    /targetScore\.scoreTree: expected a function \(tokens, tree\)/,
  );
  const short = markovScore(TARGET_LOGITS, async () => {});
  short.scoreTree = () => new Float32Array(4); // one row, the tree wants 3
  const dec = sd.createDecoder({
    prompt: [1],
    targetScore: short,
    draftScore: markovTree(DRAFT_LOGITS, async () => {}, []),
    tree: { branches: [2] },
  });
  await assert.rejects(dec.step(), /targetScore: returned 4 values, expected nLast = 3 rows/);
  dec.dispose();
});

// ------------------------------------------------------------------ the built-in engine, again

// The real pair behind async callbacks (sd.modelStep: the same probabilities as the built-in
// sources) gives the built-in decoder's run bit for bit: same seed, same tokens, same records.
async function viaCallbacks(options, { targetAsync = true, draftAsync = true, seed = 1 } = {}) {
  const ts = sd.modelStep(target);
  const ds = sd.modelStep(draft);
  const wait = delayer(seed);
  const wrap = (step, isAsync) =>
    isAsync ? async (tokens, n) => (await wait(), step(tokens, n)) : (tokens, n) => step(tokens, n);
  const dec = sd.createDecoder({
    ...options,
    targetScore: wrap(ts, targetAsync),
    ...(options.plain ? {} : { draftScore: wrap(ds, draftAsync) }),
    scoreOutput: 'probs',
  });
  const records = [];
  for await (const r of dec.generate()) records.push(r);
  const out = { tokens: dec.generatedTokens, records, stats: dec.stats };
  dec.dispose();
  ts.dispose();
  ds.dispose();
  return out;
}

function builtIn(options) {
  const dec = sd.createDecoder({ ...options, target, ...(options.plain ? {} : { draft }) });
  const records = [];
  while (!dec.done) records.push(dec.step());
  const out = { tokens: dec.generatedTokens, records, stats: dec.stats };
  dec.dispose();
  return out;
}

const PAIR_CASES = [
  { name: 'greedy, gamma 4, 200 tokens', options: { temperature: 0, gamma: 4 } },
  { name: 'T 0.8, gamma 3', options: { temperature: 0.8, gamma: 3 } },
  { name: 'T 0.8, plain', options: { temperature: 0.8, plain: true } },
  // Given costs: the choice between lookup and the draft must not depend on measured timings.
  {
    name: 'T 1, top-p 0.9, prompt lookup beside the draft',
    options: {
      temperature: 1,
      topP: 0.9,
      gamma: 3,
      promptLookup: true,
      costModel: { c: 0.1, verifyCost: [1, 1.1, 1.2, 1.3, 1.4] },
    },
  },
];

for (const c of PAIR_CASES) {
  for (const [label, flags] of [
    ['both async', { targetAsync: true, draftAsync: true }],
    ['async target, sync draft', { targetAsync: true, draftAsync: false }],
  ]) {
    test(`score callbacks over the real pair = the built-in engine (${c.name}; ${label})`, async () => {
      const options = { ...c.options, prompt: 'ROMEO:\nWhat say you', seed: 4242, maxTokens: 200 };
      const ref = builtIn(options);
      const got = await viaCallbacks(options, flags);
      assert.equal(got.tokens.length, 200);
      assert.deepEqual(got.tokens, ref.tokens);
      assert.equal(got.records.length, ref.records.length);
      got.records.forEach((r, i) => {
        assert.deepEqual(r.proposed, ref.records[i].proposed, `iteration ${i}`);
        assert.deepEqual(r.targetProbs, ref.records[i].targetProbs, `iteration ${i}`);
      });
      assert.equal(got.stats.targetPasses, ref.stats.targetPasses);
    });
  }
}

test('logits (the default scoreOutput) give the same greedy tokens as probabilities', async () => {
  const ts = sd.modelStep(target);
  const ds = sd.modelStep(draft);
  const logits = (step) => async (tokens, n) => Float32Array.from(step(tokens, n), (p) => Math.log(Math.max(p, 1e-30)));
  const dec = sd.createDecoder({
    targetScore: logits(ts),
    draftScore: logits(ds),
    prompt: 'KING:',
    temperature: 0,
    gamma: 4,
    maxTokens: 150,
  });
  const tokens = await drain(dec);
  const ref = builtIn({ prompt: 'KING:', temperature: 0, gamma: 4, maxTokens: 150, seed: 1 });
  assert.deepEqual(tokens, ref.tokens);
  dec.dispose();
  ts.dispose();
  ds.dispose();
});

test('one target call per iteration over gamma + 1 positions, one draft call per drafted token', async () => {
  const calls = { target: [], draft: 0 };
  const ts = sd.modelStep(target);
  const ds = sd.modelStep(draft);
  const dec = sd.createDecoder({
    prompt: 'To be',
    targetScore: async (tokens, n) => (calls.target.push(n), ts(tokens, n)),
    draftScore: async (tokens, n) => (calls.draft++, assert.equal(n, 1), ds(tokens, n)),
    scoreOutput: 'probs',
    gamma: 4,
    temperature: 0.8,
    seed: 3,
    maxTokens: 120,
  });
  await drain(dec);
  const s = dec.stats;
  assert.equal(calls.target.length, s.iterations);
  assert.equal(s.targetPasses, s.iterations);
  assert.equal(calls.draft, s.drafted);
  assert.ok(
    calls.target.every((n) => n === 5 || n < 5),
    `nLast ${calls.target}`,
  );
  assert.ok(calls.target.filter((n) => n === 5).length > s.iterations / 2);
  assert.ok(s.callbackMs > 0 && s.callbackMs <= s.ms, `callbackMs ${s.callbackMs} of ${s.ms}`);
  dec.dispose();
  ts.dispose();
  ds.dispose();
});

test('sync score callbacks: step() returns the record itself, not a Promise', () => {
  const ts = sd.modelStep(target);
  const dec = sd.createDecoder({ prompt: 'A', targetScore: ts, draft, scoreOutput: 'probs', seed: 1, maxTokens: 10 });
  const r = dec.step();
  assert.ok(Array.isArray(r.emitted) && r.emitted.length >= 1);
  dec.dispose();
  ts.dispose();
});

// ------------------------------------------------------------------ concurrency and abort

test('two async decoders interleaved on one event loop each give their own run', async () => {
  const options = (seed) => ({
    prompt: 'ROMEO:',
    temperature: 0.8,
    gamma: 3,
    seed,
    maxTokens: 120,
  });
  const [a, b] = await Promise.all([viaCallbacks(options(11), { seed: 1 }), viaCallbacks(options(12), { seed: 2 })]);
  assert.deepEqual(a.tokens, builtIn(options(11)).tokens);
  assert.deepEqual(b.tokens, builtIn(options(12)).tokens);
  assert.notDeepEqual(a.tokens, b.tokens);
});

test('generate() with callbacks that answer in microtasks still lets timers run (it yields at least every 8 ms)', async () => {
  // Awaiting such a callback runs no macrotask: only generate()'s own yields let a timer in.
  const dec = sd.createDecoder({
    targetScore: markovScore(TARGET_LOGITS, async () => {}),
    plain: true,
    prompt: [0],
    seed: 3,
    contextLength: 1e6,
  });
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const t0 = performance.now();
  let iterations = 0;
  for await (const r of dec.generate()) {
    void r;
    iterations++;
    if (performance.now() - t0 > 60 && iterations >= 200) break;
  }
  clearInterval(timer);
  assert.ok(
    ticks >= 2,
    `a timer ran ${ticks} times in ${iterations} iterations (${(performance.now() - t0).toFixed(0)} ms)`,
  );
  dec.dispose();
});

test('abort while a callback is awaited: generate rejects at once, the next step() resumes the same iteration', async () => {
  const ts = sd.modelStep(target);
  const ds = sd.modelStep(draft);
  let hold = null; // when set, the target call waits for it
  let targetCalls = 0;
  const dec = sd.createDecoder({
    prompt: 'ROMEO:',
    targetScore: async (tokens, n) => {
      targetCalls++;
      if (hold) await hold;
      return ts(tokens, n);
    },
    draftScore: ds,
    scoreOutput: 'probs',
    temperature: 0.8,
    gamma: 3,
    seed: 77,
    maxTokens: 100,
  });
  const ac = new AbortController();
  const tokens = [];
  let release;
  let n = 0;
  await assert.rejects(
    (async () => {
      for await (const r of dec.generate({ signal: ac.signal })) {
        tokens.push(...r.emitted);
        if (++n === 5) {
          hold = new Promise((resolve) => (release = resolve));
          setTimeout(() => ac.abort(new Error('user stop')), 5);
        }
      }
    })(),
    /user stop/,
  );
  const callsAtAbort = targetCalls;
  hold = null;
  release(); // the abandoned call finishes now: its answer must be dropped
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(dec.stats.iterations, 5);
  // The next step() asks the target the same query again and the run goes on.
  tokens.push(...(await dec.step()).emitted);
  assert.equal(targetCalls, callsAtAbort + 1);
  for await (const r of dec.generate()) tokens.push(...r.emitted);
  assert.deepEqual(tokens, builtIn({ prompt: 'ROMEO:', temperature: 0.8, gamma: 3, seed: 77, maxTokens: 100 }).tokens);
  dec.dispose();
  ts.dispose();
  ds.dispose();
});

test('a rejected callback leaves the iteration pending; step() while one is awaited says why not', async () => {
  const ts = sd.modelStep(target);
  let fail = true;
  const dec = sd.createDecoder({
    prompt: 'AB',
    targetScore: async (tokens, n) => {
      await null;
      if (fail) throw new Error('network down');
      return ts(tokens, n);
    },
    draft,
    scoreOutput: 'probs',
    seed: 5,
    maxTokens: 30,
  });
  const first = dec.step();
  assert.throws(() => dec.step(), /still waiting for a score callback/);
  await assert.rejects(first, /network down/);
  fail = false;
  const r = await dec.step();
  assert.ok(r.emitted.length >= 1);
  const rest = [];
  for await (const x of dec.generate()) rest.push(...x.emitted);
  assert.deepEqual([...r.emitted, ...rest], builtIn({ prompt: 'AB', seed: 5, maxTokens: 30 }).tokens);
  dec.dispose();
  ts.dispose();
});

test('disposing the decoder while a callback is awaited rejects that step clearly', async () => {
  const ts = sd.modelStep(target);
  const dec = sd.createDecoder({
    prompt: 'AB',
    targetScore: async (t, n) => (await new Promise((r) => setTimeout(r, 2)), ts(t, n)),
    draft,
    scoreOutput: 'probs',
    maxTokens: 10,
  });
  const p = dec.step();
  dec.dispose();
  await assert.rejects(p, /Decoder.step: this Decoder has been disposed/);
  ts.dispose();
});

// ------------------------------------------------------------------ bad input

test('bad callbacks and options: errors name the callback or the option', async () => {
  const row = (n, v) => new Float32Array(n * v);
  const make = (targetScore, extra = {}) =>
    sd.createDecoder({ prompt: [1, 2], targetScore, plain: true, maxTokens: 5, ...extra });
  const cases = [
    [() => Float32Array.from([0, NaN, 1]), /targetScore: row 0 holds NaN at token 1/],
    [() => Float32Array.from([0, Infinity, 1]), /targetScore: row 0 holds an infinite logit at token 1/],
    [() => Float32Array.from([0, -Infinity, 1]), /targetScore: row 0 holds an infinite logit at token 1/],
    [() => 'logits', /targetScore: expected a Float32Array of nLast × vocabulary values, got the string/],
    [() => new Float32Array(0), /targetScore: returned 0 values/],
  ];
  for (const [fn, re] of cases) {
    const dec = make(async (...a) => fn(...a));
    await assert.rejects(dec.step(), re);
    dec.dispose();
  }
  // gamma 4: the target's call asks for nLast = 5 rows
  const rows = sd.createDecoder({
    prompt: [1, 2],
    targetScore: async () => row(2, 4),
    draftScore: () => new Float32Array(4),
    gamma: 4,
    maxTokens: 5,
  });
  await assert.rejects(rows.step(), /targetScore: returned 8 values, expected nLast = 5 rows/);
  rows.dispose();
  // probabilities checked when scoreOutput is 'probs'
  const probs = make(() => Float32Array.from([0.5, 0.7]), { scoreOutput: 'probs' });
  assert.throws(() => probs.step(), /targetScore row 0: .*sum/);
  probs.dispose();
  // rows of another size than before
  let v = 4;
  const grow = make(() => new Float32Array(v++));
  grow.step();
  assert.throws(() => grow.step(), /targetScore: returned rows of 5 values, 4 before/);
  grow.dispose();
  // draft and target vocabularies must agree
  const mixed = sd.createDecoder({
    prompt: [1],
    targetScore: (t, n) => new Float32Array(4 * n),
    draftScore: () => new Float32Array(5),
    maxTokens: 5,
  });
  assert.throws(() => mixed.step(), /vocabularies differ/);
  mixed.dispose();

  const f = () => new Float32Array(4);
  const bad = [
    [
      { prompt: [1], target, targetScore: f, plain: true },
      /target: give exactly one of target \(a Model\), targetStep .* or targetScore .*; got target and targetScore/,
    ],
    [
      { prompt: [1], targetScore: 5, plain: true },
      /targetScore: expected a function \(tokens: Int32Array, nLast: number\)/,
    ],
    [{ prompt: [1], targetScore: f, plain: true, scoreOutput: 'softmax' }, /scoreOutput: expected 'logits' or 'probs'/],
    [{ prompt: [1], target, plain: true, scoreOutput: 'probs' }, /scoreOutput: applies to score callbacks/],
    [{ prompt: [1], targetScore: f, plain: true, contextLength: 0 }, /contextLength: must be in 1\.\./],
    [
      { prompt: [1], targetScore: f, draft, tree: { branches: [2, 1] } },
      /tree: targetScore scores one sequence per call/,
    ],
    [
      { prompt: [1], target, draftScore: f, tree: { branches: [2, 1] } },
      /tree: draftScore scores one sequence per call; it drafts chains/,
    ],
  ];
  for (const [options, re] of bad) assert.throws(() => sd.createDecoder(options), re);
});

test('contextLength bounds a decoder whose callbacks have a context window', async () => {
  const ts = sd.modelStep(target);
  const dec = sd.createDecoder({
    prompt: 'abc',
    targetScore: ts,
    draft,
    scoreOutput: 'probs',
    contextLength: 40,
    seed: 1,
  });
  for await (const r of dec.generate()) assert.ok(r.emitted.length >= 1);
  assert.ok(dec.done);
  assert.ok(dec.tokens.length <= 41, `${dec.tokens.length} tokens`);
  dec.dispose();
  ts.dispose();
});

// ------------------------------------------------------------------ sd.modelStep

test("modelStep: the model's next-token probabilities, with its own cache; disposable", () => {
  const step = sd.modelStep(target);
  assert.equal(step.vocabSize, target.config.vocabSize);
  const dec = sd.createDecoder({
    prompt: 'Good morrow',
    target,
    plain: true,
    maxTokens: 3,
    seed: 2,
  });
  const r = dec.step();
  const p = step(sd.encode('Good morrow'));
  assert.equal(p.length, target.config.vocabSize);
  assert.deepEqual(Array.from(p), Array.from(r.targetProbs[0]));
  const two = step(sd.encode('Good morrow'), 2); // rows after "Good morro" and "Good morrow"
  assert.equal(two.length, 2 * target.config.vocabSize);
  assert.deepEqual(Array.from(two.subarray(target.config.vocabSize)), Array.from(p));
  assert.ok(step.cachedTokens >= 10);
  assert.throws(() => step([]), /tokens: must hold at least one token/);
  assert.throws(() => step([1, 2], 3), /nLast: must be in 1\.\.2, got 3/);
  assert.throws(() => step([1, 99999]), /99999/);
  step.dispose();
  assert.ok(step.disposed);
  assert.throws(() => step([1]), /modelStep: this modelStep has been disposed/);
  dec.dispose();
});
