// Section 4, after a speculative run: which γ each iteration used (a histogram of
// stats.gammaHistogram) and who drafted each iteration (a strip, one segment per iteration,
// as wide as the tokens it emitted, coloured by its drafter), with the counts in words; and the
// acceptance rate at each draft position.
import { frame, h, s } from '../shared/svg.js';
import { DRAFTERS } from '../shared/records.js';

/** What the page calls each drafter (DRAFTERS order: draft, lookup, heads, none). */
export const DRAFTER_NAMES = {
  draft: 'draft model',
  lookup: 'prompt lookup',
  heads: 'heads',
  none: 'plain step',
};

/**
 * Counts per drafter from the iterations' summaries ([drafter, gamma, emitted, accepted]):
 * { draft: { iterations, tokens, accepted }, ... } in DRAFTERS order.
 */
export function drafterCounts(iters) {
  const out = Object.fromEntries(DRAFTERS.map((d) => [d, { iterations: 0, tokens: 0, accepted: 0 }]));
  for (const [d, , emitted, accepted] of iters) {
    const c = out[DRAFTERS[d]];
    c.iterations++;
    c.tokens += emitted;
    c.accepted += accepted;
  }
  return out;
}

/** "draft model: 31 iterations, 120 tokens · prompt lookup: 18 iterations, 70 tokens". */
export function drafterCountsText(counts) {
  const parts = [];
  for (const d of DRAFTERS) {
    const c = counts[d];
    if (!c.iterations) continue;
    parts.push(
      `${DRAFTER_NAMES[d]}: ${c.iterations} iteration${c.iterations === 1 ? '' : 's'}, ${c.tokens} token${c.tokens === 1 ? '' : 's'}`,
    );
  }
  return parts.join(' · ');
}

/** Mean γ over the iterations of a histogram ([g] = iterations that drafted g tokens). */
export function meanGamma(hist) {
  let n = 0;
  let sum = 0;
  hist.forEach((count, g) => {
    n += count;
    sum += g * count;
  });
  return n ? sum / n : NaN;
}

/** The γ used most often (the largest on ties), or null for an empty histogram. */
export function commonGamma(hist) {
  let best = null;
  hist.forEach((count, g) => {
    if (count > 0 && (best === null || count >= hist[best])) best = g;
  });
  return best;
}

/**
 * The γ histogram: one bar per γ (0 = a plain step) with the count of iterations.
 * @param {SVGSVGElement} svg
 * @param {number[] | null} hist  stats.gammaHistogram, or null before a run
 * @param {{ policy?: string }} o  how γ was chosen ('fixed', 'auto', 'heuristic', 'tree')
 */
export function drawGammaHistogram(svg, hist, o = {}) {
  const counts = hist ?? [];
  const top = Math.max(1, ...counts);
  const gMax = Math.max(4, counts.length - 1);
  const f = frame(svg, {
    height: 200,
    maxWidth: 480,
    margin: { left: 46, bottom: 42 },
    xDomain: [-0.5, gMax + 0.5],
    yDomain: [0, top * 1.12],
    xTicks: Array.from({ length: gMax + 1 }, (_, g) => g),
    yTicks: niceCounts(top),
    xLabel: 'γ drafted this iteration (0 = plain step)',
    yLabel: 'iterations',
  });
  const total = counts.reduce((a, b) => a + b, 0);
  if (!total) {
    f.plot.append(
      s('text', { class: 'note', x: (f.m.left + f.W - f.m.right) / 2, y: f.H / 2, 'text-anchor': 'middle' }, [
        'run speculative decoding to see the γ it used',
      ]),
    );
    svg.dataset.bars = '0';
    return;
  }
  const bw = Math.min(34, (f.x(1) - f.x(0)) * 0.7);
  let bars = 0;
  counts.forEach((count, g) => {
    if (!count) return;
    bars++;
    const y = f.y(count);
    f.plot.append(
      s(
        'rect',
        {
          class: `gamma-bar${g === 0 ? ' zero' : ''}`,
          x: f.x(g) - bw / 2,
          y,
          width: bw,
          height: Math.max(0, f.y(0) - y),
          'data-gamma': g,
          'data-count': count,
        },
        [
          s('title', {}, [
            `γ = ${g}${g === 0 ? ' (a plain step: nothing drafted)' : ''}: ${count} of ${total} iterations`,
          ]),
        ],
      ),
      s('text', { class: 'bar-count', x: f.x(g), y: y - 4, 'text-anchor': 'middle' }, [String(count)]),
    );
  });
  svg.dataset.bars = String(bars);
  svg.dataset.policy = o.policy ?? '';
}

function niceCounts(top) {
  const step =
    top <= 5 ? 1 : top <= 10 ? 2 : top <= 25 ? 5 : top <= 50 ? 10 : top <= 100 ? 20 : Math.ceil(top / 5 / 50) * 50;
  const out = [];
  for (let v = 0; v <= top; v += step) out.push(v);
  return out;
}

/**
 * The drafter strip: one segment per iteration, its width the tokens it emitted, its colour its
 * drafter; an accepted share is drawn darker (accepted drafts / tokens emitted).
 * @param {SVGSVGElement} svg
 * @param {Array<[number, number, number, number]>} iters  [drafter, gamma, emitted, accepted]
 */
export function drawDrafterStrip(svg, iters) {
  const W = 480;
  const H = 46;
  const pad = 4;
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
  svg.replaceChildren();
  const tokens = iters.reduce((a, it) => a + it[2], 0);
  svg.dataset.segments = String(iters.length);
  if (!tokens) {
    svg.append(
      s(
        'text',
        {
          class: 'note',
          x: W / 2,
          y: H / 2,
          'text-anchor': 'middle',
          'dominant-baseline': 'middle',
        },
        ['run speculative decoding to see who drafted each iteration'],
      ),
    );
    return;
  }
  const k = (W - 2 * pad) / tokens;
  let x = pad;
  const g = s('g', { class: 'strip' });
  iters.forEach(([d, gamma, emitted, accepted], i) => {
    const w = emitted * k;
    const name = DRAFTERS[d];
    g.append(
      s(
        'rect',
        {
          class: `strip-seg d-${name}`,
          x: x.toFixed(2),
          y: 6,
          width: Math.max(0.5, w - (w > 2 ? 0.6 : 0)).toFixed(2),
          height: 22,
          'data-drafter': name,
          'data-gamma': gamma,
        },
        [
          s('title', {}, [
            `iteration ${i + 1}: ${DRAFTER_NAMES[name]}, γ = ${gamma}, ${accepted} accepted, ${emitted} token${emitted === 1 ? '' : 's'} emitted`,
          ]),
        ],
      ),
    );
    x += w;
  });
  svg.append(
    g,
    s('text', { class: 'tick', x: pad, y: H - 4 }, ['first token']),
    s('text', { class: 'tick', x: W - pad, y: H - 4, 'text-anchor': 'end' }, [`token ${tokens}`]),
  );
}

/** The strip's legend: a swatch and a count per drafter that occurred. */
export function drafterLegend(counts) {
  return DRAFTERS.filter((d) => counts[d].iterations > 0).map((d) =>
    h('span', { class: 'drafter-key' }, [
      h('span', { class: `sw d-${d}` }),
      `${DRAFTER_NAMES[d]} ×${counts[d].iterations}`,
    ]),
  );
}

/**
 * The acceptance rate at each draft position (stats.perPosition) as bars, with α as a line.
 * @param {SVGSVGElement} svg
 * @param {object | null} st  a speculative run's stats, or null before one
 */
export function drawPositions(svg, st) {
  const rates = st?.perPosition ?? [];
  const n = Math.max(rates.length, 4);
  const f = frame(svg, {
    height: 220,
    maxWidth: 480,
    xDomain: [0.5, n + 0.5],
    yDomain: [0, 1.05],
    xTicks: Array.from({ length: n }, (_, i) => i + 1),
    yTicks: [0, 0.25, 0.5, 0.75, 1],
    xLabel: 'draft position',
    yLabel: 'acceptance',
    yFormat: (t) => t.toFixed(2),
  });
  if (!st) {
    f.plot.append(
      s('text', { class: 'note', x: (f.m.left + f.W - f.m.right) / 2, y: f.H / 2, 'text-anchor': 'middle' }, [
        'run speculative decoding to fill this chart',
      ]),
    );
    return;
  }
  const bw = Math.min(36, (f.x(1) - f.x(0)) * 0.6);
  rates.forEach((r, i) => {
    if (!(r.reached > 0)) return;
    const y = f.y(r.rate);
    f.plot.append(
      s('rect', { class: 'pos-bar', x: f.x(i + 1) - bw / 2, y, width: bw, height: Math.max(0, f.y(0) - y) }, [
        s('title', {}, [`position ${i + 1}: ${r.accepted} / ${r.reached} = ${r.rate.toFixed(3)}`]),
      ]),
    );
  });
  if (st.examined) {
    f.plot.append(
      s('line', {
        class: 'alpha-line',
        x1: f.x(0.5),
        x2: f.x(n + 0.5),
        y1: f.y(st.alpha),
        y2: f.y(st.alpha),
      }),
      s('text', { class: 'note', x: f.x(n + 0.5) - 4, y: f.y(st.alpha) - 5, 'text-anchor': 'end' }, [
        `α = ${st.alpha.toFixed(3)}`,
      ]),
    );
  }
}
