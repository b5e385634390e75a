// Section 4: the two real models in the worker. A speculative run emits text and non-zero
// statistics beside a plain run; Stop ends a run early; the page stays responsive meanwhile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, openReady, setInput, text, byTestId, screenshot, assertClean } from './harness.mjs';

let env;
before(async () => {
  env = await setup();
  await openReady(env.page, env.url);
  await env.page.waitForFunction(() => document.body.dataset.modelsReady === 'true', null, { timeout: 60000 });
});
after(async () => { await env?.close(); });

const num = (s) => Number(String(s).replace(/[^0-9.eE+-].*$/, ''));

test('plain and speculative runs emit text and non-zero stats', async () => {
  const { page } = env;
  await setInput(page, 'gen-max', 80);
  await setInput(page, 'gen-gamma', 4);
  await page.click('#run-both');
  await page.waitForFunction(() => document.getElementById('spec-state').dataset.state === 'done', null, { timeout: 120000 });
  await page.waitForFunction(() => !document.getElementById('run-both').disabled);
  const plainText = await text(page, byTestId('plain-text'));
  const specText = await text(page, byTestId('spec-text'));
  assert.ok(plainText.startsWith('ROMEO:') && plainText.length > 'ROMEO:'.length, 'plain text emitted');
  assert.ok(specText.startsWith('ROMEO:') && specText.length > 'ROMEO:'.length, 'speculative text emitted');
  assert.match(await text(page, '#spec-state'), /done, 80 tokens/);
  assert.match(await text(page, '#plain-state'), /done, 80 tokens/);
  // Coloured tokens: accepted drafts and at least one correction or bonus.
  const acc = await page.locator('#spec-text .tok.acc').count();
  const fixes = await page.locator('#spec-text .tok.cor, #spec-text .tok.bonus').count();
  assert.ok(acc + fixes > 0 && fixes > 0, `coloured spans: ${acc} accepted, ${fixes} corrections/bonus`);

  const alpha = num(await text(page, byTestId('alpha-measured')));
  const tpp = num(await text(page, byTestId('tokens-per-target-pass')));
  const c = num(await text(page, byTestId('c-measured')));
  const v = num(await text(page, byTestId('v-measured')));
  const plainTps = num(await text(page, byTestId('plain-tps')));
  const specTps = num(await text(page, byTestId('spec-tps')));
  const measured = num(await text(page, byTestId('speedup-measured')));
  const predicted = num(await text(page, byTestId('speedup-predicted')));
  for (const [name, x] of Object.entries({ alpha, tpp, c, v, plainTps, specTps, measured, predicted })) {
    assert.ok(Number.isFinite(x) && x > 0, `${name} = ${x}`);
  }
  assert.ok(alpha <= 1 && tpp >= 1 && tpp <= 5, `α ${alpha}, tokens/pass ${tpp}`);
  assert.ok(Math.abs(measured - specTps / plainTps) < 0.02 + 0.01 * measured, 'measured speedup = ratio of tokens/s');
  const expectedE = alpha >= 1 ? 5 : (1 - alpha ** 5) / (1 - alpha);
  assert.ok(Math.abs(predicted - expectedE / (4 * c + 1)) < 0.02, `predicted ${predicted} = E/(γc+1) at measured α, c`);
  const verdict = await text(page, byTestId('verdict'));
  assert.match(verdict, /Speculation pays here|does not pay/);
  assert.match(verdict, /γc \+ v/);
  // The γ the measured cost model predicts to be best; when it is not the run's, a button selects it.
  const best = await text(page, byTestId('best-gamma'));
  const m = best.match(/γ = (\d+) is (?:predicted best|about the best)/);
  assert.ok(m, `best-γ suggestion: ${best}`);
  const suggested = Number(m[1]);
  assert.ok(suggested >= 1 && suggested <= 16);
  if (suggested !== 4) {
    assert.match(best, new RegExp(`v\\(5\\) = ${v.toFixed(2)}`), 'extrapolated from the measured v(γ+1)');
    await page.click(byTestId('use-best-gamma'));
    assert.equal(await page.inputValue('#gen-gamma'), String(suggested));
  }
  const bars = await page.locator('#chart-positions .pos-bar').count();
  assert.ok(bars >= 1, 'per-position acceptance drawn');
  await screenshot(page, '4-models', '#models');
});

test('Stop ends a speculative run early; the page stays responsive', async () => {
  const { page } = env;
  await setInput(page, 'gen-max', 2000);
  await page.selectOption('#gen-pace', '150');
  await page.click('#run-spec');
  await page.waitForFunction(() => document.querySelectorAll('#spec-text .tok:not(.prompt)').length >= 2, null, { timeout: 30000 });
  // The explorer still reacts while the worker decodes.
  await setInput(page, 'alpha', 0.5);
  assert.equal(await text(page, byTestId('tokens-per-pass')), ((1 - 0.5 ** 5) / 0.5).toFixed(2));
  await page.click('#run-stop');
  await page.waitForFunction(() => document.getElementById('spec-state').dataset.state === 'stopped', null, { timeout: 10000 });
  const state = await text(page, '#spec-state');
  const n = Number(state.match(/stopped after (\d+) tokens/)[1]);
  assert.ok(n > 0 && n < 2000, `stopped after ${n} tokens`);
  assert.equal(await page.isDisabled('#run-spec'), false, 'buttons enabled again');
  assert.equal(await page.isDisabled('#run-stop'), true);
  await page.selectOption('#gen-pace', '0');
  await setInput(page, 'gen-max', 200);
  assertClean(assert, env.watch);
});
