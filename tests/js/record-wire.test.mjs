// The record's wire by name: the table the module exports (recordWire(), built from kRecordWire in
// src/bindings/handles.h, which the C++ writer puts every value by) is the set of names
// web/lib/decoder/records.js reads, and each named entry of what the C++ decoder writes holds what its
// name says, over rejection, bonus, greedy, tree, plain, prompt lookup, a stop token and real
// models. The raw wire is read from the decoder's handle (native.step()), before records.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { loadSpecdec } from 'specdec';
import { NATIVE } from '../../web/lib/model/handles.js';
import { WIRE_FIELDS, wireLayout } from '../../web/lib/decoder/records.js';
import { TINY_MODEL } from './support.mjs';

const sd = await loadSpecdec();

const V = 7;
const row = (entries) => Float32Array.from({ length: V }, (_, i) => entries[i] ?? 0);
const P = row([0.5, 0, 0.25, 0.125, 0.125]);
const ONE_HOT_1 = row([0, 1]);
const ONE_HOT_2 = row([0, 0, 1]);
const ONE_HOT_3 = row([0, 0, 0, 1]);
const HALF_1_2 = row([0, 0.5, 0.5]);
const FROM_P = [0, 2, 3, 4]; // the tokens P (and a residual that is P) can give
const isUniform = (u) => u >= 0 && u < 1;
const steps = { prompt: [5], seed: 3, temperature: 1, maxTokens: 12 };

test('recordWire: the module exports a name for each of its 19 entries, exactly the names records.js reads', async () => {
  const table = sd._recordWire();
  const { length, ...fields } = table;
  assert.equal(length, 19);
  assert.deepEqual(
    Object.values(fields).sort((a, b) => a - b),
    Array.from({ length }, (_, i) => i),
  );
  assert.deepEqual(Object.keys(fields).sort(), [...WIRE_FIELDS].sort());
  // records.js reads the head only as f.<name> (f: the layout), and every name it reads is there.
  const source = await readFile(new URL('../../web/lib/decoder/records.js', import.meta.url), 'utf8');
  const read = new Set([...source.matchAll(/\bf\.(\w+)/g)].map((m) => m[1]));
  assert.deepEqual([...read].sort(), [...WIRE_FIELDS, 'length'].sort());
  // A table that is not the one records.js reads is refused, not misread.
  const swapped = { ...table, gamma: table.vocab, vocab: table.gamma };
  assert.doesNotThrow(() => wireLayout({ recordWire: () => swapped })); // a permutation is fine
  assert.throws(
    () => wireLayout({ recordWire: () => ({ ...table, extra: 19, length: 20 }) }),
    /rebuild web\/lib\/wasm/,
  );
  const { stopped, ...missing } = table;
  assert.throws(() => wireLayout({ recordWire: () => ({ ...missing, length: 18 }) }), /rebuild web\/lib\/wasm/);
  assert.equal(typeof stopped, 'number');
});

// The named head of one raw step, its parts (proposed, emitted, positions) and the residual.
function rawStep(dec) {
  const table = sd._recordWire();
  const wire = dec[NATIVE]('test').step().slice();
  const head = Object.fromEntries(WIRE_FIELDS.map((name) => [name, wire[table[name]]]));
  let at = table.length;
  const take = (n) => Array.from(wire.subarray(at, (at += n)));
  const proposed = take(head.nProposed);
  const emitted = take(head.nEmitted);
  const positions = [];
  for (let i = 0; i < head.nPositions; i++) positions.push(take(6));
  const residual = new Float32Array(wire.buffer, 8 * at, head.nResidual);
  assert.equal(wire.length, at + Math.ceil(head.nResidual / 2), 'the wire ends after the residual');
  return { head, proposed, emitted, positions, residual };
}

// Fields every case shares (step functions: nothing cached; times are durations).
function common(h) {
  assert.equal(h.vocab, V);
  assert.equal(h.targetCached, 0);
  assert.equal(h.draftCached, 0);
  assert.ok(h.draftMs >= 0 && h.targetMs >= 0);
}

const CASES = [
  {
    name: 'a rejection, distributions kept',
    options: { targetStep: () => P, draftStep: () => ONE_HOT_1, gamma: 1, distributions: true },
    check({ head: h, proposed, emitted, positions, residual }) {
      assert.deepEqual([h.nProposed, h.nEmitted, h.nPositions, h.nResidual, h.nAccepted, h.bonus], [1, 1, 1, V, 0, 0]);
      assert.ok(FROM_P.includes(h.finalToken));
      assert.deepEqual(emitted, [h.finalToken]);
      assert.ok(isUniform(h.uFinal));
      assert.deepEqual([h.gamma, h.drafter, h.lookupNgram, h.targetPositions, h.extras, h.stopped], [1, 1, 0, 2, 2, 0]);
      assert.deepEqual(proposed, [1]);
      const [token, p, q, acceptProb, u, accepted] = positions[0];
      assert.deepEqual([token, p, q, acceptProb, accepted], [1, 0, 1, 0, 0]);
      assert.ok(isUniform(u));
      assert.deepEqual(residual, P);
    },
  },
  {
    name: 'a bonus, no distributions',
    options: { targetStep: () => P, draftStep: () => P, gamma: 2, distributions: false },
    check({ head: h, proposed, emitted, positions }) {
      assert.deepEqual([h.nProposed, h.nEmitted, h.nPositions, h.nResidual, h.nAccepted, h.bonus], [2, 3, 2, 0, 2, 1]);
      assert.deepEqual(emitted, [...proposed, h.finalToken]);
      assert.ok(isUniform(h.uFinal));
      assert.deepEqual([h.gamma, h.drafter, h.targetPositions, h.extras, h.stopped], [2, 1, 3, 0, 0]);
      positions.forEach((pos, i) =>
        assert.deepEqual(pos.slice(0, 4), [proposed[i], P[proposed[i]], P[proposed[i]], 1]),
      );
    },
  },
  {
    name: 'greedy: no uniform',
    options: { targetStep: () => P, draftStep: () => P, gamma: 2, temperature: 0, distributions: false },
    check({ head: h, positions }) {
      assert.deepEqual([h.nAccepted, h.bonus, h.finalToken], [2, 1, 0]);
      assert.ok(Number.isNaN(h.uFinal));
      for (const pos of positions) assert.ok(Number.isNaN(pos[4]));
    },
  },
  {
    name: 'a tree: no positions on the wire (the tree in extras holds the verdict)',
    options: { targetStep: () => ONE_HOT_2, draftStep: () => HALF_1_2, tree: { branches: [2] } },
    check({ head: h, emitted }) {
      assert.deepEqual(
        [h.nProposed, h.nPositions, h.nResidual, h.nAccepted, h.bonus, h.finalToken],
        [0, 0, 0, 1, 1, 2],
      );
      assert.deepEqual(emitted, [2, 2]);
      assert.deepEqual([h.gamma, h.drafter, h.targetPositions, h.extras], [1, 1, 3, 1 + 2]);
    },
  },
  {
    name: 'plain decoding',
    options: { targetStep: () => P, plain: true },
    check({ head: h, emitted }) {
      assert.deepEqual([h.nProposed, h.nEmitted, h.nPositions, h.nAccepted, h.bonus], [0, 1, 0, 0, 0]);
      assert.deepEqual(emitted, [h.finalToken]);
      assert.deepEqual([h.gamma, h.drafter, h.lookupNgram, h.targetPositions], [0, 0, 0, 1]);
    },
  },
  {
    name: 'prompt lookup: the 3-gram 3 1 2 matched, 1 rejected',
    options: { prompt: [1, 2, 3, 1, 2, 3, 1, 2], targetStep: () => ONE_HOT_3, promptLookup: true },
    once: true,
    check({ head: h, proposed, emitted }) {
      assert.deepEqual([h.drafter, h.lookupNgram, h.gamma, h.nPositions, h.nAccepted, h.bonus], [2, 3, 3, 2, 1, 0]);
      assert.deepEqual([proposed, emitted, h.finalToken, h.targetPositions], [[3, 1, 2], [3, 3], 3, 4]);
    },
  },
  {
    name: 'a stop token',
    options: { targetStep: () => ONE_HOT_3, plain: true, stopTokens: [3] },
    once: true,
    check({ head: h, emitted }) {
      assert.deepEqual([emitted, h.stopped], [[3], 1]);
    },
  },
];

test('the wire by name: each entry holds what its name says', () => {
  for (const { name, options, check, once } of CASES) {
    const dec = sd.createDecoder({ ...steps, ...options });
    for (let i = 0; i < (once ? 1 : 3) && !dec.done; i++) {
      const raw = rawStep(dec);
      try {
        common(raw.head);
        check(raw);
      } catch (e) {
        e.message = `${name}, step ${i}: ${e.message}`;
        throw e;
      }
    }
    dec.dispose();
  }
});

test('the wire by name, real models: the KV caches and the draft time', async () => {
  const bytes = new Uint8Array(await readFile(TINY_MODEL));
  const target = sd.loadModel(bytes);
  const draft = sd.loadModel(bytes);
  const dec = sd.createDecoder({ target, draft, gamma: 3, prompt: [65, 66, 67], seed: 1, temperature: 0 });
  let ms = 0;
  for (let i = 0; i < 3; i++) {
    const { head: h, emitted } = rawStep(dec);
    const tokens = dec.tokens.length;
    // Each cache holds the tokens whose keys it has: all but the last one emitted, at most.
    assert.ok(h.targetCached > 0 && h.targetCached <= tokens, `targetCached ${h.targetCached} of ${tokens}`);
    assert.ok(h.draftCached > 0 && h.draftCached <= tokens, `draftCached ${h.draftCached} of ${tokens}`);
    assert.deepEqual([h.gamma, h.drafter, h.nProposed, h.vocab], [3, 1, 3, 256]);
    assert.equal(emitted.at(-1), h.finalToken);
    assert.ok(h.draftMs >= 0 && h.targetMs >= 0);
    ms += h.draftMs + h.targetMs;
  }
  assert.ok(ms > 0, 'three iterations of two models took some time');
  dec.dispose();
  draft.dispose();
  target.dispose();
});
