// Greedy tokens against a reference generator when the two runs may round differently (float16
// models: a pass over k tokens and generate()'s one-token passes use different kernels, so two
// logits within rounding of each other may rank either way). Every position where the tokens part
// must be a near-tie in the model's own logits over the common prefix; the reference is then
// re-run from our token on, so the rest of the sequence is still checked token by token. Plain
// ESM with no Node imports: the browser tests load it in a Worker too.

/**
 * @param {object} o
 * @param {number[]} o.got the tokens under test
 * @param {number[]} o.reference the reference generator's tokens from the same prompt
 * @param {(prefix: number[]) => Promise<ArrayLike<number>>} o.logitsAfter the model's logits
 *   for the next token after prompt + prefix
 * @param {(prefix: number[], n: number) => Promise<number[]>} o.continueFrom the reference
 *   generator's n greedy tokens after prompt + prefix
 * @param {number} o.tie largest logit gap that counts as a near-tie
 * @param {number} [o.maxFlips] how many near-ties may part the runs before the test gives up
 * @returns {Promise<{ flips: { position: number, gap: number }[], mismatch: null | { position: number, gap: number } }>}
 *   every near-tie where the runs parted, and the first position that is not one (null: none)
 */
export async function compareGreedy({ got, reference, logitsAfter, continueFrom, tie, maxFlips = 4 }) {
  const flips = [];
  let ref = reference.slice();
  for (;;) {
    const position = got.findIndex((t, i) => t !== ref[i]);
    if (position === -1) return { flips, mismatch: null };
    const row = await logitsAfter(got.slice(0, position));
    const gap = Math.abs(Number(row[ref[position]]) - Number(row[got[position]]));
    if (gap > tie || flips.length >= maxFlips) return { flips, mismatch: { position, gap } };
    flips.push({ position, gap });
    const prefix = got.slice(0, position + 1);
    ref = prefix.concat(await continueFrom(prefix, got.length - prefix.length));
  }
}

/** A one-line account of compareGreedy's result, for assertion messages and logs. */
export function describeFlips({ flips, mismatch }) {
  const list = flips.map((f) => `${f.position} (gap ${f.gap.toFixed(4)})`).join(', ');
  const head = flips.length ? `near-ties at ${list}` : 'no near-tie';
  return mismatch ? `${head}; parted at ${mismatch.position} with a logit gap of ${mismatch.gap.toFixed(4)}` : head;
}
