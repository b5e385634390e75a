// The built page carries a strict Content Security Policy (web/page/csp.js) as the first
// element of <head>, and every section works under it with no violation: no 'unsafe-eval'
// (the wasm glue is built with -sDYNAMIC_EXECUTION=0), no 'unsafe-inline' styles, only this
// origin. The policy is in force: eval is refused in the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { openPage, modelsReady, setInput, text, byTestId, assertClean, cspViolations, distDir } from './harness.mjs';
import { runSpecDone } from './section4.mjs';
import { CSP } from '../../web/page/csp.js';

let env;
before(async () => (env = await openPage()));
after(() => env?.close());

test('the built page has the policy of csp.js, first in <head>, without unsafe-eval or unsafe-inline', async () => {
  const html = await readFile(path.join(distDir, 'index.html'), 'utf8');
  const head = html.slice(html.indexOf('<head>') + '<head>'.length).trimStart();
  assert.ok(head.startsWith('<meta http-equiv="Content-Security-Policy"'), 'first in <head>');
  const content = await env.page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
  assert.equal(content, CSP);
  assert.doesNotMatch(CSP, /'unsafe-eval'|'unsafe-inline'|\*/);
  assert.match(CSP, /script-src 'self' 'wasm-unsafe-eval'/);
});

test('the policy is in force: code from a string is refused (reported as a violation)', async () => {
  const { page } = env;
  // page.evaluate itself is exempt from the page's CSP (DevTools); a string handed to
  // setTimeout is compiled later by the page, under its policy.
  await page.evaluate(() => {
    window.__evalRan = false;
    setTimeout('window.__evalRan = true', 0); // eslint-disable-line no-implied-eval
  });
  await page.waitForFunction(() => window.__cspViolations.length > 0, null, { timeout: 10000 });
  assert.equal(await page.evaluate(() => window.__evalRan), false);
  const violations = await cspViolations(page);
  assert.ok(
    violations.every((v) => v.startsWith('script-src')),
    violations.join('; '),
  );
  // These violations are the test's own, not the page's.
  await page.evaluate(() => {
    window.__cspViolations.length = 0;
  });
  env.watch.consoleErrors.splice(0);
});

test('every section works under the policy with no violation', async () => {
  const { page } = env;
  // 1: the explorer (WASM analytics).
  await setInput(page, 'alpha', 0.9);
  assert.ok(Number(await text(page, byTestId('tokens-per-pass'))) > 1);
  // 3: the residual (WASM residualDistribution).
  assert.match(await text(page, '#residual-identity'), /./);
  // 2: the step-through on the toy pair (bars sized through the CSSOM, not style attributes).
  await page.click('#step-next');
  await page.waitForFunction(() => document.querySelectorAll('#step-positions .bar').length > 0, null, {
    timeout: 30000,
  });
  assert.ok(
    await page.evaluate(() => [...document.querySelectorAll('#step-positions .bar')].some((b) => b.style.width !== '')),
    'bar widths applied',
  );
  // 4: the models in the worker, a short speculative run.
  await modelsReady(page);
  await runSpecDone(page, 30);
  // The service worker registered and precached everything.
  await page.waitForFunction(() => document.documentElement.dataset.offlineReady === 'true', null, {
    timeout: 60000,
  });
  assert.deepEqual(await cspViolations(page), []);
  assertClean(assert, env.watch);
});
