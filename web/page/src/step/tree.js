// Section 2, tree mode: one iteration's draft tree (IterationRecord.tree, via records.js
// treeView) drawn as a picture a learner can read — the committed context on the left, one
// column per depth, every candidate token in a box — revealed stage by stage: the drafted tree,
// the one target pass that scores it, each candidate's test (p, q, min(1, p/q), u, verdict),
// the accepted path highlighted, then the correction or the bonus token. Beside it, the test
// in progress as a card, and below it every test so far as an ordered list: the picture's text
// alternative (the svg itself is an img whose label summarises the iteration).
import { h, s, scrollHint, watchScroll } from '../shared/svg.js';

const COL = 150; // px between depth columns
const ROW = 46; // px between leaf rows (a box and its one-line test below it)
const BOX_H = 24;
const PAD = { left: 12, top: 30, right: 24, bottom: 14 };
const ROOT_W = 74;

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

/**
 * Rows and columns of the picture: leaves one row each in drawing order, a parent centred on
 * its children; the correction (if any) gets a row of its own below, the bonus a column of its
 * own to the right.
 */
export function layoutTree(tree) {
  const kids = new Map([[-1, []]]);
  tree.nodes.forEach((n, i) => {
    if (!kids.has(n.parent)) kids.set(n.parent, []);
    kids.get(n.parent).push(i);
  });
  const row = new Map();
  let next = 0;
  const place = (i) => {
    const ks = kids.get(i) ?? [];
    if (!ks.length) {
      row.set(i, next++);
    } else {
      const rows = ks.map(place);
      row.set(i, (rows[0] + rows[rows.length - 1]) / 2);
    }
    return row.get(i);
  };
  place(-1);
  return { kids, row, rows: Math.max(1, next) };
}

/** What a candidate's test says in one line: "u 0.765 < 0.997 ✓" (greedy: "argmax ✓"). */
function testLine(n) {
  const ok = n.status === 'accepted';
  if (!Number.isFinite(n.u)) return ok ? 'argmax ✓' : 'not argmax ✗';
  return ok
    ? `u ${n.u.toFixed(2)} < ${n.acceptProb.toFixed(2)} ✓`
    : `u ${n.u.toFixed(2)} ≥ ${n.acceptProb.toFixed(2)} ✗`;
}

function testSentence(view, n) {
  const where = `Depth ${n.depth}, candidate ${n.child} of ${n.siblings}: “${view.labelOf(n.token)}”`;
  const verdict = n.status === 'accepted' ? 'accepted' : 'rejected';
  if (!Number.isFinite(n.u)) {
    return `${where} — greedy: ${n.status === 'accepted' ? 'the target’s most likely token' : 'not the target’s most likely token'} → ${verdict}`;
  }
  return `${where} — p = ${fmt(n.p)}, q = ${fmt(n.q)}, min(1, p/q) = ${fmt(n.acceptProb)}, u = ${fmt(n.u)} → ${verdict}`;
}

/**
 * The tree of one iteration as it stands at a stage.
 * @param {object} view  recordToView(...) with view.tree and view.labelOf
 * @param {{ stage: { kind: string, i?: number }, tested: Set<number>, current: number, final: boolean, showP: boolean }} shown
 * @param {{ barRows?: Function }} helpers  draws a residual / bonus distribution (stepper.js)
 */
export function treeFigure(view, shown, helpers = {}) {
  const tree = view.tree;
  const { kids, row, rows } = layoutTree(tree);
  const path = new Set(tree.path);
  const lastOnPath = tree.path.length ? tree.path[tree.path.length - 1] : -1;
  const finalShown = shown.final && view.finalKind && view.finalToken >= 0;
  const correction = finalShown && view.finalKind === 'correction';
  const bonus = finalShown && view.finalKind === 'bonus';
  const extraRow = view.finalKind === 'correction' ? 1 : 0;
  const extraCol = view.finalKind === 'bonus' ? 1 : 0;
  const W = PAD.left + ROOT_W / 2 + (tree.depth + extraCol) * COL + 70 + PAD.right;
  const H = PAD.top + (rows + extraRow) * ROW + PAD.bottom;
  const xOf = (d) => PAD.left + ROOT_W / 2 + d * COL;
  const yOf = (r) => PAD.top + r * ROW + BOX_H / 2;
  const label = (t) => view.labelOf(t);
  const boxW = (text) => Math.max(34, 8.2 * [...text].length + 14);

  const stateOf = (i) => {
    const n = tree.nodes[i];
    if (shown.tested.has(i)) return n.status; // accepted | rejected
    if (shown.final) return 'unexamined';
    return 'pending';
  };

  const edges = s('g', { class: 'tree-edges' });
  const boxes = s('g', { class: 'tree-nodes' });
  const edge = (x1, y1, x2, y2, cls) => {
    const mx = (x1 + x2) / 2;
    edges.append(
      s('path', {
        class: `tree-edge ${cls}`,
        d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`,
      }),
    );
  };

  // The committed context: the root of the tree.
  const rootY = yOf(row.get(-1));
  boxes.append(
    s('g', { class: 'tree-node n-root' }, [
      s('rect', {
        x: xOf(0) - ROOT_W / 2,
        y: rootY - BOX_H / 2,
        width: ROOT_W,
        height: BOX_H,
        rx: 6,
      }),
      s('text', { x: xOf(0), y: rootY, 'text-anchor': 'middle', 'dominant-baseline': 'central' }, [
        'context',
      ]),
    ]),
  );
  const centre = (i) =>
    i < 0
      ? { x: xOf(0), y: rootY, w: ROOT_W }
      : { x: xOf(tree.nodes[i].depth), y: yOf(row.get(i)), w: boxW(label(tree.nodes[i].token)) };

  tree.nodes.forEach((n, i) => {
    const st = stateOf(i);
    const a = centre(n.parent);
    const b = centre(i);
    const onPath = path.has(i) && shown.tested.has(i);
    edge(
      a.x + a.w / 2,
      a.y,
      b.x - b.w / 2,
      b.y,
      onPath ? 'e-path' : st === 'rejected' ? 'e-rejected' : st === 'unexamined' ? 'e-faded' : '',
    );
    const text = label(n.token);
    const title = shown.tested.has(i)
      ? testSentence(view, n)
      : `Depth ${n.depth}, candidate ${n.child} of ${n.siblings}: “${text}”${shown.final ? ' — never tested' : ''}`;
    const g = s(
      'g',
      {
        class: `tree-node n-${st}${shown.current === i ? ' n-current' : ''}${onPath ? ' n-path' : ''}`,
        'data-testid': 'tree-node',
        'data-node': i,
        'data-status': st,
        'data-depth': n.depth,
      },
      [
        s('title', {}, [title]),
        s('rect', { x: b.x - b.w / 2, y: b.y - BOX_H / 2, width: b.w, height: BOX_H, rx: 5 }),
        s(
          'text',
          {
            class: 'tok-text',
            x: b.x,
            y: b.y,
            'text-anchor': 'middle',
            'dominant-baseline': 'central',
          },
          [text],
        ),
      ],
    );
    if (shown.tested.has(i)) {
      g.append(
        s(
          'text',
          {
            class: `tree-test ${n.status === 'accepted' ? 'ok' : 'bad'}`,
            x: b.x,
            y: b.y + BOX_H / 2 + 12,
            'text-anchor': 'middle',
          },
          [testLine(n)],
        ),
      );
    }
    boxes.append(g);
  });

  // The correction (a new sibling row at the depth where every candidate failed) or the bonus
  // (one column past the deepest accepted node).
  if (correction || bonus) {
    const parent = centre(lastOnPath);
    const depth = (lastOnPath < 0 ? 0 : tree.nodes[lastOnPath].depth) + 1;
    const text = label(view.finalToken);
    const w = boxW(text);
    const x = xOf(depth);
    const y = correction ? yOf(rows) : parent.y;
    edge(parent.x + parent.w / 2, parent.y, x - w / 2, y, correction ? 'e-correction' : 'e-bonus');
    boxes.append(
      s(
        'g',
        {
          class: `tree-node ${correction ? 'n-correction' : 'n-bonus'}`,
          'data-testid': correction ? 'tree-correction' : 'tree-bonus',
        },
        [
          s('title', {}, [
            correction
              ? `Correction “${text}”, drawn from the residual`
              : `Bonus “${text}”, drawn from the target’s row after the last accepted node`,
          ]),
          s('rect', { x: x - w / 2, y: y - BOX_H / 2, width: w, height: BOX_H, rx: 5 }),
          s(
            'text',
            { class: 'tok-text', x, y, 'text-anchor': 'middle', 'dominant-baseline': 'central' },
            [text],
          ),
          s('text', { class: 'tree-test', x, y: y + BOX_H / 2 + 12, 'text-anchor': 'middle' }, [
            correction ? 'correction (residual)' : 'bonus (from p)',
          ]),
        ],
      ),
    );
  }

  // From "verify" on: the one target pass that scored every node.
  const frameEls = [];
  if (shown.showP) {
    frameEls.push(
      s('rect', {
        class: 'tree-pass',
        x: PAD.left - 6,
        y: PAD.top - 22,
        width: xOf(tree.depth) + 60 - PAD.left,
        height: rows * ROW + 16,
        rx: 8,
      }),
      s('text', { class: 'tree-pass-label', x: PAD.left, y: PAD.top - 9 }, [
        `one target pass scores all ${tree.nodes.length} nodes + the context: ${tree.nodes.length + 1} positions`,
      ]),
    );
  } else {
    frameEls.push(
      s('text', { class: 'tree-pass-label', x: PAD.left, y: PAD.top - 9 }, [
        `drafted: ${tree.branches.join(' × ')} → ${tree.nodes.length} candidates in ${tree.depth} batched draft pass${tree.depth > 1 ? 'es' : ''}`,
      ]),
    );
  }

  const accepted = tree.path
    .filter((i) => shown.tested.has(i))
    .map((i) => `“${label(tree.nodes[i].token)}”`);
  const summary =
    `Draft tree of ${tree.nodes.length} candidates, ${tree.depth} deep (branches ${tree.branches.join(', ')}). ` +
    (accepted.length ? `Accepted so far: ${accepted.join(', ')}. ` : '') +
    (correction
      ? `Correction: “${label(view.finalToken)}”.`
      : bonus
        ? `Bonus: “${label(view.finalToken)}”.`
        : '');
  const svg = s(
    'svg',
    {
      class: 'tree-svg',
      viewBox: `0 0 ${W} ${H}`,
      role: 'img',
      'aria-label': summary,
      'data-testid': 'tree-svg',
      'data-nodes': tree.nodes.length,
    },
    [
      s('desc', {}, ['The list after the picture gives every test in order.']),
      ...frameEls,
      edges,
      boxes,
    ],
  );
  // Never upscaled; never shrunk below 85% (labels stay readable: a narrow screen scrolls it).
  svg.style.maxWidth = `${W}px`;
  svg.style.minWidth = `${Math.round(0.85 * W)}px`;

  // Every test revealed so far, in the order verification made them: the text alternative.
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
  const list = h(
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

  // A deep tree is wider than a phone: the box scrolls, and says so (svg.js watchScroll).
  const scroller = h(
    'div',
    {
      class: 'tree-scroll scroll-x',
      tabindex: '0',
      role: 'region',
      'aria-label': 'The tree picture (scrolls sideways when it is wider than the screen)',
    },
    [svg],
  );
  watchScroll(scroller);
  return h('div', { class: 'tree-wrap' }, [
    scroller,
    scrollHint('Scroll sideways for the deeper levels ⇆'),
    h('div', { class: 'tree-side' }, [
      currentCard(view, shown, helpers, { correction, bonus }),
      list,
    ]),
  ]);
}

// The test in progress (or the last token) as a card, like a chain's position card.
function currentCard(view, shown, helpers, { correction, bonus }) {
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
          h('span', { class: 'card-pos' }, [
            `Depth ${n.depth} · candidate ${n.child} of ${n.siblings}`,
          ]),
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
        h('header', { class: 'card-h' }, [
          h('span', { class: 'card-pos' }, [correction ? 'Correction' : 'Bonus']),
        ]),
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
          [
            correction ? 'sampled correction: ' : 'bonus token: ',
            h('b', {}, [view.labelOf(view.finalToken)]),
          ],
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
