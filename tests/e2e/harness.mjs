// Shared helpers of the end-to-end tests. The server and the browser (setup) are
// scripts/lib/chromium.mjs, which bench/gpu.mjs uses too; here the page helpers built on them.
// Screenshots go to test-output/e2e/.
import path from 'node:path';
import { outDir, setup } from '../../scripts/lib/chromium.mjs';

export { setup, repoRoot, distDir, outDir } from '../../scripts/lib/chromium.mjs';

/** Opens the page and waits until the WASM module is loaded and every section is wired. */
export async function openReady(page, url) {
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, {
    timeout: 30000,
  });
}

/** Waits until section 4's models are loaded (<body data-models-ready="true">) in a page or frame. */
export function modelsReady(page, timeout = 60000) {
  return page.waitForFunction(() => document.body.dataset.modelsReady === 'true', null, {
    timeout,
  });
}

/** A fresh browser (setup's options) on the built page, opened, ready, with section 4's models loaded. */
export async function openWithModels(options) {
  const env = await setup(options);
  await openReady(env.page, env.url);
  await modelsReady(env.page);
  return env;
}

/** Sets a range/number input by id and fires input + change, as a user's drag would. */
export async function setInput(page, id, value) {
  await page.evaluate(
    ([i, v]) => {
      const el = document.getElementById(i);
      el.value = String(v);
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    },
    [id, value],
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

/** The lesson's formulas, written independently of the page and the WASM build. */
export function expectedTokens(alpha, gamma) {
  if (alpha >= 1) return gamma + 1;
  return (1 - alpha ** (gamma + 1)) / (1 - alpha);
}
export function expectedSpeedup(alpha, gamma, c) {
  return expectedTokens(alpha, gamma) / (gamma * c + 1);
}
export function expectedOptimalGamma(alpha, c, gammaMax = 16) {
  let best = 1;
  for (let g = 2; g <= gammaMax; g++) {
    if (expectedSpeedup(alpha, g, c) > expectedSpeedup(alpha, best, c) + 1e-12) best = g;
  }
  return best;
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
