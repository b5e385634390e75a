// Section 4's generation form read into the worker's run options. Plain reads of the DOM, no
// state: section 4's runs, its v(k) measurement (vk.js) and the step-through on the real models
// (stepper.js) all decode with the settings the learner has in this form.
import { encodeBytes } from './tokens.js';
import { GAMMA_CAP, GAMMA_DEFAULT, gammaOf, treeOf } from './controls.js';

function num(id, dflt) {
  const v = Number(document.getElementById(id).value);
  return Number.isFinite(v) ? v : dflt;
}

/** The drafter chosen in section 4: 'draft' | 'lookup' | 'both' | 'heads'. */
export function drafterChoice() {
  return document.querySelector('input[name="drafter"]:checked')?.value ?? 'draft';
}

/** The thread count chosen in section 4 (undefined until the worker has said what it has). */
function threadsChoice() {
  const el = document.getElementById('gen-threads');
  return el?.dataset.ready === 'true' ? Math.max(1, Math.round(Number(el.value)) || 1) : undefined;
}

/** "Run both & compare": how many times plain and speculative decoding run in turn. */
export function repeatsChoice() {
  return Math.min(9, Math.max(1, Math.round(num('gen-repeats', 3))));
}

/** Where the target runs: 'gpu' (WebGPU) or 'cpu' (WebAssembly), as section 4's switch says. */
function backendChoice() {
  return document.querySelector('input[name="backend"]:checked')?.value === 'gpu' ? 'gpu' : 'cpu';
}

/**
 * The generation settings in section 4's form, as the worker's run options (worker.js 'run',
 * 'step-start', 'measure-vk'): the prompt's bytes, the drafter and the draft's shape, sampling,
 * the token budget, pace, threads and backend, each clamped to what the form allows.
 */
export function readOptions() {
  const prompt = document.getElementById('prompt').value || '\n';
  const drafter = drafterChoice();
  // Prompt lookup drafts chains only (the tree select is disabled then).
  const tree = drafter === 'lookup' || drafter === 'both' ? null : treeOf(document.getElementById('gen-tree').value);
  return {
    prompt: encodeBytes(prompt),
    drafter,
    tree,
    ...gammaOf(
      tree ? 'fixed' : document.getElementById('gen-gamma-mode').value,
      Math.min(GAMMA_CAP, Math.max(1, Math.round(num('gen-gamma', GAMMA_DEFAULT)))),
    ),
    temperature: Math.min(2, Math.max(0, num('gen-temp', 0.8))),
    topK: Math.max(0, Math.round(num('gen-topk', 0))),
    topP: Math.min(1, Math.max(0.01, num('gen-topp', 1))),
    seed: Math.max(0, Math.round(num('gen-seed', 42))),
    maxTokens: Math.min(2000, Math.max(1, Math.round(num('gen-max', 200)))),
    paceMs: Math.max(0, num('gen-pace', 0)),
    threads: threadsChoice(),
    backend: backendChoice(),
  };
}
