#!/usr/bin/env node
// Bring your own runtime, measured: onnxruntime-web (wasm backend, 1 thread) as specdec's
// target through score callbacks (`specdec/ort`), in ONE run, configurations round robin:
//   - ORT plain decoding (createDecoder({ targetScore, plain: true }));
//   - ORT target + specdec's built-in draft, gamma 1..G;
//   - ORT target + ORT draft, gamma 1..G;
//   - ORT's own verify cost v(k): a pass over k tokens after 128 cached ones, in one-token passes;
//   - the callback machinery's cost per iteration (JS <-> wasm, record building, verification;
//     the callbacks' own time excluded), with instant callbacks, against a built-in decoder's
//     time outside its models.
// Every figure is a median over repeats [min-max]; ratios are per repeat. Greedy and T = 0.8.
//
//   node bench/ort-spec.mjs [--target models/target.safetensors] [--draft models/draft.safetensors]
//                           [--repeats 3] [--max-tokens 200] [--gamma-max 6] [--json FILE]
//                           [--only verify,decode,overhead]
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadSpecdec } from '../web/lib/node.js';
import { ortScorer } from '../web/lib/adapters/ort.js';
import { callbackRouteCost, printCallbackRouteCost } from './callback-route.mjs';
import { ROOT, benchOptions, writeJson } from './common.mjs';
import { loadOrt } from './ort.mjs';
import { cell, median, stats } from './stats.mjs';
import { onnxOf } from '../scripts/lib/onnx-export.mjs';

const opt = benchOptions({
  target: path.join(ROOT, 'models/target.safetensors'),
  draft: path.join(ROOT, 'models/draft.safetensors'),
  repeats: '3',
  'max-tokens': '200',
  'gamma-max': '6',
  json: undefined,
  only: 'verify,decode,overhead',
});
const ONLY = new Set(opt.only.split(','));
const REPEATS = Number(opt.repeats);
const N = Number(opt['max-tokens']);
const G = Number(opt['gamma-max']);
const PROMPT = 'ROMEO:\nWhat light through yonder window breaks?\n';

const ort = await loadOrt();
if (!ort) {
  console.error('bench/ort-spec: onnxruntime-web is not installed (npm ci)');
  process.exit(2);
}
const sd = await loadSpecdec();
const target = sd.loadModel(readFileSync(opt.target));
const draft = sd.loadModel(readFileSync(opt.draft));
const sessionOf = async (file) =>
  ort.InferenceSession.create(readFileSync(onnxOf(file)), {
    executionProviders: ['wasm'],
    graphOptimizationLevel: 'all',
  });
const targetSession = await sessionOf(opt.target);
const draftSession = await sessionOf(opt.draft);

// One decode of N tokens; tokens/s measured around generate().
async function decode({ gamma, plain, ortDraft, temperature }, seed) {
  const ts = ortScorer(targetSession, { ort });
  const ds = ortDraft ? ortScorer(draftSession, { ort }) : null;
  const dec = sd.createDecoder({
    prompt: PROMPT,
    targetScore: ts,
    contextLength: target.config.blockSize,
    temperature,
    seed,
    maxTokens: N,
    ...(plain ? { plain: true } : { gamma, ...(ds ? { draftScore: ds } : { draft }) }),
  });
  const t0 = performance.now();
  for await (const r of dec.generate()) void r;
  const ms = performance.now() - t0;
  const s = dec.stats;
  dec.dispose();
  await ts.dispose();
  await ds?.dispose();
  return {
    tps: (s.generated / ms) * 1000,
    alpha: s.acceptanceRate,
    tpp: s.tokensPerPass,
    overhead: (s.ms - s.callbackMs) / s.iterations,
  };
}

const report = {
  cpu: os.cpus()[0]?.model,
  node: process.version,
  ort: ort.env.versions?.web ?? '1.30',
  tokens: N,
  repeats: REPEATS,
  results: {},
};
console.log(`# specdec with onnxruntime-web as the target (score callbacks)\n`);
console.log(
  `${report.cpu}, Node ${process.version}, onnxruntime-web wasm 1 thread; ${N} tokens per run, ${REPEATS} repeats, round robin; target ${path.basename(opt.target)}, draft ${path.basename(opt.draft)}.\n`,
);

// ---------------------------------------------------------------- ORT's own v(k)
if (ONLY.has('verify')) {
  const ts = ortScorer(targetSession, { ort });
  const base = Array.from({ length: 128 }, (_, i) => (i * 7 + 3) % target.config.vocabSize);
  const passMs = (k) => {
    const seq = Int32Array.from([
      ...base,
      ...Array.from({ length: k }, (_, i) => (i * 5 + 1) % target.config.vocabSize),
    ]);
    return async () => {
      await ts(Int32Array.from(base), 1); // cache = the first 128 tokens
      const t0 = performance.now();
      await ts(seq, k);
      return performance.now() - t0;
    };
  };
  // Every k once to warm up (ORT plans each new shape on first use), then rounds over all k.
  const fs = Array.from({ length: 8 }, (_, i) => passMs(i + 1));
  for (const f of fs) await f();
  const samples = fs.map(() => []);
  for (let r = 0; r < Math.max(7, REPEATS * 3); r++) {
    for (const [i, f] of fs.entries()) samples[i].push(await f());
  }
  const byK = samples.map((xs, i) => ({ k: i + 1, ms: stats(xs) }));
  const one = byK[0].ms.median;
  report.verify = byK.map((x) => ({ k: x.k, ms: x.ms, v: x.ms.median / one }));
  console.log('## onnxruntime-web verify cost v(k): a pass over k tokens after 128 cached, in one-token passes\n');
  console.log('| k | ms | v(k) |\n|---|---|---|');
  for (const x of report.verify) console.log(`| ${x.k} | ${cell(x.ms, 3)} | ${x.v.toFixed(2)} |`);
  await ts.dispose();
  // The draft's cost in ORT target steps: c.
  const specdecDraft = sd.modelStep(draft);
  const seq = Int32Array.from(base);
  specdecDraft(seq.subarray(0, 127));
  const xs = [];
  for (let r = 0; r < 50; r++) {
    specdecDraft(seq.subarray(0, 127));
    const t0 = performance.now();
    specdecDraft(seq);
    xs.push(performance.now() - t0);
  }
  specdecDraft.dispose();
  report.c = median(xs) / one;
  console.log(
    `\nspecdec's draft step (built-in, WASM) ${median(xs).toFixed(3)} ms vs ORT's target step ${one.toFixed(3)} ms: c = ${report.c.toFixed(3)}.\n`,
  );
}

// ---------------------------------------------------------------- decoding, round robin
for (const temperature of ONLY.has('decode') ? [0, 0.8] : []) {
  const configs = [{ name: 'ORT plain', plain: true, temperature }];
  for (let g = 1; g <= G; g++)
    configs.push({
      name: `ORT target + specdec draft, γ ${g}`,
      gamma: g,
      temperature,
      draftKind: 'specdec',
    });
  for (let g = 1; g <= G; g++)
    configs.push({
      name: `ORT target + ORT draft, γ ${g}`,
      gamma: g,
      temperature,
      ortDraft: true,
      draftKind: 'ort',
    });
  const runs = configs.map(() => []);
  await decode(configs[1], 1); // warm-up
  for (let r = 0; r < REPEATS; r++) {
    for (const [i, c] of configs.entries()) runs[i].push(await decode(c, 100 + r));
  }
  const rows = configs.map((c, i) => ({
    name: c.name,
    gamma: c.gamma ?? 0,
    draft: c.draftKind ?? 'none',
    tps: stats(runs[i].map((x) => x.tps)),
    speedup: stats(runs[i].map((x, r) => x.tps / runs[0][r].tps)),
    alpha: median(runs[i].map((x) => x.alpha)),
    tpp: median(runs[i].map((x) => x.tpp)),
    overhead: median(runs[i].map((x) => x.overhead)),
  }));
  report.results[`T${temperature}`] = rows;
  console.log(`## T = ${temperature}: tokens/s, and speed-up over ORT plain in the same repeat\n`);
  console.log('| configuration | tokens/s | × ORT plain | α | tokens per ORT pass |\n|---|---|---|---|---|');
  for (const x of rows) {
    console.log(
      `| ${x.name} | ${cell(x.tps, 1)} | ${x.gamma ? cell(x.speedup, 2) : '1'} | ${x.gamma ? x.alpha.toFixed(3) : '–'} | ${x.tpp.toFixed(2)} |`,
    );
  }
  for (const kind of ['specdec', 'ort']) {
    const best = rows.filter((x) => x.draft === kind).reduce((a, b) => (b.speedup.median > a.speedup.median ? b : a));
    console.log(
      `\nBest with the ${kind === 'specdec' ? 'specdec (built-in)' : 'ORT'} draft: γ ${best.gamma}, **${best.speedup.median.toFixed(2)}×** ORT plain (${cell(best.speedup, 2)}).`,
    );
  }
  console.log('');
}

// ---------------------------------------------------------------- callback overhead
if (ONLY.has('overhead')) {
  // The same iterations two ways: the built-in pair directly, and the same models behind score
  // callbacks (sd.modelStep: identical rows, so identical iterations from the same seed).
  report.overhead = await callbackRouteCost(sd, {
    target,
    draft,
    contextLength: target.config.blockSize,
    repeats: REPEATS,
    warmUp: 'sync',
  });
  printCallbackRouteCost(
    `The callback route's cost per iteration (γ 4, T 0.8, the same iterations; models' time excluded), ms`,
    report.overhead,
  );
  console.log('');
}

writeJson(opt.json, report);
await targetSession.release();
await draftSession.release();
