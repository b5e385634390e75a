// Section 4's prompt presets. The copy-heavy one is the benchmark's task for prompt lookup: a
// Shakespeare passage the models never trained on, followed by its own first 20 bytes, so a
// model that has learnt to continue what it has seen goes on copying, and prompt lookup (which
// proposes what followed the last earlier occurrence of the last few tokens) finds every draft
// in the prompt. The passage is embedded: the page never fetches the corpus.

/**
 * 149 bytes of tinyshakespeare.txt at byte offset 1,004,770 of 1,115,394 (90.08 %), i.e. in
 * the last 10 % that models/tools/train.py holds out for validation (The Taming of the Shrew, II.1).
 */
export const HELD_OUT_PASSAGE =
  "BAPTISTA:\nYou're welcome, sir; and he, for your good sake.\n" +
  'But for my daughter Katharina, this I know,\n' +
  'She is not for your turn, the more my grief.\n\n';

/** The passage, then its first 20 bytes: the model is asked to continue a repetition. */
export const COPY_PRESET = HELD_OUT_PASSAGE + HELD_OUT_PASSAGE.slice(0, 20);

export const PROMPT_PRESETS = {
  romeo: { prompt: 'ROMEO:', note: '' },
  copy: {
    prompt: COPY_PRESET,
    note:
      'A held-out passage of 149 bytes followed by its own first 20: the text that should come next is ' +
      'already in the prompt. Try the prompt lookup drafter (or both) with temperature 0. The models copy ' +
      "the passage when shown it (the small target's top choice is its next byte at 85% of positions) but " +
      'not when they write on their own: greedy, the small target keeps to it for 9 bytes and matches 14 of ' +
      'the next 60 (the large one 0, and 2 of 60). So lookup pays at temperature 0 (about 1.1× plain on the ' +
      'small pair, 1.4× on the large) and specdec takes plain steps where it stops paying.',
  },
};

// Section 1's presets: the lesson's three regimes. Their notes are computed from the same
// formulas as the explorer's read-outs (the WASM build's speculativeSpeedup and optimalGamma), so
// that a note never says something the card beside it contradicts.
export const EXPLORER_PRESETS = {
  good: { alpha: 0.9, gamma: 5, cost: 0.1 },
  weak: { alpha: 0.4, gamma: 5, cost: 0.1 },
  // The good draft made cheaper: compared with `good` (same α, c from 0.1 to 0.02).
  cheap: { alpha: 0.9, gamma: 5, cost: 0.02, from: 'good' },
};

/**
 * The sentence a preset writes beside the explorer, from the explorer's own numbers.
 * @param {keyof EXPLORER_PRESETS} key
 * @param {{ speedup: (alpha: number, gamma: number, c: number) => number,
 *   optimalGamma: (alpha: number, c: number, gammaMax: number) => number }} f
 *   the lesson's formulas (the page passes the WASM build's)
 * @param {number} gammaMax the largest γ the explorer shows
 */
export function explorerPresetNote(key, f, gammaMax) {
  const p = EXPLORER_PRESETS[key];
  const x = (v) => `${v.toFixed(2)}×`;
  const at = (g, c = p.cost) => f.speedup(p.alpha, g, c);
  const best = f.optimalGamma(p.alpha, p.cost, gammaMax);
  const bestText =
    best === gammaMax
      ? `the best γ is ${best}, the end of the slider (a longer draft would gain a little more), at ${x(at(best))}`
      : `the best γ is ${best}, at ${x(at(best))}`;
  const gammas = Array.from({ length: gammaMax }, (_, i) => i + 1);
  const head = `(α = ${p.alpha.toFixed(2)}, c = ${p.cost.toFixed(2)}): γ = ${p.gamma} gives ${x(at(p.gamma))}; ${bestText}.`;
  if (p.from) {
    const o = EXPLORER_PRESETS[p.from];
    const oldBest = f.optimalGamma(o.alpha, o.cost, gammaMax);
    return (
      `A cheaper draft (c from ${o.cost.toFixed(2)} to ${p.cost.toFixed(2)}, α = ${p.alpha.toFixed(2)}): γ = ${p.gamma} gives ` +
      `${x(at(p.gamma))} instead of ${x(f.speedup(o.alpha, o.gamma, o.cost))}, and the best γ moves from ${oldBest} ` +
      `(${x(f.speedup(o.alpha, oldBest, o.cost))}) to ${best}${best === gammaMax ? ', the end of the slider' : ''} ` +
      `(${x(at(best))}): each wasted guess costs less.`
    );
  }
  const name = key === 'good' ? 'A good draft' : 'A weak draft';
  // The γ within 5% of the best (the curve has one peak: a run of neighbours), and the first γ
  // past the best that loses to plain decoding.
  const near = gammas.filter((g) => at(g) >= 0.95 * at(best));
  const losing = gammas.find((g) => g > best && at(g) < 1);
  const parts = [`${name} ${head}`];
  if (near.length > 1)
    parts.push(`Every γ from ${near[0]} to ${near.at(-1)} is within 5% of the best: the curve is flat near its top.`);
  if (best < gammaMax) {
    parts.push(
      `Past γ = ${best} the draft costs more than its extra accepted tokens bring` +
        (losing ? `, and from γ = ${losing} on it is slower than plain decoding (below 1×).` : '.'),
    );
  }
  return parts.join(' ');
}
