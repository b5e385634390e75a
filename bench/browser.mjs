#!/usr/bin/env node
// The page held to the library (issue 29), in one headless Chromium: the page's real-model
// section ("Run both & compare", the built page dist/page, served cross-origin isolated as
// scripts/start does) and, in the same browser, the library itself (web/lib, `npm run build`)
// in a module Worker with the same pair and weights (the files the page fetched), threads, γ, T,
// prompt, seed and tokens, warm (untimed decodes until two agree within 5%), plain and
// speculative alternated — its timed pairs run right after each page load, so that each load is
// compared with the library measured the same minute. It prints as it goes: for every page load
// its speed-up (the median of its repeats' ratios) and verdict, the library's right after it and
// page ÷ library, its prediction E/(γc + v) and that ÷ the measured speed-up, and the spread of
// its plain tokens/s over the repeats; for every γ and T the library's speed-up (all its pairs);
// at the end one line per goal of issue 29 (met / not met).
//
//   node bench/browser.mjs [--pair small|large] [--target T --draft D] [--threads 2]
//                          [--gamma 3[,4]] [--temperature 0[,0.8]] [--max-tokens 200]
//                          [--runs 3] [--loads 1] [--lib-repeats 3] [--vk first|all|none]
//                          [--budget-min 15] [--json]
//
// --pair: one of the page's pairs (default small); --target/--draft: other files, served under
// the small pair's names (bench/run.mjs). --runs: the page's Repeats; --loads: fresh page loads
// per setting (0: the library alone); --lib-repeats: the library's pairs after each load (with
// --loads 0, in all). --vk: on which loads to wait for section 4's v(k)
// measurement after the run (printed beside the run's v(γ + 1); default: the first load of each
// setting). --budget-min: the whole bench's time budget, shared equally by the settings not yet
// run; a setting runs page loads while its share lasts, less what its library runs are expected
// to take (1.5 × the last setting's, at most half the share); a load that would overrun is cut,
// and said so. --json prints one line at the end
// (bench/run.mjs reads `runs`: one entry per completed page load).
//
// Time on an idle 2-core machine (the default `npm run bench` invocation: large pair, 2 threads,
// γ 3, 4 × T 0, 0.8, 5 loads, 3 repeats of 200 tokens): a page load is about 15 s (page and
// pair, warm-up ≤ 4 s, 3 × 2 decodes of 200 tokens at ~300-500 tokens/s, v(k) on the first
// load), the library about 30 s per setting (warm-up ≤ 10 s, 5 × 3 × 2 decodes): ~7 minutes in all;
// the 15-minute budget stops a loaded machine's run short instead of letting it run for hours.
//
// Driving Chromium (a page load, the page's defaults, the library's Worker): bench/browser/page.mjs.
import { cp, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT, benchOptions, failWith } from './common.mjs';
import { median as statsMedian } from './stats.mjs';
import { pageDriver } from './browser/page.mjs';

const opt = benchOptions({
  pair: 'small',
  target: undefined,
  draft: undefined,
  threads: '',
  gamma: '3',
  temperature: '0',
  'max-tokens': '200',
  runs: '3',
  loads: '1',
  'lib-repeats': '3',
  vk: 'first',
  'budget-min': '15',
  json: false,
});
const fail = failWith('browser');
const list = (s) => s.split(',').filter(Boolean).map(Number);
const join = (xs, fmt) => (xs.length ? xs.map(fmt).join(', ') : '–');
const gammas = list(opt.gamma);
const temps = list(opt.temperature);
const runs = Number(opt.runs);
const loads = Number(opt.loads);
const libRepeats = Number(opt['lib-repeats']);
const maxTokens = Number(opt['max-tokens']);
const budgetMs = Number(opt['budget-min']) * 60000;
const started = Date.now();
const left = () => budgetMs - (Date.now() - started);
if (!['first', 'all', 'none'].includes(opt.vk)) fail('--vk: first, all or none');
if (!(budgetMs > 0)) fail('--budget-min: a positive number of minutes');
if (!['small', 'large'].includes(opt.pair)) fail('--pair: small or large');
if ((opt.target || opt.draft) && opt.pair !== 'small') fail('--target/--draft replace the small pair');

const dist = path.join(ROOT, 'dist/page');
const lib = path.join(ROOT, 'web/lib');
if (!(await stat(path.join(dist, 'index.html')).catch(() => null)))
  fail('dist/page missing: run `npm run build:page` first');
if (!(await stat(path.join(lib, 'wasm/specdec-core-mt.wasm')).catch(() => null)))
  fail('web/lib/wasm missing: run `npm run build` first');
if (!(await stat('/usr/bin/chromium').catch(() => null))) fail('Chromium missing (/usr/bin/chromium)');
for (const f of [opt.target, opt.draft].filter(Boolean))
  if (!(await stat(f).catch(() => null))) fail(`model file missing: ${f}`);

const { startServer } = await import(path.join(ROOT, 'web/page/serve.mjs'));
const { launchChromium } = await import(path.join(ROOT, 'scripts/lib/chromium.mjs'));

const root = path.join(ROOT, 'build-bench/page');
await rm(root, { recursive: true, force: true });
await cp(dist, root, { recursive: true });
if (opt.target) await cp(opt.target, path.join(root, 'models/target.safetensors'));
if (opt.draft) await cp(opt.draft, path.join(root, 'models/draft.safetensors'));
// The library beside the page, and a blank page of the same origin whose module Worker runs it.
await cp(lib, path.join(root, 'bench-lib'), {
  recursive: true,
  filter: (f) => !f.endsWith('.d.ts') && !f.endsWith('.md'),
});
await writeFile(
  path.join(root, 'bench-lib.html'),
  '<!doctype html><meta charset="utf-8"><title>specdec library bench</title>\n',
);
await cp(path.join(ROOT, 'bench/browser/lib-worker.mjs'), path.join(root, 'bench-lib-worker.mjs'));

// The model files the page fetches (the pair and weights it chose): the library loads the same.
const fetched = [];
const server = await startServer({
  root,
  throttle: {
    match: (p) => (p.endsWith('.safetensors') && fetched.push(p), false),
    bytesPerSecond: 0,
  },
});
const { context, userDataDir } = await launchChromium('specdec-bench-'); // always fetch this run's models, never a cached pair
const { pageLoad, pageSettings, filesOf, openLibrary } = pageDriver({
  context,
  server,
  fetched,
  settings: { pair: opt.pair, threads: opt.threads, maxTokens, runs },
});
// The median of the finite values (a load the page did not measure gives NaN): NaN if none.
const median = (xs) => statsMedian(xs.filter(Number.isFinite));
const spread = (xs) => (Math.max(...xs) - Math.min(...xs)) / median(xs);

const result = {
  chromium: context.browser()?.version() ?? '',
  pair: opt.pair,
  maxTokens,
  repeats: runs,
  loads,
  gamma: gammas[0],
  temperature: temps[0],
  runs: [],
  settings: [],
};

const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const pct = (x) => (Number.isFinite(x) ? `${(100 * x).toFixed(0)}%` : '–');
const say = (line) => (opt.json ? console.error(line) : console.log(line));
const settingsList = gammas.flatMap((g) => temps.map((T) => ({ g, T })));
let libReserveMs = 60000; // time kept for a setting's library run (then 1.5 × the last one's)

try {
  say(
    `bench/browser: ${opt.pair} pair, threads ${opt.threads || 'the page default'}, ${maxTokens} tokens, ${runs} repeats per load, ${loads} loads per setting, ` +
      `library ${libRepeats} pairs after each; ${settingsList.length} settings; budget ${opt['budget-min']} min`,
  );
  for (const [si, { g, T }] of settingsList.entries()) {
    const share = left() / (settingsList.length - si);
    const settingEnd = Date.now() + share;
    const reserve = Math.min(share / 2, libReserveMs); // the library's part of the share (at most half)
    const pages = [];
    let cut = 0;
    const lib = {
      plainTps: [],
      specTps: [],
      batches: [],
      plainSpreads: [],
      warmRounds: 0,
      threads: NaN,
    }; // batches: ratios per page load
    let handle = null;
    let libMs = 0;
    // The library: opened (pair loaded, warmed) after the first page load — whose files it takes —
    // then n pairs after each load; --loads 0: opened with the page's prompt and seed, libRepeats pairs.
    const libraryPairs = async (first, files, n) => {
      const tl = Date.now();
      try {
        if (!handle) {
          handle = await openLibrary(g, T, {
            prompt: first.prompt,
            seed: first.seed,
            threads: first.threads || Number(opt.threads || 2),
            files,
            warmMs: Math.min(10000, Math.max(3000, (settingEnd - Date.now()) / 3)),
          });
          lib.warmRounds = handle.warmRounds;
          lib.threads = handle.threads;
        }
        const b = await handle.pairs(n);
        const ratios = b.specTps.map((x, i) => x / b.plainTps[i]);
        lib.plainTps.push(...b.plainTps);
        lib.specTps.push(...b.specTps);
        lib.batches.push(ratios);
        lib.plainSpreads.push(spread(b.plainTps));
        return median(ratios);
      } catch (e) {
        say(`γ ${g} T ${T} library: not measured: ${String(e.message).split('\n')[0]}`);
        return NaN;
      } finally {
        libMs += Date.now() - tl;
      }
    };
    if (!loads) {
      const first = await pageSettings(); // --loads 0: the library alone, with the page's prompt and seed
      pages.push(first);
      await libraryPairs(first, filesOf(null), libRepeats);
    }
    for (let l = 0; l < loads; l++) {
      const deadline = settingEnd - reserve;
      if (deadline - Date.now() < 20000) {
        cut = loads - l;
        say(`γ ${g} T ${T}: ${cut} of ${loads} loads not run (this setting's share of the budget is spent)`);
        break;
      }
      const t0 = Date.now();
      try {
        const p = await pageLoad(g, T, {
          deadline,
          waitVk: opt.vk === 'all' || (opt.vk === 'first' && l === 0),
        });
        p.predictedOverMeasured = p.predictedV / p.speedup;
        p.plainSpread = spread(p.plainTpsRepeats);
        p.library = await libraryPairs(pages.find((x) => x.prompt) ?? p, filesOf(p.files), libRepeats);
        pages.push(p);
        result.runs.push({ gamma: g, temperature: T, load: l + 1, ...p });
        say(
          `γ ${g} T ${T} load ${l + 1} (${((Date.now() - t0) / 1000).toFixed(0)} s): page ${f(p.speedup, 3)}× (${p.ratios.map((r) => f(r)).join(', ')}) ${p.verdict}; ` +
            `library right after ${f(p.library, 3)}× (${join(lib.batches.at(-1) ?? [], (r) => f(r))}), page / library ${f(p.speedup / p.library, 3)}; ` +
            `prediction E/(γc + v) ${f(p.predictedV)}× = ${f(p.predictedOverMeasured, 3)} of the measured; plain ${p.plainTpsRepeats.map((x) => f(x, 0)).join('/')} tok/s, spread ${pct(p.plainSpread)} (library's ${pct(lib.plainSpreads.at(-1))}); ` +
            `α ${f(p.alpha, 3)}, c ${f(p.c, 3)}, run's v(${g + 1}) ${f(p.v)}${Number.isFinite(p.vkV) ? `, section's v(${g + 1}) ${f(p.vkV)}` : ''}; warm-up ${p.warm.rounds} rounds`,
        );
      } catch (e) {
        cut++;
        say(
          `γ ${g} T ${T} load ${l + 1}: not measured (${((Date.now() - t0) / 1000).toFixed(0)} s): ${String(e.message).split('\n')[0]}`,
        );
      }
    }
    await handle?.close().catch(() => {});
    const first = pages.find((p) => p.prompt) ?? (await pageSettings());
    const files = filesOf(pages.find((p) => p.files?.length)?.files);
    libReserveMs = Math.max(30000, 1.5 * libMs);
    const libRatios = lib.batches.flat();
    const libSpeedup = median(libRatios);
    const measured = pages.filter((p) => Number.isFinite(p.speedup));
    const pageSpeedup = median(measured.map((p) => p.speedup));
    const predicted = median(measured.map((p) => p.predictedV));
    const s = {
      gamma: g,
      temperature: T,
      threads: first.threads,
      files,
      loadsCut: cut,
      page: {
        speedup: pageSpeedup,
        perLoad: measured.map((p) => p.speedup),
        verdicts: measured.map((p) => p.verdict),
        predicted,
        predictedPerLoad: measured.map((p) => p.predictedV),
        predictedOverMeasured: measured.map((p) => p.predictedOverMeasured),
        plainSpread: measured.map((p) => p.plainSpread),
        plainTps: measured.map((p) => p.plainTps),
        specTps: measured.map((p) => p.specTps),
        vRun: measured.map((p) => p.v),
        vVk: measured.map((p) => p.vkV),
        alpha: measured[0]?.alpha ?? NaN,
      },
      library: {
        speedup: libSpeedup,
        ratios: libRatios,
        batches: lib.batches,
        plainSpreads: lib.plainSpreads,
        plainTps: lib.plainTps,
        specTps: lib.specTps,
        warmRounds: lib.warmRounds,
        threads: lib.threads,
        seconds: libMs / 1000,
      },
      pageOverLibrary: pageSpeedup / libSpeedup,
      // each load against the library's pairs run right after it
      pageOverLibraryPerLoad: measured.map((p) => p.speedup / p.library),
      predictedOverMeasured: predicted / pageSpeedup,
    };
    result.settings.push(s);
    say(
      `γ = ${g}, T = ${T}, ${s.threads} threads, ${maxTokens} tokens, ${opt.pair} pair (${files.target}, ${files.draft}):`,
    );
    say(
      `  page     ${f(pageSpeedup, 3)}× median of ${measured.length} loads (${join(s.page.perLoad, (x) => f(x, 3))}; verdicts ${join(s.page.verdicts, String)})${cut ? `; ${cut} loads not measured` : ''}`,
    );
    say(
      `  library  ${f(libSpeedup, 3)}× (repeats ${libRatios.map((x) => f(x)).join(', ')}; plain ${lib.plainTps.map((x) => f(x, 0)).join(', ')} tok/s, speculative ${lib.specTps.map((x) => f(x, 0)).join(', ')}; ${f(s.library.seconds, 0)} s)`,
    );
    say(
      `  page / library ${f(s.pageOverLibrary, 3)} (per load, against the library's pairs right after it: ${join(s.pageOverLibraryPerLoad, (x) => f(x, 3))}); prediction ${f(predicted)}× = ${f(s.predictedOverMeasured, 3)} of the measured ` +
        `(per load ${join(s.page.predictedOverMeasured, (x) => f(x, 3))}); plain spread per load ${join(s.page.plainSpread, pct)} ` +
        `(the library's pairs right after each: ${join(lib.plainSpreads, pct)})`,
    );
  }
  // The goals of issue 29, over the settings measured.
  const goal = (name, rows) => {
    const judged = rows.filter((r) => r.ok !== null);
    const met = judged.length > 0 && judged.every((r) => r.ok);
    say(
      `goal: ${name}: ${judged.length ? (met ? 'met' : 'not met') : 'not judged'} (${rows.map((r) => r.text).join('; ')})`,
    );
    return { name, met: judged.length ? met : null, rows };
  };
  say(`after ${((Date.now() - started) / 60000).toFixed(1)} min:`);
  result.goals = [
    goal(
      `"pays" on every load (${loads} in a row) where every library repeat pays, speed-up within 10% of the library's`,
      result.settings.map((s) => {
        const libPays = s.library.ratios.length > 0 && s.library.ratios.every((r) => r > 1);
        if (!libPays)
          return {
            ok: null,
            text: `γ ${s.gamma} T ${s.temperature}: library repeats ${s.library.ratios.length ? 'not all paying' : 'not measured'}`,
          };
        if (!s.page.verdicts.length)
          return { ok: null, text: `γ ${s.gamma} T ${s.temperature}: no page load measured` };
        const all = s.page.verdicts.length === loads && s.page.verdicts.every((v) => v === 'pays');
        const near =
          s.pageOverLibraryPerLoad.length > 0 && s.pageOverLibraryPerLoad.every((x) => Math.abs(x - 1) <= 0.1);
        return {
          ok: all && near,
          text: `γ ${s.gamma} T ${s.temperature}: ${s.page.verdicts.filter((v) => v === 'pays').length}/${loads} pays, page/library ${s.pageOverLibraryPerLoad.map((x) => f(x)).join(', ')}`,
        };
      }),
    ),
    goal(
      'prediction E/(γc + v) within 15% of the measured speed-up',
      result.settings.map((s) => ({
        ok: s.page.predictedOverMeasured.length
          ? s.page.predictedOverMeasured.every((x) => Math.abs(x - 1) <= 0.15)
          : null,
        text: `γ ${s.gamma} T ${s.temperature}: ${s.page.predictedOverMeasured.map((x) => f(x)).join(', ') || '–'}`,
      })),
    ),
    goal(
      `plain tokens/s spread over ${runs} repeats ≤ 15%`,
      result.settings.map((s) => ({
        ok: s.page.plainSpread.length ? s.page.plainSpread.every((x) => x <= 0.15) : null,
        // beside the library's own over the same number of pairs, the same minute: the machine's noise
        text: `γ ${s.gamma} T ${s.temperature}: ${s.page.plainSpread.map(pct).join(', ') || '–'} (library ${s.library.plainSpreads.map(pct).join(', ') || '–'})`,
      })),
    ),
  ];
} finally {
  await context.close().catch(() => {});
  await server.close().catch(() => {});
  await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
}
if (opt.json) console.log(JSON.stringify(result));
