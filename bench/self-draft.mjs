#!/usr/bin/env node
// The float32 target with its own 8-bit copy as the draft (issue 26, item 5), in WASM under Node
// (the benchmark's threaded module): for each pair and thread count, plain decoding, speculative
// decoding at the best γ with the distilled draft, and with the target's 8-bit copy
// (models/*-int8.safetensors), at T = 0 and 0.8 — α, draft step c and ms/token, every drafter
// in the same run (round robin inside bench::decode_by_threads).
//
//   node bench/self-draft.mjs [--threads 1,2] [--repeats 3] [--max-tokens 96] [--only small|large]
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, benchOptions, cpuName } from './common.mjs';

const opt = benchOptions({ threads: '1,2', repeats: '3', 'max-tokens': '96', only: undefined });
const THREADS = opt.threads.split(',').map(Number);
const REPEATS = Number(opt.repeats);
const MAX_TOKENS = Number(opt['max-tokens']);
const CPU = cpuName();

const dir = path.join(ROOT, 'build-wasm');
const glue = path.join(dir, 'specdec-bench-mt.mjs');
if (!existsSync(glue)) {
  console.error(`bench/self-draft: ${glue} missing: run \`scripts/build-wasm --bench\` first`);
  process.exit(2);
}
const { default: create } = await import(glue);
const maxT = Math.max(...THREADS);
const M = await create({
  wasmBinary: readFileSync(path.join(dir, 'specdec-bench-mt.wasm')),
  specdecPoolSize: maxT - 1,
  locateFile: (p, prefix) => (p.endsWith('.worker.js') ? path.join(dir, 'specdec-bench-mt.worker.cjs') : prefix + p),
});
M.setupThreads(maxT);
const load = (rel) => M.BenchModel.load(readFileSync(path.join(ROOT, rel)));
const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : '–');

const PAIRS = [
  {
    key: 'small',
    target: 'models/target.safetensors',
    draft: 'models/draft.safetensors',
    self: 'models/target-int8.safetensors',
  },
  {
    key: 'large',
    target: 'models/large-target.safetensors',
    draft: 'models/large-draft.safetensors',
    self: 'models/large-target-int8.safetensors',
  },
].filter((p) => !opt.only || p.key === opt.only);

console.log(
  `\n### The float target drafted by its own 8-bit copy (${CPU}; ${REPEATS} repeat(s), ${MAX_TOKENS} tokens per prompt)\n`,
);
console.log(
  '| pair | threads | T | plain ms/token | distilled draft: γ, α, c, ms/token (× plain) | 8-bit copy: γ, α, c, ms/token (× plain) |',
);
console.log('|---|---|---|---|---|---|');
for (const pair of PAIRS) {
  const target = load(pair.target),
    draft = load(pair.draft),
    self = load(pair.self);
  for (const temperature of [0, 0.8]) {
    process.stderr.write(`  ${pair.key}, T = ${temperature}\n`);
    const a = M.benchDecodeByThreads(target, draft, THREADS, 6, temperature, MAX_TOKENS, REPEATS);
    const b = M.benchDecodeByThreads(target, self, THREADS, 8, temperature, MAX_TOKENS, REPEATS);
    for (let i = 0; i < THREADS.length; i++) {
      const plain = a[i].plainMsPerToken.median;
      const cellOf = (d) => {
        const g = d.bestGamma,
          ms = d.specMsPerToken[g - 1].median;
        return `γ ${g}, α ${f(d.alpha[g - 1], 2)}, c ${f(d.draftStepMs.median / plain, 2)}, ${f(ms)} (${f(plain / ms, 2)}×)`;
      };
      console.log(`| ${pair.key} | ${THREADS[i]} | ${temperature} | ${f(plain)} | ${cellOf(a[i])} | ${cellOf(b[i])} |`);
    }
  }
  target.delete();
  draft.delete();
  self.delete();
}
M.PThread?.terminateAllThreads?.();
process.exit(0);
