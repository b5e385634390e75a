// Issue 56, item 2, in Node on a minimal stand-in for the DOM (no browser, no timing): what section
// 4's verdict (web/page/src/models/verdict-view.js) and the pitfalls lab's γ card
// (web/page/src/pitfalls/render.js) show from timings that passed or failed the checks — nothing
// derived from failed ones anywhere (table, verdict, card), a sum written out that adds up as
// written, and another γ suggested only when it beats the current one by more than the spread.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';

/** Just enough of an element for h() and the views: attributes, dataset, children, text. */
class El {
  constructor(tag) {
    this.tag = tag;
    this.attrs = {};
    this.dataset = {};
    this.children = [];
    this.className = '';
    this.style = {};
    this.listeners = {};
  }
  getBoundingClientRect() {
    return { width: 400, height: 240 };
  }
  setAttribute(k, v) {
    this.attrs[k] = v;
    if (k.startsWith('data-')) this.dataset[k.slice(5).replace(/-(\w)/g, (_, c) => c.toUpperCase())] = v;
  }
  addEventListener(k, f) {
    this.listeners[k] = f;
  }
  append(...cs) {
    this.children.push(...cs);
  }
  replaceChildren(...cs) {
    this.children = cs;
  }
  get textContent() {
    return this.children.map((c) => (typeof c === 'string' ? c : c.textContent)).join('');
  }
  set textContent(t) {
    this.children = [String(t)];
  }
  /** Descendants with this data-testid. */
  find(id) {
    const out = [];
    for (const c of this.children) {
      if (typeof c === 'string') continue;
      if (c.attrs['data-testid'] === id) out.push(c);
      out.push(...c.find(id));
    }
    return out;
  }
}

let showVerdict;
let renderCard;
let LAB;
before(async () => {
  globalThis.document = {
    createElement: (t) => new El(t),
    createElementNS: (_, t) => new El(t),
    createTextNode: (t) => t,
    getElementById: () => new El('input'),
  };
  ({ showVerdict } = await import('../../web/page/src/models/verdict-view.js'));
  ({ renderCard } = await import('../../web/page/src/pitfalls/render.js'));
  ({ LAB } = await import('../../web/page/src/pitfalls/runs.js'));
});

const E = (a, g) => (1 - a ** (g + 1)) / (1 - a);
const speedup = (a, g, c, v) => E(a, g) / (g * c + v);

/** A comparison as results.js compareRuns gives it: γ 4, α 0.8, c 0.0874, v 2.3249. */
function comparison(verdict) {
  const [alpha, gamma, c, v] = [0.8, 4, 0.0874, 2.3249];
  return {
    o: { drafter: 'draft', gamma, tree: null },
    specSt: { backend: { backend: 'cpu' }, tokensPerPass: 3.3 },
    formula: true,
    hist: [0, 0, 0, 0, 50],
    gamma,
    c,
    v,
    alpha,
    E: E(alpha, gamma),
    predicted: E(alpha, gamma) / (gamma * c + 1),
    predictedV: E(alpha, gamma) / (gamma * c + v),
    step: { ms: 1.1, from: 'the plain runs' },
    costs: { stepMs: 1.1, steps: 200, iterationMs: 3.2, iterations: 56, draftMs: 0.38, verifyMs: 2.6, repeats: 3 },
    ratios: [1.2, 1.21, 1.22],
    rawRatios: [1.1, 1.3, 1.25],
    verdict,
  };
}

function render(f, { trust = { ok: true, reasons: [] }, curve = null } = {}) {
  const cells = {};
  const cell = (id) => (cells[id] ??= new El('td'));
  const el = new El('p');
  showVerdict(cell, el, f, {
    threads: 2,
    coarseTimer: false,
    verifyCurve: () => curve,
    speedup,
    trust,
    raw: { plain: [{ tokensPerSecond: 300 }], spec: [{ tokensPerSecond: 360 }] },
  });
  return { cells, el, text: el.textContent };
}

const pays = { kind: 'pays', n: 3, median: 1.21, min: 1.2, max: 1.22, outlier: null, steady: true };

test('the verdict writes γc + v and E/(γc + v) from the numbers it shows, and the cell shows that quotient', () => {
  const { cells, text } = render(comparison(pays));
  const m = text.match(
    /γc \+ v = 4·([\d.]+) \+ ([\d.]+) = ([\d.]+) target steps .* E = ([\d.]+) tokens .* E\/\(γc \+ v\) = ([\d.]+) \/ ([\d.]+) = ([\d.]+)×/,
  );
  assert.ok(m, text);
  const [c, v, cost, e, e2, cost2, q] = m.slice(1).map(Number);
  assert.equal(Math.round((4 * c + v) * 1000), Math.round(cost * 1000), `4·${c} + ${v} = ${cost}`);
  assert.equal(e, e2);
  assert.equal(cost, cost2);
  assert.equal(cells['speedup-predicted-v'].textContent, `${(e / cost).toFixed(2)}×`);
  assert.equal(q.toFixed(2), (e / cost).toFixed(2));
  assert.match(
    text,
    /one step = 1\.10 ms, the plain run's time per token \(its 200 steps, each step's fastest of 3 repeats\)/,
  );
});

test('no c, v, speedup, prediction or γ from runs that failed the checks', () => {
  const trust = { ok: false, reasons: ['the speedup from each step’s fastest repeat ranged over 0.99–1.35×'] };
  const { cells, el, text } = render(comparison(pays), { trust });
  for (const id of ['c-measured', 'v-measured', 'speedup-measured', 'speedup-predicted', 'speedup-predicted-v'])
    assert.equal(cells[id].textContent, '– (the timings failed the checks)', id);
  assert.equal(el.dataset.trusted, 'false');
  assert.match(text, /This machine was busy while measuring/);
  assert.match(text, /ratios 1\.10, 1\.30, 1\.25\./, 'the raw repeats, not the estimates');
  assert.doesNotMatch(text, /pays|γ = \d+ is|E\/\(γc \+ v\)/);
});

test('another γ is suggested only when it is predicted faster by more than the measured spread', () => {
  // v(k) flat past k = 3: a deeper γ is predicted a little (about 6%) faster.
  const flat = (k) => (k <= 3 ? 1 : 1.3);
  const wide = { ...pays, min: 1.0, max: 1.4 }; // a 40% spread
  const within = render(comparison(wide), { curve: flat });
  const best = within.el.find('best-gamma')[0].textContent;
  assert.match(
    best,
    /γ = 4 is about the best γ here \(γ = \d+ is predicted at [\d.]+× against [\d.]+×: within the measured spread, 40%\)/,
  );
  assert.equal(within.el.find('use-best-gamma').length, 0, 'no button');
  const tight = render(comparison({ ...pays, min: 1.2, max: 1.21 }), { curve: flat });
  assert.match(
    tight.el.find('best-gamma')[0].textContent,
    /γ = \d+ is predicted best here: .*more than the measured spread \(5%\)/,
  );
  assert.equal(tight.el.find('use-best-gamma').length, 1);
  // Far better (v(k) jumps past k = 3): suggested whatever the spread.
  const jump = render(comparison(wide), { curve: (k) => (k <= 3 ? 1 : 3) });
  assert.match(jump.el.find('best-gamma')[0].textContent, /γ = 2 is predicted best here/);
});

/** A pitfalls card as cards.js buildCard makes it, with the read-outs the γ card has. */
function sweepCard(broken) {
  const names = ['gamma', 'alpha', 'tokens-per-pass', 'speedup'];
  return {
    def: { id: 'gamma-too-large', sweep: true, readouts: names },
    el: new El('article'),
    readouts: Object.fromEntries(names.map((n) => [n, new El('span')])),
    notes: Object.fromEntries(names.map((n) => [n, new El('span')])),
    svg: new El('svg'),
    caption: new El('figcaption'),
    verdict: new El('p'),
    compare: new El('p'),
    sample: new El('div'),
    timing: new El('span'),
    broken,
  };
}

test('the γ card headlines no γ from timings that failed the checks', () => {
  const sweep = LAB.sweep.map((g, i) => ({
    gamma: g,
    speedup: 1 + ((i * 7) % 5) / 10,
    msPerToken: 1,
    alpha: 0.8,
    tokensPerPass: 3,
  }));
  const big = { gamma: LAB.largeGamma, speedup: 0.6, msPerToken: 2, alpha: 0.8, tokensPerPass: 4 };
  const r = (chunkMs) => ({ ms: 1000, seed: 1, sweep: [...sweep, big], plain: { msPerToken: 1.2, chunkMs }, c: 0.1 });
  const busy = r([0.8, 3, 0.8, 3.2, 0.9, 3.1]);
  const off = sweepCard(false);
  renderCard(off, busy, () => undefined);
  assert.equal(off.el.dataset.trusted, 'false');
  assert.equal(off.readouts.gamma.textContent, '–', 'switched off: no "best" γ headlined');
  assert.equal(off.readouts.speedup.textContent, '–');
  assert.equal(off.el.dataset.bestGamma, undefined);
  assert.match(off.verdict.textContent, /This machine was busy while measuring/);
  const on = sweepCard(true);
  renderCard(on, busy, () => undefined);
  assert.equal(on.readouts.gamma.textContent, String(LAB.largeGamma), 'switched on: the switch’s γ');
  assert.match(on.notes.speedup.textContent, /^untrusted \(a busy machine\)/);
  // Trusted: the best measured γ.
  const ok = sweepCard(false);
  renderCard(ok, r([0.8, 0.82, 0.79, 0.81]), () => undefined);
  const bestG = [...sweep, big].reduce((a, b) => (b.speedup > a.speedup ? b : a)).gamma;
  assert.equal(ok.readouts.gamma.textContent, String(bestG));
});
