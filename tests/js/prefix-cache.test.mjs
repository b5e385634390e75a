// web/lib/base/prefix-cache.js: the bookkeeping shared by kvCacheScorer (ONNX Runtime,
// transformers.js) and GpuModel (WebGPU), as tables of one-line cases: what a call keeps of the
// cache, which tree nodes an accepted path walks down, which tree nodes a grown tree reuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commonPrefixLength, keptPrefix, reusableTreeNodes, treePath } from '../../web/lib/base/prefix-cache.js';

test('commonPrefixLength', () => {
  for (const [cached, tokens, want] of [
    [[], [1, 2], 0],
    [[1, 2, 3], [1, 2, 3], 3],
    [[1, 2, 3], [1, 2], 2],
    [[1, 2], [1, 2, 3], 2],
    [[1, 9, 3], [1, 2, 3], 1],
    [[7], [1], 0],
  ]) {
    assert.equal(commonPrefixLength(cached, tokens), want, `${cached} / ${tokens}`);
    assert.equal(commonPrefixLength(Int32Array.from(cached), tokens), want, 'typed arrays alike');
  }
});

test('keptPrefix: the common prefix, less the rows the call needs computed', () => {
  for (const [cached, tokens, need, want, why] of [
    [[], [1, 2, 3], 1, 0, 'empty cache'],
    [[1, 2], [1, 2, 3], 1, 2, 'one new token: forward it'],
    [[1, 2, 3], [1, 2, 3], 1, 2, 'all cached: the last must still be forwarded for its row'],
    [[1, 2, 3], [1, 2, 3, 4, 5], 3, 2, 'three rows wanted: forward tokens 2.. again'],
    [[1, 2, 3, 4], [1, 2, 9], 1, 2, 'a rejected draft: cut back to the common prefix'],
    [[1, 2, 3, 4], [1, 2, 3], 0, 3, 'no row needed (a tree pass without its root)'],
    [[5, 6], [1, 2], 1, 0, 'nothing in common'],
  ]) {
    assert.equal(keptPrefix(cached, tokens, need), want, why);
  }
});

// The tree of the example: root -> 10 (node 0) -> 11 (node 2) -> 12 (node 3); root -> 20 (node 1)
const tree = { tokens: [10, 20, 11, 12], parents: [-1, -1, 0, 2] };

test('treePath: the nodes an accepted path walks down, as far as the tokens match', () => {
  for (const [cached, tokens, want, why] of [
    [[1, 2], [1, 2, 10, 11, 12], [0, 2, 3], 'the whole branch'],
    [[1, 2], [1, 2, 10, 11], [0, 2], 'part of it'],
    [[1, 2], [1, 2, 20], [1], 'the other branch'],
    [[1, 2], [1, 2, 10, 12], [0], 'a correction after the first node'],
    [[1, 2], [1, 2, 30], [], 'a token no node has'],
    [[1, 2], [1, 2], [], 'nothing past the sequence'],
    [[1, 2], [1, 3, 10], [], 'the sequence changed under the tree'],
    [[1, 2], [1], [], 'shorter than the sequence'],
  ]) {
    assert.deepEqual(treePath(cached, tree, tokens), want, why);
  }
  assert.deepEqual(treePath([1, 2], null, [1, 2, 10]), [], 'no tree');
  // a node's children are searched after it: the first matching child in drawing order
  assert.deepEqual(
    treePath([], { tokens: [5, 5, 6], parents: [-1, -1, 1] }, [5, 6]),
    [0],
    'node 0 matches first; its child does not',
  );
});

test('reusableTreeNodes: unchanged nodes before tree.first, on the same cached sequence', () => {
  const grown = {
    tokens: [10, 20, 11, 12, 13],
    parents: [-1, -1, 0, 2, 3],
    first: 4,
    withRoot: false,
  };
  for (const [cached, old, tokens, next, want, why] of [
    [[1, 2], tree, [1, 2], grown, 4, 'a tree grown by one depth'],
    [[1, 2], tree, [1, 2], { ...grown, first: 2 }, 2, 'only nodes before first'],
    [[1, 2], tree, [1, 2], { ...grown, withRoot: true, first: 0 }, 0, 'a pass with its root row starts afresh'],
    [[1, 2], tree, [1, 2, 3], grown, 0, 'another sequence'],
    [[1, 2], tree, [1, 9], grown, 0, 'another sequence of the same length'],
    [[1, 2], null, [1, 2], grown, 0, 'no tree before'],
    [[1, 2], { tokens: [10, 21, 11, 12], parents: [-1, -1, 0, 2] }, [1, 2], grown, 1, 'node 1 changed'],
    [[1, 2], { tokens: [10, 20, 11, 12], parents: [-1, -1, 1, 2] }, [1, 2], grown, 2, 'node 2 moved'],
  ]) {
    assert.equal(reusableTreeNodes(cached, old, tokens, next), want, why);
  }
});
