// Headless Chromium on the built page, shared by the end-to-end tests (tests/e2e/harness.mjs adds
// the page helpers) and the browser benches (bench/gpu.mjs): serves a folder (dist/page unless
// root says another) from a tiny static server on 127.0.0.1 (with the cross-origin isolation
// headers, as scripts/start does, unless isolation: false: a plain static host), drives Debian's
// Chromium (/usr/bin/chromium) through playwright-core with a fresh profile, and watches every
// page for console errors, page errors and requests that leave the page's origin.
import { mkdtemp, mkdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../../web/page/serve.mjs';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const distDir = path.join(repoRoot, 'dist/page');
export const outDir = path.join(repoRoot, 'test-output/e2e');

// The switches of every launch: headless, no sandbox, no network of Chromium's own.
const BASE_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];
const CHROMIUM_ARGS = [...BASE_ARGS, '--disable-gpu'];
// WebGPU on whatever adapter the machine has (a hardware GPU where there is one; bench/gpu.mjs
// --adapter default): no --disable-gpu.
const WEBGPU_HARDWARE_ARGS = [...BASE_ARGS, '--enable-unsafe-webgpu'];
// WebGPU on Chromium's bundled SwiftShader adapter (a CPU emulation).
const WEBGPU_ARGS = [
  ...WEBGPU_HARDWARE_ARGS,
  '--enable-features=Vulkan',
  '--use-vulkan=swiftshader',
  '--use-webgpu-adapter=swiftshader',
];

/**
 * Debian's Chromium, headless, in a fresh profile under the system's temporary folder (named
 * `prefix`…), with the switches above (no network, no GPU): what the benchmarks that serve
 * their own page open. Service workers blocked by default, so every run fetches its files.
 * { context, userDataDir }: close the context and remove the folder when done.
 */
export async function launchChromium(prefix, { serviceWorkers = 'block' } = {}) {
  const userDataDir = await mkdtemp(path.join(tmpdir(), prefix));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    serviceWorkers,
  });
  return { context, userDataDir };
}

/**
 * Serves the built page and opens a fresh Chromium profile. webgpu: true (or 'swiftshader'):
 * WebGPU on Chromium's SwiftShader adapter; 'hardware': WebGPU on the machine's own adapter.
 */
export async function setup({
  viewport = { width: 1280, height: 900 },
  colorScheme = 'light',
  reducedMotion,
  root = distDir,
  throttle = null,
  isolation = true,
  headers = {},
  webgpu = false,
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
    page.on('worker', (w) =>
      w.on?.('console', (msg) => {
        if (msg.type() === 'error') watch.consoleErrors.push(`[worker] ${msg.text()}`);
      }),
    );
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
  const page = context.pages()[0] ?? (await context.newPage());

  return {
    server,
    context,
    page,
    origin,
    watch,
    url: server.url,
    async close() {
      await context.close().catch(() => {});
      await server.close().catch(() => {});
      await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
    },
  };
}

/** Sets a range/number input of the page by id and fires input + change, as a user's drag would. */
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
