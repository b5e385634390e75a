// The decoder's IterationRecord field by field (the C++ decoder hands it over in a compact wire
// format, web/lib/decoder/records.js recordOf): callbacks with dyadic rows make every p, q, acceptProb,
// residual and most tokens known in advance, so the expected values are worked out here by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSpecdec } from 'specdec';
import { RECORD_FIELDS } from './support.mjs';
import { pathPositions } from '../../web/lib/decoder/records.js';

const sd = await loadSpecdec();

const V = 7; // odd: the residual's float32s pack two to a wire entry, the last one alone
const row = (entries) => Float32Array.from({ length: V }, (_, i) => entries[i] ?? 0);
const P = row([0.5, 0, 0.25, 0.125, 0.125]); // the target's row everywhere
const ONE_HOT_1 = row([0, 1]);
const ONE_HOT_3 = row([0, 0, 0, 1]);
const HALF_1_2 = row([0, 0.5, 0.5]);
const ONE_HOT_2 = row([0, 0, 1]);
const BYTE = (t) => String.fromCharCode(t); // tokenText of an ASCII byte
const rows = (r) => (tokens, n) => {
  const out = new Float32Array(n * V);
  for (let i = 0; i < n; i++) out.set(r, i * V);
  return out;
};
const probs = { scoreOutput: 'probs', contextLength: 64, temperature: 1 };
const FIELDS = [...RECORD_FIELDS, 'gamma', 'drafter', 'lookupNgram', 'targetPositions', 'stopped'];
const isUniform = (u) => typeof u === 'number' && u >= 0 && u < 1;

const CASES = [
  {
    name: 'a rejection: draft certain of token 1, which the target never emits; distributions kept',
    options: {
      targetScore: rows(P),
      draftScore: async (...a) => rows(ONE_HOT_1)(...a),
      gamma: 1,
      distributions: true,
      ...probs,
    },
    check(r) {
      assert.deepEqual(r.proposed, [1]);
      assert.equal(r.proposedText, BYTE(1));
      assert.equal(r.positions.length, 1);
      const { u, ...pos } = r.positions[0];
      assert.deepEqual(pos, {
        token: 1,
        text: BYTE(1),
        p: 0,
        q: 1,
        acceptProb: 0,
        accepted: false,
      });
      assert.ok(isUniform(u));
      assert.equal(r.nAccepted, 0);
      assert.ok([0, 2, 3, 4].includes(r.correction), `correction ${r.correction} from the residual`);
      assert.equal(r.bonus, null);
      assert.deepEqual(r.emitted, [r.correction]);
      assert.ok(r.residual instanceof Float32Array);
      assert.deepEqual(r.residual, P); // (p - q)+ normalised is p itself
      assert.deepEqual(r.residualTop, [
        { token: 0, text: BYTE(0), p: 0.5 },
        { token: 2, text: BYTE(2), p: 0.25 },
        { token: 3, text: BYTE(3), p: 0.125 },
        { token: 4, text: BYTE(4), p: 0.125 },
      ]);
      assert.equal(r.gamma, 1);
      assert.equal(r.drafter, 'draft');
      assert.equal(r.targetPositions, 2);
      assert.deepEqual(r.targetProbs, [P, P]);
      assert.deepEqual(r.draftProbs, [ONE_HOT_1]);
    },
  },
  {
    name: 'a bonus: draft = target, every token accepted',
    options: { targetScore: rows(P), draftScore: rows(P), gamma: 2, ...probs },
    check(r) {
      assert.equal(r.positions.length, 2);
      r.positions.forEach((pos, i) => {
        assert.equal(pos.token, r.proposed[i]);
        assert.equal(pos.text, BYTE(pos.token));
        assert.equal(pos.p, P[pos.token]);
        assert.equal(pos.q, P[pos.token]);
        assert.equal(pos.acceptProb, 1);
        assert.ok(isUniform(pos.u));
        assert.equal(pos.accepted, true);
      });
      assert.equal(r.nAccepted, 2);
      assert.equal(r.correction, null);
      assert.deepEqual(r.emitted, [...r.proposed, r.bonus]);
      assert.ok([0, 2, 3, 4].includes(r.bonus));
      assert.ok(isUniform(r.uFinal));
      assert.equal(r.residual, null);
      assert.equal(r.residualTop, null);
      assert.equal(r.targetPositions, 3);
      assert.equal(r.lookupNgram, null);
    },
  },
  {
    name: 'greedy: no uniforms; the target row is one-hot at its argmax, the draft row raw',
    options: { targetScore: rows(P), draftScore: rows(P), gamma: 2, ...probs, temperature: 0 },
    check(r) {
      assert.deepEqual(r.proposed, [0, 0]);
      assert.deepEqual(
        r.positions,
        [0, 1].map(() => ({
          token: 0,
          text: BYTE(0),
          p: 1,
          q: 0.5,
          acceptProb: 1,
          u: null,
          accepted: true,
        })),
      );
      assert.equal(r.uFinal, null);
      assert.equal(r.bonus, 0);
      assert.deepEqual(r.emitted, [0, 0, 0]);
      assert.equal(r.emittedText, BYTE(0).repeat(3));
      assert.equal(r.text, BYTE(0).repeat(3));
    },
  },
  {
    name: 'prompt lookup: the 3-gram 3 1 2 matched; its continuation 3 1 2 drafted, 1 rejected',
    options: {
      prompt: [1, 2, 3, 1, 2, 3, 1, 2],
      targetScore: rows(ONE_HOT_3),
      promptLookup: true,
      ...probs,
    },
    check(r) {
      assert.equal(r.drafter, 'lookup');
      assert.equal(r.lookupNgram, 3);
      assert.deepEqual(r.proposed, [3, 1, 2]);
      assert.equal(r.proposedText, '\u0003\u0001\u0002');
      const [a, b] = r.positions;
      assert.equal(r.positions.length, 2);
      assert.deepEqual({ ...a, u: 0 }, { token: 3, text: BYTE(3), p: 1, q: 1, acceptProb: 1, u: 0, accepted: true });
      assert.deepEqual({ ...b, u: 0 }, { token: 1, text: BYTE(1), p: 0, q: 1, acceptProb: 0, u: 0, accepted: false });
      assert.equal(r.nAccepted, 1);
      assert.equal(r.correction, 3);
      assert.deepEqual(r.emitted, [3, 3]);
      assert.deepEqual(r.residual, ONE_HOT_3);
      assert.deepEqual(r.residualTop, [{ token: 3, text: BYTE(3), p: 1 }]);
      assert.equal(r.targetPositions, 4);
    },
  },
  {
    name: 'plain decoding',
    options: { targetScore: rows(P), plain: true, ...probs },
    check(r) {
      assert.deepEqual(
        [r.proposed, r.positions, r.gamma, r.drafter, r.correction, r.targetPositions],
        [[], [], 0, 'none', null, 1],
      );
      assert.deepEqual(r.emitted, [r.bonus]);
      assert.ok(isUniform(r.uFinal));
    },
  },
  {
    name: 'a tree of two siblings (1 and 2) under a target certain of 2 (step functions)',
    options: {
      targetStep: () => ONE_HOT_2,
      draftStep: () => HALF_1_2,
      tree: { branches: [2] },
      temperature: 1,
    },
    check(r) {
      // The verdict is held once, in the tree: positions, its chain view, is built when read.
      assert.equal(typeof Object.getOwnPropertyDescriptor(r, 'positions').get, 'function');
      assert.deepEqual(structuredClone(r).positions, pathPositions(r.tree));
      assert.ok('value' in Object.getOwnPropertyDescriptor(r, 'positions'), 'built once');
      const { nodes, path } = r.tree;
      assert.deepEqual(nodes.map((n) => n.token).sort(), [1, 2]);
      const two = nodes.findIndex((n) => n.token === 2);
      const one = nodes[1 - two];
      assert.deepEqual(path, [two]);
      assert.deepEqual(
        { ...nodes[two], q: 0, u: 0 },
        {
          parent: -1,
          token: 2,
          text: BYTE(2),
          depth: 1,
          p: 1,
          q: 0,
          acceptProb: 1,
          u: 0,
          status: 'accepted',
        },
      );
      assert.ok(isUniform(nodes[two].u));
      // tested first, 1 is rejected (and 2 then has q 1); tested second, it is never examined
      if (one.status === 'rejected') assert.deepEqual([one.p, one.q, one.acceptProb, nodes[two].q], [0, 0.5, 0, 1]);
      else assert.deepEqual([one.status, one.u, nodes[two].q], ['unexamined', null, 0.5]);
      assert.deepEqual(
        r.positions.map((p) => [p.token, p.p, p.q, p.accepted]),
        [[2, 1, nodes[two].q, true]],
      );
      assert.deepEqual([r.proposed, r.emitted, r.bonus, r.correction, r.targetPositions], [[], [2, 2], 2, null, 3]);
    },
  },
];

test('records: every field as worked out by hand, over rejection, bonus, greedy, lookup, plain and tree', async () => {
  for (const { name, options, check } of CASES) {
    const dec = sd.createDecoder({ prompt: [5], seed: 3, maxTokens: 12, ...options });
    let iteration = 0;
    for (let step = 0; step < 3 && !dec.done; step++) {
      const r = await dec.step();
      const extra = [...(r.tree ? ['tree'] : []), ...(r.targetProbs ? ['targetProbs', 'draftProbs'] : [])];
      assert.deepEqual(Object.keys(r), [...FIELDS, ...extra], name);
      assert.equal(r.iteration, iteration++);
      assert.equal(r.vocab, V);
      for (const k of ['targetCached', 'draftCached', 'draftMs', 'targetMs', 'ms'])
        assert.equal(typeof r[k], 'number', `${name}: ${k}`);
      assert.equal(r.emittedText, r.emitted.map(BYTE).join(''));
      assert.equal(r.stopped, false, name); // no stopTokens (pretrained.test stops)
      try {
        check(r);
      } catch (e) {
        e.message = `${name}, iteration ${r.iteration}: ${e.message}`;
        throw e;
      }
      if (options.promptLookup) break; // later iterations match other n-grams
    }
    dec.dispose();
  }
});

test('residualTop: the 10 largest entries, ties by lower token, as a full sort orders them', async () => {
  const { topEntries } = await import('../../web/lib/decoder/records.js');
  const probs = Float32Array.from({ length: 1001 }, (_, i) =>
    i % 5 === 0 ? 0 : [0.5, 0.25, 0.125][i % 3] * ((i * 7919) % 13),
  );
  probs[17] = Number.NaN;
  const sorted = [...probs.keys()].filter((i) => probs[i] > 0).sort((a, b) => probs[b] - probs[a] || a - b);
  const expected = sorted.slice(0, 10).map((token) => ({ token, text: `<${token}>`, p: probs[token] }));
  assert.deepEqual(
    topEntries(probs, 10, (t) => `<${t}>`),
    expected,
  );
  assert.ok(expected[0].p === expected[1].p); // ties are there to order
  assert.deepEqual(
    topEntries(row([0, 0.25]), 10).map((e) => e.token),
    [1],
  );
});
