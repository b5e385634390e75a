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
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, benchOptions, timeDecode, writeJson } from './common.mjs';
import { measurePeers } from './peers.mjs';
import { cell, median, stats } from './stats.mjs';

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

// ---------------------------------------------------------------------------- helpers

function table(title, head, rows) {
  console.log(`\n#### ${title}\n`);
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}
const note = (s) => console.log(`\n${s}`);

// ---------------------------------------------------------------------------- WASM module

const wasmDir = path.resolve(opt['wasm-dir']);
if (!existsSync(path.join(wasmDir, 'specdec-bench.wasm'))) {
  console.error(
    `bench: ${path.join(wasmDir, 'specdec-bench.wasm')} missing: run \`scripts/build-wasm --bench\` first`,
  );
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

// ---------------------------------------------------------------------------- 1. kernels

const C = cfg.nEmbd;
const SHAPES = [
  [`K=${C} N=${3 * C} (c_attn)`, C, 3 * C],
  [`K=${C} N=${4 * C} (c_fc)`, C, 4 * C],
  [`K=${4 * C} N=${C} (mlp c_proj)`, 4 * C, C],
  [`K=${C} N=${C} (attn c_proj)`, C, C],
  ['K=768 N=768', 768, 768],
];
const MS = [1, 2, 3, 4, 5, 6, 8];
const mb = (c) => ((c.nLayer * 12 * c.nEmbd * c.nEmbd + c.vocabSize * c.nEmbd) * 4) / 1e6;
if (!SKIP.has('kernels')) {
  const rows = [];
  report.kernels = [];
  for (const [name, k, n] of SHAPES) {
    const by = MS.map((m) => M.benchMatmul(m, k, n, 1, REPEATS, MIN_MS));
    report.kernels.push({ shape: name, byM: by });
    rows.push([name, ...by.map((s) => cell(s, 1))]);
  }
  for (const role of ['target', 'draft']) {
    const name = `${role}: all linear layers (${mb(model[role].config).toFixed(1)} MB)`;
    const by = MS.map((m) => M.benchModelMatmuls(benchModel[role], m, REPEATS, MIN_MS));
    report.kernels.push({ shape: name, byM: by });
    rows.push([`**${name}**`, ...by.map((s) => cell(s, 1))]);
  }
  table(
    'WASM kernel GFLOP/s (matmul timed inside wasm)',
    ['shape', ...MS.map((m) => `M=${m}`)],
    rows,
  );
  note(
    '"all linear layers" runs the matmuls of one forward pass, each layer with its own weights: the weights stream from L3 as in real decoding (GEMV/GEMM at model scale); the other rows stay in cache.',
  );
}

// ---------------------------------------------------------------------------- 2. ms/token

// Plain greedy decode of n tokens after a 1-token prompt through the public JS API.
const jsDecode = (role, n, prompt = '\n') =>
  timeDecode(sd, {
    target: model[role],
    plain: true,
    temperature: 0,
    prompt,
    maxTokens: n,
    distributions: false,
  });

const msPerToken = {};
{
  for (const role of ['target', 'draft']) {
    jsDecode(role, 40);
    const api = [],
      engine = [];
    for (let r = 0; r < REPEATS; r++) {
      api.push(jsDecode(role, 255).ms / 255);
      engine.push(M.benchDecode(benchModel[role], null, [[10]], 1, 0, 0, 255).ms / 255);
    }
    msPerToken[role] = { api: stats(api), engine: stats(engine) };
  }
  report.msPerToken = msPerToken;
}

// ---------------------------------------------------------------------------- 3. v(k), c

// Every k in every repeat (round robin), so that a change of machine state cannot bias one k.
const pasts = Array.from(M.benchDecodeContexts(benchModel.target));
const verify = {};
{
  const ks = Array.from({ length: Math.max(9, GAMMA_MAX + 1) }, (_, i) => i + 1);
  const rows = M.benchForwardKs(benchModel.target, ks, pasts, REPEATS);
  const d1 = M.benchForwardKs(benchModel.draft, [1], pasts, REPEATS)[0].ms;
  const t1 = rows[0].ms;
  verify.c = d1.median / t1.median;
  verify.targetStep = t1;
  verify.draftStep = d1;
  verify.byK = rows.map((r) => ({ k: r.k, ms: r.ms, v: r.ms.median / t1.median }));
  // The same pass inside the engine's plain decode loop (the decoder times its model calls).
  const engine = [];
  for (let r = 0; r < REPEATS; r++) {
    const d = M.benchDecode(benchModel.target, null, [[10]], 1, 0, 0, 255);
    engine.push(d.targetMs / d.targetPasses);
  }
  verify.decodePass = stats(engine);
  report.verify = verify;
}

// ---------------------------------------------------------------------------- 3b. roofline

// For each target: one core's read bandwidth over a buffer as large as its weights (the best of
// 1..16 streams) and the mul+add peak, measured here, give the roofline of a pass over k tokens:
// max(weight bytes / bandwidth, k x flops per token / peak). Then where the pass goes.
const rooflines = [];
if (!SKIP.has('breakdown')) {
  const peak = M.benchMuladdGflops(REPEATS, MIN_MS);
  report.peakGflops = peak;
  for (const file of TARGETS) {
    const bm = file === opt.target ? benchModel.target : M.BenchModel.load(readFileSync(file));
    const weightBytes = M.benchWeightBytes(bm),
      flops = M.benchFlopsPerToken(bm);
    const bw = M.benchBestReadGbs(weightBytes, REPEATS, MIN_MS);
    const ks = [1, 2, 3, 4, 5, 6, 7, 8];
    const rows = M.benchPassBreakdown(bm, ks, Array.from(M.benchDecodeContexts(bm)), REPEATS).map(
      (b) => {
        const memory = weightBytes / (bw.gbs.median * 1e6),
          arithmetic = (b.k * flops) / (peak.median * 1e6);
        const rest = b.pass.median - b.matmulInPass.median - b.attention.median - b.gelu.median;
        return {
          ...b,
          rest,
          roofline: Math.max(memory, arithmetic),
          bound: arithmetic > memory ? 'flops' : 'memory',
        };
      },
    );
    rooflines.push({
      file,
      weightBytes,
      flops,
      bw,
      rows,
      config: file === opt.target ? cfg : null,
    });
    if (bm !== benchModel.target) bm.delete();
  }
  report.roofline = rooflines;
}

// ---------------------------------------------------------------------------- 4. spec vs plain

// One prompt decoded through the public JS API; returns its totals.
function runOne(i, { plain, gamma, temperature }) {
  const dec = sd.createDecoder({
    target: model.target,
    ...(plain ? { plain: true } : { draft: model.draft, gamma }),
    temperature,
    prompt: PROMPTS[i],
    seed: 1000 + i,
    maxTokens: MAX_TOKENS,
    distributions: false,
  });
  const t0 = performance.now();
  while (!dec.done) dec.step();
  const ms = performance.now() - t0;
  const s = dec.stats;
  dec.dispose();
  return {
    ms,
    generated: s.generated,
    examined: s.examined,
    accepted: s.accepted,
    targetPasses: s.targetPasses,
    draftPasses: s.draftPasses,
    draftMs: s.draftMs,
    targetMs: s.targetMs,
  };
}
const sum = (a, b) => Object.fromEntries(Object.keys(b).map((k) => [k, (a?.[k] ?? 0) + b[k]]));

// Per repeat, prompt by prompt: plain, then every γ (so that plain and speculative runs see the
// same machine state); ratios within the repeat. The cost model comes from the same runs: the
// decoder times its draft and target calls.
//   S = plain ms/token; V(1) = plain target ms/pass; D = draft ms/pass; V(γ+1) = target ms/pass
//   of the speculative run; c = D / S; v = (V(γ+1) + S − V(1)) / S — a speculative iteration
//   also pays the per-iteration work outside the model passes that a plain step pays
//   (S − V(1): sampling, verification, the JS call).
const spec = [];
for (const temperature of SKIP.has('spec') ? [] : TEMPERATURES) {
  runOne(0, { plain: true, temperature });
  runOne(0, { plain: false, gamma: 2, temperature });
  const plainTps = [],
    plainRuns = [];
  const per = Array.from({ length: GAMMA_MAX + 1 }, () => ({ tps: [], ratio: [], runs: [] }));
  for (let r = 0; r < REPEATS; r++) {
    let p = null;
    const specTotals = Array(GAMMA_MAX + 1).fill(null);
    PROMPTS.forEach((_, i) => {
      p = sum(p, runOne(i, { plain: true, temperature }));
      for (let g = 1; g <= GAMMA_MAX; g++)
        specTotals[g] = sum(specTotals[g], runOne(i, { plain: false, gamma: g, temperature }));
    });
    plainTps.push((p.generated * 1000) / p.ms);
    plainRuns.push(p);
    for (let g = 1; g <= GAMMA_MAX; g++) {
      const tps = (specTotals[g].generated * 1000) / specTotals[g].ms;
      per[g].tps.push(tps);
      per[g].ratio.push(tps / plainTps[r]);
      per[g].runs.push(specTotals[g]);
    }
  }
  const S = median(plainRuns.map((p) => p.ms / p.generated));
  const V1 = median(plainRuns.map((p) => p.targetMs / p.targetPasses));
  for (let g = 1; g <= GAMMA_MAX; g++) {
    const runs = per[g].runs;
    const all = runs.reduce((a, b) => sum(a, b));
    const alpha = all.examined ? all.accepted / all.examined : 0;
    const D = median(runs.map((x) => x.draftMs / x.draftPasses));
    const Vg = median(runs.map((x) => x.targetMs / x.targetPasses));
    const cStep = D / S;
    const vStep = (Vg + S - V1) / S;
    spec.push({
      temperature,
      gamma: g,
      plainTps: stats(plainTps),
      specTps: stats(per[g].tps),
      speedup: stats(per[g].ratio),
      alpha,
      tokensPerPass: all.generated / all.targetPasses,
      expected: sd.expectedAcceptedTokens(alpha, g),
      stepMs: S,
      v1Ms: V1,
      draftMs: D,
      verifyMs: Vg,
      cStep,
      vStep,
      predicted: sd.speculativeSpeedup(alpha, g, cStep, vStep),
      lesson: sd.speculativeSpeedup(alpha, g, D / V1, 1),
    });
  }
}
report.spec = spec;

// ---------------------------------------------------------------------------- 5. peers

const peers = await measurePeers({
  skip: SKIP,
  files: { target: opt.target, draft: opt.draft },
  configs: { target: model.target.config, draft: model.draft.config },
  repeats: REPEATS,
  jsDecode,
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
    native = JSON.parse(
      execFileSync(cli, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 }),
    );
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

if (native?.kernels) {
  table(
    'Native kernel GFLOP/s (AVX2, no FMA)',
    ['shape', ...MS.map((m) => `M=${m}`)],
    native.kernels.map((k) => [k.shape, ...k.by_m.map((x) => cell(x.gflops, 1))]),
  );
}

{
  const rows = [];
  for (const role of ['target', 'draft']) {
    const o = peers.ort?.[role];
    const t = peers.torch?.[role];
    const nat = native?.decode.find((d) => d.model === role);
    rows.push([
      role,
      cell(msPerToken[role].api, 3),
      cell(msPerToken[role].engine, 3),
      nat ? cell(nat.ms_per_token, 3) : '–',
      o ? cell(o.msPerToken, 3) : '–',
      o ? `**${cell(o.ratio, 2)}×**` : '–',
      t ? cell(t.ms_per_token, 3) : '–',
    ]);
  }
  table(
    'ms/token, greedy 255-token decode after a 1-token prompt',
    [
      'model',
      'specdec WASM (JS API)',
      'specdec WASM (engine loop)',
      'specdec native',
      'onnxruntime-web 1.30 (wasm, 1 thread)',
      'onnxruntime-web / specdec WASM',
      'PyTorch (1 thread)',
    ],
    rows,
  );
  const ot = peers.ort?.target;
  if (ot) {
    note(
      `Same weights: onnxruntime-web's greedy tokens ${ot.firstDifferentToken === -1 ? "equal specdec's for all 255 tokens" : `first differ from specdec's at token ${ot.firstDifferentToken}`}. onnxruntime-web, 5-token verify after 128 cached tokens: ${cell(ot.verify5At128, 3)} ms vs one step ${cell(ot.stepAt128, 3)} ms.`,
    );
  }
  if (peers.ortError) note(`onnxruntime-web skipped: ${peers.ortError}`);
  if (peers.torchError) note(`PyTorch skipped: ${peers.torchError}`);
  if (peers.nativeError) note(`native skipped: ${peers.nativeError}`);
}

{
  const nv = native?.verify ?? [];
  table(
    `Verify cost v(k) = time(one pass over k tokens) / time(one step), target, mean over contexts ${pasts[0]}..${pasts[pasts.length - 1]}`,
    ['k', 'WASM ms', 'WASM v(k)', 'native ms', 'native v(k)'],
    verify.byK.map((x, i) => [
      x.k,
      cell(x.ms, 3),
      x.v.toFixed(2),
      nv[i] ? cell(nv[i].ms, 3) : '–',
      nv[i] ? Number(nv[i].v).toFixed(2) : '–',
    ]),
  );
  note(
    `Draft step ${cell(verify.draftStep, 3)} ms vs target step ${cell(verify.targetStep, 3)} ms: c = ${verify.c.toFixed(3)} (WASM)${native ? `; native c = ${Number(native.c).toFixed(3)}` : ''}.`,
  );
  const plainV1 = spec.find((x) => x.temperature === 0)?.v1Ms;
  note(
    `Consistency: the k = 1 pass above (${verify.targetStep.median.toFixed(3)} ms) vs the target pass of plain decoding in the same run: ${cell(verify.decodePass, 3)} ms in the engine's decode loop (${(verify.targetStep.median / verify.decodePass.median).toFixed(2)}×)${plainV1 ? `, ${plainV1.toFixed(3)} ms through the JS API (${(verify.targetStep.median / plainV1).toFixed(2)}×)` : ''}.`,
  );
}

{
  const nr = native?.roofline ?? [];
  for (const r of rooflines) {
    const n = nr.find(
      (x) => x.target === r.file || path.resolve(ROOT, x.target) === path.resolve(r.file),
    );
    const gf = (k, ms) => (k * r.flops) / (ms * 1e6);
    const nPeak = native?.peak_gflops?.median;
    table(
      `Roofline of a pass over k tokens: ${path.relative(ROOT, r.file)} (${(r.weightBytes / 1e6).toFixed(1)} MB of f32 weights, ${(r.flops / 1e6).toFixed(1)} MFLOP per token), WASM, ms per pass (mean over contexts); native in the last columns`,
      [
        'k',
        'pass',
        'matmul (GFLOP/s)',
        'matmul in the pass',
        'roofline (bound)',
        'pass / roofline',
        '**matmul / roofline**',
        'attention',
        'GELU',
        'rest (% of pass)',
        'v(k)',
        'native pass',
        'native matmul / roofline',
      ],
      r.rows.map((b) => {
        const nb = n?.rows.find((x) => x.k === b.k);
        return [
          b.k,
          b.pass.median.toFixed(3),
          `${b.matmul.median.toFixed(3)} (${gf(b.k, b.matmul.median).toFixed(1)})`,
          b.matmulInPass.median.toFixed(3),
          `${b.roofline.toFixed(3)} (${b.bound})`,
          `${(b.pass.median / b.roofline).toFixed(2)}×`,
          `**${(b.matmul.median / b.roofline).toFixed(2)}×**`,
          b.attention.median.toFixed(3),
          b.gelu.median.toFixed(3),
          `${b.rest.toFixed(3)} (${((100 * b.rest) / b.pass.median).toFixed(1)}%)`,
          (b.pass.median / r.rows[0].pass.median).toFixed(2),
          nb ? Number(nb.pass_ms.median).toFixed(3) : '–',
          nb
            ? `${(Number(nb.matmul_ms.median) / Number(nb.roofline_ms)).toFixed(2)}× (${nb.bound})`
            : '–',
        ];
      }),
    );
    const by = r.bw.byStreams
      .map((x, i) => `${[1, 2, 4, 8, 16][i]}: ${x.median.toFixed(1)}`)
      .join(', ');
    note(
      `Roofline inputs, measured in this run: one core reads ${(r.weightBytes / 1e6).toFixed(1)} MB at ${cell(r.bw.gbs, 1)} GB/s in WASM, best with ${r.bw.streams} streams (GB/s by stream count ${by})${n ? `; natively ${cell(n.read_gbs, 1)} GB/s with ${n.read_streams} streams` : ''}. Mul+add peak in registers: ${cell(report.peakGflops, 1)} GFLOP/s (WASM SIMD128)${nPeak ? `, ${nPeak.toFixed(1)} GFLOP/s natively (AVX2, 256-bit)` : ''}. roofline = max(weight bytes / bandwidth, k × flops per token / peak). "matmul" is the pass's matmuls timed alone (the kernel against the roofline), "matmul in the pass" the time inside matmul() during real passes; "rest" = pass − matmul in the pass − attention − GELU (layer norms, residual adds, KV copies, output softmax, allocations, call overhead).`,
    );
  }
  const split = native?.split_matmul_ms;
  if (split) {
    note(
      `The roofline is per core: natively, the one-token matmuls with each matrix's output rows split over two threads (each output keeps its summation order; checked bit for bit) take ${cell(split['2'], 3)} ms instead of ${cell(split['1'], 3)} ms (${(split['1'].median / split['2'].median).toFixed(2)}×). WASM threads (SharedArrayBuffer, a cross-origin-isolated page) would do the same in the browser.`,
    );
  }
}

for (const temperature of SKIP.has('spec') ? [] : TEMPERATURES) {
  const rows = spec.filter((s) => s.temperature === temperature);
  const best = rows.reduce((a, b) => (b.speedup.median > a.speedup.median ? b : a));
  table(
    `Speculative vs plain, WASM (JS API), T = ${temperature}, ${PROMPTS.length} prompts × ${MAX_TOKENS} tokens; plain ${cell(rows[0].plainTps, 0)} tokens/s`,
    [
      'γ',
      'spec tokens/s',
      'measured speedup',
      'α',
      'tokens/pass (E)',
      'c',
      'v',
      'predicted E/(γc+v)',
      'pred/meas − 1',
      'lesson E/(γc+1)',
    ],
    rows.map((s) => [
      s.gamma === best.gamma ? `**${s.gamma}**` : s.gamma,
      cell(s.specTps, 0),
      cell(s.speedup, 3),
      s.alpha.toFixed(3),
      `${s.tokensPerPass.toFixed(2)} (${s.expected.toFixed(2)})`,
      s.cStep.toFixed(3),
      s.vStep.toFixed(2),
      s.predicted.toFixed(3),
      `${(100 * (s.predicted / s.speedup.median - 1)).toFixed(1)}%`,
      s.lesson.toFixed(2),
    ]),
  );
  note(
    `Cost model from the same runs: S = ${rows[0].stepMs.toFixed(3)} ms (plain ms/token), V(1) = ${rows[0].v1Ms.toFixed(3)} ms (plain target pass); c = D/S with D the draft ms/pass, v = (V(γ+1) + S − V(1))/S with V(γ+1) the speculative run's target ms/pass. Lesson: c = D/V(1), v = 1.`,
  );
  if (native) {
    const nrows = native.spec.filter((s) => Math.abs(s.temperature - temperature) < 1e-6);
    table(
      `Speculative vs plain, native (engine loop), T = ${temperature}; plain ${cell(nrows[0].plain_tokens_per_s, 0)} tokens/s`,
      ['γ', 'spec tokens/s', 'measured speedup', 'α', 'c', 'v', 'predicted', 'pred/meas − 1'],
      nrows.map((s) => [
        s.gamma,
        cell(s.spec_tokens_per_s, 0),
        cell(s.speedup, 3),
        Number(s.alpha).toFixed(3),
        Number(s.c_step).toFixed(3),
        Number(s.v_step).toFixed(2),
        Number(s.predicted).toFixed(3),
        `${(100 * (s.predicted / s.speedup.median - 1)).toFixed(1)}%`,
      ]),
    );
  }
}

if (browser) {
  table(
    `Browser: the page's real-model section in Chromium ${browser.chromium} (worker, WASM), γ = ${browser.gamma}, T = ${browser.temperature}, ${browser.maxTokens} tokens`,
    [
      'run',
      'plain tokens/s',
      'speculative tokens/s',
      'measured speedup',
      'α',
      'page: predicted E/(γc+v)',
    ],
    browser.runs.map((r, i) => [
      i + 1,
      r.plainTps.toFixed(0),
      r.specTps.toFixed(0),
      r.speedup.toFixed(2),
      r.alpha.toFixed(3),
      r.predictedV.toFixed(2),
    ]),
  );
  const bs = {
    plain: stats(browser.runs.map((r) => r.plainTps)),
    spec: stats(browser.runs.map((r) => r.specTps)),
    speedup: stats(browser.runs.map((r) => r.speedup)),
  };
  note(
    `Browser medians: plain ${cell(bs.plain, 0)} tokens/s, speculative ${cell(bs.spec, 0)} tokens/s, speedup ${cell(bs.speedup, 2)} (prompt "ROMEO:", the page's own timing: worker compute time).`,
  );
  report.browserSummary = bs;
} else if (!SKIP.has('browser') && !SKIP.has('spec')) {
  note(`Browser skipped: ${report.browserError}`);
}

note(`Load average at the end: ${load()}.`);
writeJson(opt.json, report, 1);
for (const m of [...Object.values(model)]) m.dispose();
for (const b of Object.values(benchModel)) b.delete();
