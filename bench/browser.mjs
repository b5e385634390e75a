#!/usr/bin/env node
// The page held to the library (issue 29), in one headless Chromium: the page's real-model
// section ("Run both & compare", the built page dist/page, served cross-origin isolated as
// scripts/start does) and, in the same browser, the library itself (web/lib, `npm run build`)
// in a module Worker with the same pair, threads, γ, T, prompt, seed and tokens, warm (untimed
// decodes until two agree within 5%), plain and speculative alternated. For every γ and T it
// prints the page's speed-up (the median of its repeats' ratios, per page load) and verdict,
// the library's speed-up (the median of its alternated repeats' ratios), their ratio, the
// page's printed prediction E/(γc + v) against its measured speed-up, the spread of the page's
// plain tokens/s over its repeats, and the page's two measurements of one cost: the run's
// v(γ + 1) and section 4's v(k) at k = γ + 1.
//
//   node bench/browser.mjs [--pair small|large] [--target T --draft D] [--threads 2]
//                          [--gamma 3[,4]] [--temperature 0[,0.8]] [--max-tokens 200]
//                          [--runs 3] [--loads 1] [--lib-repeats 6] [--json]
//
// --pair: one of the page's pairs (default small); --target/--draft: other files, served under
// the small pair's names (bench/run.mjs). --runs: the page's Repeats; --loads: fresh page loads
// per setting (0: the library alone). --json prints one line (bench/run.mjs reads `runs`: one entry per page load).
import { cp, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opt } = parseArgs({
  options: {
    pair: { type: 'string', default: 'small' },
    target: { type: 'string' },
    draft: { type: 'string' },
    threads: { type: 'string', default: '' },
    gamma: { type: 'string', default: '3' },
    temperature: { type: 'string', default: '0' },
    'max-tokens': { type: 'string', default: '200' },
    runs: { type: 'string', default: '3' },
    loads: { type: 'string', default: '1' },
    'lib-repeats': { type: 'string', default: '6' },
    json: { type: 'boolean', default: false },
  },
});
const fail = (m) => {
  console.error(`bench/browser: ${m}`);
  process.exit(2);
};
const list = (s) => s.split(',').filter(Boolean).map(Number);
const gammas = list(opt.gamma);
const temps = list(opt.temperature);
const runs = Number(opt.runs);
const loads = Number(opt.loads);
const libRepeats = Number(opt['lib-repeats']);
const maxTokens = Number(opt['max-tokens']);
if (!['small', 'large'].includes(opt.pair)) fail('--pair: small or large');
if ((opt.target || opt.draft) && opt.pair !== 'small') fail('--target/--draft replace the small pair');

const dist = path.join(ROOT, 'dist/page');
const lib = path.join(ROOT, 'web/lib');
if (!(await stat(path.join(dist, 'index.html')).catch(() => null))) fail('dist/page missing: run `npm run build:page` first');
if (!(await stat(path.join(lib, 'wasm/specdec-core-mt.wasm')).catch(() => null))) fail('web/lib/wasm missing: run `npm run build` first');
if (!(await stat('/usr/bin/chromium').catch(() => null))) fail('Chromium missing (/usr/bin/chromium)');
for (const f of [opt.target, opt.draft].filter(Boolean)) if (!(await stat(f).catch(() => null))) fail(`model file missing: ${f}`);

const { chromium } = await import('playwright-core');
const { startServer } = await import(path.join(ROOT, 'web/page/serve.mjs'));

const root = path.join(ROOT, 'build-bench/page');
await rm(root, { recursive: true, force: true });
await cp(dist, root, { recursive: true });
if (opt.target) await cp(opt.target, path.join(root, 'models/target.safetensors'));
if (opt.draft) await cp(opt.draft, path.join(root, 'models/draft.safetensors'));
// The library beside the page, and a blank page of the same origin whose module Worker runs it.
await cp(lib, path.join(root, 'bench-lib'), { recursive: true, filter: (f) => !f.endsWith('.d.ts') && !f.endsWith('.md') });
await writeFile(path.join(root, 'bench-lib.html'), '<!doctype html><meta charset="utf-8"><title>specdec library bench</title>\n');
await writeFile(path.join(root, 'bench-lib-worker.mjs'), LIB_WORKER());

const server = await startServer({ root });
const userDataDir = await mkdtemp(path.join(tmpdir(), 'specdec-bench-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  serviceWorkers: 'block', // always fetch this run's models, never a cached pair
});
const median = (xs) => {
  const a = xs.filter(Number.isFinite).sort((x, y) => x - y);
  if (!a.length) return NaN;
  const m = a.length >> 1;
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2;
};
const spread = (xs) => (Math.max(...xs) - Math.min(...xs)) / median(xs);

const result = {
  chromium: context.browser()?.version() ?? '', pair: opt.pair, maxTokens, repeats: runs, loads,
  gamma: gammas[0], temperature: temps[0], runs: [], settings: [],
};

/** One page load: the pair, threads and settings set, "Run both & compare" once; what it shows. */
async function pageLoad(g, T) {
  const page = await context.newPage();
  try {
    await page.goto(server.url, { waitUntil: 'load' });
    await page.waitForFunction(() => document.body.dataset.modelsReady === 'true', null, { timeout: 120000 });
    if (opt.pair !== 'small') {
      await page.check(`#pair-${opt.pair}`);
      await page.waitForFunction((p) => document.body.dataset.pair === p && document.body.dataset.modelsReady === 'true', opt.pair, { timeout: 300000 });
    }
    await page.waitForFunction(() => document.getElementById('gen-threads').dataset.ready === 'true', null, { timeout: 60000 });
    if (opt.threads) {
      await page.selectOption('#gen-threads', opt.threads);
      await page.waitForFunction((n) => document.getElementById('threads-status').dataset.threads === n, opt.threads, { timeout: 60000 });
    }
    await page.waitForFunction(() => ['cpu', 'gpu', 'fallback'].includes(document.getElementById('backends').dataset.state), null, { timeout: 60000 });
    if (!(await page.isChecked('#backend-cpu'))) await page.check('#backend-cpu');
    const set = (id, v) => page.evaluate(([i, value]) => {
      const el = document.getElementById(i);
      el.value = String(value);
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }, [id, v]);
    await set('gen-max', maxTokens);
    await set('gen-gamma', g);
    await set('gen-temp', T);
    await set('gen-repeats', runs);
    await page.selectOption('#gen-pace', '0');
    await page.waitForFunction(() => !document.getElementById('run-both').disabled, null, { timeout: 60000 });
    await page.click('#run-both');
    await page.waitForFunction(() => document.body.dataset.modelsBusy === 'false' && document.getElementById('spec-state').dataset.state === 'done'
      && ['done', 'stopped', 'error'].includes(document.getElementById('vk').dataset.state), null, { timeout: 600000 });
    return await page.evaluate((gamma) => {
      const q = (id) => document.querySelector(`[data-testid="${id}"]`);
      const num = (id) => Number.parseFloat(q(id)?.textContent ?? '');
      const list = (el) => (/median of \d+ repeats, ([\d., ]+)\)/.exec(el.textContent)?.[1] ?? '').split(',').map(Number).filter(Number.isFinite);
      const vk = document.getElementById('vk').dataset;
      const vs = (vk.v ?? '').split(',').map(Number);
      const status = document.getElementById('run-status');
      return {
        prompt: Array.from(new TextEncoder().encode(document.getElementById('prompt').value || '\n')),
        seed: Number(document.getElementById('gen-seed').value),
        threads: Number(document.getElementById('spec-state').dataset.threads),
        ratios: (q('speedup-measured').dataset.ratios ?? '').split(',').map(Number),
        speedup: Number(q('speedup-measured').dataset.median),
        verdict: document.getElementById('verdict').dataset.verdict,
        headline: document.querySelector('#verdict strong')?.textContent ?? '',
        predictedV: num('speedup-predicted-v'),
        c: num('c-measured'),
        v: num('v-measured'),
        vkV: vs[gamma] ?? NaN, // v(γ + 1): index γ of k = 1..
        vkStepMs: Number(vk.stepMs),
        plainTpsRepeats: list(document.getElementById('plain-line')),
        specTpsRepeats: list(document.getElementById('spec-line')),
        plainTps: num('plain-tps'),
        specTps: num('spec-tps'),
        alpha: num('alpha-measured'),
        warm: { passes: Number(status.dataset.warmPasses), rounds: Number(status.dataset.warmRounds), text: status.textContent },
      };
    }, g);
  } finally {
    await page.close();
  }
}

/** The page's default prompt and seed (--loads 0: nothing run in the page). */
async function pageSettings() {
  const page = await context.newPage();
  try {
    await page.goto(server.url, { waitUntil: 'load' });
    const p = await page.evaluate(() => ({
      prompt: Array.from(new TextEncoder().encode(document.getElementById('prompt').value || '\n')),
      seed: Number(document.getElementById('gen-seed').value),
    }));
    return { ...p, threads: Number(opt.threads || 2), speedup: NaN, predictedV: NaN, verdict: 'none', plainTpsRepeats: [NaN], plainTps: NaN, specTps: NaN, v: NaN, vkV: NaN };
  } finally {
    await page.close();
  }
}

/** The library in a module Worker of a page of the same origin: warm, then alternated repeats. */
async function library(g, T, prompt, seed, threads) {
  const page = await context.newPage();
  try {
    await page.goto(new URL('bench-lib.html', server.url).href, { waitUntil: 'load' });
    const files = opt.pair === 'large'
      ? { target: 'models/large-target.safetensors', draft: 'models/large-draft.safetensors' }
      : { target: 'models/target.safetensors', draft: 'models/draft.safetensors' };
    return await page.evaluate((job) => new Promise((resolve, reject) => {
      const w = new Worker('bench-lib-worker.mjs', { type: 'module' });
      w.onmessage = (e) => (e.data.error ? reject(new Error(e.data.error)) : resolve(e.data));
      w.onerror = (e) => reject(new Error(e.message));
      w.postMessage(job);
    }), { ...files, gamma: g, temperature: T, prompt, seed, threads, maxTokens, repeats: libRepeats });
  } finally {
    await page.close();
  }
}

try {
  for (const g of gammas) {
    for (const T of temps) {
      const pages = [];
      if (!loads) pages.push(await pageSettings()); // --loads 0: the library alone, with the page's prompt and seed
      for (let l = 0; l < loads; l++) {
        const p = await pageLoad(g, T);
        pages.push(p);
        result.runs.push({ gamma: g, temperature: T, load: l + 1, ...p });
        if (!opt.json) console.error(`γ ${g} T ${T} load ${l + 1}: page ${p.speedup.toFixed(3)}× (${p.ratios.map((r) => r.toFixed(2)).join(', ')}) ${p.verdict}, predicted ${p.predictedV.toFixed(2)}×, plain ${p.plainTpsRepeats.map((x) => x.toFixed(0)).join('/')} tok/s, v run ${p.v} vs v(k) ${p.vkV.toFixed(2)}, warm-up ${p.warm.rounds} rounds`);
      }
      const lib = await library(g, T, pages[0].prompt, pages[0].seed, pages[0].threads);
      const libSpeedup = median(lib.ratios);
      const pageSpeedup = median(pages.map((p) => p.speedup));
      const predicted = median(pages.map((p) => p.predictedV));
      const s = {
        gamma: g, temperature: T, threads: pages[0].threads,
        page: {
          speedup: pageSpeedup, perLoad: pages.map((p) => p.speedup), verdicts: pages.map((p) => p.verdict),
          predicted, predictedPerLoad: pages.map((p) => p.predictedV),
          plainSpread: pages.map((p) => spread(p.plainTpsRepeats)), plainTps: pages.map((p) => p.plainTps), specTps: pages.map((p) => p.specTps),
          vRun: pages.map((p) => p.v), vVk: pages.map((p) => p.vkV), alpha: pages[0].alpha,
        },
        library: { speedup: libSpeedup, ratios: lib.ratios, plainTps: lib.plainTps, specTps: lib.specTps, warmRounds: lib.warmRounds, threads: lib.threads },
        pageOverLibrary: pageSpeedup / libSpeedup,
        predictedOverMeasured: predicted / pageSpeedup,
      };
      result.settings.push(s);
      if (!opt.json) {
        const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
        console.log(`γ = ${g}, T = ${T}, ${s.threads} threads, ${maxTokens} tokens, ${opt.pair} pair:`);
        console.log(`  page     ${f(pageSpeedup, 3)}× (per load ${s.page.perLoad.map((x) => f(x, 3)).join(', ')}; verdicts ${s.page.verdicts.join(', ')}); plain ${s.page.plainTps.map((x) => f(x, 0)).join(', ')} tok/s, spread over ${runs} repeats ${s.page.plainSpread.map((x) => `${f(100 * x, 0)}%`).join(', ')}`);
        console.log(`  library  ${f(libSpeedup, 3)}× (repeats ${lib.ratios.map((x) => f(x)).join(', ')}); plain ${lib.plainTps.map((x) => f(x, 0)).join(', ')} tok/s, speculative ${lib.specTps.map((x) => f(x, 0)).join(', ')}`);
        console.log(`  page / library ${f(s.pageOverLibrary, 3)}; prediction E/(γc + v) ${f(predicted)}× = ${f(s.predictedOverMeasured, 3)} of the measured; v(${g + 1}): run ${s.page.vRun.map((x) => f(x)).join(', ')}, section's v(k) ${s.page.vVk.map((x) => f(x)).join(', ')}`);
      }
    }
  }
} finally {
  await context.close().catch(() => {});
  await server.close().catch(() => {});
  await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
}
if (opt.json) console.log(JSON.stringify(result));

// The library's side, in a module Worker: loadSpecdec({ threads }) of the built library, the
// pair fetched, then decodes timed as the page times its runs (every step() call, the first
// included; tokens/s = tokens × 1000 / that time; distributions: false). Untimed plain and
// speculative decodes until two in a row agree within 5% (at least 2 rounds, at most 8, none
// started after 10 s), then `repeats` timed pairs, plain and speculative alternated.
function LIB_WORKER() {
  return `import { loadSpecdec } from './bench-lib/index.js';
const load = async (sd, url) => sd.loadModel(new Uint8Array(await (await fetch(url)).arrayBuffer()));
function decode(sd, o, plain) {
  const dec = sd.createDecoder(plain
    ? { target: o.target, prompt: o.prompt, temperature: o.temperature, seed: o.seed, distributions: false, plain: true }
    : { target: o.target, draft: o.draft, gamma: o.gamma, prompt: o.prompt, temperature: o.temperature, seed: o.seed, distributions: false });
  let ms = 0;
  let n = 0;
  try {
    while (n < o.maxTokens && !dec.done) {
      const t0 = performance.now();
      const it = dec.step();
      ms += performance.now() - t0;
      n += it.emitted.length;
    }
  } finally {
    dec.dispose();
  }
  return Math.min(n, o.maxTokens) * 1000 / ms;
}
const agree = (a, b) => Math.abs(a - b) <= 0.05 * Math.min(a, b);
self.onmessage = async ({ data: job }) => {
  try {
    const sd = await loadSpecdec({ threads: job.threads });
    const o = { ...job, target: await load(sd, job.target), draft: await load(sd, job.draft) };
    let prev = null;
    let warmRounds = 0;
    const t0 = performance.now();
    for (; warmRounds < 8 && (warmRounds < 2 || performance.now() - t0 < 10000); warmRounds++) {
      const cur = [decode(sd, o, true), decode(sd, o, false)];
      if (prev && agree(prev[0], cur[0]) && agree(prev[1], cur[1])) break;
      prev = cur;
    }
    const plainTps = [];
    const specTps = [];
    for (let r = 0; r < job.repeats; r++) {
      plainTps.push(decode(sd, o, true));
      specTps.push(decode(sd, o, false));
    }
    self.postMessage({ plainTps, specTps, ratios: specTps.map((s, i) => s / plainTps[i]), warmRounds: warmRounds + 1, threads: sd.threads });
  } catch (e) {
    self.postMessage({ error: String(e?.stack ?? e) });
  }
};
`;
}
