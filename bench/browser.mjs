#!/usr/bin/env node
// The browser number: the page's real-model section ("Run both & compare") in Chromium, with the
// benchmark's model pair. Copies the built page (dist/page, `npm run build:page`) to
// build-bench/page, puts the models there under the names the page fetches, serves it on
// 127.0.0.1 and reads the page's own tokens/s (worker compute time) for plain and speculative
// decoding.
//
//   node bench/browser.mjs [--target T] [--draft D] [--gamma 3] [--temperature 0]
//                          [--max-tokens 200] [--runs 3] [--json]
import { cp, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opt } = parseArgs({
  options: {
    target: { type: 'string', default: path.join(ROOT, 'models/target.safetensors') },
    draft: { type: 'string', default: path.join(ROOT, 'models/draft.safetensors') },
    gamma: { type: 'string', default: '3' },
    temperature: { type: 'string', default: '0' },
    'max-tokens': { type: 'string', default: '200' },
    runs: { type: 'string', default: '3' },
    json: { type: 'boolean', default: false },
  },
});
const fail = (m) => {
  console.error(`bench/browser: ${m}`);
  process.exit(2);
};

const dist = path.join(ROOT, 'dist/page');
if (!(await stat(path.join(dist, 'index.html')).catch(() => null))) fail('dist/page missing: run `npm run build:page` first');
if (!(await stat('/usr/bin/chromium').catch(() => null))) fail('Chromium missing (/usr/bin/chromium)');
for (const f of [opt.target, opt.draft]) if (!(await stat(f).catch(() => null))) fail(`model file missing: ${f}`);

const { chromium } = await import('playwright-core');
const { startServer } = await import(path.join(ROOT, 'web/page/serve.mjs'));

const root = path.join(ROOT, 'build-bench/page');
await rm(root, { recursive: true, force: true });
await cp(dist, root, { recursive: true });
await cp(opt.target, path.join(root, 'models/target.safetensors'));
await cp(opt.draft, path.join(root, 'models/draft.safetensors'));

const server = await startServer({ root });
const userDataDir = await mkdtemp(path.join(tmpdir(), 'specdec-bench-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  serviceWorkers: 'block', // always fetch this run's models, never a cached pair
});
const result = { chromium: context.browser()?.version() ?? '', gamma: Number(opt.gamma), temperature: Number(opt.temperature), maxTokens: Number(opt['max-tokens']), runs: [] };
try {
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(server.url, { waitUntil: 'load' });
  await page.waitForFunction(() => document.body.dataset.modelsReady === 'true', null, { timeout: 120000 });
  const set = (id, v) => page.evaluate(([i, value]) => {
    const el = document.getElementById(i);
    el.value = String(value);
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, [id, v]);
  await set('gen-max', opt['max-tokens']);
  await set('gen-gamma', opt.gamma);
  await set('gen-temp', opt.temperature);
  await page.selectOption('#gen-pace', '0');
  const num = async (id) => Number((await page.textContent(`[data-testid="${id}"]`)).replace(/[^0-9.eE+-].*$/, ''));
  for (let r = 0; r < Number(opt.runs) + 1; r++) { // run 0 warms up
    await page.click('#run-both');
    await page.waitForFunction(() => document.getElementById('spec-state').dataset.state === 'done' && !document.getElementById('run-both').disabled, null, { timeout: 300000 });
    if (r === 0) continue;
    const plainTps = await num('plain-tps');
    const specTps = await num('spec-tps');
    result.runs.push({ plainTps, specTps, speedup: specTps / plainTps, alpha: await num('alpha-measured'), predictedV: await num('speedup-predicted-v') });
  }
} finally {
  await context.close().catch(() => {});
  await server.close().catch(() => {});
  await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
}
if (opt.json) {
  console.log(JSON.stringify(result));
} else {
  for (const r of result.runs) console.log(`plain ${r.plainTps.toFixed(0)} tokens/s, speculative ${r.specTps.toFixed(0)} tokens/s, speedup ${r.speedup.toFixed(2)}, α ${r.alpha.toFixed(3)}`);
}
