// The records of a decoder iteration, read from the bindings' wire format (recordOf) into the
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

// The drafters by their index in the wire format (Drafter in src/specdec/policy.h).
const DRAFTERS = ['none', 'draft', 'lookup', 'heads'];
const HEADER = 19; // the wire format's fixed entries

// One iteration's record from the C++ decoder's wire format (DecoderHandle::step in
// src/bindings/handles.h: one Float64Array view of wasm memory, read here before anything else
// can call into wasm) -> the IterationRecord. ctx: { iteration, ms, tokenText, text (emitted ->
// the text they add), native (its extras(): { tree, targetProbs, draftProbs }) }.
export function recordOf(wire, { iteration, ms, tokenText = byteTokenText, text, native }) {
  const nProposed = wire[0];
  const nEmitted = wire[1];
  const nVerifyEmitted = wire[2];
  const n = wire[3];
  const nResidual = wire[4];
  const nAccepted = wire[5];
  // A correction after a rejection (in a tree the rejected children are not among positions,
  // which list the accepted path); the token of a step that drafted nothing counts as a bonus.
  const rejected = wire[13] > 0 && wire[6] === 0; // drafted (gamma > 0), and no bonus
  const uFinal = nanToNull(wire[7]);
  const targetCached = wire[8];
  const draftCached = wire[9];
  const draftMs = wire[10];
  const targetMs = wire[11];
  const vocab = wire[12];
  const gamma = wire[13];
  const drafter = DRAFTERS[wire[14]];
  const lookupNgram = wire[15] || null;
  const targetPositions = wire[16];
  const extras = wire[17];
  const stopped = wire[18] === 1;
  let at = HEADER;
  const proposed = [];
  for (let i = 0; i < nProposed; i++) proposed.push(wire[at++]);
  const emitted = [];
  for (let i = 0; i < nEmitted; i++) emitted.push(wire[at++]);
  at += nVerifyEmitted;
  const last = nVerifyEmitted ? wire[at - 1] : undefined; // the verify's last token
  const positions = [];
  for (let i = 0; i < n; i++, at += 6) {
    const token = wire[at];
    positions.push({
      token,
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
    nAccepted,
    correction: rejected ? last : null,
    bonus: rejected ? null : last,
    uFinal,
    residual,
    residualTop: residual ? topEntries(residual, 10, tokenText) : null,
    emitted,
    emittedText: emitted.map(tokenText).join(''),
    text: text(emitted),
    targetCached,
    draftCached,
    draftMs,
    targetMs,
    ms,
    vocab,
    gamma,
    drafter,
    lookupNgram,
    targetPositions,
    stopped,
  };
  if (extras) {
    const x = native.extras();
    if (x.tree) rec.tree = treeRecord(x.tree, tokenText);
    if (x.targetProbs) {
      rec.targetProbs = rowsOf(x.targetProbs, vocab);
      rec.draftProbs = rowsOf(x.draftProbs, vocab);
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
