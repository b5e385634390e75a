// Section 3, Exercise 3 "The residual, visualised": editable p and q; bars of min(p, q),
// (p − q)+ and their sum drawn against p. The residual p′ and α come from the WASM build, and
// the identity min(p, q) + p′·(1 − α) = p is computed and shown token by token.
import { barsFrame, h, onWidthChange, s, watchScroll } from '../shared/svg.js';

const EXERCISE3 = { p: [0.5, 0.2, 0.2, 0.1], q: [0.2, 0.4, 0.3, 0.1] };
const MAX_TOKENS = 8;

// The input of one probability of the table: which ('p' or 'q'), of token i, holding value.
const probInput = (which, i, value) =>
  h('input', {
    type: 'number',
    id: `res-${which}-${i}`,
    min: '0',
    max: '1',
    step: '0.01',
    value: String(value),
    'aria-label': `${which} of token ${i}`,
    inputmode: 'decimal',
  });

export function initResidual(sd) {
  const $ = (id) => document.getElementById(id);
  const table = $('residual-table');
  const chart = $('chart-residual');
  const identity = $('residual-identity');
  let p = [...EXERCISE3.p];
  let q = [...EXERCISE3.q];

  function buildInputs() {
    const thead = table.tHead;
    thead.replaceChildren(
      h('tr', {}, [
        h('th', { scope: 'col' }, ['token']),
        h('th', { scope: 'col' }, ['p (target)']),
        h('th', { scope: 'col' }, ['q (draft)']),
        h('th', { scope: 'col' }, ['min(p, q)']),
        h('th', { scope: 'col' }, ['(p − q)₊']),
        h('th', { scope: 'col' }, ['p′ (WASM)']),
        h('th', { scope: 'col' }, ['min + p′(1 − α)']),
      ]),
    );
    const body = table.tBodies[0];
    body.replaceChildren(
      ...p.map((_, i) =>
        h('tr', {}, [
          h('th', { scope: 'row' }, [String(i)]),
          h('td', {}, [probInput('p', i, p[i])]),
          h('td', {}, [probInput('q', i, q[i])]),
          h('td', { class: 'num', 'data-col': 'min' }),
          h('td', { class: 'num', 'data-col': 'pos' }),
          h('td', { class: 'num', 'data-col': 'res' }),
          h('td', { class: 'num', 'data-col': 'sum' }),
        ]),
      ),
    );
    for (const input of body.querySelectorAll('input')) {
      input.addEventListener('input', () => {
        const [, which, idx] = input.id.split('-');
        // Kept as typed: an entry that is not a probability is refused (check), not replaced.
        (which === 'p' ? p : q)[Number(idx)] = input.value.trim() === '' ? NaN : Number(input.value);
        update();
      });
    }
  }

  function update() {
    const P = check(p);
    const Q = check(q);
    const rows = table.tBodies[0].rows;
    for (let i = 0; i < p.length; i++) {
      for (const [name, c] of [
        ['p', P],
        ['q', Q],
      ]) {
        const input = rows[i].querySelector(`#res-${name}-${i}`);
        if (c.bad.includes(i)) input.setAttribute('aria-invalid', 'true');
        else input.removeAttribute('aria-invalid');
      }
    }
    // Refused: nothing is computed from numbers that are not a distribution.
    const refusals = [P.error && `p ${P.error}`, Q.error && `q ${Q.error}`].filter(Boolean);
    if (refusals.length) {
      for (const row of rows) for (const td of row.querySelectorAll('[data-col]')) td.textContent = '–';
      identity.replaceChildren(
        h('p', {}, [
          h('strong', { class: 'bad', 'data-testid': 'residual-refusal' }, [`Not computed: ${refusals.join('; ')}.`]),
          ' Correct the marked entries (probabilities are 0 or more, and at least one is above 0).',
        ]),
      );
      chart.replaceChildren();
      return;
    }
    const pn = Float32Array.from(P.v);
    const qn = Float32Array.from(Q.v);
    const alpha = sd.acceptanceRate(pn, qn);
    const tv = sd.totalVariation(pn, qn);
    const resid = Array.from(sd.residualDistribution(pn, qn));
    const n = pn.length;
    const mins = Array.from({ length: n }, (_, i) => Math.min(pn[i], qn[i]));
    const pos = Array.from({ length: n }, (_, i) => Math.max(0, pn[i] - qn[i]));
    const recovered = Array.from({ length: n }, (_, i) => mins[i] + resid[i] * (1 - alpha));
    const maxErr = Math.max(...recovered.map((r, i) => Math.abs(r - pn[i])));

    for (let i = 0; i < n; i++) {
      const cell = (c) => rows[i].querySelector(`[data-col="${c}"]`);
      cell('min').textContent = mins[i].toFixed(3);
      cell('pos').textContent = pos[i].toFixed(3);
      cell('res').textContent = resid[i].toFixed(3);
      cell('sum').textContent = recovered[i].toFixed(3);
    }

    const notes = [];
    // What is used, exactly: a distribution that did not sum to 1 is divided by its sum.
    const used = (v) =>
      `[${Array.from(v)
        .map((x) => x.toFixed(3))
        .join(', ')}]`;
    if (Math.abs(P.sum - 1) > 1e-6)
      notes.push(`p summed to ${P.sum.toFixed(3)}: it is divided by that, and p = ${used(pn)} is used`);
    if (Math.abs(Q.sum - 1) > 1e-6)
      notes.push(`q summed to ${Q.sum.toFixed(3)}: it is divided by that, and q = ${used(qn)} is used`);
    const exact = maxErr < 1e-6;
    identity.replaceChildren(
      h('p', {}, [
        `α = Σ min(p, q) = ${alpha.toFixed(3)}, TV(p, q) = ${tv.toFixed(3)} (α = 1 − TV). `,
        'Recovered min(p, q) + p′·(1 − α) = [',
        recovered.map((r) => r.toFixed(3)).join(', '),
        '] vs p = [',
        Array.from(pn)
          .map((r) => r.toFixed(3))
          .join(', '),
        ']. ',
        h('strong', { class: exact ? 'ok' : 'bad', 'data-testid': 'identity-verdict' }, [
          exact
            ? `Equal: largest difference ${maxErr.toExponential(1)} (float32 rounding).`
            : `Differ by ${maxErr.toExponential(2)}.`,
        ]),
      ]),
      ...(notes.length
        ? [h('p', { class: 'small', 'data-testid': 'residual-normalised' }, [notes.join('; ') + '.'])]
        : []),
    );
    draw(chart, { p: Array.from(pn), q: Array.from(qn), mins, pos, recovered });
  }

  $('res-add').addEventListener('click', () => {
    if (p.length >= MAX_TOKENS) return;
    p.push(0.05);
    q.push(0.05);
    buildInputs();
    update();
  });
  $('res-remove').addEventListener('click', () => {
    if (p.length <= 2) return;
    p.pop();
    q.pop();
    buildInputs();
    update();
  });
  $('res-reset').addEventListener('click', () => {
    p = [...EXERCISE3.p];
    q = [...EXERCISE3.q];
    buildInputs();
    update();
  });

  buildInputs();
  update();
  onWidthChange(update);
  // On a phone the table is wider than the screen: it scrolls, and says so.
  watchScroll($('residual-scroll'));
}

/**
 * An edited p or q as the section uses it: { v: the normalised values, sum, bad: the indices
 * refused, error: why it is refused, or null }. Refused: an entry that is empty, not a number or
 * negative (it is not a probability: it is never taken as 0), and all zeros (no distribution to
 * normalise: it is never taken as uniform).
 * @param {number[]} values
 */
export function check(values) {
  const bad = values.flatMap((x, i) => (Number.isFinite(x) && x >= 0 ? [] : [i]));
  if (bad.length) {
    const what = bad.map(
      (i) => `${Number.isNaN(values[i]) ? 'an empty or unreadable entry' : values[i]} at token ${i}`,
    );
    return { v: null, sum: NaN, bad, error: `has ${what.join(', ')}: not a probability` };
  }
  const sum = values.reduce((a, b) => a + b, 0);
  if (!(sum > 0))
    return {
      v: null,
      sum,
      bad: values.map((_, i) => i),
      error: 'is all zeros: there is no distribution to normalise',
    };
  return { v: values.map((x) => x / sum), sum, bad: [], error: null };
}

function draw(svg, { p, q, mins, pos, recovered }) {
  const n = p.length;
  const ymax = Math.max(0.2, ...p, ...q) * 1.18;
  const f = barsFrame(svg, n, ymax, {
    height: 260,
    maxWidth: 520,
    yLabel: 'probability',
    xLabel: 'token',
    margin: { bottom: 40, top: 40 },
  });
  const band = f.x(1) - f.x(0);
  const bw = Math.min(44, band * 0.42);
  for (let i = 0; i < n; i++) {
    const cx = f.x(i + 0.5);
    const x0 = cx - bw / 2 - bw * 0.2;
    const y0 = f.y(0);
    const yMin = f.y(mins[i]);
    const ySum = f.y(mins[i] + pos[i]);
    const g = s('g', { class: 'res-group' }, [
      s('title', {}, [
        `token ${i}: min(p,q) ${mins[i].toFixed(3)} + (p−q)₊ ${pos[i].toFixed(3)} = ${(mins[i] + pos[i]).toFixed(3)}; p ${p[i].toFixed(3)}; q ${q[i].toFixed(3)}`,
      ]),
      s('rect', { class: 'res-min', x: x0, y: yMin, width: bw, height: Math.max(0, y0 - yMin) }),
      s('rect', { class: 'res-pos', x: x0, y: ySum, width: bw, height: Math.max(0, yMin - ySum) }),
      s('rect', {
        class: 'res-p',
        x: x0 - 2,
        y: f.y(p[i]),
        width: bw + 4,
        height: Math.max(0, y0 - f.y(p[i])),
      }),
      s('rect', {
        class: 'res-q',
        x: x0 + bw + 4,
        y: f.y(q[i]),
        width: bw * 0.35,
        height: Math.max(0, y0 - f.y(q[i])),
      }),
      s('text', { class: 'tick', x: cx, y: f.H - f.m.bottom + 16, 'text-anchor': 'middle' }, [String(i)]),
      s('text', { class: 'note', x: x0 + bw / 2, y: f.y(p[i]) - 5, 'text-anchor': 'middle' }, [
        `=${recovered[i].toFixed(2)}`,
      ]),
    ]);
    f.plot.append(g);
  }
  const lg = s('g', { class: 'legend', transform: `translate(${f.m.left + 8},10)` });
  const perRow = f.W >= 440 ? 4 : 2;
  [
    ['res-min', 'min(p, q)'],
    ['res-pos', '(p − q)₊'],
    ['res-p', 'p (outline)'],
    ['res-q', 'q'],
  ].forEach(([cls, t], i) => {
    const x = (i % perRow) * 96;
    const y = Math.floor(i / perRow) * 15;
    lg.append(
      s('rect', { class: cls, x, y: y - 5, width: 12, height: 10 }),
      s('text', { class: 'legend-text', x: x + 16, y, 'dominant-baseline': 'middle' }, [t]),
    );
  });
  svg.append(lg);
}
