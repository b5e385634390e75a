// When the page reloads itself to become cross-origin isolated (web/page/src/shared/isolation.js), in
// Node: once, at the top level, after its service worker took over (or when one is active but
// this load went past it), never in an iframe, never twice in a tab's session, never without
// sessionStorage to remember the try. And what of the learner's settings that reload keeps
// (web/page/src/shared/keep.js), with the status line's words for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isolationDecision, isolationReason } from '../../web/page/src/shared/isolation.js';
import { changedSettings, reloadNote } from '../../web/page/src/shared/keep.js';

const base = {
  isolated: false,
  embedded: false,
  serviceWorker: true,
  storage: true,
  attempted: false,
  controlledAtLoad: false,
  controllerChanged: false,
  activeWorker: false,
};
const decide = (over) => isolationDecision({ ...base, ...over });
/** The decision expected: { action, state }. */
const outcome = (action, state) => ({ action, state });

test('isolated already: nothing to do', () => {
  assert.deepEqual(decide({ isolated: true, controllerChanged: true }), outcome('none', 'isolated'));
  assert.equal(isolationReason('isolated'), null);
});

test('a first visit waits for the service worker, then reloads once', () => {
  assert.deepEqual(decide({}), outcome('wait', 'installing'));
  assert.deepEqual(decide({ controllerChanged: true }), outcome('reload', 'reloading'));
  // After that reload, still not isolated: never again in this session.
  assert.deepEqual(decide({ attempted: true, controlledAtLoad: true }), outcome('none', 'reload-did-not-help'));
  assert.deepEqual(decide({ attempted: true, controllerChanged: true }), outcome('none', 'reload-did-not-help'));
});

test('a load that went past an active service worker (a hard reload) reloads once through it', () => {
  assert.deepEqual(decide({ activeWorker: true }), outcome('reload', 'reloading'));
});

test('controlled from the start but not isolated: that worker does not isolate it; wait for an update', () => {
  assert.deepEqual(decide({ controlledAtLoad: true }), outcome('none', 'worker-without-headers'));
  assert.deepEqual(decide({ controlledAtLoad: true, controllerChanged: true }), outcome('reload', 'reloading'));
});

test('never in an iframe, without service workers or without sessionStorage', () => {
  for (const over of [{ controllerChanged: true }, { activeWorker: true }, {}]) {
    assert.deepEqual(decide({ ...over, embedded: true }), outcome('none', 'embedded'));
    assert.deepEqual(decide({ ...over, serviceWorker: false }), outcome('none', 'no-service-worker'));
    assert.deepEqual(decide({ ...over, storage: false }), outcome('none', 'no-storage'));
  }
  assert.match(
    isolationReason('embedded'),
    /^embedded in a page that is not cross-origin isolated, or in an iframe without allow="cross-origin-isolated"$/,
  );
});

test('a reload happens at most once: exhaustive over every combination of the facts', () => {
  const keys = Object.keys(base);
  for (let m = 0; m < 2 ** keys.length; m++) {
    const facts = Object.fromEntries(keys.map((k, i) => [k, !!(m & (1 << i))]));
    const d = isolationDecision(facts);
    if (d.action === 'reload') {
      assert.ok(
        !facts.isolated && !facts.embedded && facts.serviceWorker && facts.storage && !facts.attempted,
        JSON.stringify(facts),
      );
      assert.ok(facts.controllerChanged || (!facts.controlledAtLoad && facts.activeWorker), JSON.stringify(facts));
    }
    assert.equal(typeof isolationReason(d.state) === 'string' || d.state === 'isolated', true);
  }
});

test('the reload keeps the settings the learner changed, in document order, and says why it happened', () => {
  const state = (entries) =>
    new Map(entries.map(([key, id, value, rows]) => [key, { id, value, ...(rows ? { rows } : {}) }]));
  const baseline = state([
    ['alpha', 'alpha', '0.8'],
    ['radio:pair', 'pair-small', 'pair-small'],
    ['prompt', 'prompt', 'ROMEO:', 2],
    ['radio:backend', 'backend-cpu', 'backend-cpu'],
  ]);
  const now = state([
    ['alpha', 'alpha', '0.42'],
    ['res-p-4', 'res-p-4', '0.05'],
    ['radio:pair', 'pair-large', 'pair-large'],
    ['prompt', 'prompt', 'ROMEO:', 5],
    ['radio:backend', 'backend-gpu', 'backend-gpu'],
  ]);
  // The backend changed by the page (a GPU found), not by the learner: not kept.
  const touched = new Set(['alpha', 'res-p-4', 'radio:pair', 'prompt']);
  assert.deepEqual(
    changedSettings(baseline, now, touched).map((s) => s.id),
    ['alpha', 'res-p-4', 'pair-large', 'prompt'],
  );
  // Touched but back where it started: nothing to keep.
  assert.deepEqual(changedSettings(baseline, baseline, touched), []);
  assert.equal(
    reloadNote('isolated', 3),
    'Reloaded once to turn on threads (cross-origin isolation); your settings were kept.',
  );
  assert.equal(reloadNote('isolated', 0), 'Reloaded once to turn on threads (cross-origin isolation).');
  assert.match(reloadNote('reload-did-not-help', 1), /did not allow; your settings were kept\.$/);
});
