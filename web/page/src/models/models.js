// Section 4, "Two real models": the page side of the worker (worker.js, through client.js).
// Runs plain and speculative decoding, colours the text by accepted / corrected / bonus tokens,
// and shows the measured statistics beside what the lesson's formula predicts from them. This
// file wires the section's parts together and holds its busy state (a run or a measurement in
// progress disables what would disturb it):
//   pair-picker.js   the pairs of the build          own-files.js     a learner's model files
//   weights-picker.js  float32 or int8 weights (weights.js: the default and why)
//   load-status.js   what is loading, what is ready  threads.js       the worker's threads
//   gen-controls.js  drafter, γ policy, shape        backend.js       target on the GPU or CPU
//   compare.js       the Run buttons, the comparison (results.js, verdict-view.js)
//   run-view.js      the runs' text, stats, charts   vk.js            what a verify pass costs
import { PAIRS } from '../shared/client.js';
import { readOptions } from '../shared/options.js';
import { initVk } from './vk/vk.js';
import { initBackend } from './backend.js';
import { initThreads } from './threads.js';
import { initGenControls } from './gen-controls.js';
import { initPairPicker } from './pair-picker.js';
import { initWeightsPicker } from './weights-picker.js';
import { initOwnFiles } from './own-files.js';
import { initLoadStatus } from './load-status.js';
import { initRunView } from './run-view.js';
import { initCompare } from './compare.js';
import { initPromptCheck } from './prompt-check.js';
import { weightsText } from '../shared/weights.js';

/**
 * The weights of the models in use when a learner's files are among them: { target, draft }
 * ('f32' | 'int8', model.weights of each), or null when both are a pair of the build's.
 */
export function ownWeights(info) {
  if (!info || !(info.target?.file || info.draft?.file)) return null;
  return { target: info.target.weights ?? 'f32', draft: info.draft.weights ?? 'f32' };
}

/** Why the Weights choice is disabled while a learner's files are loaded, with what they hold. */
export function ownWeightsText(w) {
  const a = (x) => `${x === 'int8' ? 'an' : 'a'} ${weightsText(x)}`;
  const held =
    w.target === w.draft ? `${weightsText(w.target)} weights` : `${a(w.target)} target and ${a(w.draft)} draft`;
  return (
    `Your own model files are loaded: ${held}, as the files hold them. ` +
    'Go back to the page’s models (or pick a pair) to choose float32 or int8.'
  );
}

/** The control that keeps the focus while the busy state disables it (aria-disabled instead). */
let held = null;
const blocked = new WeakSet();

/**
 * Runs `apply` (which disables and enables section 4's controls) so that the focus stays on the
 * control pressed (issue 56: pressing Run disabled it, and the focus fell to <body>, so a
 * keyboard learner started again from the top): a focused control that `apply` disables is
 * enabled again at once, before the browser moves the focus, and marked aria-disabled — its
 * clicks (Enter, Space) do nothing — until the next change of the busy state or until the focus
 * leaves it, when it is disabled for real.
 */
function keepFocus(apply) {
  if (held) {
    held.removeAttribute('aria-disabled');
    held = null;
  }
  const active = document.activeElement;
  apply();
  if (!(active instanceof HTMLButtonElement || active instanceof HTMLInputElement) || !active.disabled) return;
  held = active;
  active.disabled = false;
  active.setAttribute('aria-disabled', 'true');
  if (blocked.has(active)) return;
  blocked.add(active);
  active.addEventListener(
    'click',
    (e) => {
      if (active.getAttribute('aria-disabled') !== 'true') return;
      e.preventDefault();
      e.stopImmediatePropagation();
    },
    { capture: true },
  );
  active.addEventListener('blur', () => {
    if (held !== active) return;
    held = null;
    active.removeAttribute('aria-disabled');
    active.disabled = true;
  });
}

/**
 * @param {any} sd the page's WASM instance (the lesson's formulas)
 * @param {import('../shared/client.js').ModelClient} client section 4's decoding worker
 * @param {{ isolation?: { state: string, reason: string | null, on: (fn: Function) => void } }} [o]
 *   the page's cross-origin isolation (isolation.js): why the worker has one thread, if it has
 */
export function initModels(sd, client, { isolation = null } = {}) {
  let busy = false;
  const isBusy = () => busy;
  // The parts, in the order they are wired; each is there before any event can reach it.
  let compare = null;
  let backend = null;
  let threads = null;
  let controls = null;
  let pairs = null;
  let weights = null;
  let files = null;

  function setBusy(b) {
    keepFocus(() => apply(b));
  }

  function apply(b) {
    busy = b;
    // The pitfalls lab waits while section 4 decodes or measures (pitfalls.js).
    if (document.body.dataset.modelsBusy !== String(b)) {
      document.body.dataset.modelsBusy = String(b);
      window.dispatchEvent(new CustomEvent('specdec-models-busy', { detail: { busy: b } }));
    }
    compare?.setDisabled(b);
    files?.setDisabled(b);
    pairs?.setDisabled(b);
    // A learner's files hold the weights they hold: no choice until the page's models are back.
    weights?.setDisabled(b || !!ownWeights(client.info));
    vk.setDisabled(b);
    backend?.setDisabled(b);
    threads?.setDisabled(b);
  }

  const vk = initVk({
    client,
    pairs: PAIRS,
    setBusy,
    isBusy,
    readOptions,
    // The count the last run used (T or 1, whichever was faster then: compare.js), else the select's.
    threadsNow: () => compare?.threadsInUse() ?? threads?.info()?.threads ?? 1,
    runFacts: () => compare?.runFacts() ?? null,
    speedup: (...a) => sd.speculativeSpeedup(...a),
    backendNow: () => backend?.current() ?? { backend: 'cpu' },
  });
  backend = initBackend({
    client,
    isBusy,
    onChange: () => {
      controls?.clearNote();
      vk.onBackend();
    },
  });
  threads = initThreads({
    client,
    isolation,
    isBusy,
    onChange: () => {
      compare?.forgetThreads();
      vk.onThreads();
    },
  });
  controls = initGenControls({ client });
  files = initOwnFiles({ client, isBusy, setBusy });
  pairs = initPairPicker({ client, isBusy, setBusy, onPicked: () => files.clear() });
  weights = initWeightsPicker({ client, isBusy, setBusy, onPicked: () => files.clear() });
  const ownNote = document.getElementById('weights-own');
  const status = initLoadStatus();
  const runs = initRunView({ client });
  compare = initCompare({ sd, client, runs, vk, threads, isBusy, setBusy });
  initPromptCheck({ client });

  client.on((ev) => {
    status.show(ev);
    if (ev.type !== 'loaded') return;
    compare.reset();
    pairs.check(client.pair);
    pairs.refresh();
    // The Weights radio says what is loaded: with a learner's files, their model.weights (none
    // checked when target and draft differ) and why it is disabled; otherwise the choice.
    const own = ownWeights(ev.info);
    weights.check(own ? (own.target === own.draft ? own.target : null) : client.weights);
    weights.refresh();
    ownNote.hidden = !own;
    ownNote.textContent = own ? ownWeightsText(own) : '';
    ownNote.dataset.target = own?.target ?? '';
    ownNote.dataset.draft = own?.draft ?? '';
    // The worker's threads: the count it started with, unless one was chosen already.
    if (!threads.info() && ev.info.threads) threads.show(ev.info.threads);
    controls.onLoaded();
    vk.onLoaded();
    setBusy(busy);
  });

  setBusy(false);
  controls.sync();
}
