#!/usr/bin/env node
// onnxruntime-web against specdec at 1 and 2 threads (issue 19): greedy decoding of the small
// target's ONNX export (models/tools/export_onnx.py; the same weights) under Node. ORT's thread count
// (env.wasm.numThreads) is fixed per process, so each ORT count runs in a child process of this
// run; specdec runs here, loadSpecdec({ threads }) for each count. Median ms/token of --repeats
// decodes of --tokens tokens after each of the benchmark's prompts.
//
//   node bench/ort-threads.mjs [--threads 1,2] [--tokens 128] [--repeats 3] [--json]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, benchOptions, timeDecode } from './common.mjs';
import { median } from './stats.mjs';

const opt = benchOptions({
  threads: '1,2',
  tokens: '128',
  repeats: '3',
  child: undefined,
  json: false,
});
const TOKENS = Number(opt.tokens),
  REPEATS = Number(opt.repeats);
const TARGET = path.join(ROOT, 'models/target.safetensors');
const PROMPTS = ['ROMEO:', 'First Citizen:\n', 'KING RICHARD III:\nNow is the', 'JULIET:\nO Romeo, Romeo'].map((p) => [
  ...Buffer.from(p, 'utf8'),
]);

if (opt.child) {
  // One ORT thread count, in this process: { msPerToken, tokens }.
  const { loadOrt, OrtModel, ortGreedyDecode } = await import('./ort.mjs');
  const { onnxOf } = await import('../scripts/lib/onnx-export.mjs');
  const ort = await loadOrt({ threads: Number(opt.child) });
  if (!ort) {
    console.log(JSON.stringify({ error: 'onnxruntime-web is not installed' }));
    process.exit(0);
  }
  const m = await OrtModel.create(ort, readFileSync(onnxOf(TARGET)), { vocabSize: 256 });
  await ortGreedyDecode(m, PROMPTS[0], 16); // warm-up
  const runs = [];
  let tokens = null;
  for (let r = 0; r < REPEATS; r++) {
    let ms = 0;
    for (const p of PROMPTS) {
      const d = await ortGreedyDecode(m, p, TOKENS);
      ms += d.ms;
      tokens ??= d.tokens;
    }
    runs.push(ms / (PROMPTS.length * TOKENS));
  }
  await m.release();
  console.log(JSON.stringify({ msPerToken: median(runs), runs, tokens }));
  process.exit(0);
}

const { loadSpecdec } = await import('../web/lib/node.js');
const threads = opt.threads.split(',').map(Number);
const out = {
  cpu: readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.*)$/m)?.[1],
  tokens: TOKENS,
  repeats: REPEATS,
  specdec: {},
  ort: {},
};
for (const t of threads) {
  out.ort[t] = JSON.parse(
    execFileSync(
      process.execPath,
      [fileURLToPath(import.meta.url), '--child', String(t), '--tokens', String(TOKENS), '--repeats', String(REPEATS)],
      { encoding: 'utf8' },
    )
      .trim()
      .split('\n')
      .pop(),
  );
  const sd = await loadSpecdec({ threads: t });
  const model = sd.loadModel(readFileSync(TARGET));
  const decode = (p, n) => timeDecode(sd, { target: model, plain: true, prompt: p, temperature: 0, maxTokens: n });
  decode(PROMPTS[0], 16);
  const runs = [];
  let tokens = null;
  for (let r = 0; r < REPEATS; r++) {
    let ms = 0;
    for (const p of PROMPTS) {
      const d = decode(p, TOKENS);
      ms += d.ms;
      tokens ??= d.tokens;
    }
    runs.push(ms / (PROMPTS.length * TOKENS));
  }
  model.dispose();
  out.specdec[t] = {
    msPerToken: median(runs),
    runs,
    threadsInUse: sd.threads,
    tokensAgreeWithOrt: JSON.stringify(tokens) === JSON.stringify(out.ort[t].tokens),
  };
}
if (opt.json) console.log(JSON.stringify(out));
else {
  console.log(
    `\n#### onnxruntime-web vs specdec by thread count (small target, greedy, ${TOKENS} tokens × ${PROMPTS.length} prompts; ${out.cpu})\n`,
  );
  console.log('| threads | onnxruntime-web ms/token | specdec ms/token | specdec ÷ ORT time | same tokens |');
  console.log('|---|---|---|---|---|');
  for (const t of threads) {
    const o = out.ort[t],
      s = out.specdec[t];
    console.log(
      `| ${t} | ${o.msPerToken?.toFixed(3) ?? o.error} | ${s.msPerToken.toFixed(3)} | ${o.msPerToken ? (o.msPerToken / s.msPerToken).toFixed(2) + '× faster' : '–'} | ${s.tokensAgreeWithOrt} |`,
    );
  }
}
process.exit(0);
