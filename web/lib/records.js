// The records of a decoder iteration, reshaped from the bindings' typed-array columns into the
// documented IterationRecord shape (specdec.d.ts), and the queries the C++ decoder asks of score
// callbacks (queryOf).

import { tokenText as byteTokenText } from './text.js';

const nanToNull = (x) => (Number.isNaN(x) ? null : x);

const NODE_STATUS = ['unexamined', 'accepted', 'rejected'];

// The raw tree columns of the bindings -> { nodes: [...], path }.
export function treeRecord(raw, tokenText = byteTokenText) {
  const nodes = [];
  for (let i = 0; i < raw.token.length; i++) {
    nodes.push({
      parent: raw.parent[i],
      token: raw.token[i],
      text: tokenText(raw.token[i]),
      depth: raw.depth[i],
      p: raw.p[i],
      q: raw.q[i],
      acceptProb: raw.acceptProb[i],
      u: nanToNull(raw.u[i]),
      status: NODE_STATUS[raw.status[i]],
    });
  }
  return { nodes, path: Array.from(raw.path) };
}

export function rowsOf(flat, vocab) {
  const rows = [];
  for (let i = 0; i + vocab <= flat.length && vocab > 0; i += vocab) rows.push(flat.slice(i, i + vocab));
  return rows;
}

export function topEntries(probs, n, tokenText = byteTokenText) {
  const order = [];
  for (let i = 0; i < probs.length; i++) if (probs[i] > 0) order.push(i);
  order.sort((a, b) => probs[b] - probs[a] || a - b);
  return order.slice(0, n).map((token) => ({ token, text: tokenText(token), p: probs[token] }));
}

// The raw verify result of the bindings -> the documented shape. drafted: false for a step that
// drafted nothing (its one token counts as a bonus).
export function verifyRecord(raw, drafted = true, tokenText = byteTokenText) {
  const positions = [];
  for (let i = 0; i < raw.tokens.length; i++) {
    positions.push({
      token: raw.tokens[i],
      text: tokenText(raw.tokens[i]),
      p: raw.p[i],
      q: raw.q[i],
      acceptProb: raw.acceptProb[i],
      u: nanToNull(raw.u[i]),
      accepted: raw.accepted[i] === 1,
    });
  }
  const emitted = Array.from(raw.emitted);
  const last = emitted[emitted.length - 1];
  // A correction after a rejection (in a tree the rejected children are not among positions,
  // which list the accepted path); the token of a step that drafted nothing counts as a bonus.
  const rejected = drafted && !raw.bonus;
  const result = {
    emitted,
    nAccepted: raw.nAccepted,
    positions,
    correction: rejected ? last : null,
    bonus: rejected ? null : last,
    uFinal: nanToNull(raw.uFinal),
  };
  if (raw.residual) result.residual = raw.residual;
  return result;
}

/** One decoder: create with sd.createDecoder(); free with dispose(). */

// A query of the C++ decoder (bindings/handles.cc): [target (1) / draft (0), nLast, tokens...],
// or a tree query [target + 2, rows, first, withRoot, nodes, tokens..., node tokens...,
// parents...].
export function queryOf(packed) {
  if (packed === null) return null;
  const kind = packed[0] & 3;
  const hidden = (packed[0] & 4) !== 0; // the answer carries the target's hidden states (heads)
  const target = kind === 1 || kind === 3;
  const source = target ? 'targetScore' : 'draftScore';
  if (kind < 2) return { target, source, hidden, nLast: packed[1], tokens: packed.subarray(2), tree: null };
  const nodes = packed[4];
  const end = packed.length;
  const tree = {
    tokens: packed.subarray(end - 2 * nodes, end - nodes),
    parents: packed.subarray(end - nodes),
    first: packed[2],
    withRoot: packed[3] === 1,
  };
  return { target, source, hidden, nLast: packed[1], tokens: packed.subarray(5, end - 2 * nodes), tree };
}
