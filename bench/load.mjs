#!/usr/bin/env node
// Decoding on a busy machine (issue 38): plain and speculative decoding at 1 and 2 threads while
// a number of CPU hogs run — processes that spin, started and stopped here, bounded in time — in
// WASM under Node (the npm package), in WASM in headless Chromium (a module Worker, as the page
// decodes) and natively (build/specdec generate). Each hog count is measured in its own block,
// and every repeat runs every side and mode. In WASM a repeat decodes once at 1 and once at 2
// threads with the two decoders stepped in turn, --chunk-ms at a time (bench/interleaved.mjs),
// so that the hogs' moving share of the CPU weighs on both alike; natively each decode is a
// process of its own, run back to back with the order of 1 and 2 threads alternating. Prints ms
// per token and the ratio 2 threads ÷ 1 thread in speed (> 1: two threads faster), per repeat.
// Each repeat also measures what the machine itself gives a second thread that minute (WASM
// under Node: read bandwidth B(2) ÷ B(1) over a model-sized buffer and multiply-add peak P(2) ÷
// P(1)): a decoding pass, bound by the one or the other, can't scale past the larger.
//
//   node bench/load.mjs [--hogs 0,1,2,4] [--repeats 3] [--max-tokens 100] [--pair small|large]
//                       [--gamma 3] [--chunk-ms 20] [--skip native,node,chromium] [--json FILE]
//                       [--cli PATH]   (another build of the native CLI, for an A/B)
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, benchOptions, cpuName, failWith, writeJson } from './common.mjs';
import { decodeInterleaved } from './interleaved.mjs';
import { stats, cell } from './stats.mjs';

const opt = benchOptions({
  hogs: '0,1,2,4',
  repeats: '3',
  'max-tokens': '100',
  pair: 'small',
  gamma: '3',
  'chunk-ms': '20',
  skip: '',
  json: undefined,
  cli: undefined,
});
const fail = failWith('load');
const HOGS = opt.hogs.split(',').map(Number);
if (HOGS.some((h) => !Number.isInteger(h) || h < 0 || h > 16))
  fail('--hogs: a list of counts in 0..16, such as 0,1,2,4');
const REPEATS = Number(opt.repeats);
const MAX_TOKENS = Number(opt['max-tokens']);
const GAMMA = Number(opt.gamma);
const CHUNK_MS = Number(opt['chunk-ms']);
if (!(CHUNK_MS >= 0)) fail(`--chunk-ms: a number of milliseconds >= 0, got ${opt['chunk-ms']}`);
for (const [name, v] of [
  ['repeats', REPEATS],
  ['max-tokens', MAX_TOKENS],
  ['gamma', GAMMA],
]) {
  if (!(Number.isInteger(v) && v >= 1)) fail(`--${name}: a positive integer, got ${opt[name]}`);
}
const SKIP = new Set(opt.skip.split(',').filter(Boolean));
const PAIRS = {
  small: { target: 'models/target.safetensors', draft: 'models/draft.safetensors' },
  large: { target: 'models/large-target.safetensors', draft: 'models/large-draft.safetensors' },
};
const PAIR = PAIRS[opt.pair] ?? fail('--pair: small or large');
const PROMPT = 'ROMEO:\nWhat light through yonder window breaks?\n';
const THREADS = [1, 2];
const MODES = ['plain', 'speculative'];

const CPU = cpuName();
const log = (m) => process.stderr.write(`bench/load: ${m}\n`);

// ---- the hogs: processes that spin until killed or for at most 15 minutes
const hogs = new Set();
function startHogs(n) {
  for (let i = 0; i < n; i++) {
    const p = spawn(process.execPath, ['-e', 'const end = Date.now() + 900000; while (Date.now() < end);'], {
      stdio: 'ignore',
    });
    hogs.add(p);
    p.on('exit', () => hogs.delete(p));
  }
}
function stopHogs() {
  for (const p of hogs) p.kill('SIGKILL');
  hogs.clear();
}
process.on('exit', stopHogs);
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => process.exit(130));

// ---- the three sides: each pair(mode, order) -> { 1: ms per token, 2: ms per token } (in WASM
// the prompt's pass is not timed; natively the CLI's figure includes it)
const sides = [];
// { 1: ms, 2: ms, pool: two threads' { runs, shed } } from decodeInterleaved's results.
const byThreads = (results) => ({
  ...Object.fromEntries(results.map((r) => [r.threads, r.msPerToken])),
  pool: results.find((r) => r.threads === 2)?.pool ?? null,
});

if (!SKIP.has('native')) {
  const cli = path.resolve(ROOT, opt.cli ?? 'build/specdec');
  if (!existsSync(cli)) fail(`${cli} missing: build it (cmake --build build) or --skip native`);
  sides.push({
    name: 'native',
    // -> { ms: ms per token, pool: { runs, shed } }
    decode(mode, threads) {
      const args = [
        'generate',
        '--target',
        path.join(ROOT, PAIR.target),
        '--prompt',
        PROMPT,
        '--max-tokens',
        String(MAX_TOKENS),
        '--temperature',
        '0',
        '--threads',
        String(threads),
        '--json',
        ...(mode === 'plain' ? ['--plain'] : ['--draft', path.join(ROOT, PAIR.draft), '--gamma', String(GAMMA)]),
      ];
      const out = JSON.parse(execFileSync(cli, args, { encoding: 'utf8', maxBuffer: 1 << 26 }));
      // ms: wall time over tokens, the prompt's pass included
      return { ms: out.stats.ms_per_token, pool: { runs: out.pool.runs, shed: out.pool.shed } };
    },
    // A process per decode: back to back, in the given order.
    pair(mode, order) {
      const runs = Object.fromEntries(order.map((t) => [t, this.decode(mode, t)]));
      return { ...Object.fromEntries(THREADS.map((t) => [t, runs[t].ms])), pool: runs[2].pool };
    },
  });
}

let sd = null;
if (!SKIP.has('node')) {
  const { loadSpecdec } = await import(path.join(ROOT, 'web/lib/node.js'));
  sd = await loadSpecdec({ threads: 2 });
  if (sd.maxThreads < 2) fail(`the package started ${sd.maxThreads} thread(s): ${sd.threadsUnavailableReason ?? ''}`);
  const target = sd.loadModel(readFileSync(path.join(ROOT, PAIR.target)));
  const draft = sd.loadModel(readFileSync(path.join(ROOT, PAIR.draft)));
  sides.push({
    name: 'WASM, Node',
    // One instance: each decoder's chunks run at its thread count (sd.setThreads).
    pair(mode) {
      const open = (threads) => ({
        threads,
        before: () => sd.setThreads(threads),
        poolStats: () => sd.threadStats(),
        decoder: sd.createDecoder(
          mode === 'plain'
            ? { target, plain: true, prompt: PROMPT, temperature: 0, maxTokens: MAX_TOKENS, seed: 1 }
            : { target, draft, gamma: GAMMA, prompt: PROMPT, temperature: 0, maxTokens: MAX_TOKENS, seed: 1 },
        ),
      });
      return byThreads(decodeInterleaved(THREADS.map(open), { chunkMs: CHUNK_MS }));
    },
  });
}

let browser = null;
if (!SKIP.has('chromium')) {
  if (!existsSync('/usr/bin/chromium')) fail('Chromium missing (/usr/bin/chromium): install it or --skip chromium');
  const { launchChromium } = await import('../scripts/lib/chromium.mjs');
  const { startServer } = await import('../web/page/serve.mjs');
  const server = await startServer({ root: ROOT });
  const { context, userDataDir } = await launchChromium('specdec-load-');
  browser = { server, context, userDataDir };
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(600000);
  await page.goto(`${server.url.replace(/\/$/, '')}/bench/load/index.html`);
  await page.waitForFunction(() => window.benchReady === true);
  sides.push({
    name: 'WASM, Chromium',
    // The worker's threaded build at 1 and 2 threads (sd.setThreads, as the page), the decoders
    // stepped in turn.
    async pair(mode) {
      const r = await page.evaluate((a) => window.decode(a), {
        interleave: THREADS,
        chunkMs: CHUNK_MS,
        model: `/${PAIR.target}`,
        ...(mode === 'plain' ? {} : { draft: `/${PAIR.draft}`, gamma: GAMMA }),
        prompt: PROMPT,
        maxTokens: MAX_TOKENS,
      });
      return byThreads(r);
    },
  });
}
if (!sides.length) fail('every side skipped');

// What the machine gives a second thread now, in WASM: B(2) ÷ B(1) over a buffer the size of the
// target's weights, and P(2) ÷ P(1), each pair measured back to back in the given order.
const machineBytes = Math.min(1 << 30, Math.max(1 << 22, statSync(path.join(ROOT, PAIR.target)).size));
function machineRatios(order) {
  const b = {};
  const p = {};
  for (const t of order) b[t] = sd.measureReadBandwidth({ bytes: machineBytes, repeats: 3, threads: t }).gbPerSecond;
  for (const t of order) p[t] = sd.measurePeak({ repeats: 1, threads: t }).gflops;
  return { bandwidth: b[2] / b[1], peak: p[2] / p[1] };
}

// ---- warm-up (compilation, page faults), then one block per hog count
for (const side of sides) for (const mode of MODES) await side.pair(mode, THREADS);

const result = {
  cpu: CPU,
  pair: opt.pair,
  gamma: GAMMA,
  maxTokens: MAX_TOKENS,
  repeats: REPEATS,
  blocks: [],
};
try {
  for (const h of HOGS) {
    startHogs(h);
    await new Promise((r) => setTimeout(r, 500));
    const load0 = os.loadavg()[0];
    const ms = {}; // side -> mode -> threads -> [ms per token]
    const machine = { bandwidth: [], peak: [] }; // per repeat: B(2) ÷ B(1), P(2) ÷ P(1)
    for (let r = 0; r < REPEATS; r++) {
      const order = r % 2 ? [...THREADS].reverse() : THREADS;
      if (sd) {
        const m = machineRatios(order);
        machine.bandwidth.push(m.bandwidth);
        machine.peak.push(m.peak);
      }
      for (const side of sides) {
        for (const mode of MODES) {
          log(`${h} hog(s), repeat ${r + 1}/${REPEATS}: ${side.name} ${mode}`);
          const pair = await side.pair(mode, order);
          for (const t of THREADS) (((ms[side.name] ??= {})[mode] ??= {})[t] ??= []).push(pair[t]);
          // Two threads' fork-joins that went to the workers, as a share of all the ledger saw.
          if (pair.pool)
            (ms[side.name][mode].share ??= []).push(pair.pool.runs / Math.max(1, pair.pool.runs + pair.pool.shed));
        }
      }
    }
    stopHogs();
    const block = {
      hogs: h,
      loadAvg: load0,
      machine: sd ? { bandwidth: stats(machine.bandwidth), peak: stats(machine.peak) } : null,
      rows: [],
    };
    for (const side of sides) {
      for (const mode of MODES) {
        const m = ms[side.name][mode];
        // Per repeat: one thread's ms ÷ two threads' (the two interleaved, or back to back).
        const ratios = m[1].map((x, i) => x / m[2][i]);
        block.rows.push({
          side: side.name,
          mode,
          ms1: stats(m[1]),
          ms2: stats(m[2]),
          speed2over1: stats(ratios),
          threadedShare: m.share ? stats(m.share) : null,
        });
      }
    }
    result.blocks.push(block);
    await new Promise((r) => setTimeout(r, 500));
  }
} finally {
  stopHogs();
  if (browser) {
    await browser.context.close();
    await browser.server.close();
  }
}

console.log(`# specdec under load: ${opt.pair} pair, ${MAX_TOKENS} tokens, greedy, γ ${GAMMA}; ${CPU}`);
console.log(`WASM: 1 and 2 threads interleaved, chunks of ${CHUNK_MS} ms; native: a process each, back to back`);
console.log('ms per token: median [min–max] of the repeats; 2T ÷ 1T: speed of two threads over one, per repeat;');
console.log(
  "on threads: the share of two threads' fork-joins that the pool gave to its workers (the rest it ran serially)\n",
);
console.log('| hogs | side | mode | 1 thread | 2 threads | 2T ÷ 1T speed | on threads |');
console.log('|---|---|---|---|---|---|---|');
for (const b of result.blocks) {
  for (const row of b.rows) {
    console.log(
      `| ${b.hogs} | ${row.side} | ${row.mode} | ${cell(row.ms1, 3)} | ${cell(row.ms2, 3)} | ${cell(row.speed2over1, 2)} | ${row.threadedShare ? `${(100 * row.threadedShare.median).toFixed(0)}%` : '–'} |`,
    );
  }
}
if (result.blocks.some((b) => b.machine)) {
  console.log("\nthe machine's own 2T ÷ 1T (WASM under Node, each repeat), which bounds a pass's:\n");
  console.log('| hogs | read bandwidth B(2) ÷ B(1) | multiply-add peak P(2) ÷ P(1) |');
  console.log('|---|---|---|');
  for (const b of result.blocks) {
    if (b.machine) console.log(`| ${b.hogs} | ${cell(b.machine.bandwidth, 2)} | ${cell(b.machine.peak, 2)} |`);
  }
}
const worst = Math.min(
  ...result.blocks.filter((b) => b.hogs > 0).flatMap((b) => b.rows.map((r) => r.speed2over1.median)),
);
const idle = result.blocks.filter((b) => b.hogs === 0).flatMap((b) => b.rows.map((r) => r.speed2over1.median));
console.log(`\nunder load, the worst 2T ÷ 1T median: ${Number.isFinite(worst) ? worst.toFixed(2) : '–'} (goal ≥ 0.9)`);
if (idle.length) {
  const m = result.blocks.find((b) => b.hogs === 0).machine;
  const bound = m
    ? `; the machine's own that block: B ${m.bandwidth.median.toFixed(2)}, P ${m.peak.median.toFixed(2)}`
    : '';
  console.log(`idle, 2T ÷ 1T medians: ${idle.map((x) => x.toFixed(2)).join(' / ')} (goal ≥ 1.5${bound})`);
}
writeJson(opt.json, result);
process.exit(0);
