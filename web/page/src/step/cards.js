// Section 2's cards for a chain: one per draft position (its q and, once verified, p rows,
// min(1, p/q), the uniform draw u against it, the verdict, the residual after a rejection), the
// bonus slot (or the one position of a plain step), the context line and the tokens emitted.
// barRows also draws the rows of a tree's test (tree.js treeFigure).
import { h } from '../shared/svg.js';
import { gauge } from './tree-tests.js';
import { fmt } from './captions.js';

// Two decimals when they are exact (the lesson's toy values), else three.
function short(v) {
  const two = v.toFixed(2);
  return Math.abs(Number(two) - v) < 5e-4 ? two : v.toFixed(3);
}

export function contextLine(view) {
  return h('p', { class: 'ctx' }, [
    h('span', { class: 'ctx-k' }, ['Context: ']),
    h('span', { class: 'ctx-v' }, [view.contextText]),
    view.kvText ? h('span', { class: 'ctx-kv' }, [` · ${view.kvText}`]) : null,
  ]);
}

/** A card's header: its position and what it holds (children of the token span). */
function cardHeader(position, token) {
  return h('header', { class: 'card-h' }, [
    h('span', { class: 'card-pos' }, [position]),
    h('span', { class: 'card-tok' }, token),
  ]);
}

/** Rows of bars for a set of tokens: q (draft) and/or p (target), highlighting one token. */
export function barRows(view, rows, { hi, showP, showQ, residual }) {
  const max = Math.max(1e-9, ...rows.map((r) => Math.max(showP ? r.p : 0, showQ ? r.q : 0, residual ? r.r : 0)));
  // Bars are drawn relative to the largest value shown in the card (the numbers are absolute).
  const scale = 0.95 / max;
  return h(
    'div',
    { class: 'bars' },
    rows.map((r) =>
      h('div', { class: `bar-row${r.token === hi ? ' hi' : ''}` }, [
        h('span', { class: 'bar-label', title: `token ${r.token}` }, [view.labelOf(r.token)]),
        h('span', { class: 'bar-cells' }, [
          showQ ? barCell('q', r.q, scale) : null,
          showP ? barCell('p', r.p, scale) : null,
          residual ? barCell('r', r.r, scale) : null,
        ]),
      ]),
    ),
  );
}

/** The target's row alone (the bonus slot, a plain step), highlighting the drawn token when `drawn`. */
function targetRows(view, drawn) {
  return barRows(view, view.bonusRows, { hi: drawn ? view.finalToken : -1, showP: true, showQ: false });
}

/** The line naming the token drawn from the target's row (the bonus token, a plain step's token). */
function drawnLine(view, testId, what) {
  return h('p', { class: 'verdict-line bonus', 'data-testid': testId }, [
    what,
    h('b', {}, [view.labelOf(view.finalToken)]),
  ]);
}

function barCell(kind, v, scale) {
  const w = Math.max(0, Math.min(100, v * 100 * scale));
  const names = { p: 'p', q: 'q', r: 'p′' };
  return h('span', { class: `bar-cell ${kind}` }, [
    h('span', { class: 'bar-track' }, [h('span', { class: `bar ${kind}`, style: `width:${w.toFixed(1)}%` })]),
    h('span', { class: 'bar-val' }, [`${names[kind]} ${short(v)}`]),
  ]);
}

export function positionCard(view, pos, i, shown) {
  const verdictShown = shown.verdicts.has(i);
  const isCurrent = shown.current === i;
  const skipped =
    !pos.examined && (shown.final || shown.verdicts.size >= view.positions.filter((p) => p.examined).length);
  const rejectedHere = view.rejectedAt === i;
  const cls = [
    'card',
    isCurrent ? 'current' : '',
    verdictShown ? (pos.accepted ? 'accepted' : 'rejected') : '',
    skipped ? 'skipped' : '',
  ]
    .join(' ')
    .trim();
  const children = [
    cardHeader(`Position ${i + 1}`, ['draft: ', h('b', {}, [view.labelOf(pos.token)])]),
    barRows(view, pos.rows, { hi: pos.token, showP: shown.showP, showQ: true }),
  ];
  if (shown.showP) {
    children.push(
      h('p', { class: 'ratio' }, [
        h('span', {}, [`p(x) = ${fmt(pos.pX)}`]),
        h('span', {}, [`q(x) = ${fmt(pos.qX)}`]),
        pos.examined ? h('span', {}, [`min(1, p/q) = ${fmt(pos.acceptProb)}`]) : null,
      ]),
    );
  }
  if (verdictShown) {
    const greedy = !Number.isFinite(pos.u);
    if (!greedy) children.push(gauge(pos.acceptProb, pos.u, pos.accepted));
    children.push(
      h('p', { class: `verdict-line ${pos.accepted ? 'ok' : 'bad'}`, 'data-testid': 'position-verdict' }, [
        greedy ? 'greedy: is x the argmax? → ' : `u = ${fmt(pos.u)} → `,
        h('b', {}, [pos.accepted ? 'accepted ✓' : 'rejected ✗']),
      ]),
    );
  } else if (skipped) {
    children.push(h('p', { class: 'verdict-line muted' }, ['never examined (after a rejection)']));
  }
  if (shown.final && rejectedHere && view.residualRows) {
    children.push(
      h('div', { class: 'residual-box' }, [
        h('p', { class: 'residual-h' }, ['Residual p′ = (p − q)₊ / Σ(p − q)₊']),
        barRows(view, view.residualRows, { hi: view.finalToken, residual: true }),
        h('p', { class: 'verdict-line fix', 'data-testid': 'correction-token' }, [
          'sampled correction: ',
          h('b', {}, [view.labelOf(view.finalToken)]),
        ]),
      ]),
    );
  }
  return h('article', { class: cls, 'aria-label': `Draft position ${i + 1}` }, children);
}

export function bonusCard(view, shown) {
  const g = view.positions.length;
  if (g === 0) return plainCard(view, shown);
  const isBonus = shown.final && view.finalKind === 'bonus';
  const cls = ['card', 'bonus-card', isBonus ? 'bonus' : '', shown.showP ? '' : 'pending'].join(' ').trim();
  const children = [cardHeader(`Position ${g + 1}`, ['bonus slot'])];
  if (shown.showP && view.bonusRows) {
    children.push(targetRows(view, isBonus));
    const unused = shown.final && view.finalKind === 'correction';
    children.push(
      h('p', { class: `ratio${unused ? ' muted' : ''}` }, [
        unused ? 'Not used: a guess was rejected.' : 'Used only if every guess is accepted.',
      ]),
    );
  } else if (!shown.showP) {
    children.push(h('p', { class: 'ratio muted' }, ['Scored by the same target pass.']));
  }
  if (isBonus) {
    children.push(drawnLine(view, 'bonus-token', 'bonus token: '));
  }
  return h('article', { class: cls, 'aria-label': 'Bonus position' }, children);
}

// A plain step (nothing drafted): the one position the target scored, and the token drawn.
function plainCard(view, shown) {
  const sampled = shown.final && view.finalKind === 'plain';
  const children = [cardHeader('Position 1', ['next token'])];
  if (shown.showP && view.bonusRows) {
    children.push(targetRows(view, sampled));
  } else {
    children.push(h('p', { class: 'ratio muted' }, ['Scored by the target pass.']));
  }
  if (sampled) {
    children.push(drawnLine(view, 'sampled-token', 'sampled from p: '));
  }
  return h(
    'article',
    { class: `card bonus-card${sampled ? ' bonus' : ''}`, 'aria-label': 'Next token (plain step)' },
    children,
  );
}

export function summaryOf(view) {
  const kindOf = (i) => (i < view.nAccepted ? 'acc' : ({ bonus: 'bonus', plain: 'step' }[view.finalKind] ?? 'cor'));
  const chips = view.emitted.map((t, i) => h('span', { class: `tok ${kindOf(i)}` }, [view.labelOf(t)]));
  const last = { bonus: '1 bonus', plain: '1 sampled (plain step)', correction: '1 correction' }[view.finalKind];
  return [
    h('p', { class: 'emitted', 'data-testid': 'emitted' }, [
      h('span', { class: 'ctx-k' }, [`Emitted (${view.nAccepted} accepted${last ? ` + ${last}` : ''}): `]),
      ...chips,
    ]),
  ];
}
