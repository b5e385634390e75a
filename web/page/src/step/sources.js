// Where section 2's iterations come from: a decoder on the lesson's toy distributions in the
// page's own WASM instance, or one on the real models in the decoding worker (with section 4's
// drafter and sampling settings). Both give the same view of an iteration (records.js
// recordToView), plus the context and KV-cache lines the step-through shows above it.
import { TOY, toyLabel, byteLabel, visibleText } from '../shared/tokens.js';
import { recordToView } from '../shared/records.js';
import { readOptions } from '../shared/options.js';
import { fmt } from './captions.js';
import { GAMMA_CAP } from '../shared/controls.js';

const TOP_ROWS_MODEL = 6;
/**
 * The step-through's first seed (index.html's value of #step-seed): the first iteration on either
 * toy pair at the default γ = 4 accepts two guesses, rejects the third and draws the correction
 * from the residual — all four stages at once. (α = 0.9 on both toys, so most seeds accept all
 * four guesses first, as seeds 0–9 do: the learner would meet no rejection until later.)
 * tests/e2e/stepper.test.mjs checks it.
 */
export const FIRST_SEED = 10;

// 'auto' on the toy distributions: the lesson's costs (a draft step c = 0.1 of a target step,
// a verify pass as cheap as one step), so that a seed replays the same γ choices.
const TOY_COSTS = { c: 0.1, verifyCost: Array.from({ length: GAMMA_CAP + 1 }, () => 1) };

// createDecoder's γ / tree options for a setting of the step-through's controls (its γ is
// already the library's: a number, or 'auto' / 'heuristic' with gammaMax).
function shapeOptions({ gamma, gammaMax, tree }) {
  if (tree) return { tree: { branches: tree } };
  return typeof gamma === 'string' ? { gamma, gammaMax } : { gamma };
}

/**
 * A decoder on one of the lesson's toy pairs (TOY[key]) in the page's WASM instance `sd`.
 * `setting`: { gamma, mode, tree } from the step-through's controls.
 */
export function makeToySource(sd, key, setting, seed) {
  const toy = TOY[key];
  const p = Float32Array.from(toy.p);
  const q = Float32Array.from(toy.q);
  const costs = setting.gamma === 'auto' && !setting.tree ? { costModel: TOY_COSTS } : {};
  const dec = sd.createDecoder({
    targetStep: () => p,
    draftStep: () => q,
    ...shapeOptions(setting),
    ...costs,
    seed,
    prompt: [0],
  });
  const labelOf = toyLabel(toy.words);
  return {
    kind: 'toy',
    config: { ...setting, drafter: 'draft' },
    async step() {
      const before = Array.from(dec.tokens);
      const view = recordToView(dec.step(), { fullRows: true, context: before });
      view.labelOf = labelOf;
      view.contextText = (before.length > 14 ? '… ' : '') + before.slice(-14).map(labelOf).join(' ');
      view.kvText = `${before.length} token${before.length === 1 ? '' : 's'} so far`;
      view.done = false;
      return view;
    },
    dispose() {
      dec.dispose();
    },
  };
}

/**
 * A decoder on the real models in the worker (client.js `models`), with the drafter and the
 * sampling settings of section 4's form; `start()` loads the models and creates it.
 */
export function makeModelSource(models, setting, seed) {
  const opts = readOptions();
  if (setting.tree && (opts.drafter === 'lookup' || opts.drafter === 'both')) {
    throw new Error(
      'a tree needs the draft model or heads (prompt lookup drafts chains): pick another drafter in section 4, or the chain',
    );
  }
  const config = { ...setting, drafter: opts.drafter };
  return {
    kind: 'models',
    config,
    async start() {
      await models.ensureLoaded();
      await models.stepStart({
        ...opts,
        gamma: setting.gamma,
        gammaMax: setting.gammaMax,
        tree: setting.tree,
        seed,
        topRows: TOP_ROWS_MODEL,
      });
    },
    async step() {
      const view = await models.stepNext();
      // A checkpoint's view carries its tokens' text (worker/checkpoints.js viewText); ours are bytes.
      const { pieces } = view;
      view.labelOf = pieces ? (t) => visibleText(pieces[t] ?? `#${t}`, true) : byteLabel;
      const context = pieces ? view.contextText : new TextDecoder().decode(Uint8Array.from(view.context));
      const text = visibleText(context, true);
      view.contextText = text.length > 90 ? '…' + text.slice(-90) : text;
      // Draft passes: one per depth for the draft model (a tree's depth batched), one for the
      // heads (every head reads the same hidden state), none for prompt lookup.
      const draftSteps =
        view.drafter === 'draft' ? (view.tree ? view.tree.depth : view.gamma) : view.drafter === 'heads' ? 1 : 0;
      const usesDraftModel = config.drafter === 'draft' || config.drafter === 'both';
      view.kvText =
        `KV cache after this iteration: target ${view.kv.target ?? '?'}` +
        (usesDraftModel ? `, draft ${view.kv.draft ?? '?'} tokens` : ' tokens (no draft model)') +
        ` · time: draft ${fmt(view.ms.draft, 2)} ms (${draftSteps} pass${draftSteps === 1 ? '' : 'es'}), target ${fmt(view.ms.target, 2)} ms (one pass over ${view.targetPositions} positions)`;
      return view;
    },
    dispose() {
      models.stepDispose();
    },
  };
}
