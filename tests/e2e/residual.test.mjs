// Section 3: editable p and q; min(p, q) + p′(1 − α) recovers p, shown per token and drawn.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, setInput, text, byTestId, screenshot, assertClean } from './harness.mjs';

let env;
before(async () => (env = await openPage()));
after(() => env?.close());

async function columns(page) {
  return page.evaluate(() => {
    const col = (c) =>
      [...document.querySelectorAll(`#residual-table [data-col="${c}"]`)].map((td) => Number(td.textContent));
    return { min: col('min'), pos: col('pos'), res: col('res'), sum: col('sum') };
  });
}

test("Exercise 3: the identity holds for the lesson's p and q", async () => {
  const { page } = env;
  const p = [0.5, 0.2, 0.2, 0.1];
  const q = [0.2, 0.4, 0.3, 0.1];
  const c = await columns(page);
  assert.deepEqual(
    c.min,
    p.map((x, i) => Math.min(x, q[i])),
  );
  assert.deepEqual(
    c.pos,
    p.map((x, i) => Number(Math.max(0, x - q[i]).toFixed(3))),
  );
  assert.deepEqual(c.res, [1, 0, 0, 0]);
  assert.deepEqual(c.sum, p);
  assert.match(await text(page, byTestId('identity-verdict')), /^Equal/);
  assert.match(await text(page, '#residual-identity'), /α = Σ min\(p, q\) = 0\.700/);
  await screenshot(page, '3-residual', '#residual');
});

test('edited distributions (normalised) still recover p; bars are drawn against p', async () => {
  const { page } = env;
  await page.click('#res-add');
  const p = [0.1, 0.3, 0.05, 0.25, 0.3];
  const q = [0.4, 0.1, 0.2, 0.2, 0.1];
  for (let i = 0; i < 5; i++) {
    await setInput(page, `res-p-${i}`, p[i]);
    await setInput(page, `res-q-${i}`, q[i]);
  }
  const c = await columns(page);
  assert.deepEqual(
    c.sum.map((x) => x.toFixed(3)),
    p.map((x) => x.toFixed(3)),
  );
  assert.match(await text(page, byTestId('identity-verdict')), /^Equal/);
  // The stacked bars min(p, q) + (p − q)+ reach exactly the top of p's outline.
  const gaps = await page.evaluate(() =>
    [...document.querySelectorAll('#chart-residual .res-group')].map((g) => {
      const top = Number(g.querySelector('.res-pos').getAttribute('y'));
      const pTop = Number(g.querySelector('.res-p').getAttribute('y'));
      return Math.abs(top - pTop);
    }),
  );
  assert.equal(gaps.length, 5);
  assert.ok(Math.max(...gaps) < 1e-6, `stack tops match p (max gap ${Math.max(...gaps)})`);
  // Un-normalised input is normalised and said so.
  await setInput(page, 'res-p-0', 0.6);
  // What is used, exactly: p divided by its sum, as the table computed it.
  assert.match(
    await text(page, byTestId('residual-normalised')),
    /p summed to 1\.500: it is divided by that, and p = \[0\.400, 0\.200, 0\.033, 0\.167, 0\.200\] is used/,
  );
  assert.match(await text(page, byTestId('identity-verdict')), /^Equal/);
  await screenshot(page, '3-residual-edited', '#residual');
  await page.click('#res-reset');
  assertClean(assert, env.watch);
});

test('a negative q or an all-zero q is refused, with the entry marked; nothing is computed from it', async () => {
  const { page } = env;
  await page.click('#res-reset');
  await setInput(page, 'res-q-1', -1);
  assert.equal(await page.inputValue('#res-q-1'), '-1', 'the box keeps what was typed');
  assert.equal(await page.getAttribute('#res-q-1', 'aria-invalid'), 'true');
  assert.match(await text(page, byTestId('residual-refusal')), /^Not computed: q has -1 at token 1: not a probability/);
  assert.equal(await page.locator(byTestId('identity-verdict')).count(), 0, 'no identity claimed');
  const c = await page.evaluate(() =>
    [...document.querySelectorAll('#residual-table [data-col]')].map((td) => td.textContent),
  );
  assert.ok(
    c.every((x) => x === '–'),
    `no numbers computed: ${c.join(' ')}`,
  );
  assert.equal(await page.locator('#chart-residual .res-group').count(), 0, 'no bars drawn');
  // All zeros: refused, not made uniform.
  for (let i = 0; i < 4; i++) await setInput(page, `res-q-${i}`, 0);
  assert.match(await text(page, byTestId('residual-refusal')), /q is all zeros: there is no distribution to normalise/);
  assert.doesNotMatch(await text(page, '#residual-identity'), /normalised\b(?! …)|uniform/);
  // Fixed: computed again, the marks gone.
  for (const [i, v] of [0.2, 0.4, 0.3, 0.1].entries()) await setInput(page, `res-q-${i}`, v);
  assert.equal(await page.getAttribute('#res-q-1', 'aria-invalid'), null);
  assert.match(await text(page, byTestId('identity-verdict')), /^Equal/);
  assertClean(assert, env.watch);
});
