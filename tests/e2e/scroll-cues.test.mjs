// At phone width what is wider than the screen says that it scrolls: section 3's table and a deep
// tree in section 2 fade at the edge with more beyond it and show a "scroll sideways" hint; the
// hint goes when the end is reached, and is absent where everything fits (a wide window).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, screenshot, assertClean } from './harness.mjs';

let env;
before(async () => (env = await openPage({ viewport: { width: 360, height: 760 }, reducedMotion: 'reduce' })));
after(() => env?.close());

/** { state, hint, mask, overflow } of a scroll-x box. */
async function cue(page, selector) {
  return page.$eval(selector, (box) => {
    const hint = box.nextElementSibling;
    return {
      state: box.dataset.scroll,
      hint: hint?.classList.contains('scroll-hint') ? getComputedStyle(hint).display !== 'none' : null,
      mask: getComputedStyle(box).maskImage,
      overflow: box.scrollWidth - box.clientWidth,
    };
  });
}

test('phone: the residual table says it scrolls, until its end is reached', async () => {
  const { page } = env;
  await page.locator('#residual').scrollIntoViewIfNeeded();
  const c = await cue(page, '#residual-scroll');
  assert.ok(c.overflow > 0, `the table is wider than the screen (by ${c.overflow} px)`);
  assert.equal(c.state, 'right');
  assert.equal(c.hint, true, 'the hint is shown');
  assert.match(c.mask, /gradient/, 'the cut edge fades');
  await screenshot(page, '3-residual-phone', '#residual');
  await page.$eval('#residual-scroll', (b) => {
    b.scrollLeft = b.scrollWidth;
  });
  await page.waitForFunction(() => document.getElementById('residual-scroll').dataset.scroll === 'left');
  assert.equal((await cue(page, '#residual-scroll')).hint, true, 'still scrolls (back)');
});

test('phone: a deep tree says it scrolls', async () => {
  const { page } = env;
  await page.selectOption('#step-tree', '3,2,1,1');
  await page.waitForFunction(
    () => document.querySelector('#step-tree-view .tree-scroll') && !document.getElementById('step-next').disabled,
  );
  await page.click('#step-next');
  await page.waitForFunction(() => document.querySelector('#step-tree-view .tree-scroll')?.dataset.scroll === 'right');
  const c = await cue(page, '#step-tree-view .tree-scroll');
  assert.ok(c.overflow > 0, `the tree is wider than the screen (by ${c.overflow} px)`);
  assert.equal(c.hint, true);
  await screenshot(page, '2-step-tree-phone', '#step');
});

test('wide window: nothing to scroll, no hint', async () => {
  const { page } = env;
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.waitForFunction(() => document.getElementById('residual-scroll').dataset.scroll === 'none');
  assert.equal((await cue(page, '#residual-scroll')).hint, false);
  assertClean(assert, env.watch);
});
