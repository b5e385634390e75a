// Shared set-up of the end-to-end tests: serves dist/page from a tiny static server on
// 127.0.0.1 (with the cross-origin isolation headers, as scripts/start does, unless
// isolation: false: a plain static host), drives Debian's Chromium (/usr/bin/chromium) through
// playwright-core with a fresh profile, and watches every page for console errors, page errors
// and requests that leave the page's origin. Screenshots go to test-output/e2e/.
import { mkdtemp, mkdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../../web/page/serve.mjs';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const distDir = path.join(repoRoot, 'dist/page');
export const outDir = path.join(repoRoot, 'test-output/e2e');

const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage',
];
// WebGPU on Chromium's bundled SwiftShader adapter (a CPU emulation): no --disable-gpu.
const WEBGPU_ARGS = [
  '--headless', '--no-sandbox', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage', '--enable-unsafe-webgpu', '--enable-features=Vulkan',
  '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader',
];
// WebGPU on whatever adapter the machine has (a hardware GPU where there is one; bench/gpu.mjs
// --adapter default): neither --disable-gpu nor the SwiftShader switches.
const WEBGPU_HARDWARE_ARGS = [
  '--headless', '--no-sandbox', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage', '--enable-unsafe-webgpu',
];

/**
 * Serves the built page and opens a fresh Chromium profile. webgpu: true (or 'swiftshader'):
 * WebGPU on Chromium's SwiftShader adapter; 'hardware': WebGPU on the machine's own adapter.
 */
export async function setup({
  viewport = { width: 1280, height: 900 }, colorScheme = 'light', reducedMotion, root = distDir, throttle = null, isolation = true, headers = {}, webgpu = false,
} = {}) {
  const index = await stat(path.join(distDir, 'index.html')).catch(() => null);
  if (!index) throw new Error('dist/page/index.html missing: run `npm run build && npm run build:page` first');
  await mkdir(outDir, { recursive: true });
  const server = await startServer({ root, throttle, isolation, headers });
  const userDataDir = await mkdtemp(path.join(tmpdir(), 'specdec-e2e-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: webgpu === 'hardware' ? WEBGPU_HARDWARE_ARGS : webgpu ? WEBGPU_ARGS : CHROMIUM_ARGS,
    viewport,
    colorScheme,
    reducedMotion,
    serviceWorkers: 'allow',
  });
  const origin = new URL(server.url).origin;
  const watch = { consoleErrors: [], pageErrors: [], foreignRequests: [], failedRequests: [] };
  const onRequest = (req) => {
    const url = req.url();
    if (url.startsWith('data:') || url.startsWith('blob:')) return;
    if (new URL(url).origin !== origin) watch.foreignRequests.push(url);
  };
  context.on('request', onRequest);
  context.on('requestfailed', (req) => watch.failedRequests.push(`${req.url()} ${req.failure()?.errorText}`));
  const attach = (page) => {
    page.on('console', (msg) => {
      if (msg.type() === 'error') watch.consoleErrors.push(msg.text());
    });
    page.on('pageerror', (err) => watch.pageErrors.push(String(err)));
    page.on('worker', (w) => w.on?.('console', (msg) => {
      if (msg.type() === 'error') watch.consoleErrors.push(`[worker] ${msg.text()}`);
    }));
  };
  context.on('page', attach);
  for (const p of context.pages()) attach(p);
  // CSP violations of the page (the console reports them too, as errors): window.__cspViolations.
  await context.addInitScript(() => {
    window.__cspViolations = [];
    window.addEventListener('securitypolicyviolation', (e) => {
      window.__cspViolations.push(`${e.violatedDirective}: ${e.blockedURI || e.sample || ''}`);
    });
  });
  const page = context.pages()[0] ?? await context.newPage();

  return {
    server, context, page, origin, watch, url: server.url,
    async close() {
      await context.close().catch(() => {});
      await server.close().catch(() => {});
      await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
    },
  };
}

/** Opens the page and waits until the WASM module is loaded and every section is wired. */
export async function openReady(page, url) {
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForFunction(() => document.documentElement.dataset.ready === 'true', null, { timeout: 30000 });
}

/** Sets a range/number input by id and fires input + change, as a user's drag would. */
export async function setInput(page, id, value) {
  await page.evaluate(([i, v]) => {
    const el = document.getElementById(i);
    el.value = String(v);
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, [id, value]);
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
export function assertClean(assert, watch, { allowFailed = false } = {}) {
  assert.deepEqual(watch.pageErrors, [], 'page errors');
  assert.deepEqual(watch.consoleErrors, [], 'console errors');
  assert.deepEqual(watch.foreignRequests, [], 'requests to another origin');
  if (!allowFailed) assert.deepEqual(watch.failedRequests, [], 'failed requests');
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
  await page.evaluate(([sel, fileName, b64]) => {
    const bin = atob(b64);
    const data = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) data[i] = bin.charCodeAt(i);
    const dt = new DataTransfer();
    dt.items.add(new File([data], fileName, { type: 'application/octet-stream' }));
    const target = document.querySelector(sel);
    for (const type of ['dragenter', 'dragover', 'drop']) {
      target.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, [selector, name, Buffer.from(bytes).toString('base64')]);
}
