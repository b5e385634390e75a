// Turns what the specdec package returns (an iteration from decoder.step(), decoder stats)
// into the small plain objects the page draws. Used in the page (toy distributions) and in the
// worker (real models), so everything returned here is structured-cloneable. The records are the
// package's IterationRecord, one shape (web/lib/specdec.d.ts): a chain's verdict is in
// `positions`, a tree's in `tree` (its chain view, `positions`, is never read here).

/** Row r (0-based) of a probability matrix given as rows or as a flat array with `vocab`. */
function rowOf(matrix, r, vocab) {
  if (!matrix) return null;
  if (Array.isArray(matrix) && matrix.length && typeof matrix[0] !== 'number') return matrix[r] ?? null;
  if (!vocab) return null;
  const start = r * vocab;
  if (start + vocab > matrix.length) return null;
  return matrix.subarray ? matrix.subarray(start, start + vocab) : matrix.slice(start, start + vocab);
}

/** The entries of a probability row to draw: all of them (fullRows) or the top n plus extras. */
function pickTokens(rows, { full, top, extra }) {
  const V = rows.find(Boolean)?.length ?? 0;
  if (full) return Array.from({ length: V }, (_, i) => i);
  const score = new Float64Array(V);
  for (const row of rows) if (row) for (let i = 0; i < V; i++) score[i] = Math.max(score[i], row[i]);
  const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => score[b] - score[a]);
  const picked = new Set(order.slice(0, top).filter((i) => score[i] > 0));
  for (const t of extra) if (t >= 0 && t < V) picked.add(t);
  return [...picked].sort((a, b) => score[b] - score[a]);
}

function residualArray(res, V) {
  if (!res) return null;
  if (Array.isArray(res) && res.length && typeof res[0] === 'object') {
    // top entries [{ token, p }]
    const out = new Float32Array(V);
    for (const e of res) out[e.token] = e.p ?? e.prob ?? e.probability ?? 0;
    return out;
  }
  return res;
}

/**
 * The view of one iteration for the step-through:
 * { positions: [{ token, pX, qX, acceptProb, u, accepted, examined, rows: [{ token, p, q }] }],
 *   bonusRows, residualRows, nAccepted, rejectedAt, finalToken, finalKind, emitted, context,
 *   kv: { target, draft } }
 */
export function recordToView(rec, { fullRows = false, topRows = 6, context = [] } = {}) {
  // (A tree iteration that drafted nothing, e.g. heads before the first target pass, is a plain step.)
  const tree = rec.tree?.nodes?.length ? treeView(rec) : null;
  // A tree's verdict is its tree (every node); a chain's, its positions.
  const proposed = tree ? [] : rec.proposed;
  const positions = tree ? [] : rec.positions;
  const g = proposed.length;
  const vocab = rec.vocab;
  const qRows = proposed.map((_, i) => rowOf(rec.draftProbs, i, vocab));
  const pRows = Array.from({ length: g + 1 }, (_, i) => rowOf(rec.targetProbs, i, vocab));
  const V = (pRows[0] ?? qRows[0])?.length ?? 0;
  const nAccepted = rec.nAccepted;
  const emitted = Array.from(rec.emitted);
  const rejectedAt = nAccepted < g && positions.length > nAccepted && !positions[nAccepted].accepted ? nAccepted : -1;
  let finalKind = emitted.length <= nAccepted ? null : rejectedAt >= 0 ? 'correction' : 'bonus';
  // Nothing drafted (gamma 0: the policy chose a plain step, lookup found no match, heads before
  // the first target pass): the one token is sampled from p, as plain decoding would.
  if (finalKind && !tree && g === 0) finalKind = 'plain';
  if (tree) finalKind = emitted.length <= nAccepted ? null : tree.finalKind;
  const finalToken = finalKind ? emitted[nAccepted] : -1;
  const resid = residualArray(rec.residual, V);

  const viewPositions = proposed.map((token, i) => {
    const pos = positions[i];
    const ids = pickTokens([pRows[i], qRows[i]], { full: fullRows, top: topRows, extra: [token] });
    return {
      token,
      examined: !!pos,
      pX: pos ? pos.p : pRows[i] ? pRows[i][token] : NaN,
      qX: pos ? pos.q : qRows[i] ? qRows[i][token] : NaN,
      acceptProb: pos ? pos.acceptProb : NaN,
      u: pos ? pos.u : NaN,
      accepted: pos ? !!pos.accepted : false,
      rows: ids.map((t) => ({
        token: t,
        p: pRows[i] ? pRows[i][t] : 0,
        q: qRows[i] ? qRows[i][t] : 0,
      })),
    };
  });
  let bonusRows = null;
  if (tree) {
    // The row the bonus is drawn from: the target's row after the last accepted node.
    const last = tree.path.length ? tree.path[tree.path.length - 1] : -1;
    const row = rowOf(rec.targetProbs, last + 1, vocab);
    if (row) {
      const ids = pickTokens([row], {
        full: fullRows,
        top: topRows,
        extra: finalKind === 'bonus' ? [finalToken] : [],
      });
      bonusRows = ids.map((t) => ({ token: t, p: row[t], q: 0 }));
    }
  } else if (pRows[g]) {
    const ids = pickTokens([pRows[g]], {
      full: fullRows,
      top: topRows,
      extra: finalKind === 'bonus' ? [finalToken] : [],
    });
    bonusRows = ids.map((t) => ({ token: t, p: pRows[g][t], q: 0 }));
  }
  let residualRows = null;
  if (resid && (rejectedAt >= 0 || finalKind === 'correction')) {
    const ids = pickTokens([resid], { full: fullRows, top: topRows, extra: [finalToken] });
    residualRows = ids.map((t) => ({ token: t, r: resid[t], p: 0, q: 0 }));
  }
  return {
    positions: viewPositions,
    bonusRows,
    residualRows,
    nAccepted,
    rejectedAt,
    finalToken,
    finalKind,
    emitted,
    context: Array.from(context),
    kv: { target: rec.targetCached, draft: rec.draftCached },
    ms: { draft: rec.draftMs, target: rec.targetMs },
    // Depth drafted (0: a plain step), who drafted, the n-gram prompt lookup matched, and the
    // positions the one target pass scored.
    gamma: rec.gamma,
    drafter: rec.drafter,
    lookupNgram: rec.lookupNgram,
    targetPositions: rec.targetPositions,
    tree,
  };
}

/**
 * The tree of a tree-mode record, for drawing:
 * { nodes: [{ parent, token, depth, p, q, acceptProb, u, status, child, siblings }], path,
 *   depth, branches, finalKind: 'correction' | 'bonus' }.
 * finalKind is the record's: a correction follows a path node whose children were all rejected,
 * a bonus a path that reached a leaf (nothing left to test).
 */
export function treeView(rec) {
  const nodes = rec.tree.nodes.map((n) => ({
    parent: n.parent,
    token: n.token,
    depth: n.depth,
    p: n.p,
    q: n.q,
    acceptProb: n.acceptProb,
    u: n.u ?? NaN,
    status: n.status,
    child: 0,
    siblings: 0,
  }));
  const kids = new Map();
  nodes.forEach((n, i) => {
    if (!kids.has(n.parent)) kids.set(n.parent, []);
    kids.get(n.parent).push(i);
  });
  for (const list of kids.values())
    list.forEach((i, k) => {
      nodes[i].child = k + 1;
      nodes[i].siblings = list.length;
    });
  const depth = nodes.reduce((d, n) => Math.max(d, n.depth), 0);
  const branches = Array.from({ length: depth }, (_, d) => {
    const parentsAtD = d === 0 ? [-1] : nodes.map((n, i) => (n.depth === d ? i : null)).filter((i) => i !== null);
    return Math.max(0, ...parentsAtD.map((pi) => (kids.get(pi) ?? []).length));
  });
  const path = Array.from(rec.tree.path);
  return { nodes, path, depth, branches, finalKind: finalKindOf(rec) };
}

/**
 * Kind of every emitted token of an iteration: 'plain' (plain decoding), 'acc', 'cor', 'bonus',
 * or 'step' (a speculative run's iteration that drafted nothing: one token sampled from p).
 */
export function emittedKinds(rec, plain) {
  const { emitted, nAccepted } = rec;
  if (plain) return Array.from(emitted, () => 'plain');
  const last = rec.gamma === 0 ? 'step' : finalKindOf(rec) === 'correction' ? 'cor' : 'bonus';
  return Array.from(emitted, (_, i) => (i < nAccepted ? 'acc' : last));
}

/** How an iteration's last token came, as its record says: 'correction' or 'bonus'. */
function finalKindOf(rec) {
  return rec.correction !== null ? 'correction' : 'bonus';
}

/** The drafters, in the order the page draws and counts them. */
export const DRAFTERS = ['draft', 'lookup', 'heads', 'none'];

/**
 * One iteration of a speculative run, compactly (the drafter strip and the gamma histogram):
 * [drafter index in DRAFTERS, gamma, tokens emitted, draft tokens accepted].
 */
export function iterationSummary(rec, emittedCount) {
  return [DRAFTERS.indexOf(rec.drafter), rec.gamma, emittedCount, rec.nAccepted];
}

/** Run statistics the page shows, from decoder.stats plus the measured compute time. */
export function statsOf(dec, computeMs, generated) {
  const st = dec.stats;
  const reached = st.reachedAt ?? [];
  const acceptedAt = st.acceptedAt ?? [];
  const examined = reached.reduce((a, b) => a + b, 0);
  const accepted = acceptedAt.reduce((a, b) => a + b, 0);
  const targetPasses = st.targetPasses ?? 0;
  const draftPasses = st.draftPasses ?? 0;
  return {
    generated,
    iterations: st.iterations ?? 0,
    targetPasses,
    draftPasses,
    drafted: st.drafted ?? 0,
    examined,
    accepted,
    alpha: examined ? accepted / examined : NaN,
    perPosition: reached.map((r, i) => ({
      reached: r,
      accepted: acceptedAt[i] ?? 0,
      rate: r ? (acceptedAt[i] ?? 0) / r : NaN,
    })),
    tokensPerPass: targetPasses ? generated / targetPasses : 0,
    computeMs,
    tokensPerSecond: computeMs > 0 ? (generated * 1000) / computeMs : 0,
    draftMs: st.draftMs ?? 0,
    targetMs: st.targetMs ?? 0,
    draftMsPerPass: draftPasses ? (st.draftMs ?? 0) / draftPasses : NaN,
    targetMsPerPass: targetPasses ? (st.targetMs ?? 0) / targetPasses : NaN,
    gammaHistogram: Array.from(st.gammaHistogram ?? []),
    byDrafter: { draft: 0, lookup: 0, heads: 0, none: 0, ...(st.byDrafter ?? {}) },
  };
}

/** { name, nLayer, nEmbd, params, blockSize, vocabSize } of a loaded model. */
export function modelInfoOf(model) {
  const c = model.config ?? {};
  return {
    name: model.metadata?.name ?? c.name ?? null,
    nLayer: c.nLayer,
    nHead: c.nHead,
    nEmbd: c.nEmbd,
    blockSize: c.blockSize,
    vocabSize: c.vocabSize,
    params: model.nParams ?? null,
    // 'f32' | 'int8' (8-bit Linear weights) and the bytes the weights take in memory.
    weights: model.weights ?? 'f32',
    weightBytes: model.weightBytes ?? null,
  };
}

export function decoderTokens(dec) {
  return Array.from(dec.tokens ?? []);
}

export function decoderDone(dec) {
  return typeof dec.done === 'function' ? dec.done() : !!dec.done;
}
