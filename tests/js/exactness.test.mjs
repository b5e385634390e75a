// Exactness through the JS API: what speculative decoding emits follows the target's law.
// Chi-square goodness of fit held to a false-alarm probability of 1e-6 with fixed seeds (the
// standard of the C++ tests), so the outcome is deterministic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSpecdec } from 'specdec';
import { MARKOV_TARGET, markovSteps, applySampling, assertChiSquareFits, assertTransitionsFit } from './support.mjs';

const sd = await loadSpecdec();

// Inverse-CDF sample from a row with a uniform u in [0, 1).
function sample(row, u) {
  let total = 0;
  for (const x of row) total += x;
  let cum = 0;
  let last = -1;
  for (let i = 0; i < row.length; i++) {
    if (row[i] <= 0) continue;
    cum += row[i];
    last = i;
    if (u * total < cum) return i;
  }
  return last;
}

const f32 = (rows) => rows.map((r) => Float32Array.from(r));

// ------------------------------------------------------------------ speculativeVerify

// The first emitted token of speculativeVerify, with x_i ~ q_i drawn by the test, is
// distributed as p_0 whatever the draft: 100,000 draws per case.
const UNIFORM = [0.2, 0.2, 0.2, 0.2, 0.2];
const SAME_ROWS = [[0.1, 0.2, 0.3, 0.4, 0], [0.25, 0.25, 0.25, 0.25, 0], [0.5, 0.5, 0, 0, 0], UNIFORM, [0, 0, 0, 0, 1]];
const VERIFY_CASES = [
  {
    name: 'dense, gamma 1',
    target: [[0.4, 0.25, 0.15, 0.1, 0.1], UNIFORM],
    draft: [[0.3, 0.3, 0.2, 0.1, 0.1]],
  },
  {
    name: 'disjoint supports, gamma 2',
    target: [[0.5, 0.5, 0, 0, 0], [0, 0, 0.5, 0.5, 0], UNIFORM],
    draft: [
      [0, 0, 0.3, 0.3, 0.4],
      [0.6, 0.4, 0, 0, 0],
    ],
  },
  {
    name: 'q much larger than p on one token, gamma 3',
    target: [
      [0.05, 0.45, 0.2, 0.2, 0.1],
      [0.1, 0.1, 0.6, 0.1, 0.1],
      [0.3, 0.3, 0.1, 0.1, 0.2],
      [1, 0, 0, 0, 0],
    ],
    draft: [[0.9, 0.025, 0.025, 0.025, 0.025], UNIFORM, [0.1, 0.1, 0.4, 0.3, 0.1]],
  },
  { name: 'p == q, gamma 4', target: SAME_ROWS, draft: SAME_ROWS.slice(0, 4) },
  {
    name: 'one-hot target, gamma 2',
    target: [[0, 0, 1, 0, 0], [0, 1, 0, 0, 0], UNIFORM],
    draft: [UNIFORM, [0.1, 0.1, 0.1, 0.1, 0.6]],
  },
];

for (const [k, c] of VERIFY_CASES.entries()) {
  test(`speculativeVerify: first emitted token ~ p (${c.name})`, () => {
    const target = f32(c.target);
    const draft = f32(c.draft);
    const rng = sd.createRng(1000 + k); // the verifier's uniforms
    const proposer = sd.createRng(2000 + k); // the test's draft samples
    const counts = new Array(target[0].length).fill(0);
    const N = 100_000;
    for (let n = 0; n < N; n++) {
      const tokens = draft.map((q) => sample(q, proposer.uniform()));
      const r = sd.speculativeVerify(target, draft, tokens, rng);
      counts[r.emitted[0]]++;
    }
    rng.dispose();
    proposer.dispose();
    assertChiSquareFits([{ counts, probs: c.target[0] }], `, counts ${counts}`);
  });
}

// ------------------------------------------------------------------ createDecoder

// The Markov-chain toys of support.mjs (the next-token law depends on the last token).
const TARGET = MARKOV_TARGET;
const { targetStep, draftStep } = markovSteps();

// An exact decoder emits a Markov chain with the target's (filtered) transition rows; Pearson's
// statistic over the transition counts, grouped by the
// previous token, is then chi-square with sum_s (cells_s - 1) degrees of freedom.
// 200 decoders x 500 tokens = 100,000 transitions per case.
const DECODER_CASES = [
  { name: 'gamma 1', gamma: 1 },
  { name: 'gamma 2', gamma: 2 },
  { name: 'gamma 4', gamma: 4 },
  { name: 'gamma 3, temperature 0.7, topK 3', gamma: 3, temperature: 0.7, topK: 3 },
  { name: 'gamma 2, temperature 1.5, topP 0.8', gamma: 2, temperature: 1.5, topP: 0.8 },
  { name: 'plain decoding', plain: true },
];

for (const [k, c] of DECODER_CASES.entries()) {
  test(`createDecoder with JS step functions follows the target's law (${c.name})`, () => {
    const { name, ...settings } = c;
    const expected = TARGET.map((row) => applySampling(row, settings));
    const counts = TARGET.map(() => new Array(4).fill(0));
    const RUNS = 200;
    const TOKENS = 500;
    let drafted = 0;
    let accepted = 0;
    for (let run = 0; run < RUNS; run++) {
      const dec = sd.createDecoder({
        targetStep,
        draftStep,
        ...settings,
        prompt: [run % 4],
        seed: 7_000_000 + 1000 * k + run,
        maxTokens: TOKENS,
        distributions: false,
      });
      while (!dec.done) dec.step();
      const tokens = dec.tokens;
      assert.equal(tokens.length, TOKENS + 1);
      for (let i = 1; i < tokens.length; i++) counts[tokens[i - 1]][tokens[i]]++;
      drafted += dec.stats.drafted;
      accepted += dec.stats.accepted;
      dec.dispose();
    }
    assertTransitionsFit(counts, expected);
    if (!c.plain) {
      // Not a tautology: the draft was rejected often enough for the residual to matter.
      assert.ok(accepted < 0.9 * drafted, `accepted ${accepted} of ${drafted}`);
    }
  });
}

test('the same seed replays the same tokens; another seed does not', () => {
  const run = (seed) => {
    const dec = sd.createDecoder({
      targetStep,
      draftStep,
      gamma: 3,
      seed,
      prompt: [1],
      maxTokens: 200,
    });
    while (!dec.done) dec.step();
    const tokens = dec.tokens;
    dec.dispose();
    return tokens;
  };
  assert.deepEqual(run(99), run(99));
  assert.notDeepEqual(run(99), run(100));
  // A seed above 2^32 and the same value as a bigint give the same stream.
  assert.deepEqual(run(2 ** 40 + 5), run(2n ** 40n + 5n));
});
