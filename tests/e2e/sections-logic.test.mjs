// Sections 1–3's words, in Node: the explorer's preset notes are computed from the lesson's
// formulas and agree with the read-outs; section 3 refuses what is not a distribution and says
// what it uses; every caption of the step-through starts with its stage's name as the stage list
// shows it (chain and tree); an embedding without sections 4 and 5 never reloads for threads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EXPLORER_PRESETS, explorerPresetNote } from '../../web/page/src/shared/presets.js';
import { check } from '../../web/page/src/residual/residual.js';
import { STAGE_NAMES, stageHead, stagesOf } from '../../web/page/src/step/stages.js';
import { captionOf, treeCaption } from '../../web/page/src/step/captions.js';
import { isolationDecision } from '../../web/page/src/shared/isolation.js';
import { expectedSpeedup, expectedOptimalGamma } from './lesson-formulas.mjs';

const f = { speedup: expectedSpeedup, optimalGamma: expectedOptimalGamma };

test("explorer presets: each note names the card's optimal γ and speedups, and nothing it contradicts", () => {
  for (const key of Object.keys(EXPLORER_PRESETS)) {
    const p = EXPLORER_PRESETS[key];
    const note = explorerPresetNote(key, f, 16);
    const best = expectedOptimalGamma(p.alpha, p.cost, 16);
    assert.match(
      note,
      new RegExp(`γ = ${p.gamma} gives ${expectedSpeedup(p.alpha, p.gamma, p.cost).toFixed(2)}×`),
      `${key}: ${note}`,
    );
    assert.ok(
      note.includes(`${best}`) && note.includes(`${expectedSpeedup(p.alpha, best, p.cost).toFixed(2)}×`),
      `${key}: ${note}`,
    );
    assert.doesNotMatch(note, /handful|barely/, key);
  }
  // The lesson's numbers: the good draft's best γ is 10 (3.43×), the weak one's 2 (1.30×),
  // and the weak one falls below 1× from γ = 7.
  assert.match(explorerPresetNote('good', f, 16), /the best γ is 10, at 3\.43×/);
  assert.match(
    explorerPresetNote('weak', f, 16),
    /the best γ is 2, at 1\.30×.*from γ = 7 on it is slower than plain decoding/,
  );
  assert.match(explorerPresetNote('cheap', f, 16), /moves from 10 \(3\.43×\) to 16, the end of the slider \(6\.31×\)/);
  // Another range: the note follows the formulas, not a fixed text.
  assert.match(explorerPresetNote('good', f, 8), /the best γ is 8, the end of the slider/);
});

test('residual: a negative, empty or all-zero entry is refused, never replaced', () => {
  assert.deepEqual(check([0.5, 0.5]), { v: [0.5, 0.5], sum: 1, bad: [], error: null });
  const neg = check([0.2, -1, 0.3]);
  assert.equal(neg.v, null);
  assert.deepEqual(neg.bad, [1]);
  assert.match(neg.error, /-1 at token 1: not a probability/);
  assert.deepEqual(check([0.2, NaN]).bad, [1]);
  const zeros = check([0, 0, 0]);
  assert.equal(zeros.v, null, 'all zeros is not taken as uniform');
  assert.match(zeros.error, /all zeros/);
  assert.deepEqual(check([1, 3]).v, [0.25, 0.75]);
});

test("step-through: every caption starts with its stage's number and the stage list's name", () => {
  const labelOf = (t) => `t${t}`;
  const pos = (accepted) => ({
    examined: true,
    accepted,
    token: 1,
    u: 0.5,
    acceptProb: 0.7,
    pX: 0.3,
    qX: 0.4,
  });
  const chain = {
    positions: [pos(true), pos(false)],
    finalKind: 'correction',
    finalToken: 2,
    emitted: [1, 2],
    labelOf,
    drafter: 'draft',
  };
  const bonus = { ...chain, positions: [pos(true)], finalKind: 'bonus', emitted: [1, 2] };
  const node = (status, depth, child) => ({
    status,
    depth,
    child,
    siblings: 2,
    token: 3,
    p: 0.2,
    q: 0.3,
    acceptProb: 0.66,
    u: 0.1,
  });
  const tree = {
    ...chain,
    positions: [],
    tree: {
      branches: [2, 1],
      depth: 2,
      nodes: [node('accepted', 1, 1), node('unexamined', 1, 2), node('rejected', 2, 1)],
    },
  };
  const names = Object.values(STAGE_NAMES);
  for (const [view, caption] of [
    [chain, captionOf],
    [bonus, captionOf],
    [tree, treeCaption],
  ]) {
    for (const stage of stagesOf(view)) {
      const text = caption(view, stage);
      assert.ok(text.startsWith(stageHead(stage.kind)), `“${text}” starts with “${stageHead(stage.kind)}”`);
      for (const other of ['Accept a path', 'Bonus:', 'Sample:'])
        assert.ok(!text.startsWith(`${text[0]} · ${other}`), text);
    }
  }
  assert.deepEqual(names, ['Draft', 'Verify in parallel', 'Accept a prefix', 'Correct once']);
});

test('isolation: an embedding without sections 4 and 5 never reloads for threads', () => {
  const base = {
    isolated: false,
    embedded: false,
    serviceWorker: true,
    attempted: false,
    storage: true,
    controlledAtLoad: false,
    controllerChanged: true,
    activeWorker: false,
  };
  assert.equal(isolationDecision(base).action, 'reload');
  assert.deepEqual(isolationDecision({ ...base, unneeded: true }), {
    action: 'none',
    state: 'not-needed',
  });
  assert.equal(isolationDecision({ ...base, isolated: true, unneeded: true }).state, 'isolated');
});
