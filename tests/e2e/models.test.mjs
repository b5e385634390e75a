// Section 4: the two real models in the worker. A speculative run emits text and non-zero
// statistics beside a plain run ("Run both & compare": three repeats, one speedup each, and a
// verdict that follows their spread); Stop ends a run early; the page stays responsive meanwhile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, setInput, text, byTestId, screenshot, assertClean } from './harness.mjs';
import { ratioVerdict } from '../../web/page/src/models/verdict.js';

let env;
before(async () => (env = await openPage({ models: true })));
after(() => env?.close());

const num = (s) => Number(String(s).replace(/[^0-9.eE+-].*$/, ''));

test('plain and speculative runs emit text and non-zero stats', async () => {
  const { page } = env;
  await setInput(page, 'gen-max', 80);
  await setInput(page, 'gen-gamma', 4);
  await page.click('#run-both');
  await page.waitForFunction(() => document.getElementById('spec-state').dataset.state === 'done', null, {
    timeout: 120000,
  });
  await page.waitForFunction(() => !document.getElementById('run-both').disabled);
  const plainText = await text(page, byTestId('plain-text'));
  const specText = await text(page, byTestId('spec-text'));
  assert.ok(plainText.startsWith('ROMEO:') && plainText.length > 'ROMEO:'.length, 'plain text emitted');
  assert.ok(specText.startsWith('ROMEO:') && specText.length > 'ROMEO:'.length, 'speculative text emitted');
  assert.match(await text(page, '#spec-state'), /^done, 80 tokens · 3 timing repeats$/);
  assert.match(await text(page, '#plain-state'), /^done, 80 tokens · 3 timing repeats$/);
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
  // The page's checks of its timings (trust.js): on a busy machine no prediction, verdict or γ.
  const trusted = await page.evaluate(() => document.getElementById('verdict').dataset.trusted !== 'false');
  const predicted = trusted ? num(await text(page, byTestId('speedup-predicted'))) : 1;
  for (const [name, x] of Object.entries({
    alpha,
    tpp,
    c,
    v,
    plainTps,
    specTps,
    measured,
    predicted,
  })) {
    assert.ok(Number.isFinite(x) && x > 0, `${name} = ${x}`);
  }
  assert.ok(alpha <= 1 && tpp >= 1 && tpp <= 5, `α ${alpha}, tokens/pass ${tpp}`);
  // One ratio per repeat (speculative ÷ plain tokens/s); the speedup shown is their median, and
  // the tokens/s shown are the medians of the repeats.
  const ratios = (await page.evaluate(() => document.querySelector('[data-testid="speedup-measured"]').dataset.ratios))
    .split(',')
    .map(Number);
  assert.equal(ratios.length, 3, `a ratio per repeat: ${ratios}`);
  const sorted = [...ratios].sort((a, b) => a - b);
  assert.ok(Math.abs(measured - sorted[1]) < 0.0051 + 0.001, `measured ${measured} = the median ratio ${sorted[1]}`);
  assert.match(await text(page, byTestId('speedup-measured')), / over 3 repeats\)$/);
  // Each line under a run lists the repeats' tokens/s; the table shows their median.
  for (const [line, shown] of [
    ['#plain-line', plainTps],
    ['#spec-line', specTps],
  ]) {
    const list = (await text(page, line)).match(/median of 3 repeats, ([\d., ]+)\)$/);
    assert.ok(list, await text(page, line));
    const tps = list[1]
      .split(', ')
      .map(Number)
      .sort((a, b) => a - b);
    assert.ok(Math.abs(tps[1] - shown) < 0.051, `${line}: median ${tps[1]} shown as ${shown}`);
  }
  if (!trusted) {
    const busy = await text(page, byTestId('verdict'));
    assert.match(busy, /This machine was busy while measuring: these timings can’t be trusted/);
    assert.match(await text(page, byTestId('speedup-predicted')), /failed the checks/);
    assert.equal(await page.locator(byTestId('best-gamma')).count(), 0, 'no γ suggested');
    console.log(`# the runs failed the checks: ${busy}`);
    return;
  }
  const expectedE = alpha >= 1 ? 5 : (1 - alpha ** 5) / (1 - alpha);
  assert.ok(Math.abs(predicted - expectedE / (4 * c + 1)) < 0.02, `predicted ${predicted} = E/(γc+1) at measured α, c`);
  const verdict = await text(page, byTestId('verdict'));
  // The verdict follows the spread of the repeats (the page's rule, outlier set aside included).
  const kind = ratioVerdict(ratios).kind;
  assert.equal(
    await page.evaluate(() => document.getElementById('verdict').dataset.verdict),
    kind,
    `ratios ${ratios}: ${verdict}`,
  );
  assert.match(verdict, /^Target on the CPU \(WebAssembly, \d+ threads?\)\. /, 'the backend that ran comes first');
  const rest = verdict.replace(/^Target on the CPU \(WebAssembly, \d+ threads?\)\. /, '');
  assert.match(
    rest,
    {
      pays: /^Speculation pays here: /,
      loses: /^On this machine speculation does not pay: /,
      even: /^No measurable gain: /,
    }[kind],
  );
  assert.match(verdict, /γc \+ v/);
  assert.match(await text(page, byTestId('verdict-rule')), /^Rule: “pays” only when every repeat’s ratio/);
  console.log(`# ratios ${ratios.map((r) => r.toFixed(3)).join(', ')} → ${kind}`);
  // The γ the measured cost model predicts to be best; when it is not the run's, a button selects it.
  const best = await text(page, byTestId('best-gamma'));
  const m = best.match(/γ = (\d+) is (?:predicted best|about the best)/);
  assert.ok(m, `best-γ suggestion: ${best}`);
  const suggested = Number(m[1]);
  assert.ok(suggested >= 1 && suggested <= 16);
  if (suggested !== 4) {
    // From v(k) measured at this thread count after the run (section 4's v(k) measurement), or,
    // when that measurement failed the page's checks (a busy machine), from the run's own v.
    const vkTrusted = await page.evaluate(() => document.getElementById('vk').dataset.trusted !== 'false');
    assert.match(
      best,
      vkTrusted
        ? /^With c = \d\.\d{3} and v\(k\) measured at \d+ threads? \(k = 1…8, below\)/
        : /^With v\(k\) extrapolated linearly from this run's v\(5\) = \d+\.\d\d/,
      best,
    );
    await page.click(byTestId('use-best-gamma'));
    assert.equal(await page.inputValue('#gen-gamma'), String(suggested));
  }
  const bars = await page.locator('#chart-positions .pos-bar').count();
  assert.ok(bars >= 1, 'per-position acceptance drawn');
  await screenshot(page, '4-models', '#models');
});

test('Stop during "Run both & compare" ends it: no further repeat starts', async () => {
  const { page } = env;
  await setInput(page, 'gen-max', 300);
  await setInput(page, 'gen-repeats', 9);
  await page.click('#run-both');
  // After the shown pair and the first timed pair, during the timing repeats.
  await page.waitForFunction(
    () => /timing repeat [2-9] of 9/.test(document.getElementById('plain-state').textContent),
    null,
    { timeout: 120000, polling: 20 },
  );
  await page.click('#run-stop');
  await page.waitForFunction(() => !document.getElementById('run-both').disabled, null, {
    timeout: 30000,
  });
  const ratios = (
    await page.evaluate(() => document.querySelector('[data-testid="speedup-measured"]').dataset.ratios)
  ).split(',');
  assert.ok(ratios.length >= 1 && ratios.length < 9, `stopped after ${ratios.length} complete repeats`);
  for (const id of ['plain-state', 'spec-state']) {
    const st = await page.evaluate((i) => document.getElementById(i).dataset.state, id);
    assert.ok(['done', 'stopped'].includes(st), `${id}: ${st} (${await text(page, `#${id}`)})`);
  }
  assert.match(`${await text(page, '#plain-state')} ${await text(page, '#spec-state')}`, /stopped after/);
  // The verdict stays that of the complete repeats.
  assert.match(await text(page, byTestId('verdict')), /measured/);
  await setInput(page, 'gen-repeats', 3);
  await setInput(page, 'gen-max', 200);
});

test('Stop ends a speculative run early; the page stays responsive', async () => {
  const { page } = env;
  await setInput(page, 'gen-max', 2000);
  await page.selectOption('#gen-pace', '150');
  await page.click('#run-spec');
  // Running (after the warm-up and the threads' comparison), with tokens of this run shown.
  await page.waitForFunction(
    () =>
      document.getElementById('spec-state').dataset.state === 'running' &&
      document.querySelectorAll('#spec-text .tok:not(.prompt)').length >= 2,
    null,
    { timeout: 30000 },
  );
  // The explorer still reacts while the worker decodes.
  await setInput(page, 'alpha', 0.5);
  assert.equal(await text(page, byTestId('tokens-per-pass')), ((1 - 0.5 ** 5) / 0.5).toFixed(2));
  await page.click('#run-stop');
  await page.waitForFunction(() => document.getElementById('spec-state').dataset.state === 'stopped', null, {
    timeout: 10000,
  });
  const state = await text(page, '#spec-state');
  const n = Number(state.match(/stopped after (\d+) tokens/)[1]);
  assert.ok(n > 0 && n < 2000, `stopped after ${n} tokens`);
  assert.equal(await page.isDisabled('#run-spec'), false, 'buttons enabled again');
  assert.equal(await page.isDisabled('#run-stop'), true);
  await page.selectOption('#gen-pace', '0');
  await setInput(page, 'gen-max', 200);
  assertClean(assert, env.watch);
});
