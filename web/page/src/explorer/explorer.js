// Section 1, the lesson's "Interactive Exploration": sliders for α, γ, c; tokens per pass and
// speedup against γ with the current and the optimal γ marked; the faint dots come from the
// WASM demonstrateSpeculative at c = 0.1. Every number shown is computed by the WASM build.
import { frame, onWidthChange, pathOf, s } from '../shared/svg.js';
import { EXPLORER_PRESETS, explorerPresetNote } from '../shared/presets.js';

const GAMMA_MAX = 16;
const DEMO_C = 0.1;

export function initExplorer(sd) {
  const $ = (id) => document.getElementById(id);
  const inputs = { alpha: $('alpha'), gamma: $('gamma'), cost: $('cost') };
  const outs = { alpha: $('alpha-out'), gamma: $('gamma-out'), cost: $('cost-out') };
  // Scoped to the section: the pitfalls lab's cards have read-outs with the same test ids.
  const readTokens = $('explorer').querySelector('[data-testid="tokens-per-pass"]');
  const readSpeedup = $('explorer').querySelector('[data-testid="speedup"]');
  const readOptimal = $('explorer').querySelector('[data-testid="optimal-gamma"]');
  const optimalNote = $('optimal-note');
  const presetNote = $('preset-note');
  const chartTokens = $('chart-tokens');
  const chartSpeedup = $('chart-speedup');

  let demoAlpha = NaN;
  let demoPoints = [];

  function state() {
    return {
      alpha: Number(inputs.alpha.value),
      gamma: Math.round(Number(inputs.gamma.value)),
      cost: Number(inputs.cost.value),
    };
  }

  function update() {
    const { alpha, gamma, cost } = state();
    outs.alpha.value = alpha.toFixed(2);
    outs.gamma.value = String(gamma);
    outs.cost.value = cost.toFixed(2);

    const gammas = Array.from({ length: GAMMA_MAX }, (_, i) => i + 1);
    const tokens = gammas.map((g) => sd.expectedAcceptedTokens(alpha, g));
    const speedups = gammas.map((g) => sd.speculativeSpeedup(alpha, g, cost));
    const best = sd.optimalGamma(alpha, cost, GAMMA_MAX);

    readTokens.textContent = sd.expectedAcceptedTokens(alpha, gamma).toFixed(2);
    readSpeedup.textContent = sd.speculativeSpeedup(alpha, gamma, cost).toFixed(2);
    readOptimal.textContent = String(best);
    optimalNote.textContent = `${speedups[best - 1].toFixed(2)}× at γ = ${best}`;

    if (alpha !== demoAlpha) {
      demoAlpha = alpha;
      demoPoints = sd.demonstrateSpeculative({ alphas: [alpha], gammaMax: GAMMA_MAX, c: DEMO_C });
    }

    drawTokens(chartTokens, { alpha, gamma, best, gammas, tokens, demoPoints });
    drawSpeedup(chartSpeedup, { gamma, cost, best, gammas, speedups, demoPoints });
    chartTokens.setAttribute(
      'aria-label',
      `Tokens per pass at α = ${alpha.toFixed(2)}: ${tokens[gamma - 1].toFixed(2)} at γ = ${gamma}, limit ${(1 / (1 - alpha)).toFixed(2)}.`,
    );
    chartSpeedup.setAttribute(
      'aria-label',
      `Speedup at α = ${alpha.toFixed(2)}, c = ${cost.toFixed(2)}: ${speedups[gamma - 1].toFixed(2)}× at γ = ${gamma}; best ${speedups[best - 1].toFixed(2)}× at γ = ${best}.`,
    );
  }

  for (const el of Object.values(inputs)) {
    el.addEventListener('input', () => {
      presetNote.textContent = '';
      update();
    });
  }
  for (const btn of document.querySelectorAll('[data-preset]')) {
    btn.addEventListener('click', () => {
      const key = btn.dataset.preset;
      const p = EXPLORER_PRESETS[key];
      inputs.alpha.value = String(p.alpha);
      inputs.gamma.value = String(p.gamma);
      inputs.cost.value = String(p.cost);
      update();
      // Computed by the same WASM functions as the read-outs beside it.
      presetNote.textContent = explorerPresetNote(
        key,
        {
          speedup: (a, g, c) => sd.speculativeSpeedup(a, g, c),
          optimalGamma: (a, c, max) => sd.optimalGamma(a, c, max),
        },
        GAMMA_MAX,
      );
    });
  }
  $('explorer-form').addEventListener('submit', (e) => e.preventDefault());
  onWidthChange(update);
  update();
}

function field(p, name) {
  // demonstrateSpeculative points: { alpha, gamma, tokensPerPass, speedup }
  return p[name] ?? p[name.replace(/[A-Z]/g, (m) => '_' + m.toLowerCase())];
}

function gammaTicks() {
  return [1, 2, 4, 6, 8, 10, 12, 14, 16];
}

function markers(f, gamma, best, valueAt) {
  const g = s('g', { class: 'markers' });
  const top = f.m.top;
  const bottom = f.H - f.m.bottom;
  g.append(
    s('line', { class: 'current-line', x1: f.x(gamma), x2: f.x(gamma), y1: top, y2: bottom }),
    s(
      'circle',
      {
        class: 'current-dot',
        cx: f.x(gamma),
        cy: f.y(valueAt(gamma)),
        r: 5.5,
        'data-gamma': gamma,
      },
      [s('title', {}, [`current γ = ${gamma}`])],
    ),
  );
  const bx = f.x(best);
  const by = f.y(valueAt(best));
  g.append(
    s(
      'path',
      {
        class: 'optimal-marker',
        'data-gamma': best,
        'data-testid': 'optimal-marker',
        d: `M${bx},${by - 8}L${bx + 8},${by}L${bx},${by + 8}L${bx - 8},${by}Z`,
      },
      [s('title', {}, [`optimal γ = ${best}`])],
    ),
  );
  return g;
}

function legend(f, items) {
  // Two rows of two entries above the plot area.
  const g = s('g', { class: 'legend', transform: `translate(${f.m.left},8)` });
  const colW = (f.W - f.m.left - f.m.right) / 2;
  items.forEach(([cls, text], i) => {
    const y = Math.floor(i / 2) * 16;
    const x = (i % 2) * colW;
    const item = s('g', { transform: `translate(${x},0)` });
    let mark;
    if (cls === 'optimal-marker') mark = s('path', { class: cls, d: `M6,${y - 5}L11,${y}L6,${y + 5}L1,${y}Z` });
    else if (cls === 'demo-dot') mark = s('circle', { class: cls, cx: 6, cy: y, r: 3.5 });
    else if (cls === 'current-dot') mark = s('circle', { class: cls, cx: 6, cy: y, r: 4.5 });
    else mark = s('line', { class: cls, x1: 0, x2: 12, y1: y, y2: y });
    item.append(mark, s('text', { class: 'legend-text', x: 18, y, 'dominant-baseline': 'middle' }, [text]));
    g.append(item);
  });
  return g;
}

// The frame of both charts: γ from 1 to GAMMA_MAX across, 0..yMax up.
function gammaFrame(svg, yMax, yLabel) {
  return frame(svg, {
    xDomain: [0.5, GAMMA_MAX + 0.5],
    yDomain: [0, yMax],
    xTicks: gammaTicks(),
    xLabel: 'γ (draft tokens per iteration)',
    yLabel,
    height: 300,
    margin: { top: 50 },
  });
}

// A horizontal line across frame f at height y.
const acrossAt = (f, cls, y) =>
  s('line', { class: cls, x1: f.x(0.5), x2: f.x(GAMMA_MAX + 0.5), y1: f.y(y), y2: f.y(y) });

// The curve through (gammas[i], values[i]).
const curve = (f, cls, gammas, values) =>
  s('path', {
    class: cls,
    d: pathOf(
      gammas.map((g, i) => [g, values[i]]),
      f.x,
      f.y,
    ),
  });

// demonstrateSpeculative's points as dots at their field `key`, each with the tooltip title(p, value).
function appendDemoDots(f, demoPoints, key, title) {
  for (const p of demoPoints) {
    const value = field(p, key);
    f.plot.append(
      s('circle', { class: 'demo-dot', cx: f.x(p.gamma), cy: f.y(value), r: 3.5 }, [s('title', {}, [title(p, value)])]),
    );
  }
}

function drawTokens(svg, { alpha, gamma, best, gammas, tokens, demoPoints }) {
  const ymax = Math.max(2, Math.max(...tokens) * 1.12);
  const f = gammaFrame(svg, ymax, 'tokens per target pass');
  const limit = 1 / (1 - alpha);
  if (limit < ymax) {
    f.plot.append(
      acrossAt(f, 'asymptote', limit),
      s('text', { class: 'note', x: f.x(GAMMA_MAX + 0.5) - 4, y: f.y(limit) - 5, 'text-anchor': 'end' }, [
        `limit 1/(1 − α) = ${limit.toFixed(2)}`,
      ]),
    );
  }
  f.plot.append(curve(f, 'curve tokens', gammas, tokens));
  appendDemoDots(
    f,
    demoPoints,
    'tokensPerPass',
    (p, tpp) => `demonstrateSpeculative: γ = ${p.gamma}, ${tpp.toFixed(3)} tokens/pass`,
  );
  f.plot.append(markers(f, gamma, best, (g) => tokens[g - 1]));
  svg.append(
    legend(f, [
      ['curve tokens', 'E[tokens] (live)'],
      ['demo-dot', 'WASM dots'],
      ['current-dot', 'current γ'],
      ['optimal-marker', 'optimal γ (speedup)'],
    ]),
  );
}

function drawSpeedup(svg, { gamma, cost, best, gammas, speedups, demoPoints }) {
  const demoMax = Math.max(0, ...demoPoints.map((p) => field(p, 'speedup')));
  const ymax = Math.max(1.5, Math.max(...speedups, demoMax) * 1.12);
  const f = gammaFrame(svg, ymax, 'speedup ×');
  f.plot.append(
    acrossAt(f, 'breakeven', 1),
    s('text', { class: 'note', x: f.x(0.5) + 4, y: f.y(1) + 14 }, ['1× = no gain']),
  );
  f.plot.append(curve(f, 'curve speedup', gammas, speedups));
  appendDemoDots(
    f,
    demoPoints,
    'speedup',
    (p, sp) => `demonstrateSpeculative (c = ${DEMO_C}): γ = ${p.gamma}, ${sp.toFixed(3)}×`,
  );
  f.plot.append(markers(f, gamma, best, (g) => speedups[g - 1]));
  const bx = f.x(best);
  const by = f.y(speedups[best - 1]);
  f.plot.append(
    s('text', { class: 'note optimal-label', x: bx, y: by - 13, 'text-anchor': 'middle' }, [`optimal γ = ${best}`]),
  );
  svg.append(
    legend(f, [
      ['curve speedup', `speedup, c = ${cost.toFixed(2)}`],
      ['demo-dot', `WASM dots, c = ${DEMO_C}`],
      ['current-dot', 'current γ'],
      ['optimal-marker', 'optimal γ'],
    ]),
  );
}
