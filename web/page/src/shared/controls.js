// The γ policy, γ and draft shape controls, written once for the two sections that have them:
// the step-through (section 2, ids step-*) and section 4's generation form (ids gen-*). In
// index.html each form holds a <template data-shape-controls="step|gen"> where its three fields
// go (writeShapeControls, called by main.js before any section is wired). Their default and
// largest γ are the library's own (`limits`, which the C++ core defines), and the run options
// they give carry γ as the library takes it: `gamma` a number (fixed), or 'auto' / 'heuristic'
// with `gammaMax` (gammaOf), passed to createDecoder as they are.
import { limits } from 'specdec/limits';
import { h } from './svg.js';

export { gammaOf } from './gamma.js';

/** γ of a fixed policy when the page starts: the library's default. */
export const GAMMA_DEFAULT = limits.gamma;
/** The library's default γ max: where γ starts when a policy (auto, heuristic) takes over. */
export const GAMMA_MAX_DEFAULT = limits.gammaMax;
/** The largest γ (and γ max) of both forms: the library's. */
export const GAMMA_CAP = limits.maxGamma;

// Each form's fields: the note that explains its controls (aria-describedby).
const FORMS = { step: { note: 'step-note' }, gen: { note: 'gen-note' } };
const POLICIES = ['fixed', 'auto', 'heuristic'];
/** The draft shapes offered: branches per depth ([] is the chain). */
const SHAPES = [[], [2, 2, 1], [3, 2, 1, 1], [4, 2]];

/** Number of nodes of a tree shape: b1 + b1·b2 + ... */
export function treeSize(branches) {
  let level = 1;
  let total = 0;
  for (const b of branches) {
    level *= b;
    total += level;
  }
  return total;
}

/** Branches per depth from a shape select's value ("2,2,1"), or null for a chain (""). */
export function treeOf(value) {
  const branches = String(value || '')
    .split(',')
    .map(Number)
    .filter((b) => Number.isInteger(b) && b > 0);
  return branches.length ? branches : null;
}

/**
 * A γ input while a tree is chosen: disabled and showing the tree's depth (its γ); the chain's
 * value comes back when the chain is chosen again.
 */
export function showTreeDepth(input, tree) {
  if (tree) {
    if (input.dataset.chainValue === undefined) input.dataset.chainValue = input.value;
    input.value = String(tree.length);
  } else if (input.dataset.chainValue !== undefined) {
    input.value = input.dataset.chainValue;
    delete input.dataset.chainValue;
  }
  input.disabled = !!tree;
}

const shapeLabel = (b) =>
  b.length ? `tree [${b.join(', ')}]: ${treeSize(b)} nodes, depth ${b.length}` : 'chain: γ tokens in a row';

/** The three fields of one form (prefix 'step' or 'gen'): γ policy, γ, draft shape. */
export function shapeFields(prefix) {
  const { note } = FORMS[prefix];
  const field = (cls, children) => h('div', { class: cls }, children);
  return [
    field('field small-field', [
      h('label', { for: `${prefix}-gamma-mode`, text: 'γ policy' }),
      h(
        'select',
        { id: `${prefix}-gamma-mode`, 'aria-describedby': note },
        POLICIES.map((p) => h('option', { value: p, text: p })),
      ),
    ]),
    field('field small-field', [
      h('label', { for: `${prefix}-gamma`, id: `${prefix}-gamma-label`, text: 'γ' }),
      h('input', {
        type: 'number',
        id: `${prefix}-gamma`,
        min: 1,
        max: GAMMA_CAP,
        step: 1,
        value: GAMMA_DEFAULT,
        inputmode: 'numeric',
      }),
    ]),
    field('field', [
      h('label', { for: `${prefix}-tree`, text: 'Draft shape' }),
      h(
        'select',
        { id: `${prefix}-tree`, 'aria-describedby': note },
        SHAPES.map((b) => h('option', { value: b.join(','), text: shapeLabel(b) })),
      ),
    ]),
  ];
}

/** Puts each form's fields where its <template data-shape-controls> stands. */
export function writeShapeControls(root = document) {
  for (const slot of root.querySelectorAll('template[data-shape-controls]'))
    slot.replaceWith(...shapeFields(slot.dataset.shapeControls));
}

/** One form's controls: { gammaMode, gamma, gammaLabel, tree }. */
export function shapeControls(prefix) {
  const $ = (id) => document.getElementById(`${prefix}-${id}`);
  return {
    gammaMode: $('gamma-mode'),
    gamma: $('gamma'),
    gammaLabel: $('gamma-label'),
    tree: $('tree'),
  };
}

/**
 * The controls that apply to the shape chosen: a tree fixes γ to its depth (the policy and γ
 * disabled), and γ's label says what it is. Returns { tree, mode }.
 */
export function syncShape(ui) {
  const tree = treeOf(ui.tree.value);
  const mode = ui.gammaMode.value;
  ui.gammaMode.disabled = !!tree;
  showTreeDepth(ui.gamma, tree);
  ui.gammaLabel.textContent = tree ? 'γ (tree depth)' : mode === 'fixed' ? 'γ' : 'γ max';
  return { tree, mode };
}

/** After the policy changed: γ becomes the policy's upper bound, so start it at the library's γ max. */
export function raiseToGammaMax(ui) {
  if (ui.gammaMode.value !== 'fixed' && Number(ui.gamma.value) < GAMMA_MAX_DEFAULT)
    ui.gamma.value = String(GAMMA_MAX_DEFAULT);
}
