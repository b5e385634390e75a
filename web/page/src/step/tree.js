// Section 2, tree mode: one iteration's draft tree (IterationRecord.tree, via records.js
// treeView) drawn as a picture a learner can read — the committed context on the left, one
// column per depth, every candidate token in a box — revealed stage by stage: the drafted tree,
// the one target pass that scores it, each candidate's test (p, q, min(1, p/q), u, verdict),
// the accepted path highlighted, then the correction or the bonus token. Beside it, the test
// in progress as a card, and below it every test so far as an ordered list: the picture's text
// alternative (the svg itself is an img whose label summarises the iteration); those two:
// tree-tests.js.
import { h, s, scrollHint, watchScroll } from '../shared/svg.js';
import { currentCard, testSentence, testsList } from './tree-tests.js';

const COL = 150; // px between depth columns
const ROW = 46; // px between leaf rows (a box and its one-line test below it)
const BOX_H = 24;
const PAD = { left: 12, top: 30, right: 24, bottom: 14 };
const ROOT_W = 74;

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
      s('text', { x: xOf(0), y: rootY, 'text-anchor': 'middle', 'dominant-baseline': 'central' }, ['context']),
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
          s('text', { class: 'tok-text', x, y, 'text-anchor': 'middle', 'dominant-baseline': 'central' }, [text]),
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

  const accepted = tree.path.filter((i) => shown.tested.has(i)).map((i) => `“${label(tree.nodes[i].token)}”`);
  const summary =
    `Draft tree of ${tree.nodes.length} candidates, ${tree.depth} deep (branches ${tree.branches.join(', ')}). ` +
    (accepted.length ? `Accepted so far: ${accepted.join(', ')}. ` : '') +
    (correction ? `Correction: “${label(view.finalToken)}”.` : bonus ? `Bonus: “${label(view.finalToken)}”.` : '');
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
    [s('desc', {}, ['The list after the picture gives every test in order.']), ...frameEls, edges, boxes],
  );
  // Never upscaled; never shrunk below 85% (labels stay readable: a narrow screen scrolls it).
  svg.style.maxWidth = `${W}px`;
  svg.style.minWidth = `${Math.round(0.85 * W)}px`;

  const list = testsList(view, shown, { correction, bonus });

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
    h('div', { class: 'tree-side' }, [currentCard(view, shown, helpers, { correction, bonus }), list]),
  ]);
}
