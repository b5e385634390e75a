// A phone (390 × 844) and the keyboard (issue 56): after a run in every section the page does not
// scroll sideways (what is wider scrolls inside its own box); each step of the step-through shows
// the position it talks about above the sticky Back/Next bar; the focus stays on Run while it
// runs and after; arrowing through the pair radios downloads nothing (Enter loads the pair).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, setInput, modelsReady, stepDraftReady, assertClean } from './harness.mjs';
import { runBothUntilIdle } from './section4.mjs';

let env;
// (the large pair's files sent slowly: the last test only sees its download start)
const throttle = { match: (p) => /\/models\/large-/.test(p), bytesPerSecond: 2e6 };
before(
  async () => (env = await openPage({ viewport: { width: 390, height: 844 }, reducedMotion: 'reduce', throttle })),
);
after(() => env?.close());

/** How far the page scrolls sideways, and the widest elements past the right edge (for the message). */
const sideways = (page) =>
  page.evaluate(() => {
    const over = document.scrollingElement.scrollWidth - innerWidth;
    const wide = [];
    if (over > 0)
      for (const el of document.querySelectorAll('main *')) {
        const r = el.getBoundingClientRect();
        if (r.right > innerWidth + 1 && r.width > 0)
          wide.push(
            `${el.tagName.toLowerCase()}#${el.id}.${el.className?.baseVal ?? el.className} ${Math.round(r.right)}px`,
          );
      }
    return { over, wide: wide.slice(-8) };
  });

async function noSideways(page, after) {
  const s = await sideways(page);
  assert.ok(s.over <= 0, `${after}: the page scrolls sideways by ${s.over} px: ${s.wide.join(' | ')}`);
}

test('the step-through shows the position each step talks about, above the sticky bar', async () => {
  const { page } = env;
  await page.locator('#step').scrollIntoViewIfNeeded();
  await stepDraftReady(page);
  const seen = [];
  for (;;) {
    const st = await page.evaluate(() => ({ ...document.getElementById('step-panel').dataset }));
    const place = await page.evaluate(() => {
      const panel = document.getElementById('step-panel');
      const subject =
        panel.querySelector('.card.current') ??
        panel.querySelector('.residual-box')?.closest('.card') ??
        panel.querySelector('.card.bonus');
      if (!subject) return null;
      const r = subject.getBoundingClientRect();
      const bar = document.querySelector('.step-nav').getBoundingClientRect();
      return { label: subject.getAttribute('aria-label'), top: r.top, bottom: r.bottom, barTop: bar.top };
    });
    if (place) {
      seen.push(`${st.stage}: ${place.label}`);
      assert.ok(place.top >= 0, `${st.stage} step ${st.step}: ${place.label} starts above the screen (${place.top})`);
      assert.ok(
        place.bottom <= place.barTop + 1,
        `${st.stage} step ${st.step}: ${place.label} ends at ${place.bottom}, under the bar (top ${place.barTop})`,
      );
    }
    if (st.step === st.steps) break;
    await page.focus('#step-next');
    await page.keyboard.press('Enter');
    await page.waitForFunction((n) => document.getElementById('step-panel').dataset.step !== n, st.step);
  }
  assert.ok(
    seen.some((s) => /Draft position [2-9]/.test(s)),
    `a later position was talked about: ${seen.join(', ')}`,
  );
  await noSideways(page, 'the step-through');
});

test('section 4: focus stays on Run; no sideways scroll after runs in sections 1–5', async () => {
  const { page } = env;
  await page.click('#explorer button[data-preset="weak"]');
  await noSideways(page, 'a preset in section 1');
  await modelsReady(page);
  await setInput(page, 'gen-max', 24);
  await setInput(page, 'gen-repeats', 1);
  // (a click focuses the button, as Tab and Enter do)
  const done = runBothUntilIdle(page, 240000);
  await page.waitForFunction(() => document.body.dataset.modelsBusy === 'true');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'run-both', 'focus on Run while it runs');
  // Pressed again while it runs: nothing starts (it is aria-disabled, not a second run).
  assert.equal(await page.getAttribute('#run-both', 'aria-disabled'), 'true');
  await done;
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'run-both', 'focus on Run after the run');
  await noSideways(page, 'Run both & compare');
  await page.locator('#pitfalls').scrollIntoViewIfNeeded();
  // (two cards drawn with their numbers: the whole lab takes minutes on a busy machine)
  await page.waitForFunction(() => Number(document.getElementById('pitfalls').dataset.readyCards) >= 2, null, {
    timeout: 180000,
  });
  await noSideways(page, 'the pitfalls lab');
});

test('arrowing through the pair radios downloads nothing; Enter loads the pair', async () => {
  const { page, server } = env;
  if (await page.isDisabled('#pair-large')) return; // a build without the large pair
  // Counted on the server: the service worker's fetches are not the page's requests.
  const large = [];
  server.server.on('request', (req) => /\/models\/large-/.test(req.url) && large.push(req.url));
  await page.focus('#pair-small');
  await page.keyboard.press('ArrowDown');
  assert.equal(await page.isChecked('#pair-large'), true, 'the arrow chose the large pair');
  assert.equal(await page.getAttribute('#pair-large', 'data-pending'), 'true');
  assert.match(await page.textContent('#pair-note'), /large pair: .*press Enter or Space to load it/);
  await page.waitForTimeout(500);
  assert.deepEqual(large, [], 'no large-pair request from an arrow key');
  assert.equal(await page.evaluate(() => document.body.dataset.pair), 'small');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() =>
    /Loading the large pair/.test(document.getElementById('model-load-text').textContent),
  );
  await page.waitForTimeout(500);
  assert.ok(large.length > 0, 'Enter started the download');
  assertClean(assert, env.watch);
});
