// Section 5, the pitfalls lab: one card per row of the lesson's "Common Pitfalls" table, each
// with a "break it" switch (input[type=checkbox][data-role=break]) and a result computed from
// seeded runs in a Web Worker. Checked in both states of every card, with the issue's goals as
// assertions: switched off, every histogram matches p (chi-square p-value > 1e-3); switched on,
// resample-from-p and temperature-mismatch do not (p-value < 1e-3); tokenizer-mismatch on the
// real pair keeps a matching histogram with α < 0.1; the weak draft and γ = 16 are slower. The
// time from a switch to the whole section ready again is printed (and only loosely bounded: the
// machine is shared). Fixed seeds: the same seed gives the same counts in a fresh page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setup, screenshot, assertClean, cspViolations } from './harness.mjs';

const CARDS = [
  'resample-from-p',
  'temperature-mismatch',
  'tokenizer-mismatch',
  'draft-too-weak',
  'gamma-too-large',
  'changes-quality',
];
const HISTOGRAM_CARDS = ['resample-from-p', 'temperature-mismatch', 'tokenizer-mismatch', 'changes-quality'];
// Generous: the goal is 2 s on a 2-core machine; CI and a busy machine get slack.
const READY_BOUND_MS = 15000;

let env;
before(async () => (env = await setup()));
after(() => env?.close());

const card = (id) => `[data-pitfall="${id}"]`;

/** Opens the page (embedded or whole) and waits until the WASM module is up. */
async function open(page, url) {
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, {
    timeout: 30000,
  });
}

async function sectionReady(page, timeout = 180000) {
  await page.waitForFunction(
    () => {
      const st = document.getElementById('pitfalls').dataset.state;
      if (st === 'error')
        throw new Error(
          [...document.querySelectorAll('.pitfall[data-state="error"] .pf-status')]
            .map((e) => e.textContent)
            .join('; '),
        );
      return st === 'ready';
    },
    null,
    { timeout, polling: 20 },
  );
}

/** What a card shows: state, switch, read-outs (text and data-value), verdict, chart marks. */
async function cardState(page, id) {
  return page.evaluate((sel) => {
    const el = document.querySelector(sel);
    const readouts = {};
    for (const v of el.querySelectorAll('.pf-readout [data-testid]')) {
      readouts[v.dataset.testid] = {
        text: v.textContent,
        value: v.dataset.value === undefined ? NaN : Number(v.dataset.value),
        note: v.nextElementSibling?.textContent ?? '',
      };
    }
    const sw = el.querySelector('input[type="checkbox"][data-role="break"]');
    return {
      state: el.dataset.state,
      broken: el.dataset.broken,
      checked: sw?.checked ?? null,
      switchLabel: sw?.labels?.[0]?.textContent ?? '',
      readouts,
      verdict: el.querySelector('[data-testid="verdict"]').textContent,
      compare: el.querySelector('[data-testid="compare"]').textContent,
      why: el.querySelector('.pf-why').textContent,
      fix: el.querySelector('.pf-fix').textContent,
      bins: el.querySelectorAll('svg .pf-bin').length,
      speedBars: el.querySelectorAll('svg .pf-speed').length,
      sweepDots: el.querySelectorAll('svg .pf-dot').length,
      optimum: el.querySelectorAll('svg [data-role="optimum"]').length,
      current: el.querySelectorAll('svg [data-role="current"]').length,
      bestGamma: el.dataset.bestGamma === undefined ? null : Number(el.dataset.bestGamma),
      caption: el.querySelector('figcaption').textContent,
      // The card's timings passed the page's checks (trust.js: plain decoding's chunks agree).
      trusted: el.dataset.trusted !== 'false',
    };
  }, card(id));
}

const v = (st, name) => st.readouts[name]?.value;

/** A card whose timings failed the page's checks: the busy sentence, no chart, no speed claim. */
function assertBusy(st) {
  assert.match(st.verdict, /^This machine was busy while measuring: these timings can’t be trusted/);
  assert.doesNotMatch(st.verdict, /Slower than|Faster than|the best of this sweep/);
  assert.equal(st.speedBars + st.sweepDots, 0, 'nothing drawn from them');
  console.log(`# ${st.id ?? ''} busy: ${st.verdict}`);
}

/** Every card's switch off (the correct rules): histograms match p, read-outs in range. */
function checkOffState(states) {
  for (const id of CARDS) {
    const st = states[id];
    assert.equal(st.state, 'ready', `${id} ready`);
    assert.equal(st.checked, false, `${id}: switch off`);
    assert.match(st.switchLabel, /^Break it: /, `${id}: switch labelled`);
    assert.match(st.why, /^Why it bites\. .{40,}/, `${id}: why`);
    assert.match(st.fix, /^Fix\. .{20,}/, `${id}: fix`);
  }
  for (const id of HISTOGRAM_CARDS) {
    const st = states[id];
    assert.ok(v(st, 'pvalue') > 1e-3, `${id} off: p-value ${v(st, 'pvalue')} > 1e-3`);
    assert.ok(v(st, 'tv') >= 0 && v(st, 'tv') < 0.03, `${id} off: TV ${v(st, 'tv')}`);
    assert.ok(st.bins >= 4, `${id}: histogram drawn (${st.bins} bins)`);
    assert.match(st.verdict, /^Consistent with the target's distribution/);
  }
  // The correct rule on the toys accepts as the lesson's α says: 1 − TV(p, q) = 0.9 (4 tokens).
  assert.ok(Math.abs(v(states['resample-from-p'], 'alpha') - 0.9) < 0.01, `α ${v(states['resample-from-p'], 'alpha')}`);
  // The real pair with its distilled draft.
  for (const id of ['tokenizer-mismatch', 'draft-too-weak', 'changes-quality']) {
    assert.ok(v(states[id], 'alpha') > 0.5, `${id} off: α ${v(states[id], 'alpha')}`);
    assert.ok(v(states[id], 'tokens-per-pass') > 2, `${id} off: tokens per pass ${v(states[id], 'tokens-per-pass')}`);
  }
  for (const id of ['draft-too-weak', 'changes-quality']) {
    const sp = v(states[id], 'speedup');
    assert.ok(sp > 0.3 && sp < 5, `${id} off: measured speedup ${sp}`);
    assert.match(states[id].readouts.speedup.text, /^\d+\.\d\d×$/);
  }
  const g = states['gamma-too-large'];
  if (!g.trusted) {
    assertBusy(g);
    // No best γ claimed from timings that failed the checks.
    assert.equal(g.bestGamma, null, 'no data-best-gamma');
    assert.doesNotMatch(g.readouts.gamma.note, /best/);
    // Issue 56: switched off, the card headlines no γ at all (it would be the untrusted "best").
    assert.equal(g.readouts.gamma.text, '–', `no γ headlined: ${g.readouts.gamma.text}`);
  } else {
    assert.equal(g.sweepDots, 10, 'γ sweep: 10 measured points');
    assert.equal(g.optimum, 1, 'the best measured γ is marked');
    assert.equal(v(g, 'gamma'), g.bestGamma, 'switched off, the card reads out the best γ');
    assert.equal(g.readouts.gamma.note, 'the best measured');
    assert.ok(g.bestGamma >= 1 && g.bestGamma <= 10, `best γ ${g.bestGamma}`);
    assert.ok(v(g, 'speedup') > 0.5, `speedup at the best γ ${v(g, 'speedup')}`);
  }
}

test('#only=pitfalls: only the lab shows; every card computes its correct state', async () => {
  const { page, url } = env;
  await open(page, `${url}#only=pitfalls`);
  for (const id of ['explorer', 'step', 'residual', 'models'])
    assert.equal(await page.isHidden(`#${id}`), true, `#${id} hidden`);
  assert.equal(await page.isHidden('.masthead'), true);
  assert.equal(await page.locator('.pitfall').count(), CARDS.length);
  assert.deepEqual(await page.$$eval('.pitfall', (els) => els.map((e) => e.dataset.pitfall)), CARDS);
  const t0 = Date.now();
  await sectionReady(page);
  console.log(`# pitfalls: all six cards computed (switches off) in ${Date.now() - t0} ms after the page was ready`);
  const states = {};
  for (const id of CARDS) states[id] = await cardState(page, id);
  checkOffState(states);
  for (const id of HISTOGRAM_CARDS)
    console.log(
      `# ${id} off: p-value ${v(states[id], 'pvalue').toExponential(3)}, TV ${v(states[id], 'tv').toFixed(4)}, α ${v(states[id], 'alpha').toFixed(3)}`,
    );
  await screenshot(page, '7-pitfalls-off', '#pitfalls');
});

test('every switch on: the broken state, within a generous time; printed', async () => {
  const { page } = env;
  // Long tasks on the page's main thread while the worker computes: the page never blocks.
  await page.evaluate(() => {
    window.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.__longTasks.push(e.duration);
    }).observe({ type: 'longtask', buffered: false });
  });
  const off = {};
  for (const id of CARDS) off[id] = await cardState(page, id);
  const on = {};
  const times = {};
  for (const id of CARDS) {
    const sawProgress = page.waitForFunction(
      (sel) => {
        const el = document.querySelector(sel);
        return el.dataset.state === 'running' || el.dataset.state === 'ready';
      },
      card(id),
      { polling: 10, timeout: 5000 },
    );
    const t0 = Date.now();
    await page.check(`${card(id)} input[type="checkbox"][data-role="break"]`);
    await sawProgress;
    await sectionReady(page, 60000);
    times[id] = Date.now() - t0;
    on[id] = await cardState(page, id);
    assert.equal(on[id].broken, 'true');
    assert.ok(times[id] < READY_BOUND_MS, `${id}: ready ${times[id]} ms after the switch`);
  }
  const longest = Math.max(0, ...(await page.evaluate(() => window.__longTasks)));
  console.log(`# time from switch to section ready (ms): ${CARDS.map((id) => `${id} ${times[id]}`).join(', ')}`);
  console.log(`# longest main-thread task meanwhile: ${Math.round(longest)} ms`);
  assert.ok(longest < 1000, `the page's main thread was blocked for ${longest} ms`);

  // Resampling from p and the temperature mismatch: the histogram no longer matches p.
  for (const id of ['resample-from-p', 'temperature-mismatch']) {
    const st = on[id];
    assert.ok(v(st, 'pvalue') < 1e-3, `${id} on: p-value ${v(st, 'pvalue')} < 1e-3`);
    assert.ok(v(st, 'tv') > 0.02, `${id} on: TV ${v(st, 'tv')}`);
    assert.match(st.verdict, /^Not the target's distribution/);
    assert.match(st.compare, /^Switched off — .*, same seed: p-value/, `${id}: the correct rule beside it`);
    console.log(`# ${id} on: p-value ${v(st, 'pvalue').toExponential(3)}, TV ${v(st, 'tv').toFixed(4)}`);
  }
  // The accept test is unchanged when resampling from p: the same α (same seed, same draws).
  assert.equal(v(on['resample-from-p'], 'alpha'), v(off['resample-from-p'], 'alpha'));

  // Tokenizer mismatch on the real pair: α collapses, the output is still the target's.
  const tok = on['tokenizer-mismatch'];
  assert.ok(v(tok, 'alpha') < 0.1, `tokenizer-mismatch on: α ${v(tok, 'alpha')} < 0.1`);
  assert.ok(v(tok, 'pvalue') > 1e-3, `tokenizer-mismatch on: p-value ${v(tok, 'pvalue')} > 1e-3`);
  assert.ok(v(tok, 'tokens-per-pass') < 1.2, `tokens per pass ${v(tok, 'tokens-per-pass')}`);
  console.log(
    `# tokenizer-mismatch on: α ${v(tok, 'alpha').toFixed(3)}, tokens per pass ${v(tok, 'tokens-per-pass').toFixed(2)}, p-value ${v(tok, 'pvalue').toExponential(3)}, TV ${v(tok, 'tv').toFixed(4)}`,
  );

  // A uniform draft: α and tokens per pass collapse, measured slower than plain decoding.
  const weak = on['draft-too-weak'];
  assert.ok(v(weak, 'alpha') < 0.2, `weak draft α ${v(weak, 'alpha')}`);
  assert.ok(v(weak, 'tokens-per-pass') < 1.3, `weak draft tokens per pass ${v(weak, 'tokens-per-pass')}`);
  if (!weak.trusted) assertBusy(weak);
  else {
    assert.ok(v(weak, 'speedup') < 1, `weak draft measured speedup ${v(weak, 'speedup')} < 1`);
    assert.equal(
      weak.speedBars,
      off['draft-too-weak'].trusted ? 3 : 2,
      'plain decoding and both drafts drawn (each one that passed the checks)',
    );
  }
  console.log(
    `# draft-too-weak: off ${v(off['draft-too-weak'], 'speedup').toFixed(2)}× (α ${v(off['draft-too-weak'], 'alpha').toFixed(3)}), on ${v(weak, 'speedup').toFixed(2)}× (α ${v(weak, 'alpha').toFixed(3)})`,
  );

  // γ = 16, read from the same measured sweep: slower than at the best γ, marked on the curve.
  const big = on['gamma-too-large'];
  assert.equal(v(big, 'gamma'), 16);
  assert.equal(big.bestGamma, off['gamma-too-large'].bestGamma, 'the same sweep');
  if (!big.trusted) {
    assertBusy(big);
    assert.doesNotMatch(big.readouts.gamma.note, /best/);
  } else {
    assert.match(big.readouts.gamma.note, /^best measured: \d+$/);
    assert.equal(big.current, 1, 'γ = 16 marked');
    assert.ok(
      v(big, 'speedup') < v(off['gamma-too-large'], 'speedup'),
      `γ 16 ${v(big, 'speedup')}× vs best ${v(off['gamma-too-large'], 'speedup')}×`,
    );
  }
  console.log(
    `# gamma-too-large: best γ ${big.bestGamma} ${v(off['gamma-too-large'], 'speedup').toFixed(2)}×, γ 16 ${v(big, 'speedup').toFixed(2)}× — ${big.caption}`,
  );

  // Two drafts of very different α: both histograms match p; only the speed differs.
  const q = on['changes-quality'];
  const qOff = off['changes-quality'];
  assert.ok(v(q, 'pvalue') > 1e-3, `weak draft p-value ${v(q, 'pvalue')}`);
  assert.ok(v(qOff, 'alpha') - v(q, 'alpha') > 0.3, `α ${v(qOff, 'alpha')} vs ${v(q, 'alpha')}`);
  assert.ok(v(q, 'tokens-per-pass') < v(qOff, 'tokens-per-pass'));
  assert.equal(await page.locator(`${card('changes-quality')} .pf-sample`).count(), 2, 'a text sample of each draft');
  console.log(
    `# changes-quality: off α ${v(qOff, 'alpha').toFixed(3)} p-value ${v(qOff, 'pvalue').toExponential(3)} ${v(qOff, 'speedup').toFixed(2)}×; on α ${v(q, 'alpha').toFixed(3)} p-value ${v(q, 'pvalue').toExponential(3)} ${v(q, 'speedup').toFixed(2)}×`,
  );
  await screenshot(page, '7-pitfalls-on', '#pitfalls');

  // Back off: the kept results, at once, the same numbers.
  for (const id of CARDS) {
    await page.uncheck(`${card(id)} input[type="checkbox"][data-role="break"]`);
    await sectionReady(page, 5000);
    const st = await cardState(page, id);
    assert.deepEqual(st.readouts, off[id].readouts, `${id}: switched back off`);
  }
  assert.deepEqual(await cspViolations(page), []);
  assertClean(assert, env.watch);
});

test('a switch flipped mid-run: the stale result is not shown', async () => {
  const { page } = env;
  const sw = `${card('tokenizer-mismatch')} input[data-role="break"]`;
  // Another seed: nothing kept, so on → off → on runs while earlier jobs are cancelled.
  await page.fill('#pitfalls-seed', '7');
  await page.dispatchEvent('#pitfalls-seed', 'change');
  // Progress is shown while a card computes.
  const progress = await page.waitForFunction(
    () => {
      const el = document.querySelector('.pitfall[data-state="running"]');
      const bar = el?.querySelector('progress');
      const text = el?.querySelector('.pf-status').textContent ?? '';
      return bar && !bar.hidden && /\d of \d/.test(text) ? text : null;
    },
    null,
    { polling: 10, timeout: 10000 },
  );
  console.log(`# progress while computing: “${await progress.jsonValue()}”`);
  await page.check(sw);
  await page.uncheck(sw);
  await page.check(sw);
  await sectionReady(page);
  const st = await cardState(page, 'tokenizer-mismatch');
  assert.equal(st.broken, 'true');
  assert.ok(v(st, 'alpha') < 0.1, `shows the switched-on state: α ${v(st, 'alpha')}`);
  assert.equal(await page.getAttribute(card('tokenizer-mismatch'), 'data-shown-seed'), '7');
  await page.uncheck(sw);
  await sectionReady(page);
  assert.ok(v(await cardState(page, 'tokenizer-mismatch'), 'alpha') > 0.5);
  assertClean(assert, env.watch);
});

test('same seed, same numbers: a fresh page reproduces the counts', async () => {
  const { page } = env;
  const fingerprint = () =>
    page.evaluate(() => {
      const shown = window.specdecPage.pitfalls.shown();
      return Object.fromEntries(
        Object.entries(shown).map(([id, r]) => [
          id,
          {
            counts: r.histogram?.counts ?? null,
            alpha: r.decode?.spec.alpha ?? r.sweep?.map((x) => x.alpha) ?? null,
            tokensPerPass: r.decode?.spec.tokensPerPass ?? null,
          },
        ]),
      );
    });
  for (const id of CARDS) await page.uncheck(`${card(id)} input[data-role="break"]`);
  await page.fill('#pitfalls-seed', '1');
  await page.dispatchEvent('#pitfalls-seed', 'change');
  await sectionReady(page);
  const first = await fingerprint();
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, {
    timeout: 30000,
  });
  await sectionReady(page);
  const again = await fingerprint();
  assert.deepEqual(again, first);
  assertClean(assert, env.watch);
});

test('on the whole page: the lab waits until it is in view, and pauses while section 4 decodes', async () => {
  const page = await env.context.newPage();
  try {
    await open(page, env.url);
    await page.waitForFunction(() => document.body.dataset.modelsReady === 'true', null, {
      timeout: 60000,
    });
    assert.equal(await page.getAttribute('#pitfalls', 'data-state'), 'running');
    assert.equal(await page.getAttribute('#pitfalls', 'data-ready-cards'), '0');
    assert.equal(
      await page.locator('.pitfall[data-state="running"]').count(),
      0,
      'nothing computed before the section is in view',
    );
    assert.equal(await page.locator('.toc a[href="#pitfalls"]').count(), 1, 'in the table of contents');
    await page.locator('#pitfalls').scrollIntoViewIfNeeded();
    await page.waitForSelector('.pitfall[data-state="running"]', { timeout: 10000 });
    // A slow-motion run in section 4: the lab pauses until it ends.
    await page.selectOption('#gen-pace', '150');
    await page.click('#run-spec');
    await page.waitForFunction(() => document.body.dataset.modelsBusy === 'true');
    await page.waitForFunction(() => document.querySelectorAll('.pitfall[data-state="running"]').length === 0, null, {
      timeout: 5000,
    });
    assert.match(await page.textContent('#pitfalls-status'), /paused while section 4 decodes/);
    await page.waitForTimeout(500);
    assert.equal(await page.locator('.pitfall[data-state="running"]').count(), 0, 'still paused');
    await page.click('#run-stop');
    await page.waitForFunction(() => document.body.dataset.modelsBusy === 'false', null, {
      timeout: 30000,
    });
    await sectionReady(page);
    assert.match(await page.textContent('#pitfalls-status'), /All cards are up to date/);
    assertClean(assert, env.watch);
  } finally {
    await page.close();
  }
});
