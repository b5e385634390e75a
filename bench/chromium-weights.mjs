#!/usr/bin/env node
// float32 against 8-bit weights in Chromium (issue 26 item 7): specdec's built library
// (web/lib, `npm run build`) in a module Worker of one headless, cross-origin isolated Chromium
// page, loadSpecdec({ threads }) at each thread count; the small and the large pair, each with
// its float files (models/target.safetensors, ...) and its 8-bit files (models/*-int8...).
// Greedy decoding of --max-tokens tokens from one prompt, ms/token of decoding (the prompt's
// pass and the token it gives are not timed): plain, and speculative with the pair's own draft
// (f32 with f32, int8 with int8) at each gamma of --gammas, the best reported. Every repeat runs
// every cell, f32 and int8 alternated (the order reversed every other repeat), so that load
// drifting on a shared machine weighs on both alike; medians over repeats, ratios from this run.
// The Worker is bench/wllama/specdec-worker.mjs, the same as bench/wllama.mjs's specdec side.
//
//   node bench/chromium-weights.mjs [--repeats 3] [--max-tokens 128] [--threads 1,2]
//                                   [--gammas 2,3,4,5] [--only small|large] [--json]
import { rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ROOT, benchOptions, cpuName, failWith } from './common.mjs';
import { startIsolatedServer } from './isolated-server.mjs';
import { median, stats } from './stats.mjs';

const opt = benchOptions({
  repeats: '3',
  'max-tokens': '128',
  threads: '1,2',
  gammas: '2,3,4,5',
  only: undefined,
  prompt: 'ROMEO:\nBut soft! What light through yonder window',
  json: false,
});
const fail = failWith('chromium-weights');
const REPEATS = Number(opt.repeats);
const MAX_TOKENS = Number(opt['max-tokens']);
const THREADS = opt.threads.split(',').map(Number);
const GAMMAS = opt.gammas.split(',').filter(Boolean).map(Number);
if (!Number.isInteger(REPEATS) || REPEATS < 1) fail('--repeats: an integer ≥ 1');
if (!Number.isInteger(MAX_TOKENS) || MAX_TOKENS < 2) fail('--max-tokens: an integer ≥ 2');
if (!THREADS.length || THREADS.some((t) => !Number.isInteger(t) || t < 1)) fail('--threads: a list such as 1,2');
if (GAMMAS.some((g) => !Number.isInteger(g) || g < 1 || g > 16)) fail('--gammas: a list such as 2,3,4');
if (opt.only && !['small', 'large'].includes(opt.only)) fail('--only: small or large');
const PAIRS = [
  { key: 'small', target: 'target', draft: 'draft' },
  { key: 'large', target: 'large-target', draft: 'large-draft' },
].filter((p) => !opt.only || p.key === opt.only);
const WEIGHTS = ['f32', 'int8'];
const file = (name, w) => `${name}${w === 'int8' ? '-int8' : ''}.safetensors`;
const LIB = path.join(ROOT, 'web/lib');
if (!(await stat('/usr/bin/chromium').catch(() => null))) fail('Chromium missing (/usr/bin/chromium)');
if (!(await stat(path.join(LIB, 'wasm/specdec-core.js')).catch(() => null)))
  fail('web/lib/wasm missing: run `npm run build` first');
for (const p of PAIRS)
  for (const w of WEIGHTS)
    for (const n of [p.target, p.draft]) {
      if (!(await stat(path.join(ROOT, 'models', file(n, w))).catch(() => null))) fail(`models/${file(n, w)} missing`);
    }

// ---- the page: one module Worker per thread count (its models loaded once, kept across repeats)
const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>specdec: f32 vs int8</title>
<link rel="icon" href="data:,"></head><body><p>bench/chromium-weights.mjs</p><script type="module">
import { workerClient } from '/worker/worker-client.mjs';
const workers = new Map();
function worker(threads) {
  if (!workers.has(threads)) workers.set(threads, workerClient('/worker/specdec-worker.mjs', { threads }));
  return workers.get(threads);
}
window.bench = { specdec: (a) => worker(a.threads)(a), isolated: self.crossOriginIsolated, cores: navigator.hardwareConcurrency };
window.benchReady = true;
</script></body></html>`;
function resolve(urlPath) {
  if (urlPath === '/worker/specdec-worker.mjs' || urlPath === '/worker/worker-client.mjs')
    return path.join(ROOT, 'bench/wllama', path.basename(urlPath));
  for (const [prefix, dir] of [
    ['/lib/', LIB],
    ['/models/', path.join(ROOT, 'models')],
  ]) {
    if (!urlPath.startsWith(prefix)) continue;
    const f = path.resolve(dir, decodeURIComponent(urlPath.slice(prefix.length)));
    if (!f.startsWith(dir + path.sep) || (prefix === '/models/' && !f.endsWith('.safetensors'))) return null;
    return f;
  }
  return null;
}
const server = await startIsolatedServer(resolve, { pages: { '/': PAGE, '/index.html': PAGE } });
const { origin } = server;

const CPU = cpuName();
const progress = (s) => {
  if (!opt.json) process.stderr.write(`  ${s}\n`);
};

const { launchChromium } = await import('../scripts/lib/chromium.mjs');
const { context, userDataDir } = await launchChromium('specdec-chromium-weights-');
const result = {
  cpu: CPU,
  chromium: context.browser()?.version() ?? '',
  load: os.loadavg(),
  repeats: REPEATS,
  maxTokens: MAX_TOKENS,
  threads: THREADS,
  gammas: GAMMAS,
  cells: {},
  notes: [],
};
// runs[pair][weights][threads] = { plain: [ms/token], spec: { gamma: [ms/token] }, alpha: { gamma }, tokens, sameAsPlain }
const runs = {};
try {
  const page = context.pages()[0] ?? (await context.newPage());
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.setDefaultTimeout(600_000);
  await page.goto(`${origin}/`, { waitUntil: 'load' });
  await page.waitForFunction(() => window.benchReady === true, null, { timeout: 60_000 });
  const env = await page.evaluate(() => ({
    isolated: window.bench.isolated,
    cores: window.bench.cores,
  }));
  if (!env.isolated) result.notes.push('the page is not cross-origin isolated: threads > 1 will fail');
  result.hardwareConcurrency = env.cores;
  const call = (a) =>
    page.evaluate((x) => window.bench.specdec(x), {
      prompt: opt.prompt,
      maxTokens: MAX_TOKENS,
      warmups: 1,
      lib: '/lib/index.js',
      ...a,
    });
  for (let r = 0; r < REPEATS; r++) {
    for (const p of PAIRS) {
      for (const t of THREADS) {
        for (const w of r % 2 ? [...WEIGHTS].reverse() : WEIGHTS) {
          progress(`repeat ${r + 1}/${REPEATS}: ${p.key} ${w}, ${t} thread(s)`);
          const cell = (((runs[p.key] ??= {})[w] ??= {})[t] ??= {
            plain: [],
            spec: {},
            alpha: {},
            sameAsPlain: true,
          });
          const model = `/models/${file(p.target, w)}`,
            draft = `/models/${file(p.draft, w)}`;
          const plain = await call({ model, threads: t });
          cell.plain.push(plain.msPerToken);
          cell.tokens ??= plain.tokens;
          if (plain.threadsInUse !== t)
            result.notes.push(`${p.key} ${w}: asked for ${t} threads, ran ${plain.threadsInUse} (${plain.reason})`);
          for (const g of GAMMAS) {
            const s = await call({ model, draft, gamma: g, threads: t });
            (cell.spec[g] ??= []).push(s.msPerToken);
            cell.alpha[g] = s.alpha;
            if (JSON.stringify(s.tokens) !== JSON.stringify(cell.tokens)) cell.sameAsPlain = false;
          }
        }
      }
    }
  }
  if (errors.length) result.notes.push(...errors.slice(0, 5).map((e) => `page error: ${e}`));
} finally {
  await context.close().catch(() => {});
  await server.close();
  await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
}

// ---- summaries: per pair, weights, threads: plain and the best gamma's median
for (const p of PAIRS) {
  for (const w of WEIGHTS) {
    for (const t of THREADS) {
      const c = runs[p.key][w][t];
      const spec = Object.entries(c.spec).map(([g, xs]) => ({
        gamma: Number(g),
        ...stats(xs),
        alpha: c.alpha[g],
      }));
      const best = spec.reduce((a, b) => (b.median < a.median ? b : a));
      ((result.cells[p.key] ??= {})[w] ??= {})[t] = {
        plain: stats(c.plain),
        best,
        byGamma: spec,
        greedySameAsPlain: c.sameAsPlain,
      };
    }
    // int8 ÷ f32 within each repeat (the two ran next to each other): steadier than the ratio of
    // the medians when the machine's load swings between repeats.
    for (const t of THREADS) {
      const a = runs[p.key].f32[t].plain,
        b = runs[p.key].int8[t].plain;
      result.cells[p.key].plainRatioByRepeat = {
        ...result.cells[p.key].plainRatioByRepeat,
        [t]: stats(a.map((x, i) => x / b[i])),
      };
    }
  }
}
result.loadEnd = os.loadavg();
const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
if (opt.json) {
  console.log(JSON.stringify(result));
} else {
  console.log(
    `\n### float32 vs 8-bit weights in Chromium ${result.chromium} (a module Worker; ${CPU}; load average ${result.load.map((x) => x.toFixed(1)).join(' ')} at the start, ${result.loadEnd.map((x) => x.toFixed(1)).join(' ')} at the end)\n`,
  );
  console.log(
    `greedy, ${MAX_TOKENS} tokens from a ${Buffer.byteLength(opt.prompt)}-byte prompt, ms/token of decoding (prefill excluded), median of ${REPEATS} repeat(s), f32 and int8 alternated; speculative: the pair's own draft, best of γ ${GAMMAS.join(', ')}\n`,
  );
  const cols = PAIRS.flatMap((p) => THREADS.map((t) => ({ p: p.key, t })));
  const head = ['', ...cols.map(({ p, t }) => `${p}, ${t} thread${t > 1 ? 's' : ''}`)];
  const row = (label, fn) => `| ${label} | ${cols.map(({ p, t }) => fn(result.cells[p], t)).join(' | ')} |`;
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const w of WEIGHTS) {
    console.log(row(`${w} plain`, (c, t) => f(c[w][t].plain.median)));
    console.log(
      row(
        `${w} speculative (best γ; × plain)`,
        (c, t) =>
          `${f(c[w][t].best.median)} (γ ${c[w][t].best.gamma}, α ${f(c[w][t].best.alpha)}; ${f(c[w][t].plain.median / c[w][t].best.median)}×)`,
      ),
    );
  }
  console.log(row('int8 ÷ f32 plain (speed)', (c, t) => `**${f(c.f32[t].plain.median / c.int8[t].plain.median)}×**`));
  console.log(
    row(
      'int8 ÷ f32 plain, per repeat: median [min–max]',
      (c, t) =>
        `${f(c.plainRatioByRepeat[t].median)}× [${f(c.plainRatioByRepeat[t].min)}–${f(c.plainRatioByRepeat[t].max)}]`,
    ),
  );
  console.log(row('int8 ÷ f32 speculative (speed)', (c, t) => `${f(c.f32[t].best.median / c.int8[t].best.median)}×`));
  console.log(
    row('greedy speculative == plain', (c, t) =>
      WEIGHTS.map((w) => `${w} ${c[w][t].greedySameAsPlain ? 'yes' : 'NO'}`).join(', '),
    ),
  );
  console.log();
  for (const p of PAIRS)
    for (const w of WEIGHTS)
      for (const t of THREADS) {
        const c = runs[p.key][w][t];
        console.log(
          `- ${p.key} ${w}, ${t} thread(s): plain runs ${c.plain.map((x) => f(x)).join(' ')}; ${Object.entries(c.spec)
            .map(([g, xs]) => `γ ${g}: ${f(median(xs))}`)
            .join(', ')}`,
        );
      }
  for (const n of new Set(result.notes)) console.log(`note: ${n}`);
}
process.exit(0);
