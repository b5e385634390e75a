// Shared helpers of the end-to-end tests. The server and the browser (setup) and setInput are
// scripts/lib/chromium.mjs, which the browser benches use too; here the page helpers built on them.
// The lesson's formulas the read-outs are checked against: lesson-formulas.mjs; section 4's runs,
// settings and sizes: section4.mjs.
// Screenshots go to test-output/e2e/.
import path from 'node:path';
import { outDir, setup } from '../../scripts/lib/chromium.mjs';

export { setup, setInput, repoRoot, distDir, outDir } from '../../scripts/lib/chromium.mjs';

/** Waits until the page's WASM module is loaded and every section is wired (<html data-ready="true">). */
export function pageReady(page, timeout = 30000) {
  return page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout });
}

/** Opens the page and waits until the WASM module is loaded and every section is wired. */
export async function openReady(page, url) {
  await page.goto(url, { waitUntil: 'load' });
  await pageReady(page);
}

/** Waits until section 4's models are loaded (<body data-models-ready="true">) in a page or frame. */
export function modelsReady(page, timeout = 60000) {
  return page.waitForFunction(() => document.body.dataset.modelsReady === 'true', null, {
    timeout,
  });
}

/**
 * A fresh browser (setup's options) on the built page, opened and ready; with models: true, section
 * 4's models loaded too. What most test files open once, in `before`, and close in `after`.
 */
export async function openPage({ models = false, ...options } = {}) {
  const env = await setup(options);
  await openReady(env.page, env.url);
  if (models) await modelsReady(env.page);
  return env;
}

/**
 * Opens examples/transformers-webgpu/ (served at url) in page and waits until its status line
 * says how many tokens it made; waitOptions: waitForFunction's (timeout, polling). A page error
 * fails it at once, with the example's message.
 */
export async function openTransformersExample(page, url, waitOptions) {
  const failed = new Promise((_, reject) =>
    page.once('pageerror', (e) => reject(new Error(`the example failed: ${e.message}`))),
  );
  await page.goto(`${url}examples/transformers-webgpu/index.html`);
  const status = () => /tokens, target on/.test(document.getElementById('status').textContent);
  await Promise.race([failed, page.waitForFunction(status, null, waitOptions)]);
}

/**
 * Offline: cuts the browser's network and stops the page's server (setup's env), then reloads the
 * page and waits until it is ready (pageReady, within timeout ms); section 4's models are the
 * caller's to wait for.
 */
export async function reloadOffline({ page, context, server }, timeout = 30000) {
  await context.setOffline(true);
  await server.close();
  await page.reload({ waitUntil: 'load' });
  await pageReady(page, timeout);
}

/** Waits until the step-through shows its draft stage with the Next button enabled. */
export function stepDraftReady(page, timeout) {
  return page.waitForFunction(
    () => {
      const p = document.getElementById('step-panel');
      return p.dataset.stage === 'draft' && !document.getElementById('step-next').disabled;
    },
    null,
    { timeout },
  );
}

export async function text(page, selector) {
  return (await page.locator(selector).first().textContent())?.trim() ?? '';
}

export const byTestId = (id) => `[data-testid="${id}"]`;

export async function screenshot(page, name, selector) {
  const file = path.join(outDir, `${name}.png`);
  if (selector) await page.locator(selector).first().screenshot({ path: file });
  else await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Fails with the collected console errors, page errors and foreign requests, if any. */
export function assertClean(assert, watch, { allowFailed = false, allowAborted = false } = {}) {
  assert.deepEqual(watch.pageErrors, [], 'page errors');
  assert.deepEqual(watch.consoleErrors, [], 'console errors');
  assert.deepEqual(watch.foreignRequests, [], 'requests to another origin');
  // allowAborted: a request cancelled by the page's own reload (net::ERR_ABORTED) is no failure.
  const failed = allowAborted ? watch.failedRequests.filter((r) => !/net::ERR_ABORTED$/.test(r)) : watch.failedRequests;
  if (!allowFailed) assert.deepEqual(failed, [], 'failed requests');
}

/** The CSP violations the page has seen since it was opened (see setup). */
export async function cspViolations(page) {
  return page.evaluate(() => window.__cspViolations ?? []);
}

/**
 * Drops a file on an element, as a drag from the desktop would: a `drop` event whose
 * DataTransfer holds one File with these bytes.
 */
export async function dropFile(page, selector, name, bytes) {
  await page.evaluate(
    ([sel, fileName, b64]) => {
      const bin = atob(b64);
      const data = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) data[i] = bin.charCodeAt(i);
      const dt = new DataTransfer();
      dt.items.add(new File([data], fileName, { type: 'application/octet-stream' }));
      const target = document.querySelector(sel);
      for (const type of ['dragenter', 'dragover', 'drop']) {
        target.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
      }
    },
    [selector, name, Buffer.from(bytes).toString('base64')],
  );
}
