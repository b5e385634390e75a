// Section 2, tree mode, beside and below the picture (tree.js): the tests of one iteration's
// draft tree as text. The test in progress as a card (p, q, min(1, p/q), the gauge of u, the
// verdict), or the correction / bonus with its distribution; and every test so far as an ordered
// list, the picture's text alternative. The gauge is also drawn by the chain's cards (cards.js).
import { h, s } from '../shared/svg.js';

function fmt(x, d = 3) {
  return Number.isFinite(x) ? x.toFixed(d) : '–';
}

/** A 0..1 gauge: the acceptance zone [0, a) shaded, a tick at u. */
export function gauge(a, u, accepted) {
  const W = 200;
  const H = 26;
  const x = (v) => 6 + v * (W - 12);
  return s(
    'svg',
    {
      class: 'gauge',
      viewBox: `0 0 ${W} ${H}`,
      role: 'img',
      'aria-label': `u = ${u.toFixed(3)}, accept if below ${a.toFixed(3)}`,
    },
    [
      s('rect', { class: 'gauge-track', x: x(0), y: 8, width: x(1) - x(0), height: 8, rx: 2 }),
      s('rect', {
        class: 'gauge-zone',
        x: x(0),
        y: 8,
        width: Math.max(0, x(a) - x(0)),
        height: 8,
        rx: 2,
      }),
      s('line', { class: `gauge-u ${accepted ? 'ok' : 'bad'}`, x1: x(u), x2: x(u), y1: 2, y2: 22 }),
      s('text', { class: 'gauge-t', x: x(0), y: H }, ['0']),
      s('text', { class: 'gauge-t', x: x(1), y: H, 'text-anchor': 'end' }, ['1']),
    ],
  );
}

/** One test as a sentence: the picture's titles and the list of tests. */
export function testSentence(view, n) {
  const where = `Depth ${n.depth}, candidate ${n.child} of ${n.siblings}: “${view.labelOf(n.token)}”`;
  const verdict = n.status === 'accepted' ? 'accepted' : 'rejected';
  if (!Number.isFinite(n.u)) {
    return `${where} — greedy: ${n.status === 'accepted' ? 'the target’s most likely token' : 'not the target’s most likely token'} → ${verdict}`;
  }
  return `${where} — p = ${fmt(n.p)}, q = ${fmt(n.q)}, min(1, p/q) = ${fmt(n.acceptProb)}, u = ${fmt(n.u)} → ${verdict}`;
}

// The test in progress (or the last token) as a card, like a chain's position card.
export function currentCard(view, shown, helpers, { correction, bonus }) {
  const tree = view.tree;
  if (shown.current >= 0) {
    const n = tree.nodes[shown.current];
    const greedy = !Number.isFinite(n.u);
    const ok = n.status === 'accepted';
    return h(
      'article',
      {
        class: `card current ${ok ? 'accepted' : 'rejected'}`,
        'aria-label': 'The test in progress',
      },
      [
        h('header', { class: 'card-h' }, [
          h('span', { class: 'card-pos' }, [`Depth ${n.depth} · candidate ${n.child} of ${n.siblings}`]),
          h('span', { class: 'card-tok' }, ['draft: ', h('b', {}, [view.labelOf(n.token)])]),
        ]),
        greedy
          ? null
          : h('p', { class: 'ratio' }, [
              h('span', {}, [`p(x) = ${fmt(n.p)}`]),
              h('span', {}, [`q(x) = ${fmt(n.q)}`]),
              h('span', {}, [`min(1, p/q) = ${fmt(n.acceptProb)}`]),
            ]),
        greedy ? null : gauge(n.acceptProb, n.u, ok),
        h('p', { class: `verdict-line ${ok ? 'ok' : 'bad'}`, 'data-testid': 'tree-verdict' }, [
          greedy ? 'greedy: is x the argmax? → ' : `u = ${fmt(n.u)} → `,
          h('b', {}, [ok ? 'accepted ✓' : 'rejected ✗']),
        ]),
        n.child > 1 && !greedy
          ? h('p', { class: 'small' }, [
              'An earlier sibling was rejected, so this test uses the updated p (the residual) and q (the draft without the rejected token).',
            ])
          : null,
      ],
    );
  }
  if (correction || bonus) {
    return h(
      'article',
      {
        class: `card ${bonus ? 'bonus' : 'rejected'}`,
        'aria-label': correction ? 'The correction' : 'The bonus token',
      },
      [
        h('header', { class: 'card-h' }, [h('span', { class: 'card-pos' }, [correction ? 'Correction' : 'Bonus'])]),
        correction && view.residualRows && helpers.barRows
          ? h('div', { class: 'residual-box' }, [
              h('p', { class: 'residual-h' }, ['Residual after the rejected candidates']),
              helpers.barRows(view, view.residualRows, { hi: view.finalToken, residual: true }),
            ])
          : null,
        bonus && view.bonusRows && helpers.barRows
          ? helpers.barRows(view, view.bonusRows, {
              hi: view.finalToken,
              showP: true,
              showQ: false,
            })
          : null,
        h(
          'p',
          {
            class: `verdict-line ${correction ? 'fix' : 'bonus'}`,
            'data-testid': correction ? 'correction-token' : 'bonus-token',
          },
          [correction ? 'sampled correction: ' : 'bonus token: ', h('b', {}, [view.labelOf(view.finalToken)])],
        ),
      ],
    );
  }
  return h('article', { class: 'card pending', 'aria-label': 'Tree stage' }, [
    h('p', { class: 'ratio muted' }, [
      shown.showP
        ? 'Every node now has its p(x). Next: walk from the context, testing each node’s children in turn.'
        : 'Each candidate was drawn from the draft’s q at its depth; siblings are distinct tokens.',
    ]),
  ]);
}

/**
 * Every test revealed so far, in the order verification made them, then the correction or the
 * bonus: the picture's text alternative (an ordered list).
 */
export function testsList(view, shown, { correction, bonus }) {
  const tree = view.tree;
  const label = (t) => view.labelOf(t);
  const order = tree.nodes.map((n, i) => i).filter((i) => shown.tested.has(i));
  const items = order.map((i) =>
    h(
      'li',
      {
        'data-status': tree.nodes[i].status,
        class: tree.nodes[i].status === 'accepted' ? 'ok' : 'bad',
      },
      [testSentence(view, tree.nodes[i])],
    ),
  );
  if (correction)
    items.push(
      h('li', { class: 'fix' }, [
        `Correction “${label(view.finalToken)}”: every candidate under the last accepted node was rejected, so one token is drawn from the residual.`,
      ]),
    );
  if (bonus)
    items.push(
      h('li', { class: 'bonus' }, [
        `Bonus “${label(view.finalToken)}”: the accepted prefix reached the deepest level, so the target’s row after it gives one more token.`,
      ]),
    );
  return h(
    'ol',
    { class: 'tree-tests', 'data-testid': 'tree-tests', 'aria-label': 'Tests in order' },
    items.length
      ? items
      : [
          h('li', { class: 'muted' }, [
            shown.showP ? 'No test yet: press Next.' : 'Scored by the target in the next stage.',
          ]),
        ],
  );
}
