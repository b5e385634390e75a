// The one reload for cross-origin isolation keeps what the learner set (web/page/src/shared/keep.js,
// isolation.js): from a plain static server (no headers) the first visit reloads once when its
// service worker has taken over. The test holds back one file of the service worker's precache,
// so that the reload cannot come before the learner has changed sections 1–4 (a preset, a
// select, a number, a table row, a prompt preset, a drafter, a γ policy, the model pair); then
// lets it through and checks that after the reload every setting is back, that the sections
// acted on them (the explorer's readouts, the pair loaded), and that the status line says why
// the page reloaded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, setInput, text, assertClean } from './harness.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls fn in the page until it returns something truthy; survives the page navigating. */
async function until(page, fn, timeout = 90000) {
  const t0 = Date.now();
  for (;;) {
    try {
      const v = await page.evaluate(fn);
      if (v) return v;
    } catch {
      /* navigating: try again in the new document */
    }
    if (Date.now() - t0 > timeout) throw new Error(`timed out waiting for ${fn}`);
    await sleep(100);
  }
}

/** What the learner set and what the sections show for it. */
const settings = () => {
  const $ = (id) => document.getElementById(id);
  const ids = [
    'alpha',
    'gamma',
    'cost',
    'step-source',
    'step-seed',
    'res-p-4',
    'prompt',
    'gen-gamma-mode',
    'gen-gamma',
  ];
  return {
    values: Object.fromEntries(ids.map((id) => [id, $(id)?.value ?? null])),
    checked: [...document.querySelectorAll('#models input[type=radio]:checked')].map((el) => el.id).sort(),
    residualRows: $('residual-table').tBodies[0].rows.length,
    shown: ['alpha-out', 'gamma-out', 'cost-out', 'preset-note', 'prompt-note'].map((id) => $(id).textContent.trim()),
    readouts: [...document.querySelectorAll('[data-testid="tokens-per-pass"], [data-testid="speedup"]')].map(
      (el) => el.textContent,
    ),
    treeDisabled: $('gen-tree').disabled,
  };
};

test('a static host: what the learner set before the one reload for isolation is there after it, and the status line says why', async (t) => {
  const env = await setup({ isolation: false });
  t.after(() => env.close());
  const { page, context } = env;
  await context.addInitScript(() => {
    if (window.top !== window) return;
    const loads = JSON.parse(sessionStorage.getItem('e2e-loads') || '[]');
    loads.push(window.crossOriginIsolated === true);
    sessionStorage.setItem('e2e-loads', JSON.stringify(loads));
  });
  // Hold back the precache's copy of index.html (the page itself is loaded as /, never as
  // /index.html): the service worker cannot finish installing, so cannot take over, so
  // the page cannot reload, until the settings are made.
  const http = env.server.server;
  const [serve] = http.listeners('request');
  const held = [];
  let holding = true;
  http.removeAllListeners('request');
  http.on('request', (req, res) => {
    if (holding && /^\/index\.html/.test(req.url)) held.push(() => serve(req, res));
    else serve(req, res);
  });

  await page.goto(env.url, { waitUntil: 'load' });
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, {
    timeout: 30000,
  });
  await until(page, () => document.documentElement.dataset.isolation === 'installing');
  const large = await page.evaluate(() => !document.getElementById('pair-large')?.disabled);
  await page.click('[data-preset="weak"]');
  await page.selectOption('#step-source', 'toy6');
  await setInput(page, 'step-seed', 7);
  await page.click('#res-add');
  await setInput(page, 'res-p-4', 0.3);
  await page.click('#prompt-copy');
  await page.check('#drafter-lookup');
  await page.selectOption('#gen-gamma-mode', 'auto');
  await setInput(page, 'gen-gamma', 6);
  if (large) await page.check('#pair-large');
  const before = await page.evaluate(settings);
  assert.equal(before.residualRows, 5);
  assert.ok(before.shown[3], 'the preset wrote its note');
  assert.equal(before.treeDisabled, true, 'prompt lookup drafts chains: no tree');
  assert.ok(held.length > 0, 'the service worker asked for the held file');
  assert.deepEqual(
    await page.evaluate(() => JSON.parse(sessionStorage.getItem('e2e-loads'))),
    [false],
    'no reload yet',
  );

  holding = false;
  for (const go of held.splice(0)) go();
  await until(page, () => window.crossOriginIsolated && document.documentElement.dataset.settingsKept);
  assert.deepEqual(
    await page.evaluate(() => JSON.parse(sessionStorage.getItem('e2e-loads'))),
    [false, true],
    'one reload, isolated',
  );
  const status = await text(page, '#app-status');
  assert.match(
    status,
    /^Ready — WebAssembly loaded in \d+ ms\. Reloaded once to turn on threads \(cross-origin isolation\); your settings were kept\.$/,
  );
  await page.waitForFunction(() => document.body.dataset.modelsReady === 'true', null, {
    timeout: 90000,
  });
  const after = await page.evaluate(settings);
  assert.deepEqual(after, before, 'every setting back, and the sections show them');
  assert.equal(
    await page.evaluate(() => document.body.dataset.pair),
    large ? 'large' : 'small',
    'the pair picked before the reload is the one loaded',
  );
  if (large)
    assert.deepEqual(
      after.checked.filter((id) => id.startsWith('pair-')),
      ['pair-large'],
    );
  assert.equal(await page.evaluate((k) => sessionStorage.getItem(k), 'specdec:kept-settings'), null, 'read once');
  assertClean(assert, env.watch);
});
