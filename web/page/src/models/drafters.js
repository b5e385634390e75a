// What section 4's drafter / γ / shape controls allow, and the note under them: whether the
// heads can draft for the loaded target, and what the chosen γ policy or tree does. Pure
// functions; gen-controls.js wires them to the form.

/**
 * Whether the heads can draft for the target loaded (or about to be): { ok, reason }.
 * @param {object} o
 * @param {object | null} o.info  the worker's loaded models (client.info), null before a load
 * @param {object | undefined} o.pair  the build's entry for that pair (PAIRS[name])
 * @param {string | null} o.headsError  the loader's refusal of the target's heads, if any
 */
export function headsStatus({ info, pair, headsError }) {
  if (headsError) return { ok: false, reason: headsError };
  if (info?.target.file)
    return {
      ok: false,
      reason: 'heads are trained for the page’s own targets, not for a model file you chose',
    };
  if (info ? info.heads : pair?.heads) return { ok: true, reason: '' };
  return {
    ok: false,
    reason: `heads not in this build${pair?.headsMissing ? ` (${pair.headsMissing} missing)` : ''}`,
  };
}

/** Nodes of a tree shape, b1 + b1·b2 + … */
function nodesOf(tree) {
  return tree.reduce((acc, b) => ({ n: acc.n * b, sum: acc.sum + acc.n * b }), { n: 1, sum: 0 }).sum;
}

/**
 * The note under the controls.
 * @param {object} o
 * @param {string} o.note  why a control changed by itself ('' when none did)
 * @param {number[] | null} o.tree  branches per depth, or null for a chain
 * @param {string} o.mode  the γ policy: 'fixed' | 'auto' | 'heuristic'
 * @param {string} o.drafter  'draft' | 'lookup' | 'both' | 'heads'
 * @param {number | null | undefined} o.headsCount  how many tokens ahead the heads guess
 */
export function shapeNote({ note, tree, mode, drafter, headsCount }) {
  const notes = note ? [note] : [];
  if (tree) {
    notes.push(
      `A tree's depth is its γ: ${tree.length} here; its ${nodesOf(tree)} nodes are drafted in ${tree.length} batched passes and scored in ONE target pass (a tree attention mask).`,
    );
  } else if (mode === 'auto') {
    notes.push(
      'auto: before every iteration the decoder picks γ in 1…γ max (or a plain step) for the most expected tokens per unit of time, E(α, γ) / (γc + v(γ + 1)), from what this run has measured so far.',
    );
  } else if (mode === 'heuristic') {
    notes.push(
      'heuristic (Hugging Face’s schedule): γ starts at 5, +2 after a fully accepted draft, −1 otherwise, within 1…γ max.',
    );
  }
  if (drafter === 'lookup' || drafter === 'both') notes.push('Prompt lookup drafts chains, not trees.');
  if (drafter === 'heads' && headsCount) {
    notes.push(
      `The heads guess at most ${headsCount} tokens ahead: a deeper γ or tree is cut to ${headsCount}; the first iteration is a plain step (the heads read the target's last hidden state).`,
    );
  }
  return notes.join(' ');
}
