#!/usr/bin/env node
// The benchmark (`npm run bench`): prints Markdown tables for the WASM build — kernel GFLOP/s by
// shape, ms/token of each model, the verify cost v(k), the roofline of a pass over k = 1..8
// tokens for each target given (one core's read bandwidth and mul+add peak measured in the same
// run) and where the pass goes, speculative vs plain tokens/s by gamma and temperature with the
// predicted speedup beside the measured one — and the same model run by onnxruntime-web (same
// weights, exported to ONNX), PyTorch and the native build. Every figure is a median of repeated
// runs with [min-max]; every ratio comes from one run.
//
//   node bench/run.mjs [--target models/target.safetensors[,more.safetensors]]
//                      [--draft models/draft.safetensors] [--repeats 7] [--quick]
//                      [--max-tokens 200] [--gamma-max 8]
//                      [--skip kernels,breakdown,spec,native,ort,torch,browser] [--json FILE]
//                      [--wasm-dir build-wasm]
//
// --target A,B: every table uses A; the roofline table is printed for each. Needs the
// benchmark's WASM module (scripts/build-wasm --bench: build-wasm/specdec-bench.{js,wasm}, the
// library plus the timing entry points, which the shipped module does not carry). Optional parts
// are skipped with a note when their tool is missing: native (build/specdec), ort
// (onnxruntime-web, a devDependency; the ONNX export needs python3-torch), torch (/usr/bin/python3 with torch), browser
// (dist/page + Chromium, see bench/browser.mjs).
//
// The measurements: bench/run/wasm.mjs; the tables: bench/run/tables.mjs.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, benchOptions, writeJson } from './common.mjs';
import { measurePeers } from './peers.mjs';
import {
  printBrowser,
  printMsPerToken,
  printNativeKernels,
  printRooflines,
  printSpec,
  printVerify,
  printWasmKernels,
  note,
} from './run/tables.mjs';
import {
  jsDecode,
  measureKernels,
  measureMsPerToken,
  measureRooflines,
  measureSpec,
  measureVerify,
} from './run/wasm.mjs';

const BENCH = path.join(ROOT, 'bench');

const opt = benchOptions({
  target: path.join(ROOT, 'models/target.safetensors'),
  draft: path.join(ROOT, 'models/draft.safetensors'),
  repeats: undefined,
  quick: false,
  'max-tokens': '200',
  'gamma-max': '8',
  skip: '',
  json: undefined,
  'wasm-dir': path.join(ROOT, 'build-wasm'),
});
const TARGETS = opt.target.split(',').filter(Boolean);
opt.target = TARGETS[0];
const REPEATS = Number(opt.repeats ?? (opt.quick ? 3 : 7));
const MAX_TOKENS = Number(opt['max-tokens']);
const GAMMA_MAX = Number(opt['gamma-max']);
const SKIP = new Set(opt.skip.split(',').filter(Boolean));
const MIN_MS = opt.quick ? 10 : 25;
const TEMPERATURES = [0, 0.8];
const report = { repeats: REPEATS, target: opt.target, targets: TARGETS, draft: opt.draft };

for (const f of [...TARGETS, opt.draft]) {
  if (!existsSync(f)) {
    console.error(
      `bench: model file missing: ${f}\n(pass --target/--draft; the shipped pair appears in models/ after training)`,
    );
    process.exit(2);
  }
}

// ---------------------------------------------------------------------------- WASM module

const wasmDir = path.resolve(opt['wasm-dir']);
if (!existsSync(path.join(wasmDir, 'specdec-bench.wasm'))) {
  console.error(`bench: ${path.join(wasmDir, 'specdec-bench.wasm')} missing: run \`scripts/build-wasm --bench\` first`);
  process.exit(2);
}
const { default: createSpecdecModule } = await import(path.join(wasmDir, 'specdec-bench.js'));
const { createApi, SpecdecError } = await import(path.join(ROOT, 'web/lib/core.js'));
const M = await createSpecdecModule({
  wasmBinary: readFileSync(path.join(wasmDir, 'specdec-bench.wasm')),
  SpecdecError,
});
const sd = createApi(M);
const bytes = { target: readFileSync(opt.target), draft: readFileSync(opt.draft) };
const model = { target: sd.loadModel(bytes.target), draft: sd.loadModel(bytes.draft) };
const benchModel = {
  target: M.BenchModel.load(bytes.target),
  draft: M.BenchModel.load(bytes.draft),
};
const cfg = model.target.config;
const PROMPTS = Array.from({ length: M.benchPrompts().length }, (_, i) => M.benchPrompts()[i]);

console.log(`# specdec benchmark — ${new Date().toISOString()}`);
const load = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
console.log(
  `\n${os.cpus()[0]?.model ?? 'CPU'} × ${os.cpus().length}; load average at start ${load()} (figures are wall-clock: other load on the machine moves them).`,
);
console.log(
  `\nNode ${process.version}; ${REPEATS} repeats per figure (median [min–max]); target ${path.relative(ROOT, opt.target)} (${cfg.nLayer}×${cfg.nEmbd}, ${model.target.nParams} params), draft ${path.relative(ROOT, opt.draft)} (${model.draft.config.nLayer}×${model.draft.config.nEmbd}).`,
);
const bench = { M, sd, model, benchModel, repeats: REPEATS, minMs: MIN_MS };

// ---------------------------------------------------------------------------- 1. kernels

if (!SKIP.has('kernels')) {
  const { rows, kernels } = measureKernels(bench);
  report.kernels = kernels;
  printWasmKernels(rows);
}

// ---------------------------------------------------------------------------- 2. ms/token

const msPerToken = measureMsPerToken(bench);
report.msPerToken = msPerToken;

// ---------------------------------------------------------------------------- 3. v(k), c

const pasts = Array.from(M.benchDecodeContexts(benchModel.target));
const verify = measureVerify(bench, pasts, GAMMA_MAX);
report.verify = verify;

// ---------------------------------------------------------------------------- 3b. roofline

let rooflines = [];
if (!SKIP.has('breakdown')) {
  const measured = measureRooflines(bench, TARGETS);
  report.peakGflops = measured.peak;
  rooflines = measured.rooflines;
  report.roofline = rooflines;
}

// ---------------------------------------------------------------------------- 4. spec vs plain

const spec = measureSpec(bench, {
  prompts: PROMPTS,
  maxTokens: MAX_TOKENS,
  gammaMax: GAMMA_MAX,
  temperatures: SKIP.has('spec') ? [] : TEMPERATURES,
});
report.spec = spec;

// ---------------------------------------------------------------------------- 5. peers

const peers = await measurePeers({
  skip: SKIP,
  files: { target: opt.target, draft: opt.draft },
  configs: { target: model.target.config, draft: model.draft.config },
  repeats: REPEATS,
  jsDecode: (role, n, prompt) => jsDecode(bench, role, n, prompt),
});

let native = null;
if (!SKIP.has('native')) {
  const cli = process.env.SPECDEC_CLI ?? path.join(ROOT, 'build/specdec');
  if (existsSync(cli)) {
    const args = [
      'bench',
      '--target',
      opt.target,
      '--draft',
      opt.draft,
      '--repeats',
      String(REPEATS),
      '--max-tokens',
      String(MAX_TOKENS),
      '--gamma-max',
      String(GAMMA_MAX),
      '--json',
      ...(opt.quick ? ['--quick'] : []),
    ];
    native = JSON.parse(execFileSync(cli, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 }));
  } else {
    peers.nativeError = `native CLI not built (${cli})`;
  }
}
report.peers = peers;
report.native = native;

let browser = null;
if (!SKIP.has('browser') && !SKIP.has('spec')) {
  // At T = 0 with the best gamma of the WASM table above.
  const t0 = spec.filter((s) => s.temperature === 0);
  const best = t0.reduce((a, b) => (b.speedup.median > a.speedup.median ? b : a));
  const r = spawnSync(
    process.execPath,
    [
      path.join(BENCH, 'browser.mjs'),
      '--json',
      '--target',
      opt.target,
      '--draft',
      opt.draft,
      '--gamma',
      String(best.gamma),
      '--temperature',
      '0',
      '--max-tokens',
      String(MAX_TOKENS),
      '--runs',
      opt.quick ? '2' : '5',
    ],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (r.status === 0) browser = JSON.parse(r.stdout.trim().split('\n').pop());
  else report.browserError = (r.stderr || r.stdout || '').trim().split('\n').slice(-1)[0];
}
report.browser = browser;

// ---------------------------------------------------------------------------- tables

if (native?.kernels) printNativeKernels(native);
printMsPerToken(msPerToken, peers, native);
printVerify(verify, pasts, spec, native);
printRooflines(rooflines, report.peakGflops, native);
printSpec(spec, SKIP.has('spec') ? [] : TEMPERATURES, {
  prompts: PROMPTS.length,
  maxTokens: MAX_TOKENS,
  native,
});

if (browser) {
  report.browserSummary = printBrowser(browser);
} else if (!SKIP.has('browser') && !SKIP.has('spec')) {
  note(`Browser skipped: ${report.browserError}`);
}

note(`Load average at the end: ${load()}.`);
writeJson(opt.json, report, 1);
for (const m of [...Object.values(model)]) m.dispose();
for (const b of Object.values(benchModel)) b.delete();
