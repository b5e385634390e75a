// Section 2's words: the caption of each stage of an iteration (a chain's positions, or a
// tree's candidates depth by depth), why an iteration drafted nothing, and the line that says
// which γ it used and who drafted. Plain strings from the iteration's view (records.js
// recordToView), but metaLine, which returns the line's nodes.
import { h } from '../shared/svg.js';
import { stageHead } from './stages.js';

export const WHO = {
  draft: 'the draft model',
  lookup: 'prompt lookup',
  heads: 'the target’s heads',
  none: 'nobody',
};

/** A number with d decimals, or '–' when it is not finite. */
export function fmt(x, d = 3) {
  return Number.isFinite(x) ? x.toFixed(d) : '–';
}

/** Whether the last n tokens (n = 3, 2, 1) occur earlier in `tokens`, followed by a token. */
export function lookupWouldMatch(tokens, maxNgram = 3, minNgram = 1) {
  for (let n = maxNgram; n >= minNgram; n--) {
    if (tokens.length < n + 1) continue;
    const end = tokens.length - n;
    for (let i = end - 1; i >= 0; i--) {
      let same = true;
      for (let j = 0; j < n && same; j++) same = tokens[i + j] === tokens[end + j];
      if (same) return true;
    }
  }
  return false;
}

// Why an iteration drafted nothing (γ = 0), from the settings and the iteration.
function noDraftReason(view) {
  const cfg = view.config ?? {};
  if (cfg.drafter === 'heads' && view.index === 0)
    return 'the heads read the target’s last hidden state, which only a first target pass gives';
  if (cfg.drafter === 'lookup') {
    if (!lookupWouldMatch(view.context ?? []))
      return 'prompt lookup found no earlier occurrence of the last 1–3 tokens to copy from';
    if (cfg.gamma === 'auto' && view.index > 0) return 'the auto policy expected a plain step to pay more than copying';
    return (
      'prompt lookup made no proposal, although the last tokens occur earlier' +
      (view.index === 0 ? ' (this build of the library does not look up before its first target pass)' : '')
    );
  }
  if (cfg.gamma === 'auto')
    return 'the auto policy expected a plain step to give more tokens per unit of time than any draft';
  return 'no drafter had a guess';
}

export function captionOf(view, stage) {
  const g = view.positions.length;
  if (g === 0) {
    switch (stage.kind) {
      case 'draft':
        return `${stageHead('draft')} — nothing this iteration (γ = 0): ${noDraftReason(view)}.`;
      case 'verify':
        return `${stageHead('verify')} — nothing to verify: one target pass over the context gives p for the next token, as in plain decoding.`;
      default:
        return view.finalToken >= 0
          ? `${stageHead('correct')} — no draft to correct: the next token is drawn from p — “${view.labelOf(view.finalToken)}”. One token for this target pass.`
          : `${stageHead('correct')} — the token budget ended the iteration.`;
    }
  }
  switch (stage.kind) {
    case 'draft':
      if (view.drafter === 'lookup') {
        const n = view.lookupNgram ?? 1;
        const ctx = view.context ?? [];
        const gram = ctx.slice(-n).map(view.labelOf).join('');
        return `${stageHead('draft')}: prompt lookup finds the last ${n} token${n > 1 ? 's' : ''} “${gram}” earlier in the text and proposes the ${g} token${g > 1 ? 's' : ''} that followed there. Its q is one-hot (q(x) = 1), so each guess is accepted with probability min(1, p(x)). Free: no model runs.`;
      }
      if (view.drafter === 'heads') {
        return `${stageHead('draft')}: the target's heads propose ${g} token${g > 1 ? 's' : ''} at once from the hidden state of its last pass (head i guesses i + 1 tokens past the next one) — no second model.`;
      }
      return `${stageHead('draft')}: the draft model proposes ${g} token${g > 1 ? 's' : ''}, one at a time, sampling each from its own q(x). This is cheap.`;
    case 'verify':
      return `${stageHead('verify')}: ONE target pass over the context plus all ${g} guesses scores ${g + 1} positions at once — p(x) at every draft position and one extra (bonus) position.`;
    case 'accept': {
      const pos = view.positions[stage.i];
      if (!Number.isFinite(pos.u)) {
        return `${stageHead('accept')} — position ${stage.i + 1} (greedy, temperature 0): “${view.labelOf(pos.token)}” is ${pos.accepted ? "accepted: it is the target's most likely token" : 'rejected: the target prefers another token'}.`;
      }
      const verdict = pos.accepted
        ? `u = ${fmt(pos.u)} < ${fmt(pos.acceptProb)}, so “${view.labelOf(pos.token)}” is accepted${stage.i + 1 < g ? '; move on.' : '. Every guess survived.'}`
        : `u = ${fmt(pos.u)} ≥ ${fmt(pos.acceptProb)}, so “${view.labelOf(pos.token)}” is rejected and everything after it is discarded.`;
      return `${stageHead('accept')} — position ${stage.i + 1}: accept with probability min(1, p/q) = min(1, ${fmt(pos.pX)} / ${fmt(pos.qX)}) = ${fmt(pos.acceptProb)}. ${verdict}`;
    }
    case 'correct':
      if (view.finalKind === 'correction') {
        return `${stageHead('correct')}: the rejected position is replaced by a sample from the residual (p − q)₊ normalised — “${view.labelOf(view.finalToken)}”. This iteration emits ${view.emitted.length} token${view.emitted.length > 1 ? 's' : ''} for one target pass.`;
      }
      if (view.finalKind === 'bonus') {
        return `${stageHead('correct')} — bonus: all ${g} guesses were accepted, so the target's extra position gives one free token — “${view.labelOf(view.finalToken)}”. ${view.emitted.length} tokens for one target pass.`;
      }
      return `${stageHead('correct')} — the token budget ended the iteration: ${view.emitted.length} token(s) emitted.`;
    default:
      return '';
  }
}

// The γ this iteration used, who drafted, and the γ of the iterations so far.
export function metaLine(view) {
  const cfg = view.config ?? {};
  const how = cfg.tree
    ? `the tree [${cfg.tree.join(', ')}]'s depth`
    : cfg.gamma === 'auto'
      ? `chosen by auto (γ ≤ ${cfg.gammaMax})`
      : cfg.gamma === 'heuristic'
        ? `chosen by the heuristic (γ ≤ ${cfg.gammaMax})`
        : 'fixed';
  const who =
    view.drafter === 'none'
      ? 'nothing drafted: a plain step'
      : `drafted by ${WHO[view.drafter] ?? view.drafter}${view.drafter === 'lookup' && view.lookupNgram ? ` (matched the last ${view.lookupNgram} token${view.lookupNgram > 1 ? 's' : ''})` : ''}`;
  return [
    h('span', { class: 'meta-gamma', 'data-testid': 'step-gamma-used' }, [`γ = ${view.gamma}`]),
    ` this iteration, ${how} · ${who}`,
    view.gammas.length > 1 ? h('span', { class: 'meta-history' }, [` · γ so far: ${view.gammas.join(', ')}`]) : null,
  ];
}

// The captions of a tree iteration, stage by stage.
export function treeCaption(view, stage) {
  const tree = view.tree;
  const who = WHO[view.drafter] ?? 'the draft model';
  switch (stage.kind) {
    case 'draft':
      return (
        `${stageHead('draft')} a tree: ${who} propose${view.drafter === 'heads' ? '' : 's'} ${tree.branches[0]} distinct candidates for the next token` +
        (tree.depth > 1
          ? `, then ${tree.branches.slice(1).join(', then ')} for each of those at the next depth${tree.depth > 2 ? 's' : ''}`
          : '') +
        ` — ${tree.nodes.length} candidates in ${tree.depth} batched pass${tree.depth > 1 ? 'es' : ''} (one per depth), instead of one chain.`
      );
    case 'verify':
      return `${stageHead('verify')}: ONE target pass scores all ${tree.nodes.length} candidates plus the context (${tree.nodes.length + 1} positions). A tree attention mask lets each candidate see the context and its own ancestors only, so every branch is scored as if it were alone.`;
    case 'accept': {
      const n = tree.nodes[stage.i];
      const x = `“${view.labelOf(n.token)}”`;
      const where = `depth ${n.depth}, candidate ${n.child} of ${n.siblings}`;
      const ok = n.status === 'accepted';
      const next = ok
        ? n.depth < tree.depth
          ? 'accepted: go one level deeper and test its children.'
          : 'accepted: the accepted prefix reached the deepest level.'
        : n.child < n.siblings
          ? 'rejected: try the next sibling, with p replaced by the residual and q without the rejected token (this keeps the output exact).'
          : 'rejected, and it was the last candidate here.';
      if (!Number.isFinite(n.u))
        return `${stageHead('accept')} — ${where} ${x} (greedy): ${ok ? 'it is' : 'it is not'} the target's most likely token, so it is ${next}`;
      return `${stageHead('accept')} — ${where} ${x}: accept with probability min(1, p/q) = min(1, ${fmt(n.p)} / ${fmt(n.q)}) = ${fmt(n.acceptProb)}; u = ${fmt(n.u)} ${ok ? '<' : '≥'} ${fmt(n.acceptProb)}, so ${x} is ${next}`;
    }
    case 'correct':
      if (view.finalKind === 'correction') {
        return `${stageHead('correct')}: every candidate under the last accepted node was rejected, so one token is drawn from the residual — “${view.labelOf(view.finalToken)}”. ${view.emitted.length} token${view.emitted.length > 1 ? 's' : ''} for one target pass over ${tree.nodes.length + 1} positions.`;
      }
      if (view.finalKind === 'bonus') {
        return `${stageHead('correct')} — bonus: the accepted prefix reached the deepest level; the target's row after its last node gives one more token — “${view.labelOf(view.finalToken)}”. ${view.emitted.length} tokens for one target pass.`;
      }
      return `${stageHead('correct')} — the token budget ended the iteration: ${view.emitted.length} token(s) emitted.`;
    default:
      return '';
  }
}
