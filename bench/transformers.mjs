#!/usr/bin/env node
// transformers.js as specdec's target (`specdec/transformers`), measured in ONE run against
// transformers.js's own generate() on the same model, configurations round robin:
//   - generate() plain: greedy (do_sample false) and sampled (temperature 0.8, top_k 0);
//   - specdec plain through the adapter (createDecoder({ targetScore, plain: true })): what the
//     route costs per token where speculation cannot help;
//   - transformers.js target + specdec's built-in draft, gamma 1..G;
//   - transformers.js target + transformers.js draft (the same draft's export), gamma 2..4;
//   - the callback route's cost per iteration on specdec's side (the JS loop, queries into wasm,
//     copying and checking rows; callbacks' time excluded), as bench/ort-spec.mjs measures it;
//   - the adapter's own time per call (its callback time less the model's forward()).
// Every figure is a median over repeats [min-max]; ratios are per repeat. Models: the folders of
// models/tools/make_transformers_model.py (build-transformers/, made on demand), fp32 by default.
// --backend wasm (default): onnxruntime-web's WASM backend, one thread, registered for
// transformers.js under Node through globalThis[Symbol.for('onnxruntime')] (its wasm files
// from node_modules, never a CDN); --backend cpu: transformers.js's Node default
// (onnxruntime-node, one intra-op thread).
//
//   node bench/transformers.mjs [--backend wasm|cpu] [--dtype fp32|fp16] [--repeats 3]
//                               [--max-tokens 200] [--gamma-max 6] [--temperatures 0,0.8]
//                               [--json FILE]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadSpecdec } from '../web/lib/node.js';
import { transformersScorer } from '../web/lib/adapters/transformers.js';
import { callbackRouteCost, printCallbackRouteCost } from './callback-route.mjs';
import { ROOT, benchOptions, writeJson } from './common.mjs';
import { cell, median, stats } from './stats.mjs';

const opt = benchOptions({
  backend: 'wasm',
  dtype: 'fp32',
  target: path.join(ROOT, 'models/target.safetensors'),
  draft: path.join(ROOT, 'models/draft.safetensors'),
  repeats: '3',
  'max-tokens': '200',
  'gamma-max': '6',
  temperatures: '0,0.8',
  json: undefined,
});
const REPEATS = Number(opt.repeats);
const N = Number(opt['max-tokens']);
const G = Number(opt['gamma-max']);
const PROMPT = 'ROMEO:\nWhat light through yonder window breaks?\n';
const require = createRequire(import.meta.url);

let ortVersion = null;
if (opt.backend === 'wasm') {
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.wasmPaths = pathToFileURL(`${path.dirname(require.resolve('onnxruntime-web'))}/`).href;
  ort.env.logLevel = 'error';
  globalThis[Symbol.for('onnxruntime')] = ort; // transformers.js then runs on it
  ortVersion = `onnxruntime-web ${ort.env.versions?.web ?? ''} wasm, 1 thread`;
} else if (opt.backend !== 'cpu') {
  console.error('bench/transformers: --backend wasm or cpu');
  process.exit(2);
}
const tf = await import('@huggingface/transformers');
tf.env.allowRemoteModels = false;
tf.env.localModelPath = path.join(ROOT, 'build-transformers/');
tf.env.logLevel = tf.LogLevel?.ERROR ?? 40;
ortVersion ??= 'onnxruntime-node CPU, 1 intra-op thread';

const folderOf = (file) => {
  const name = path.basename(file, '.safetensors');
  execFileSync(
    '/usr/bin/python3',
    ['-m', 'models.tools.make_transformers_model', path.resolve(file), path.join(ROOT, 'build-transformers', name)],
    { stdio: ['ignore', 'ignore', 'inherit'], cwd: ROOT },
  );
  return name;
};
const loadOptions =
  opt.backend === 'wasm'
    ? { dtype: opt.dtype, device: 'auto', session_options: { executionProviders: ['wasm'] } }
    : {
        dtype: opt.dtype,
        device: 'cpu',
        session_options: { intraOpNumThreads: 1, interOpNumThreads: 1 },
      };
const tokenizer = await tf.AutoTokenizer.from_pretrained(folderOf(opt.target));
const tfTarget = await tf.AutoModelForCausalLM.from_pretrained(folderOf(opt.target), loadOptions);
const tfDraft = await tf.AutoModelForCausalLM.from_pretrained(folderOf(opt.draft), loadOptions);
const sd = await loadSpecdec();
const target = sd.loadModel(readFileSync(opt.target));
const draft = sd.loadModel(readFileSync(opt.draft));
const CONTEXT = target.config.blockSize;

// The model's forward() time, to tell the adapter's own time from the model's.
let forwardMs = 0;
const forward = tfTarget.forward.bind(tfTarget);
tfTarget.forward = async (inputs) => {
  const t0 = performance.now();
  try {
    return await forward(inputs);
  } finally {
    forwardMs += performance.now() - t0;
  }
};

const inputs = tokenizer(PROMPT);
async function generatePlain(temperature) {
  const t0 = performance.now();
  const out = await tfTarget.generate({
    ...inputs,
    max_new_tokens: N,
    ...(temperature ? { do_sample: true, temperature, top_k: 0 } : { do_sample: false }),
  });
  const ms = performance.now() - t0;
  const generated = out.dims.at(-1) - inputs.input_ids.dims[1];
  return { tps: (generated / ms) * 1000, tpp: 1 };
}

async function decode({ gamma, plain, lookup, tfDraft: withTfDraft, temperature }, seed) {
  const ts = transformersScorer(tfTarget, { tokenizer });
  const ds = withTfDraft ? transformersScorer(tfDraft) : null;
  const dec = sd.createDecoder({
    prompt: ts.encode(PROMPT),
    targetScore: ts,
    contextLength: CONTEXT,
    temperature,
    seed,
    maxTokens: N,
    distributions: false,
    ...(plain
      ? { plain: true }
      : {
          gamma,
          ...(lookup ? { promptLookup: true } : {}),
          ...(ds ? { draftScore: ds } : { draft }),
        }),
  });
  forwardMs = 0;
  const t0 = performance.now();
  for await (const r of dec.generate()) void r;
  const ms = performance.now() - t0;
  const s = dec.stats;
  const targetCalls = ts.runs;
  // with a transformers.js draft, callbackMs holds both sides: the adapter figure is the target's only
  const adapter = ds ? null : (s.callbackMs - forwardMs) / targetCalls;
  dec.dispose();
  await ts.dispose();
  await ds?.dispose();
  return { tps: (s.generated / ms) * 1000, alpha: s.acceptanceRate, tpp: s.tokensPerPass, adapter };
}

const report = {
  cpu: os.cpus()[0]?.model,
  cores: os.cpus().length,
  node: process.version,
  runtime: ortVersion,
  transformers: tf.env.version,
  dtype: opt.dtype,
  tokens: N,
  repeats: REPEATS,
  results: {},
};
console.log(`# specdec with transformers.js as the target (specdec/transformers)\n`);
report.loadAverage = os.loadavg();
console.log(
  `${report.cpu} (${report.cores} vCPU), load average ${report.loadAverage.map((x) => x.toFixed(1)).join(' / ')}, Node ${process.version}, transformers.js ${report.transformers} on ${ortVersion}, ${opt.dtype}; ${N} tokens per run, ${REPEATS} repeats, round robin; target ${path.basename(opt.target)}, draft ${path.basename(opt.draft)}.\n`,
);

const TEMPERATURES = opt.temperatures.split(',').map(Number);
if (TEMPERATURES.some((t) => !(t >= 0 && t <= 2))) {
  console.error(`bench/transformers: --temperatures: numbers in 0..2, got ${opt.temperatures}`);
  process.exit(2);
}
for (const temperature of TEMPERATURES) {
  const configs = [
    { name: 'transformers.js generate()', generate: true, temperature },
    { name: 'specdec plain through the adapter', plain: true, temperature },
  ];
  for (let g = 1; g <= G; g++)
    configs.push({
      name: `transformers.js target + specdec draft, γ ${g}`,
      gamma: g,
      temperature,
      kind: 'specdec',
    });
  // What a user gets without choosing γ: the policy picks depth (and lookup's turns) per iteration.
  configs.push({
    name: 'transformers.js target + specdec draft, γ auto',
    gamma: 'auto',
    temperature,
    kind: 'specdec',
  });
  configs.push({
    name: 'transformers.js target + specdec draft + prompt lookup, γ auto',
    gamma: 'auto',
    lookup: true,
    temperature,
    kind: 'specdec',
  });
  for (let g = 2; g <= 4; g++)
    configs.push({
      name: `transformers.js target + transformers.js draft, γ ${g}`,
      gamma: g,
      temperature,
      tfDraft: true,
      kind: 'tf',
    });
  const runs = configs.map(() => []);
  await generatePlain(temperature); // warm-up: every shape ORT plans on first use
  await decode(configs[3], 1);
  for (let r = 0; r < REPEATS; r++) {
    for (const [i, c] of configs.entries())
      runs[i].push(c.generate ? await generatePlain(temperature) : await decode(c, 100 + r));
  }
  const rows = configs.map((c, i) => ({
    name: c.name,
    gamma: c.gamma ?? 0,
    kind: c.kind ?? (c.generate ? 'generate' : 'plain'),
    tps: stats(runs[i].map((x) => x.tps)),
    speedup: stats(runs[i].map((x, r) => x.tps / runs[0][r].tps)),
    alpha: c.gamma ? median(runs[i].map((x) => x.alpha)) : null,
    tpp: median(runs[i].map((x) => x.tpp)),
    adapterMs:
      runs[i][0].adapter === undefined || runs[i][0].adapter === null ? null : median(runs[i].map((x) => x.adapter)),
  }));
  const result = (report.results[`T${temperature}`] = { rows });
  console.log(`## T = ${temperature}: tokens/s, and the ratio to generate() in the same repeat\n`);
  console.log(
    '| configuration | tokens/s | × generate() | α | tokens per target pass | adapter ms per call |\n|---|---|---|---|---|---|',
  );
  for (const x of rows) {
    console.log(
      `| ${x.name} | ${cell(x.tps, 1)} | ${i0(x) ? '1' : cell(x.speedup, 2)} | ${x.alpha === null ? '–' : x.alpha.toFixed(3)} | ${x.tpp.toFixed(2)} | ${x.adapterMs === null ? '–' : x.adapterMs.toFixed(3)} |`,
    );
  }
  for (const kind of ['specdec', 'tf']) {
    const best = rows.filter((x) => x.kind === kind).reduce((a, b) => (b.speedup.median > a.speedup.median ? b : a));
    result[`best_${kind}`] = { gamma: best.gamma, speedup: best.speedup };
    console.log(
      `\nBest with the ${kind === 'specdec' ? 'specdec (built-in)' : 'transformers.js'} draft: γ ${best.gamma}, **${best.speedup.median.toFixed(2)}×** generate() (${cell(best.speedup, 2)}).`,
    );
  }
  // Prompt lookup beside the draft against the draft alone (both γ auto; one ran right after the
  // other in every repeat): what adding lookup costs or gains on this prompt.
  const iAuto = configs.findIndex((c) => c.gamma === 'auto' && !c.lookup);
  const iBoth = configs.findIndex((c) => c.lookup);
  const both = stats(runs[iBoth].map((x, r) => x.tps / runs[iAuto][r].tps));
  result.lookupPlusDraftVsDraft = both;
  console.log(`Draft + prompt lookup ÷ the draft alone (γ auto, same repeat): **${cell(both, 3)}**.`);
  console.log('');
}
function i0(x) {
  return x.kind === 'generate';
}

// The callback route on specdec's side (bench/callback-route.mjs, as bench/ort-spec.mjs).
{
  report.overhead = await callbackRouteCost(sd, {
    target,
    draft,
    contextLength: CONTEXT,
    repeats: REPEATS,
    warmUp: 'async',
  });
  printCallbackRouteCost(
    `The callback route's cost per iteration on specdec's side (γ 4, T 0.8, the same iterations; models' time excluded), ms`,
    report.overhead,
  );
  console.log(
    `\nThe adapter's own time per target call (building the inputs, cutting the cache back, reading the logits; its callback time less forward()) is the last column of the tables above.\n`,
  );
}

writeJson(opt.json, report);
await tfTarget.dispose();
await tfDraft.dispose();
target.dispose();
draft.dispose();
