// Accessibility: axe-core's WCAG 2 A and AA rules on every part of the page — the header, each
// section in a working state (the step-through at several stages, the models after a run, the
// pitfalls lab with its switches off and on) and the footer — in the light and the dark colour
// scheme, with zero violations allowed.
//
// axe is injected with page.evaluate (DevTools evaluation, which the page's Content Security
// Policy does not apply to): an injected <script> tag would be inline script, refused by the
// policy the page ships with, and the policy stays as it is.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setup, openReady, setInput, assertClean, cspViolations, repoRoot } from './harness.mjs';

const AXE = await readFile(path.join(repoRoot, 'node_modules/axe-core/axe.min.js'), 'utf8');
const PARTS = ['header.masthead', '#explorer', '#step', '#residual', '#models', '#pitfalls', 'footer.foot'];

/** Runs axe on one element; returns its violations, written out for a reader. */
async function violations(page, selector) {
  const found = await page.evaluate(async (sel) => {
    const r = await window.axe.run(document.querySelector(sel), {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] },
      resultTypes: ['violations'],
    });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => `${n.target.join(' ')} — ${n.failureSummary.replace(/\s+/g, ' ')}`),
    }));
  }, selector);
  return found.map(
    (v) =>
      `${selector}: [${v.impact}] ${v.id}: ${v.help} (${v.nodes.length} element${v.nodes.length === 1 ? '' : 's'})\n${v.nodes.map((n) => `    ${n}`).join('\n')}`,
  );
}

async function checkParts(page, parts, label) {
  const all = [];
  for (const sel of parts) all.push(...(await violations(page, sel)));
  assert.equal(all.length, 0, `axe (${label}) found ${all.length} violation(s):\n${all.join('\n')}`);
}

async function pitfallsReady(page) {
  await page.waitForFunction(() => document.getElementById('pitfalls').dataset.state === 'ready', null, {
    timeout: 180000,
  });
}

for (const colorScheme of ['light', 'dark']) {
  test(`WCAG 2 A/AA (axe-core), ${colorScheme} colour scheme: no violation in any section`, async (t) => {
    const env = await setup({ colorScheme });
    t.after(() => env.close());
    const { page } = env;
    await openReady(page, env.url);
    await page.evaluate(AXE);
    assert.equal(typeof (await page.evaluate(() => window.axe?.version)), 'string', 'axe loaded');

    // The whole page as it first shows (the step-through on its first stage).
    await page.waitForFunction(() => document.body.dataset.modelsReady === 'true', null, {
      timeout: 60000,
    });
    await checkParts(
      page,
      PARTS.filter((p) => p !== '#pitfalls'),
      'as loaded',
    );

    // The step-through at later stages: accepted, rejected, skipped and pending cards.
    for (let i = 0; i < 4; i++) await page.click('#step-next');
    await checkParts(page, ['#step'], 'step-through, stage 5');
    await page.selectOption('#step-tree', '3,2,1,1');
    for (let i = 0; i < 3; i++) await page.click('#step-next');
    await checkParts(page, ['#step'], 'step-through, a tree');

    // Section 4 after a short speculative run (text, statistics, charts).
    await setInput(page, 'gen-max', 24);
    await page.click('#run-spec');
    await page.waitForFunction(() => document.getElementById('spec-state').dataset.state === 'done', null, {
      timeout: 60000,
    });
    await checkParts(page, ['#models'], 'models after a run');
    // Whether the run paid (class ok), did not (bad) or showed no measurable gain (even) depends
    // on this machine's timing: check the verdict's headline in every colour, whichever the run gave.
    for (const cls of ['ok', 'bad', 'even']) {
      const flipped = await page.evaluate((c) => {
        const el = document.querySelector('#verdict > strong');
        if (!el) return false;
        el.className = c;
        return true;
      }, cls);
      if (flipped) await checkParts(page, ['#models'], `models after a run, verdict styled "${cls}"`);
    }

    // The pitfalls lab: it starts when scrolled into view; switches off, then all on.
    await page.locator('#pitfalls').scrollIntoViewIfNeeded();
    await pitfallsReady(page);
    await checkParts(page, ['#pitfalls'], 'pitfalls, switches off');
    for (const input of await page.$$('#pitfalls input[data-role="break"]')) await input.check();
    await pitfallsReady(page);
    await checkParts(page, ['#pitfalls'], 'pitfalls, switches on');

    assert.deepEqual(await cspViolations(page), []);
    assertClean(assert, env.watch);
  });
}
