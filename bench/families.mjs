#!/usr/bin/env node
// The models people have, at their real sizes (issue 40): random-weight checkpoints with the
// shapes of SmolLM2-135M / -360M, TinyLlama-1.1B and llama-68m, as GGUF files or (--formats hf)
// Hugging Face folders of F32 tensors, type q8_0 then loading them with weights: 'int8'
// (tests/fixtures/makers/random_gguf.mjs; written once into .cache/families/, git-ignored), loaded by specdec's WASM engine under Node, each in a fresh
// process so that its wasm memory is its own:
//   read     ms to read the file's bytes (fs.readFile, the page cache warm after the first run),
//   load     ms of sd.loadModel(bytes) (the file is streamed into the model a tensor at a time),
//            and its ratio to read,
//   memory   the wasm memory after loading (it never shrinks: the load's high-water mark)
//            against the weights the model holds (model.weightBytes),
//   decode   plain greedy decoding, ms per token over --tokens tokens after a 16-token prompt,
//            at each thread count (the threaded build in Node).
//
//   node bench/families.mjs [--shapes smollm2-135m,smollm2-360m] [--types f32,q8_0]
//                           [--formats gguf,hf] [--threads 1,2] [--tokens 32] [--json FILE]
//
// --pair TARGET+DRAFT (e.g. tinyllama-1.1b+llama-68m; SHAPE:TYPE, type q8_0 when left out):
// instead, both GGUF files in one process, at each thread count, the lesson's costs c and v(1..6),
// its predicted speed-up at α 0.6 / 0.8 for γ 1..5 with the best γ, and one real speculative
// decode of the pair (γ: --gamma, or the best at α 0.8) against plain at each --temperatures
// (bench/families-pair.mjs):
//   node bench/families.mjs --pair tinyllama-1.1b+llama-68m [--threads 1,2] [--repeats 9]
//                           [--tokens 16] [--temperatures 0,1] [--gamma G] [--json FILE]
//
// --help prints this comment.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT, benchOptions, cpuName, failWith, writeJson } from './common.mjs';
import { FAMILY_OPTIONS, familyRun } from './families-options.mjs';
import { writeRandomLlamaFolder, writeRandomLlamaGguf } from '../tests/fixtures/makers/random_gguf.mjs';
import { TINYLLAMA } from '../tests/fixtures/makers/zero_files.mjs';
import { pairChild, parsePair, printPair } from './families-pair.mjs';

// config.json fields of the published checkpoints (src/model/families-design.md §2.1).
const SHAPES = {
  'smollm2-135m': {
    hidden_size: 576,
    intermediate_size: 1536,
    num_hidden_layers: 30,
    num_attention_heads: 9,
    num_key_value_heads: 3,
    vocab_size: 49152,
    tie_word_embeddings: true,
    rope_theta: 100000,
    rms_norm_eps: 1e-5,
    max_position_embeddings: 8192,
  },
  'smollm2-360m': {
    hidden_size: 960,
    intermediate_size: 2560,
    num_hidden_layers: 32,
    num_attention_heads: 15,
    num_key_value_heads: 5,
    vocab_size: 49152,
    tie_word_embeddings: true,
    rope_theta: 100000,
    rms_norm_eps: 1e-5,
    max_position_embeddings: 8192,
  },
  'tinyllama-1.1b': TINYLLAMA, // tests/fixtures/makers/zero_files.mjs (bench/big-file.mjs's shape)
  'llama-68m': {
    hidden_size: 768,
    intermediate_size: 3072,
    num_hidden_layers: 2,
    num_attention_heads: 12,
    num_key_value_heads: 12,
    vocab_size: 32000,
    tie_word_embeddings: false,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    max_position_embeddings: 2048,
  },
};
const CONTEXT = 2048; // the context written into the files (the KV cache the model allocates)

const fail = failWith('families');
const opt = benchOptions({
  ...FAMILY_OPTIONS,
  types: 'f32,q8_0',
  formats: 'gguf',
  tokens: undefined, // 32; 16 with --pair
  pair: undefined,
  repeats: '9',
  temperatures: '0,1',
  gamma: undefined,
  help: false,
});
if (opt.help) {
  // The usage: this file's opening comment.
  const text = readFileSync(new URL(import.meta.url), 'utf8');
  console.log(text.slice(text.indexOf('\n') + 1, text.indexOf('\nimport ')).replace(/^\/\/ ?/gm, ''));
  process.exit(0);
}

/**
 * Writes (once) the random-weight checkpoint of a shape: a GGUF file of a type, or (format hf) a
 * Hugging Face folder of F32 tensors; returns its path.
 */
function ensureFile(shape, type, format) {
  const dir = path.join(ROOT, '.cache', 'families');
  const file = path.join(dir, format === 'hf' ? `${shape}-hf` : `${shape}-${type}.gguf`);
  if (existsSync(file)) return file;
  mkdirSync(dir, { recursive: true });
  const c = { ...SHAPES[shape], model_type: 'llama', bos_token_id: 1, eos_token_id: 2 };
  const t0 = performance.now();
  const bytes =
    format === 'hf'
      ? writeRandomLlamaFolder(file, { ...c, max_position_embeddings: CONTEXT })
      : writeRandomLlamaGguf(file, c, type, CONTEXT);
  console.error(
    `# wrote ${path.relative(ROOT, file)} (${(bytes / 1e6).toFixed(0)} MB, ${((performance.now() - t0) / 1e3).toFixed(1)} s)`,
  );
  return file;
}

// A checkpoint's bytes as loadModel takes them: a GGUF file's, or a folder's files by name.
function readCheckpoint(file) {
  if (!statSync(file).isDirectory()) return readFileSync(file);
  return Object.fromEntries(['config.json', 'model.safetensors'].map((n) => [n, readFileSync(path.join(file, n))]));
}
const sizeOf = (file) =>
  statSync(file).isDirectory()
    ? ['config.json', 'model.safetensors'].reduce((n, f) => n + statSync(path.join(file, f)).size, 0)
    : statSync(file).size;

/** In a child process: load one file, measure, decode at each thread count; prints JSON. */
async function child({ file, threads, tokens, weights }) {
  const { loadSpecdec } = await import('../web/lib/node.js');
  const name = path.basename(file) + (weights ? ` (${weights} at load)` : '');
  const out = { file: name, bytes: sizeOf(file), runs: [] };
  const maxT = Math.max(...threads);
  const sd = await loadSpecdec({ threads: maxT });
  let t0 = performance.now();
  const bytes = readCheckpoint(file);
  out.readMs = performance.now() - t0;
  t0 = performance.now();
  const model = sd.loadModel(bytes, weights ? { weights } : undefined);
  out.loadMs = performance.now() - t0;
  out.heapBytes = sd.memoryStats().heapBytes;
  out.weightBytes = model.weightBytes;
  out.weights = model.weights;
  const prompt = Array.from({ length: 16 }, (_, i) => 3 + ((i * 7) % 100));
  for (const T of threads) {
    sd.setThreads(T);
    const dec = sd.createDecoder({
      target: model,
      plain: true,
      prompt,
      temperature: 0,
      maxTokens: tokens + 1,
      seed: 1,
    });
    dec.step(); // the prompt's pass
    const start = performance.now();
    while (!dec.done) dec.step();
    const ms = performance.now() - start;
    out.runs.push({ threads: T, msPerToken: ms / (dec.generatedTokens.length - 1) });
    dec.dispose();
  }
  model.dispose();
  console.log(JSON.stringify(out));
}

if (opt.child) {
  const args = JSON.parse(opt.child);
  if (args.pair) console.log(JSON.stringify(await pairChild(args)));
  else await child(args);
  process.exit(0);
}

// Runs this script with --child ARGS in a fresh process; returns the JSON it prints last.
function runChild(args) {
  const json = execFileSync(process.execPath, [new URL(import.meta.url).pathname, '--child', JSON.stringify(args)], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(json.trim().split('\n').pop());
}

const { shapes, threads, tokens, repeats } = familyRun(opt, fail, opt.pair ? 16 : 32);
const types = opt.types.split(',');
const formats = opt.formats.split(',');
for (const f of formats) if (!['gguf', 'hf'].includes(f)) fail(`--formats: unknown format ${f} (gguf, hf)`);
for (const s of shapes) if (!SHAPES[s]) fail(`--shapes: unknown shape ${s} (${Object.keys(SHAPES).join(', ')})`);
for (const t of types) if (!['f32', 'q8_0'].includes(t)) fail(`--types: unknown type ${t} (f32, q8_0)`);

if (opt.pair) {
  const pair = parsePair(opt.pair, Object.keys(SHAPES), ['f32', 'q8_0']);
  if (typeof pair === 'string') fail(pair);
  const temperatures = opt.temperatures.split(',').map(Number);
  const gamma = opt.gamma === undefined ? undefined : Number(opt.gamma);
  if (!temperatures.every((t) => t >= 0)) fail(`--temperatures: numbers >= 0, got ${opt.temperatures}`);
  if (gamma !== undefined && !(Number.isInteger(gamma) && gamma >= 1 && gamma <= 5))
    fail(`--gamma: an integer in 1..5, got ${opt.gamma}`);
  const [target, draft] = pair.map(({ shape, type }) => ensureFile(shape, type, 'gguf'));
  const cpu = cpuName();
  console.log(`# specdec's WASM engine (Node ${process.version}): speculative decoding on real shapes, random weights`);
  console.log(`# ${cpu}; ${repeats} repeats; decodes of ${tokens} tokens after a 16-token prompt`);
  const r = runChild({ pair: true, target, draft, threads, repeats, tokens, temperatures, gamma });
  printPair(r);
  writeJson(opt.json, { cpu, date: new Date().toISOString(), pair: opt.pair, repeats, tokens, ...r });
  process.exit(0);
}

const report = { cpu: cpuName(), date: new Date().toISOString(), tokens, results: [] };
console.log(
  `# specdec's WASM engine (Node ${process.version}) on random-weight checkpoints of real shapes (${formats.join(', ')})`,
);
console.log(`# ${report.cpu}; plain greedy decoding, ${tokens} tokens after a 16-token prompt`);
console.log(
  '| file | MB | read ms | load ms | load / read | weights MB | wasm memory MB | memory / weights | ' +
    threads.map((t) => `ms/token ${t}T`).join(' | ') +
    ' |',
);
console.log('|---|---|---|---|---|---|---|---|' + threads.map(() => '---|').join(''));
const runs = shapes.flatMap((shape) =>
  formats.flatMap((format) =>
    // A folder holds F32: type q8_0 loads it with weights: 'int8' (quantized while streaming).
    types.map((type) => ({ shape, type, format, weights: format === 'hf' && type === 'q8_0' ? 'int8' : undefined })),
  ),
);
for (const { shape, type, format, weights } of runs) {
  const file = ensureFile(shape, type, format);
  const r = runChild({ file, threads, tokens, weights });
  report.results.push({ shape, type, format, ...r });
  const mb = (b) => (b / 1e6).toFixed(0);
  console.log(
    `| ${r.file} | ${mb(r.bytes)} | ${r.readMs.toFixed(0)} | ${r.loadMs.toFixed(0)} | ${(r.loadMs / r.readMs).toFixed(2)} | ${mb(r.weightBytes)} (${r.weights}) | ${mb(r.heapBytes)} | ${(r.heapBytes / r.weightBytes).toFixed(2)} | ` +
      r.runs.map((x) => x.msPerToken.toFixed(1)).join(' | ') +
      ' |',
  );
}
writeJson(opt.json, report);
