// The records of a decoder iteration, read from the bindings' wire format (recordOf) into the
// documented IterationRecord shape (specdec.d.ts), and the queries the C++ decoder asks of score
// callbacks (queryOf).

import { tokenText as byteTokenText } from '../base/text.js';

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

// The n largest entries (ties: lower token first), by insertion into a short sorted list: one
// pass over the row (a full sort of a 50k-token residual took ~35 ms; this, ~0.4 ms).
export function topEntries(probs, n, tokenText = byteTokenText) {
  const best = []; // token ids, by decreasing probability
  for (let i = 0; i < probs.length; i++) {
    const p = probs[i];
    if (!(p > 0) || (best.length === n && !(p > probs[best[n - 1]]))) continue;
    let j = best.length < n ? best.length : n - 1;
    for (; j > 0 && probs[best[j - 1]] < p; j--) best[j] = best[j - 1];
    best[j] = i;
  }
  return best.map((token) => ({ token, text: tokenText(token), p: probs[token] }));
}

// The last token's kind, one rule for both records: a correction after a rejection; else a
// bonus (in plain decoding, or a step that drafted nothing, the one token counts as a bonus).
// In a tree the rejected children are not among positions, which list the accepted path.
const finalOf = (drafted, bonus, last) =>
  drafted && !bonus ? { correction: last, bonus: null } : { correction: null, bonus: last };

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
  const result = {
    emitted,
    nAccepted: raw.nAccepted,
    positions,
    ...finalOf(drafted, raw.bonus, emitted[emitted.length - 1]),
    uFinal: nanToNull(raw.uFinal),
  };
  if (raw.residual) result.residual = raw.residual;
  return result;
}

/**
 * The chain view of a tree's verdict: its accepted path as PositionRecords, root to leaf (what
 * IterationRecord.positions is in tree mode, built from the tree when first read).
 */
export function pathPositions(tree) {
  return tree.path.map((i) => {
    const { token, text, p, q, acceptProb, u } = tree.nodes[i];
    return { token, text, p, q, acceptProb, u, accepted: true };
  });
}

// obj[key] as compute() the first time it is read (then a plain data property, in the same
// place among the keys: spread, structuredClone and JSON see it as one).
function lazy(obj, key, compute) {
  const settle = (value) =>
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  Object.defineProperty(obj, key, {
    enumerable: true,
    configurable: true,
    get: () => (settle(compute()), obj[key]),
    set: settle,
  });
}

// The drafters by their index in the wire format (Drafter in src/specdec/drafter.h).
const DRAFTERS = ['none', 'draft', 'lookup', 'heads'];

/**
 * The names of a record's head on the wire that recordOf reads: every field of the module's
 * table (recordWire(), from kRecordWire in src/bindings/handles.h), none else.
 */
export const WIRE_FIELDS = Object.freeze([
  'nProposed',
  'nEmitted',
  'nPositions',
  'nResidual',
  'nAccepted',
  'bonus',
  'finalToken',
  'uFinal',
  'targetCached',
  'draftCached',
  'draftMs',
  'targetMs',
  'vocab',
  'gamma',
  'drafter',
  'lookupNgram',
  'targetPositions',
  'extras',
  'stopped',
]);

const layouts = new WeakMap(); // module -> its wire layout

/**
 * The wire layout of a module (M.recordWire(): { name: index, ..., length }), checked against
 * WIRE_FIELDS and resolved once per module. A module built from other sources than this file
 * (a stale web/lib/wasm) is refused here rather than misread.
 */
export function wireLayout(M) {
  let layout = layouts.get(M);
  if (layout) return layout;
  const table = { ...M.recordWire() };
  const { length } = table;
  delete table.length;
  const names = Object.keys(table).sort();
  const indices = new Set(Object.values(table));
  const ok =
    names.join() === [...WIRE_FIELDS].sort().join() &&
    length === names.length &&
    indices.size === length &&
    [...indices].every((i) => Number.isInteger(i) && i >= 0 && i < length);
  if (!ok)
    throw new Error(
      `internal: the module's record wire (${JSON.stringify(M.recordWire())}) is not the one records.js reads (${WIRE_FIELDS.join(', ')}): rebuild web/lib/wasm`,
    );
  layout = Object.freeze({ ...table, length });
  layouts.set(M, layout);
  return layout;
}

// One iteration's record from the C++ decoder's wire format (DecoderHandle::step and
// kRecordWire in src/bindings/handles.h: one Float64Array view of wasm memory, read here before
// anything else can call into wasm) -> the IterationRecord. ctx: { layout (wireLayout), iteration,
// ms, tokenText, text (emitted -> the text they add), native (its extras(): { tree, targetProbs,
// draftProbs }) }.
export function recordOf(wire, { layout: f, iteration, ms, tokenText = byteTokenText, text, native }) {
  const nProposed = wire[f.nProposed];
  const nEmitted = wire[f.nEmitted];
  const n = wire[f.nPositions];
  const nResidual = wire[f.nResidual];
  const gamma = wire[f.gamma];
  const final = finalOf(gamma > 0, wire[f.bonus] === 1, wire[f.finalToken]);
  const head = {
    nAccepted: wire[f.nAccepted],
    uFinal: nanToNull(wire[f.uFinal]),
    targetCached: wire[f.targetCached],
    draftCached: wire[f.draftCached],
    draftMs: wire[f.draftMs],
    targetMs: wire[f.targetMs],
    vocab: wire[f.vocab],
    drafter: DRAFTERS[wire[f.drafter]],
    lookupNgram: wire[f.lookupNgram] || null,
    targetPositions: wire[f.targetPositions],
    stopped: wire[f.stopped] === 1,
  };
  const extras = wire[f.extras];
  let at = f.length;
  const proposed = [];
  for (let i = 0; i < nProposed; i++) proposed.push(wire[at++]);
  const emitted = [];
  for (let i = 0; i < nEmitted; i++) emitted.push(wire[at++]);
  const positions = [];
  for (let i = 0; i < n; i++, at += 6) {
    positions.push({
      token: wire[at],
      text: '',
      p: wire[at + 1],
      q: wire[at + 2],
      acceptProb: wire[at + 3],
      u: nanToNull(wire[at + 4]),
      accepted: wire[at + 5] === 1,
    });
  }
  // The residual: float32s two to an entry (a copy).
  const residual = nResidual ? new Float32Array(wire.buffer, wire.byteOffset + 8 * at, nResidual).slice() : null;
  // The wire is read: what follows may call into wasm (a tokenizer, extras()).
  for (const pos of positions) pos.text = tokenText(pos.token);
  const rec = {
    iteration,
    proposed,
    proposedText: proposed.map(tokenText).join(''),
    positions,
    nAccepted: head.nAccepted,
    ...final,
    uFinal: head.uFinal,
    residual,
    residualTop: residual ? topEntries(residual, 10, tokenText) : null,
    emitted,
    emittedText: emitted.map(tokenText).join(''),
    text: text(emitted),
    targetCached: head.targetCached,
    draftCached: head.draftCached,
    draftMs: head.draftMs,
    targetMs: head.targetMs,
    ms,
    vocab: head.vocab,
    gamma,
    drafter: head.drafter,
    lookupNgram: head.lookupNgram,
    targetPositions: head.targetPositions,
    stopped: head.stopped,
  };
  if (extras) {
    const x = native.extras();
    if (x.tree) {
      // The verdict is the tree's (the wire carries no positions for it): positions, its chain
      // view, is built from it when first read.
      const tree = treeRecord(x.tree, tokenText);
      rec.tree = tree;
      lazy(rec, 'positions', () => pathPositions(tree));
    }
    if (x.targetProbs) {
      rec.targetProbs = rowsOf(x.targetProbs, head.vocab);
      rec.draftProbs = rowsOf(x.draftProbs, head.vocab);
    }
  }
  return rec;
}

// A query of the C++ decoder (bindings/handles.cc): [target (1) / draft (0), nLast, tokens...],
// or a tree query [target + 2, rows, first, withRoot, nodes, tokens..., node tokens...,
// parents...]. A view of wasm memory: copied first (the callbacks keep the tokens).
export function queryOf(view) {
  if (view === null) return null;
  const packed = view.slice();
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
  return {
    target,
    source,
    hidden,
    nLast: packed[1],
    tokens: packed.subarray(5, end - 2 * nodes),
    tree,
  };
}
