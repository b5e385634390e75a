// Section 1: the explorer's read-outs follow the lesson's formulas, the optimal-γ marker moves
// when c drops, the presets work, the WASM dots lie on the live curve at c = 0.1.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, setInput, text, byTestId, screenshot, assertClean } from './harness.mjs';
import { expectedTokens, expectedSpeedup, expectedOptimalGamma } from './lesson-formulas.mjs';

let env;
before(async () => (env = await openPage()));
after(() => env?.close());

async function set(page, alpha, gamma, cost) {
  await setInput(page, 'alpha', alpha);
  await setInput(page, 'gamma', gamma);
  await setInput(page, 'cost', cost);
}

test('read-outs equal the lesson formulas at several settings', async () => {
  const { page } = env;
  const cases = [
    [0.8, 4, 0.1],
    [0.9, 5, 0.1],
    [0.4, 5, 0.1],
    [0.85, 3, 0.15],
    [0.6, 1, 0.5],
    [0.99, 16, 0],
    [0, 7, 1],
    [0.5, 10, 0.05],
    [0.95, 8, 0.02],
  ];
  for (const [alpha, gamma, c] of cases) {
    await set(page, alpha, gamma, c);
    const tokens = Number(await text(page, byTestId('tokens-per-pass')));
    const speedup = Number(await text(page, byTestId('speedup')));
    const best = Number(await text(page, byTestId('optimal-gamma')));
    assert.equal(tokens.toFixed(2), expectedTokens(alpha, gamma).toFixed(2), `tokens/pass at α=${alpha} γ=${gamma}`);
    assert.equal(
      speedup.toFixed(2),
      expectedSpeedup(alpha, gamma, c).toFixed(2),
      `speedup at α=${alpha} γ=${gamma} c=${c}`,
    );
    assert.equal(best, expectedOptimalGamma(alpha, c, 16), `optimal γ at α=${alpha} c=${c}`);
    assert.match(await text(page, byTestId('tokens-per-pass')), /^\d+\.\d\d$/);
    assert.match(await text(page, byTestId('speedup')), /^\d+\.\d\d$/);
  }
  // The lesson's Exercise 2 table: α = 0.85, c = 0.15.
  for (let gamma = 1; gamma <= 10; gamma++) {
    await set(page, 0.85, gamma, 0.15);
    assert.equal(await text(page, byTestId('speedup')), expectedSpeedup(0.85, gamma, 0.15).toFixed(2));
  }
});

test('the optimal-γ marker moves right when c drops', async () => {
  const { page } = env;
  const markerGamma = async () =>
    Number(await page.locator('#chart-speedup .plot [data-testid="optimal-marker"]').getAttribute('data-gamma'));
  const markerX = async () => {
    const box = await page.locator('#chart-speedup .plot [data-testid="optimal-marker"]').boundingBox();
    return box.x + box.width / 2;
  };
  await set(page, 0.9, 4, 0.3);
  const g1 = await markerGamma();
  const x1 = await markerX();
  await setInput(page, 'cost', 0.05);
  const g2 = await markerGamma();
  const x2 = await markerX();
  await setInput(page, 'cost', 0.01);
  const g3 = await markerGamma();
  assert.equal(g1, expectedOptimalGamma(0.9, 0.3));
  assert.equal(g2, expectedOptimalGamma(0.9, 0.05));
  assert.ok(g2 > g1, `optimal γ ${g1} -> ${g2} when c drops 0.3 -> 0.05`);
  assert.ok(g3 >= g2, `optimal γ ${g2} -> ${g3} when c drops 0.05 -> 0.01`);
  assert.ok(x2 > x1, 'the marker moved right on screen');
  // The current-γ dot follows the γ slider.
  await setInput(page, 'gamma', 9);
  assert.equal(await page.locator('#chart-speedup .plot .current-dot').getAttribute('data-gamma'), '9');
});

test("the presets set the lesson's three regimes", async () => {
  const { page } = env;
  await page.getByRole('button', { name: /Good draft/ }).click();
  assert.equal(await page.inputValue('#alpha'), '0.9');
  const good = Number(await text(page, byTestId('speedup')));
  assert.ok(good > 2, `good draft speedup ${good}`);
  await page.getByRole('button', { name: /Weak draft/ }).click();
  assert.equal(await page.inputValue('#alpha'), '0.4');
  const bestWeak = Number(await text(page, byTestId('optimal-gamma')));
  assert.ok(expectedSpeedup(0.4, bestWeak, 0.1) < 1.4, 'even the best γ barely beats 1×');
  assert.ok(expectedSpeedup(0.4, 16, 0.1) < 1, 'large γ makes it worse than plain decoding');
  await page.getByRole('button', { name: /Cheaper draft/ }).click();
  const cost = Number(await page.inputValue('#cost'));
  assert.ok(cost < 0.1, `cheaper draft has c = ${cost}`);
  const bestCheap = Number(await text(page, byTestId('optimal-gamma')));
  assert.ok(bestCheap > expectedOptimalGamma(0.9, 0.1), 'optimal γ grows for the cheaper draft');
});

test("each preset's note says what the cards beside it say", async () => {
  const { page } = env;
  for (const name of [/Good draft/, /Weak draft/, /Cheaper draft/]) {
    await page.getByRole('button', { name }).click();
    const note = await text(page, '#preset-note');
    const gamma = Number(await page.inputValue('#gamma'));
    const speedup = await text(page, byTestId('speedup'));
    const best = await text(page, byTestId('optimal-gamma'));
    // The optimal-γ card's line: "3.43× at γ = 10".
    const [, bestSpeedup] = /^(\d+\.\d\d)× at γ = \d+$/.exec(await text(page, '#optimal-note')) ?? [];
    assert.ok(
      note.includes(`γ = ${gamma} gives ${speedup}×`),
      `${name}: “${note}” has the speedup card (${speedup}× at γ = ${gamma})`,
    );
    assert.ok(
      note.includes(` ${best}`) && note.includes(`${bestSpeedup}×`),
      `${name}: “${note}” has the optimal γ card (${best}, ${bestSpeedup}×)`,
    );
    assert.doesNotMatch(note, /handful|barely/, `${name}: no claim the cards contradict`);
  }
});

test('the WASM demonstrateSpeculative dots lie on the live curve at c = 0.1', async () => {
  const { page } = env;
  await set(page, 0.8, 4, 0.1);
  const offsets = await page.evaluate(() => {
    const svg = document.getElementById('chart-speedup');
    const path = svg.querySelector('.plot path.curve');
    const dots = [...svg.querySelectorAll('.plot circle.demo-dot')];
    // Each dot's centre must be a vertex of the curve's path.
    const vertices = path
      .getAttribute('d')
      .split(/[ML]/)
      .filter(Boolean)
      .map((p) => p.split(',').map(Number));
    return dots.map((d) => {
      const cx = Number(d.getAttribute('cx'));
      const cy = Number(d.getAttribute('cy'));
      return Math.min(...vertices.map(([x, y]) => Math.hypot(x - cx, y - cy)));
    });
  });
  assert.equal(offsets.length, 16, '16 dots, γ = 1..16');
  assert.ok(Math.max(...offsets) < 0.05, `dots on the curve (max offset ${Math.max(...offsets)} px)`);
  await screenshot(page, '1-explorer', '#explorer');
});

test('every control on the page has a label', async () => {
  const { page } = env;
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll('input, select, textarea, button, progress')]
      .filter((el) => {
        if (el.tagName === 'BUTTON') return !el.textContent.trim() && !el.getAttribute('aria-label');
        return !(el.labels?.length || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby'));
      })
      .map((el) => el.outerHTML.slice(0, 80)),
  );
  assert.deepEqual(unlabelled, []);
});

test('explorer is usable at phone width', async () => {
  const { page } = env;
  await page.setViewportSize({ width: 390, height: 844 });
  await set(page, 0.9, 5, 0.1);
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  assert.ok(overflow <= 0, `no horizontal scroll at 390 px (overflow ${overflow})`);
  await screenshot(page, '1-explorer-phone', '#explorer');
  await page.setViewportSize({ width: 1280, height: 900 });
  assertClean(assert, env.watch);
});
