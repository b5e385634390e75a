#!/usr/bin/env node
// The physics of speculation with T threads (`npm run bench` prints it; issue 19): for each pair
// (small, large) and each thread count 1..T, in WASM under Node (the benchmark's threaded module,
// build-wasm/specdec-bench-mt.*) and natively (build/specdec bench --threads T --only threads):
//   B(T)   read bandwidth of T threads over the target's weight bytes (8 streams each),
//   P(T)   mul+add GFLOP/s of T threads,
//   a pass over k = 1..8 tokens with its matmuls and attention split over T threads: ms, v(k),
//          time in matmuls against the roofline max(W / B(T), k F / P(T)),
//   the barrier: one empty fork-join (us) x parallel regions per pass,
//   the draft's step at T (it stays on one thread: never slower),
//   decoding the benchmark prompts (greedy and T = 0.8): plain ms/token and speculative at the
//          best gamma, every thread count in every repeat (round robin).
// Then the goals as ratios from this one run. The Chromium figures (specdec at 1 and 2
// threads against llama.cpp's WASM build) come from bench/wllama.mjs.
//
// With --weights f32,int8 each pair runs with float32 weights and with its 8-bit files
// (models/*-int8.safetensors; P_int(T), the integer dot peak, enters the 8-bit roofline), and the
// 8-bit goals of issue 26 are printed as ratios from the same run (WASM at T = 0 and 0.8, native
// greedy). Decoding alternates the two: every repeat runs both weights (in turn first), so that
// load drifting on a shared machine weighs on both alike; the medians are over repeats.
//
//   node bench/threads.mjs [--threads 1,2] [--repeats 3] [--max-tokens 128] [--only small|large]
//                          [--weights f32|int8|f32,int8] [--skip native] [--json FILE]
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, benchOptions, cpuName, failWith, writeJson } from './common.mjs';
import { f, goals, int8Goals, printPair, shapeNative, shapeWasm } from './threads/report.mjs';
import { stats } from './stats.mjs';

const opt = benchOptions({
  threads: undefined,
  repeats: '3',
  'max-tokens': '128',
  only: undefined,
  skip: '',
  json: undefined,
  quick: false,
  weights: 'f32',
});
const fail = failWith('threads');
const cores = os.availableParallelism();
const THREADS = (opt.threads ?? Array.from({ length: Math.min(cores, 16) }, (_, i) => i + 1).join(','))
  .split(',')
  .map(Number);
if (THREADS.some((t) => !Number.isInteger(t) || t < 1 || t > 64)) fail('--threads: a list such as 1,2');
const REPEATS = Number(opt.quick ? 1 : opt.repeats);
const MAX_TOKENS = Number(opt['max-tokens']);
const SKIP = new Set(opt.skip.split(',').filter(Boolean));
const MIN_MS = opt.quick ? 10 : 20;
const MAX_T = Math.max(...THREADS);
const WEIGHTS = opt.weights.split(',');
if (WEIGHTS.some((w) => w !== 'f32' && w !== 'int8')) fail('--weights: f32, int8 or f32,int8');
const int8File = (rel) => rel.replace(/\.safetensors$/, '-int8.safetensors');
const PAIRS = [
  { key: 'small', target: 'models/target.safetensors', draft: 'models/draft.safetensors' },
  {
    key: 'large',
    target: 'models/large-target.safetensors',
    draft: 'models/large-draft.safetensors',
  },
]
  .filter((p) => (!opt.only || p.key === opt.only) && existsSync(path.join(ROOT, p.target)))
  .flatMap((p) =>
    WEIGHTS.map((w) =>
      w === 'f32'
        ? { ...p, pair: p.key, weights: w }
        : {
            key: `${p.key} int8`,
            pair: p.key,
            weights: w,
            target: int8File(p.target),
            draft: int8File(p.draft),
          },
    ),
  );

const CPU = cpuName();

const dir = path.join(ROOT, 'build-wasm');
const glue = path.join(dir, 'specdec-bench-mt.mjs');
if (!existsSync(glue)) fail(`${glue} missing: run \`scripts/build-wasm --bench\` first`);
const { default: create } = await import(glue);
const M = await create({
  wasmBinary: readFileSync(path.join(dir, 'specdec-bench-mt.wasm')),
  specdecPoolSize: MAX_T - 1,
  locateFile: (p, prefix) => (p.endsWith('.worker.js') ? path.join(dir, 'specdec-bench-mt.worker.cjs') : prefix + p),
});
const started = M.setupThreads(MAX_T);
// The single-threaded benchmark module, for what the threaded build costs at one thread.
const { default: createSt } = await import(path.join(dir, 'specdec-bench.js'));
const ST = await createSt({ wasmBinary: readFileSync(path.join(dir, 'specdec-bench.wasm')) });
ST.setupThreads?.(1);
if (started !== MAX_T) fail(`the threaded module started ${started} threads, not ${MAX_T}`);

const progress = (s) => process.stderr.write(`  ${s}\n`);
const report = { cpu: CPU, threads: THREADS, repeats: REPEATS, maxTokens: MAX_TOKENS, pairs: {} };

// Decoding of several weight variants of one pair (f32, int8), alternating: one call per
// variant and repeat (round robin over the thread counts inside it), the variants' order
// reversed every other repeat; then per thread count the median of the repeats' figures and the
// best gamma of those medians. models: [{ key, target, draft }] (loaded BenchModels).
function decodeAlternating(models) {
  const calls = models.map(() => ({ 0: [], 0.8: [] }));
  for (let r = 0; r < REPEATS; r++) {
    const order = models.map((_, i) => i);
    if (r % 2) order.reverse();
    for (const temperature of [0, 0.8]) {
      for (const i of order) {
        progress(`${models[i].key}: WASM decoding, T = ${temperature}, repeat ${r + 1}/${REPEATS}`);
        calls[i][temperature].push(
          M.benchDecodeByThreads(models[i].target, models[i].draft, THREADS, 6, temperature, MAX_TOKENS, 1),
        );
      }
    }
  }
  const merge = (runs) =>
    runs[0].map((row, j) => {
      const over = (get) => stats(runs.map((run) => get(run[j])));
      const spec = row.specMsPerToken.map((_, g) => over((x) => x.specMsPerToken[g].median));
      const best = spec.reduce((b, s, g) => (s.median < spec[b].median ? g : b), 0);
      return {
        threads: row.threads,
        plainMsPerToken: over((x) => x.plainMsPerToken.median),
        specMsPerToken: spec,
        alpha: row.alpha,
        bestGamma: best + 1,
        draftStepMs: over((x) => x.draftStepMs.median),
      };
    });
  return calls.map((byTemp) => Object.fromEntries(Object.entries(byTemp).map(([t, runs]) => [t, merge(runs)])));
}

// The WASM figures of every weight variant of one pair (pairs: the PAIRS entries of that pair).
function wasmRun(pairs) {
  const load = (rel) => M.BenchModel.load(readFileSync(path.join(ROOT, rel)));
  const models = pairs.map((pair) => ({
    key: pair.key,
    target: load(pair.target),
    draft: load(pair.draft),
  }));
  try {
    const physics = models.map(({ key, target, draft }) => {
      progress(`${key}: WASM pass physics at ${THREADS.join(', ')} threads`);
      return M.benchThreadPhysics(target, draft, THREADS, 8, REPEATS, MIN_MS);
    });
    const decoding = decodeAlternating(models);
    return pairs.map((pair, i) => {
      const { target } = models[i];
      // Plain greedy decoding in the single-threaded build and in the threaded one at 1 thread,
      // alternating, same prompts: the price of -pthread and JS-based exceptions.
      progress(`${pair.key}: single-threaded vs threaded build at 1 thread`);
      const stTarget = ST.BenchModel.load(readFileSync(path.join(ROOT, pair.target)));
      const prompts = ST.benchPrompts().map((p) => Int32Array.from(Buffer.from(p, 'utf8')));
      const st = [],
        mt1 = [];
      M.setThreads(1);
      for (let r = -1; r < REPEATS; r++) {
        const a = ST.benchDecode(stTarget, null, prompts, 1, 0, 1000, MAX_TOKENS);
        const b = M.benchDecode(target, null, prompts, 1, 0, 1000, MAX_TOKENS);
        if (r >= 0) {
          st.push(a.ms / a.generated);
          mt1.push(b.ms / b.generated);
        }
      }
      M.setThreads(MAX_T);
      stTarget.delete();
      const med = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
      return {
        physics: physics[i],
        decoding: decoding[i],
        builds: { single: med(st), threaded1: med(mt1) },
        weightBytes: M.benchWeightBytes(target),
        flopsPerToken: M.benchFlopsPerToken(target),
      };
    });
  } finally {
    for (const m of models) {
      m.target.delete();
      m.draft.delete();
    }
  }
}

function nativeRun(pair) {
  const cli = path.join(ROOT, 'build/specdec');
  if (SKIP.has('native') || !existsSync(cli)) return null;
  progress(`${pair.key}: native, ${THREADS.join(', ')} threads`);
  const out = execFileSync(
    cli,
    [
      'bench',
      '--target',
      path.join(ROOT, pair.target),
      '--draft',
      path.join(ROOT, pair.draft),
      '--threads',
      String(MAX_T),
      '--thread-counts',
      THREADS.join(','),
      '--only',
      'threads',
      '--json',
      '--repeats',
      String(REPEATS),
      '--max-tokens',
      String(MAX_TOKENS),
      ...(opt.quick ? ['--quick'] : []),
    ],
    { encoding: 'utf8', maxBuffer: 64 << 20 },
  );
  return JSON.parse(out);
}

const lines = [];
console.log(`\n### Threads (${CPU}; ${REPEATS} repeat(s), ${MAX_TOKENS} tokens per prompt)`);
for (const base of new Set(PAIRS.map((p) => p.pair))) {
  const group = PAIRS.filter((p) => p.pair === base);
  const raws = wasmRun(group);
  group.forEach((pair, i) => {
    const raw = raws[i];
    const w = shapeWasm(raw);
    const n = shapeNative(nativeRun(pair));
    report.pairs[pair.key] = { wasm: w, native: n };
    printPair(pair, 'WASM (Node, threaded build)', w, CPU);
    if (n) printPair(pair, 'native', n, CPU);
    lines.push(...goals(pair, 'WASM', w));
    lines.push(
      `${pair.key}, WASM: plain ms/token, single-threaded build ${f(raw.builds.single)} vs threaded build at 1 thread ${f(raw.builds.threaded1)} (${f(raw.builds.threaded1 / raw.builds.single, 2)}×)`,
    );
    report.pairs[pair.key].builds = raw.builds;
    if (n) lines.push(...goals(pair, 'native', n));
  });
}
lines.push(...int8Goals(report.pairs, new Set(PAIRS.map((p) => p.pair))));
console.log('\n#### Goals, from this run\n');
for (const l of lines) console.log(`- ${l}`);
report.goals = lines;
writeJson(opt.json, report, 1);
// Idle pthread workers would keep Node alive.
M.PThread?.terminateAllThreads?.();
process.exit(0);
