// The bookkeeping of a KV cache kept by longest common prefix, as pure functions over token
// lists: which cached tokens a call can keep, and, after a pass over a draft tree, which of the
// tree's cached nodes the next call's tokens walk down (the accepted path). The caches
// themselves live elsewhere: kvCacheScorer (adapters/ort.js: ONNX Runtime and transformers.js tensors)
// and GpuModel (webgpu/webgpu-model.js: GPU buffers) cut and copy them as these functions say.
// (The C++ models' own: src/model/model_source.cc.)

/**
 * Length of the longest common prefix of the cached tokens and a call's tokens.
 * @param {ArrayLike<number>} cached
 * @param {ArrayLike<number>} tokens
 */
export function commonPrefixLength(cached, tokens) {
  const n = Math.min(cached.length, tokens.length);
  let common = 0;
  while (common < n && cached[common] === tokens[common]) common++;
  return common;
}

/**
 * How many of the cached tokens a call on `tokens` keeps when it must compute the rows of its
 * last `need` positions: the longest common prefix, less what those rows need forwarded (a row
 * comes out of the pass that forwards its token). The rest of the cache is dropped.
 * @param {ArrayLike<number>} cached
 * @param {ArrayLike<number>} tokens
 * @param {number} need 0 .. tokens.length
 */
export function keptPrefix(cached, tokens, need) {
  return Math.min(commonPrefixLength(cached, tokens), tokens.length - need);
}

/**
 * After a pass over a draft tree below the cached sequence: the nodes (indices into
 * tree.tokens, root first) that tokens[cached.length ..] walk down, as far as they match — the
 * accepted path, whose keys and values are in the cache already. Empty when there is no tree
 * or the tokens do not extend the cached sequence. Nodes come in drawing order (a parent before
 * its children, -1 the root), so a path's nodes increase.
 * @param {ArrayLike<number>} cached
 * @param {{ tokens: ArrayLike<number>, parents: ArrayLike<number> } | null} tree
 * @param {ArrayLike<number>} tokens
 * @returns {number[]}
 */
export function treePath(cached, tree, tokens) {
  const base = cached.length;
  if (!tree || tokens.length <= base || commonPrefixLength(cached, tokens) < base) return [];
  const path = [];
  let cur = -1;
  for (let j = base; j < tokens.length; j++) {
    let next = -1;
    for (let v = cur + 1; v < tree.tokens.length; v++) {
      if (tree.parents[v] === cur && tree.tokens[v] === tokens[j]) {
        next = v;
        break;
      }
    }
    if (next < 0) break;
    path.push(next);
    cur = next;
  }
  return path;
}

/**
 * How many of the last tree pass's nodes a new tree pass can reuse as they are: when it asks
 * about the same (cached) sequence without its root row and the tree has only grown since (a
 * drafter asks depth by depth), the nodes before `tree.first` that are unchanged.
 * @param {ArrayLike<number>} cached the cached sequence
 * @param {{ tokens: ArrayLike<number>, parents: ArrayLike<number> } | null} old the last tree pass's nodes
 * @param {ArrayLike<number>} tokens the new pass's sequence
 * @param {{ tokens: ArrayLike<number>, parents: ArrayLike<number>, first: number, withRoot: boolean }} tree
 */
export function reusableTreeNodes(cached, old, tokens, tree) {
  if (!old || tree.withRoot || cached.length !== tokens.length || commonPrefixLength(cached, tokens) !== tokens.length)
    return 0;
  let reused = 0;
  const n = Math.min(old.tokens.length, tree.first);
  while (reused < n && old.tokens[reused] === tree.tokens[reused] && old.parents[reused] === tree.parents[reused])
    reused++;
  return reused;
}
