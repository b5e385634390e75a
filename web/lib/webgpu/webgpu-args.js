// The arguments of GpuModel.score and scoreTree (webgpu-model.js), checked before a pass is
// queued: the sequence's tokens, and a draft tree's nodes, parents, first row and root row.
import { describe, fail, integer, tokenArray } from '../base/errors.js';
import { MAX_TREE_NODES } from './webgpu-graph.js';

/** The sequence `tokens` as token ids: at least one. */
export function sequenceArg(tokens) {
  const t = tokenArray(tokens, 'tokens');
  if (t.length === 0) fail('tokens: must hold at least one token');
  return t;
}

/** Refuses a token id past the vocabulary; `name` is the argument's (tokens, tree.tokens). */
export function checkVocabulary(ids, vocabSize, name) {
  const bad = ids.findIndex((x) => x >= vocabSize);
  if (bad >= 0) fail(`${name}[${bad}]: token id ${ids[bad]} outside the vocabulary [0, ${vocabSize})`);
}

/**
 * A draft tree { tokens, parents, first = 0, withRoot = true } checked: 1..MAX_TREE_NODES nodes
 * in the vocabulary, each node's parent −1 (the root) or an earlier node, first a row there is.
 * @returns {{ tokens: ArrayLike<number>, parents: Int32Array, first: number, withRoot: boolean }}
 */
export function treeArg(tree, vocabSize) {
  if (tree === null || typeof tree !== 'object')
    fail(`tree: expected { tokens, parents, first, withRoot }, got ${describe(tree)}`);
  const nodes = tokenArray(tree.tokens, 'tree.tokens');
  const n = nodes.length;
  if (n < 1 || n > MAX_TREE_NODES) fail(`tree.tokens: a tree of 1..${MAX_TREE_NODES} nodes, got ${n}`);
  checkVocabulary(nodes, vocabSize, 'tree.tokens');
  if (tree.parents === undefined || tree.parents === null || tree.parents.length !== n)
    fail(`tree.parents: expected ${n} entries (one per node), got ${describe(tree.parents)}`);
  const parents = Int32Array.from(tree.parents);
  for (let u = 0; u < n; u++) {
    if (!Number.isInteger(tree.parents[u]) || parents[u] < -1 || parents[u] >= u)
      fail(
        `tree.parents[${u}]: expected -1 (the root) or an earlier node 0..${u - 1}, got ${describe(tree.parents[u])}`,
      );
  }
  const withRoot = tree.withRoot ?? true;
  if (typeof withRoot !== 'boolean') fail(`tree.withRoot: expected a boolean, got ${describe(withRoot)}`);
  const first = tree.first ?? 0;
  integer(first, 'tree.first', 0, withRoot ? 0 : n - 1);
  return { tokens: nodes, parents, first, withRoot };
}
