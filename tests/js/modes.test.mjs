// The decoder's modes through the JS API: gamma 'auto' and 'heuristic', prompt lookup, draft
// trees and Medusa-style heads. Exactness (chi-square on Markov-chain transitions, as in
// exactness.test.mjs), greedy output equal to greedy plain with real models, the records and
// stats each mode adds, and clear errors for bad input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadSpecdec } from 'specdec';
import {
  MARKOV_TARGET,
  markovSteps,
  ROOT,
  TINY_MODEL,
  applySampling,
  assertTransitionsFit,
  modelBytes,
} from './support.mjs';

const sd = await loadSpecdec();

// The Markov-chain toys of support.mjs.
const TARGET = MARKOV_TARGET;
const { targetStep, draftStep } = markovSteps();
const COSTS = { c: 0.05, verifyCost: [1, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35, 1.4] };

const MODES = [
  { name: "gamma 'auto' (given costs)", options: { draftStep, gamma: 'auto', costModel: COSTS } },
  // Measured: a JS draft step costs about what the JS target step costs (c ~ 1), so after its
  // first measurements the policy rightly prefers plain steps; it still drafts while exploring.
  { name: "gamma 'auto' (measured)", options: { draftStep, gamma: 'auto' }, minDrafted: 300 },
  { name: "gamma 'heuristic'", options: { draftStep, gamma: 'heuristic', gammaMax: 6 } },
  { name: 'prompt lookup alone', options: { promptLookup: true, gamma: 3 } },
  {
    name: 'prompt lookup and draft',
    options: { draftStep, promptLookup: { maxNgram: 2 }, costModel: COSTS },
  },
  { name: 'tree [3, 2], distinct children', options: { draftStep, tree: { branches: [3, 2] } } },
  {
    name: 'tree [2, 2, 2], independent children',
    options: {
      draftStep,
      tree: { branches: [2, 2, 2], replacement: true },
      temperature: 0.7,
      topK: 3,
    },
  },
];

for (const [k, mode] of MODES.entries()) {
  test(`${mode.name}: output follows the target's law`, () => {
    const expected = TARGET.map((row) => applySampling(row, mode.options));
    const counts = TARGET.map(() => new Array(4).fill(0));
    let drafted = 0;
    for (let run = 0; run < 100; run++) {
      const dec = sd.createDecoder({
        targetStep,
        ...mode.options,
        prompt: [run % 4, (run + 1) % 4],
        seed: 9_000_000 + 1000 * k + run,
        maxTokens: 600,
        distributions: false,
      });
      while (!dec.done) dec.step();
      const tokens = dec.tokens;
      for (let i = 2; i < tokens.length; i++) counts[tokens[i - 1]][tokens[i]]++;
      drafted += dec.stats.drafted;
      dec.dispose();
    }
    assertTransitionsFit(counts, expected);
    assert.ok(drafted > (mode.minDrafted ?? 20_000), `the mode drafted (${drafted} tokens)`);
  });
}

const bytes = await modelBytes();
const target = sd.loadModel(bytes.target);
const draft = sd.loadModel(bytes.draft);

function decodeAll(options) {
  const dec = sd.createDecoder(options);
  const records = [];
  while (!dec.done) records.push(dec.step());
  const out = { tokens: dec.generatedTokens, stats: dec.stats, records, estimates: dec.estimates };
  dec.dispose();
  return out;
}

test('greedy: every mode gives exactly the greedy plain tokens', () => {
  const prompt = 'ROMEO:\nWhat light through yonder window breaks?\nROMEO:\nWhat light';
  const plain = decodeAll({ target, plain: true, temperature: 0, prompt, maxTokens: 100 });
  for (const options of [
    { draft, gamma: 'auto' },
    { draft, gamma: 'heuristic' },
    { promptLookup: true },
    { promptLookup: true, draft },
    { draft, tree: { branches: [3, 2, 1, 1] } },
    { draft, tree: { branches: [2, 2], replacement: true } },
  ]) {
    const r = decodeAll({ target, temperature: 0, prompt, maxTokens: 100, seed: 3, ...options });
    assert.deepEqual(r.tokens, plain.tokens, JSON.stringify(Object.keys(options)));
    assert.ok(r.stats.targetPasses < plain.stats.targetPasses);
  }
});

test('records and stats say which gamma and which drafter each iteration used', () => {
  const prompt = 'KING:\nThe king is dead. KING:\nThe king';
  const r = decodeAll({
    target,
    draft,
    promptLookup: true,
    gamma: 'heuristic',
    gammaMax: 6,
    prompt,
    maxTokens: 150,
    seed: 1,
    temperature: 0.8,
  });
  const hist = new Array(7).fill(0);
  const by = { none: 0, draft: 0, lookup: 0, heads: 0 };
  for (const rec of r.records) {
    assert.ok(rec.gamma >= 0 && rec.gamma <= 6);
    assert.ok(['none', 'draft', 'lookup', 'heads'].includes(rec.drafter));
    assert.equal(rec.proposed.length, rec.gamma);
    assert.equal(rec.targetPositions, rec.gamma + 1);
    assert.equal(rec.lookupNgram !== null, rec.drafter === 'lookup');
    if (rec.drafter === 'lookup') {
      rec.draftProbs.forEach((row, i) => assert.equal(row[rec.proposed[i]], 1)); // one-hot q
    }
    hist[rec.gamma]++;
    by[rec.drafter]++;
  }
  assert.deepEqual(r.stats.gammaHistogram, hist);
  assert.deepEqual(r.stats.byDrafter, by);
  assert.ok(by.lookup > 0 && by.draft > 0, JSON.stringify(by));
  assert.equal(r.estimates.verifyCost.length, 7);
  assert.equal(r.estimates.verifyCost[0], 1);
  for (const a of Object.values(r.estimates.alpha)) assert.ok(a > 0 && a < 1);
  // The time charged outside the passes, per drafter: measured here (what ran costs something),
  // none with given costs (then time is v(k) and c alone, and a pass is the unit).
  const { overheadMs, passMs } = r.estimates;
  assert.deepEqual(Object.keys(overheadMs).sort(), ['draft', 'heads', 'lookup', 'none']);
  for (const ms of Object.values(overheadMs)) assert.ok(Number.isFinite(ms) && ms >= 0, JSON.stringify(overheadMs));
  assert.ok(overheadMs.draft > 0 && overheadMs.lookup > 0, JSON.stringify(overheadMs));
  assert.ok(passMs > 0 && passMs < 1000);
  const given = decodeAll({
    target,
    draft,
    promptLookup: true,
    gamma: 'auto',
    costModel: { c: 0.1, verifyCost: [1, 1.2] },
    prompt,
    maxTokens: 20,
    seed: 1,
  });
  assert.deepEqual(given.estimates.overheadMs, { none: 0, draft: 0, lookup: 0, heads: 0 });
  assert.equal(given.estimates.passMs, 1);
});

test('a tree record lists every node, its test and the accepted path', () => {
  const r = decodeAll({
    target,
    draft,
    tree: { branches: [3, 2] },
    prompt: 'First Citizen:\n',
    maxTokens: 60,
    seed: 5,
  });
  for (const rec of r.records) {
    const { nodes, path } = rec.tree;
    // The burst is path tokens + a bonus or correction, cut to the token budget only at the end.
    assert.ok(rec.emitted.length >= 1 && rec.emitted.length <= path.length + 1);
    assert.ok(nodes.length <= 3 + 6);
    assert.equal(rec.targetPositions, nodes.length + 1);
    assert.equal(rec.targetProbs.length, nodes.length + 1);
    nodes.forEach((n, i) => {
      assert.ok(n.parent < i && n.parent >= -1);
      assert.equal(n.depth, n.parent < 0 ? 1 : nodes[n.parent].depth + 1);
      if (n.status !== 'unexamined') assert.ok(n.acceptProb >= 0 && n.acceptProb <= 1 && n.u !== null);
    });
    path.forEach((v, d) => {
      assert.equal(nodes[v].status, 'accepted');
      assert.equal(nodes[v].parent, d === 0 ? -1 : path[d - 1]);
      if (d < rec.emitted.length) assert.equal(rec.emitted[d], nodes[v].token);
    });
    assert.equal(rec.nAccepted, path.length);
    // The last token: a bonus at an accepted leaf, else a correction after rejected children.
    const end = path.length ? path[path.length - 1] : -1;
    const leaf = !nodes.some((n) => n.parent === end);
    assert.equal(rec.bonus !== null, leaf);
    assert.equal(rec.correction !== null, !leaf);
    assert.equal(rec.proposed.length, 0);
    // siblings are distinct (drawn without replacement)
    const seen = new Set(nodes.map((n) => `${n.parent}:${n.token}`));
    assert.equal(seen.size, nodes.length);
  }
  const cut = r.records.filter((rec) => rec.emitted.length < rec.tree.path.length + 1);
  assert.ok(
    cut.every((rec) => rec === r.records.at(-1)),
    'only the last burst is cut to the budget',
  );
  assert.equal(
    r.records.reduce((n, rec) => n + rec.emitted.length, 0),
    60,
  );
  assert.ok(r.stats.tokensPerPass > 1.5);
});

// The policy's choices judged without timing noise: decoders run with given costs (the small
// pair's WASM figures), and a run's modeled time is the sum over its iterations of
// gamma * c + v(k) + a per-iteration overhead. 'auto' is never told the best gamma; it must come
// within 5% of the best fixed gamma's tokens per unit of time (issue 12's goal is 3%, measured
// by bench/modes.mjs: here 99.1% at T = 0 and 97.4% at T = 0.8) and beat Hugging Face's
// schedule, at T = 0 and 0.8.
test("gamma 'auto' (given costs): within 5% of the best fixed gamma, ahead of 'heuristic'", () => {
  const costModel = { c: 0.09, verifyCost: [1, 1.29, 1.65, 1.92, 2.37, 2.7, 3.05, 3.4, 3.75] };
  const cost = (rec) => rec.gamma * costModel.c + costModel.verifyCost[rec.targetPositions - 1] + 0.15;
  const prompts = [
    'ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n',
    "KING RICHARD II:\nOld John of Gaunt, time-honour'd Lancaster,\nHast thou, according to thy oath and band,\n",
    'First Citizen:\nBefore we proceed any further, hear me speak.\nAll:\nSpeak, speak.\n',
    'DUKE VINCENTIO:\nNo, holy father; throw away that thought;\nBelieve not that the dribbling dart of love\n',
  ];
  for (const temperature of [0, 0.8]) {
    const rate = {};
    for (const gamma of [1, 2, 3, 'auto', 'heuristic']) {
      let tokens = 0,
        time = 0;
      for (const [i, prompt] of prompts.entries()) {
        for (const seed of [1, 2]) {
          const run = decodeAll({
            target,
            draft,
            gamma,
            costModel,
            temperature,
            prompt,
            maxTokens: 128,
            seed: 100 * i + seed,
            distributions: false,
          });
          for (const rec of run.records) {
            tokens += rec.emitted.length;
            time += cost(rec);
          }
        }
      }
      rate[gamma] = tokens / time;
    }
    const best = Math.max(rate[1], rate[2], rate[3]);
    const summary = `T ${temperature}: ${JSON.stringify(rate)}`;
    assert.ok(rate.auto >= 0.95 * best, summary);
    assert.ok(rate.auto > rate.heuristic, summary);
  }
});

// ------------------------------------------------------------------ heads

const tiny = sd.loadModel(await readFile(TINY_MODEL));
const tinyHeadsBytes = await readFile(path.join(ROOT, 'tests/fixtures/tiny_heads.safetensors'));

test('loadHeads: heads draft for their target; greedy heads == greedy plain', () => {
  const heads = sd.loadHeads(tinyHeadsBytes, tiny);
  assert.equal(heads.count, 3);
  assert.equal(heads.metadata.format, 'specdec-heads');
  assert.equal(heads.target, tiny);
  const plain = decodeAll({
    target: tiny,
    plain: true,
    temperature: 0,
    prompt: 'ROMEO: hello',
    maxTokens: 50,
  });
  for (const tree of [undefined, { branches: [2, 2] }]) {
    const r = decodeAll({
      target: tiny,
      heads,
      tree,
      temperature: 0,
      prompt: 'ROMEO: hello',
      maxTokens: 50,
    });
    assert.deepEqual(r.tokens, plain.tokens);
    assert.equal(r.records[0].drafter, 'none'); // nothing to draft from before the first pass
    assert.ok(r.stats.byDrafter.heads > 0);
  }
  heads.dispose();
  assert.throws(
    () => heads.count.toFixed() && sd.createDecoder({ target: tiny, heads, prompt: 'a' }),
    /heads: this Heads has been disposed/,
  );
});

test('bad input: clear errors naming the argument', () => {
  const heads = sd.loadHeads(tinyHeadsBytes, tiny);
  const cases = [
    [
      { target, draft, gamma: 'fast' },
      'gamma',
      /gamma: expected an integer in 1\.\.32, 'auto' or 'heuristic', got the string "fast"/,
    ],
    [{ target, draft, gamma: 'auto', gammaMax: 0 }, 'gammaMax', /gammaMax: must be in 1\.\.32, got 0/],
    [{ target, promptLookup: { minNgram: 3, maxNgram: 2 } }, 'promptLookup.minNgram', /exceeds maxNgram 2/],
    [{ target, promptLookup: { minNgram: 0 } }, 'promptLookup.minNgram', /must be in 1\.\.32, got 0/],
    [{ target, promptLookup: { n: 2 } }, 'n', /unknown option of promptLookup/],
    [{ target, plain: true, promptLookup: true }, 'promptLookup', /does not combine with plain decoding/],
    [{ target, draft, tree: { branches: [] } }, 'tree.branches', /must list at least one depth/],
    [{ target, draft, tree: { branches: [0] } }, 'tree.branches[0]', /must be in 1\.\.8, got 0/],
    [{ target, draft, tree: { branches: [9] } }, 'tree.branches[0]', /must be in 1\.\.8, got 9/],
    [{ target, draft, tree: { branches: [8, 8] } }, 'tree.branches', /more than 64 nodes/],
    [{ target, draft, tree: [3, 2] }, 'tree', /tree: options must be an object/],
    [{ target, promptLookup: true, tree: { branches: [2] } }, 'tree', /needs a draft model \(or draftStep\) or heads/],
    [{ target, draft, gamma: 'auto', tree: { branches: [2] } }, 'gamma', /a tree's depth is fixed by tree\.branches/],
    [{ target, draft, gamma: 3, tree: { branches: [2] } }, 'gamma', /differs from the tree's depth 1/],
    [{ target, draft, plain: true, tree: { branches: [2] } }, 'tree', /a tree needs a drafter/],
    [
      { target, draft, gamma: 'auto', costModel: { c: 0.1, verifyCost: [1, -1] } },
      'costModel.verifyCost[1]',
      /must be finite and > 0/,
    ],
    [{ target, draft, costModel: { c: 0.1 } }, 'costModel.verifyCost', /expected an array of numbers/],
    [
      { target },
      'draft',
      /draft: give exactly one of draft \(a Model\), draftStep .* or draftScore .*, or use promptLookup or heads/,
    ],
    [{ target: tiny, heads, draft }, 'heads', /either a draft \(draft, draftStep or draftScore\) or heads/],
    [{ target, heads }, 'heads', /loaded for another target model/],
    [{ target: tiny, heads: target }, 'heads', /expected a Heads/],
  ];
  for (const [options, argument, message] of cases) {
    assert.throws(
      () => sd.createDecoder({ prompt: 'ROMEO:', ...options }),
      (e) => {
        assert.ok(e instanceof sd.SpecdecError, `${e}`);
        assert.match(e.message, message);
        assert.equal(e.argument, argument, e.message);
        return true;
      },
      JSON.stringify(Object.keys(options)),
    );
  }
  // Heads made for another target are refused at load time, naming the file.
  assert.throws(
    () => sd.loadHeads(tinyHeadsBytes, target),
    (e) => e.argument === 'bytes' && /heads file: made for a/.test(e.message),
  );
  assert.throws(
    () => sd.loadHeads(bytes.target, target),
    (e) =>
      e.argument === 'bytes' &&
      /heads file: __metadata__ 'format' = 'specdec-gpt', expected 'specdec-heads'/.test(e.message),
  );
  assert.throws(
    () => sd.loadHeads(new Uint8Array(3), tiny),
    (e) => e.argument === 'bytes',
  );
  assert.throws(
    () => sd.loadHeads(tinyHeadsBytes, {}),
    (e) => e.argument === 'target',
  );
  heads.dispose();
});

test('heads and decoders over them leave nothing behind', () => {
  const fresh = sd.memoryStats().inUseBytes;
  for (let i = 0; i < 200; i++) {
    const heads = sd.loadHeads(tinyHeadsBytes, tiny);
    const dec = sd.createDecoder({
      target: tiny,
      heads,
      tree: { branches: [2, 1] },
      prompt: 'ab',
      maxTokens: 8,
      seed: i,
    });
    heads.dispose(); // the decoder keeps what it needs
    while (!dec.done) dec.step();
    dec.dispose();
  }
  assert.ok(sd.memoryStats().inUseBytes - fresh < 64 * 1024, `${sd.memoryStats().inUseBytes - fresh} bytes`);
});

// gamma 'auto' charges each drafter its own time per iteration outside the passes (generate()
// counts the time between two steps too): when lookup's iterations cost more there, a modest
// acceptance rate no longer pays and it stops drafting; at equal cost it drafts.
test("gamma 'auto': a drafter is charged its own per-iteration overhead", async () => {
  const busy = (ms) => {
    const t0 = performance.now();
    while (performance.now() - t0 < ms);
  };
  // A target pass of 1 ms whatever its length (as a real model's short passes), so that the
  // measured costs are the pass and the overhead, not the microseconds of a JS callback (with
  // the bare Markov step, v(k) was timer noise and lookup drafted 4% to 97% of iterations).
  const rows = MARKOV_TARGET.map((r) => Float32Array.from(r));
  const targetScore = (tokens, nLast) => {
    busy(1);
    const out = new Float32Array(nLast * 4);
    for (let i = 0; i < nLast; i++) out.set(rows[tokens[tokens.length - nLast + i]], i * 4);
    return out;
  };
  const cases = [
    { what: 'lookup costs what a plain step costs', lookupMs: 0, atLeast: 0.2 },
    { what: "lookup's iterations cost 15 ms more", lookupMs: 15, atMost: 0.08 },
  ];
  // The policy reads wall-clock costs, which other programs on a shared machine disturb (a run
  // under three other jobs saw lookup draft 4 of 199 iterations): each case gets three runs, and
  // one of them must show the property.
  const lookupShare = async (lookupMs) => {
    const dec = sd.createDecoder({
      targetScore,
      scoreOutput: 'probs',
      promptLookup: true,
      gamma: 'auto',
      prompt: [0, 1, 1, 3, 3, 2, 0, 0, 1, 1, 3, 3, 2, 0],
      maxTokens: 200,
      seed: 3,
      temperature: 1,
      distributions: false,
    });
    for await (const rec of dec.generate()) if (rec.drafter === 'lookup') busy(lookupMs);
    const { byDrafter, iterations } = dec.stats;
    dec.dispose();
    return { share: byDrafter.lookup / iterations, text: `${byDrafter.lookup} of ${iterations}` };
  };
  for (const c of cases) {
    const seen = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const { share, text } = await lookupShare(c.lookupMs);
      seen.push(text);
      if ((c.atLeast === undefined || share >= c.atLeast) && (c.atMost === undefined || share <= c.atMost)) break;
      assert.ok(attempt < 2, `${c.what}: lookup drafted ${seen.join(', then ')}`);
    }
  }
});
