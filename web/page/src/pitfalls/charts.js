// The pitfalls lab's charts (section 5), hand-written SVG like the page's others: a histogram
// of emitted tokens against p, measured speedups as bars, and measured speedup against γ.
import { barsFrame, frame, pathOf, s } from '../shared/svg.js';

/** A token as a short label: ␠ for a space, ⏎ for a newline, the character otherwise. */
export function tokenLabel(text) {
  if (text === ' ') return '␠';
  if (text === '\n') return '⏎';
  if (text === '\t') return '⇥';
  return text;
}

/**
 * Observed frequencies (bars) against p (dashed outlines), one group per bin.
 * @param {SVGSVGElement} svg
 * @param {{ labels: string[], observed: number[], p: number[], bad: boolean }} o
 *   observed / p: fractions per bin (a last bin may hold the rest of the vocabulary)
 */
export function drawHistogram(svg, o) {
  const n = o.labels.length;
  const ymax = Math.max(0.05, ...o.p, ...o.observed) * 1.15;
  const f = barsFrame(svg, n, ymax, {
    height: 230,
    maxWidth: 520,
    minWidth: 300,
    yLabel: 'share of tokens',
    margin: { left: 50, bottom: 34, top: 26 },
  });
  const band = f.x(1) - f.x(0);
  const bw = Math.max(4, Math.min(36, band * 0.62));
  for (let i = 0; i < n; i++) {
    const cx = f.x(i + 0.5);
    const y0 = f.y(0);
    f.plot.append(
      s('g', { class: 'pf-bin', 'data-label': o.labels[i] }, [
        s('title', {}, [`${o.labels[i]}: observed ${o.observed[i].toFixed(4)}, p ${o.p[i].toFixed(4)}`]),
        s('rect', {
          class: `pf-obs${o.bad ? ' bad' : ''}`,
          x: cx - bw / 2,
          y: f.y(o.observed[i]),
          width: bw,
          height: Math.max(0, y0 - f.y(o.observed[i])),
        }),
        s('rect', {
          class: 'pf-p',
          x: cx - bw / 2 - 2,
          y: f.y(o.p[i]),
          width: bw + 4,
          height: Math.max(0, y0 - f.y(o.p[i])),
        }),
        s('text', { class: 'tick pf-tok', x: cx, y: f.H - f.m.bottom + 15, 'text-anchor': 'middle' }, [o.labels[i]]),
      ]),
    );
  }
  const lg = s('g', { class: 'legend', transform: `translate(${f.m.left + 8},10)` });
  lg.append(
    s('rect', { class: `pf-obs${o.bad ? ' bad' : ''}`, x: 0, y: -5, width: 12, height: 10 }),
    s('text', { class: 'legend-text', x: 16, y: 0, 'dominant-baseline': 'middle' }, ['emitted (this run)']),
    s('rect', { class: 'pf-p', x: 140, y: -5, width: 12, height: 10 }),
    s('text', { class: 'legend-text', x: 156, y: 0, 'dominant-baseline': 'middle' }, ['p, the target (outline)']),
  );
  svg.append(lg);
}

/**
 * Horizontal bars of measured speedups with the 1× line (plain decoding).
 * @param {SVGSVGElement} svg
 * @param {{ label: string, value: number, current?: boolean }[]} rows
 */
export function drawSpeedupBars(svg, rows) {
  const top = Math.max(1.6, ...rows.map((r) => r.value)) * 1.12;
  const rowH = 34;
  const H = 40 + rows.length * rowH;
  const f = frame(svg, {
    height: H,
    maxWidth: 520,
    minWidth: 300,
    xDomain: [0, top],
    yDomain: [0, rows.length],
    yTicks: [],
    xLabel: 'speedup over plain decoding (measured)',
    margin: { left: 128, bottom: 36, top: 6 },
    xFormat: (t) => `${t}×`,
  });
  rows.forEach((r, i) => {
    const y = f.y(rows.length - i) + 6;
    const h = f.y(rows.length - i - 1) - f.y(rows.length - i) - 12;
    f.plot.append(
      s('g', { class: 'pf-speed-row' }, [
        s('title', {}, [`${r.label}: ${r.value.toFixed(2)}×`]),
        s(
          'text',
          {
            class: 'tick',
            x: f.m.left - 6,
            y: y + h / 2,
            'text-anchor': 'end',
            'dominant-baseline': 'middle',
          },
          [r.label],
        ),
        s('rect', {
          class: `pf-speed${r.value < 1 ? ' slow' : ''}${r.current ? ' current' : ''}`,
          x: f.x(0),
          y,
          width: Math.max(0, f.x(r.value) - f.x(0)),
          height: h,
        }),
        s('text', { class: 'note', x: f.x(r.value) + 4, y: y + h / 2, 'dominant-baseline': 'middle' }, [
          `${r.value.toFixed(2)}×`,
        ]),
      ]),
    );
  });
  f.plot.append(s('line', { class: 'breakeven', x1: f.x(1), x2: f.x(1), y1: f.m.top, y2: f.H - f.m.bottom }));
}

/**
 * Measured speedup against γ, with 1× (plain decoding), the best measured γ and the current γ.
 * @param {SVGSVGElement} svg
 * @param {{ points: { gamma: number, speedup: number }[], best: number, current: number }} o
 */
export function drawSweep(svg, o) {
  const gMax = Math.max(...o.points.map((p) => p.gamma));
  const top = Math.max(1.6, ...o.points.map((p) => p.speedup)) * 1.15;
  const f = frame(svg, {
    height: 240,
    maxWidth: 520,
    minWidth: 300,
    xDomain: [0, gMax + 1],
    yDomain: [0, top],
    xTicks: o.points.map((p) => p.gamma),
    xLabel: 'γ, draft tokens per iteration',
    yLabel: 'measured speedup',
    yFormat: (t) => `${t}×`,
    margin: { top: 22 },
  });
  f.plot.append(
    s('line', { class: 'breakeven', x1: f.x(0), x2: f.x(gMax + 1), y1: f.y(1), y2: f.y(1) }),
    s('text', { class: 'note', x: f.x(0) + 4, y: f.y(1) + 14, 'text-anchor': 'start' }, ['plain decoding = 1×']),
    s('path', {
      class: 'curve speedup',
      d: pathOf(
        o.points.map((p) => [p.gamma, p.speedup]),
        f.x,
        f.y,
      ),
    }),
  );
  for (const p of o.points) {
    f.plot.append(
      s('circle', { class: 'pf-dot', cx: f.x(p.gamma), cy: f.y(p.speedup), r: 3.5, 'data-gamma': p.gamma }, [
        s('title', {}, [`γ = ${p.gamma}: ${p.speedup.toFixed(2)}×`]),
      ]),
    );
  }
  const best = o.points.find((p) => p.gamma === o.best);
  const cur = o.points.find((p) => p.gamma === o.current);
  if (best) {
    const x = f.x(best.gamma);
    const y = f.y(best.speedup);
    f.plot.append(
      s('path', {
        class: 'optimal-marker',
        d: `M${x},${y - 8}L${x + 8},${y}L${x},${y + 8}L${x - 8},${y}Z`,
        'data-role': 'optimum',
      }),
      s('text', { class: 'optimal-label', x, y: y - 12, 'text-anchor': 'middle' }, [`best γ = ${best.gamma}`]),
    );
  }
  if (cur && cur !== best) {
    f.plot.append(
      s('circle', {
        class: 'current-dot',
        cx: f.x(cur.gamma),
        cy: f.y(cur.speedup),
        r: 7,
        'data-role': 'current',
      }),
      s('text', { class: 'note', x: f.x(cur.gamma) - 10, y: f.y(cur.speedup) + 18, 'text-anchor': 'end' }, [
        `γ = ${cur.gamma}: ${cur.speedup.toFixed(2)}×`,
      ]),
    );
  }
}
