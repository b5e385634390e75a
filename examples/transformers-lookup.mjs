// Prompt lookup over a transformers.js model, with NO draft model: specdec proposes the tokens
// that followed an earlier occurrence of the text's last few tokens, the model checks them in
// one pass, and the output is exactly the model's own (greedy: generate()'s tokens; sampled:
// its law). With gamma 'auto' specdec measures, on every iteration, how often lookup's proposal
// would have been right, and takes plain steps where it would not pay: on text that repeats
// itself it is faster than generate(); on ordinary text it costs little. Nothing is fetched
// from a hub. First make the model folder (or pass --model DIR, a transformers.js folder):
//   /usr/bin/python3 -m models.tools.make_transformers_model models/target.safetensors build-transformers/target
//   node examples/transformers-lookup.mjs [--model DIR] [--temperature 0.8]
//   node examples/transformers-lookup.mjs --compare [--repeats 3] [--tokens 80]   (vs generate())
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { AutoModelForCausalLM, AutoTokenizer, env } from '@huggingface/transformers';
import { loadSpecdec } from 'specdec';
import { transformersScorer } from 'specdec/transformers';

const { values: opt } = parseArgs({
  options: {
    model: { type: 'string', default: 'build-transformers/target' },
    temperature: { type: 'string', default: '0' },
    compare: { type: 'boolean', default: false },
    repeats: { type: 'string', default: '3' },
    tokens: { type: 'string', default: '80' },
  },
});
const dir = path.resolve(opt.model);
const missing = ['config.json', 'tokenizer.json', 'onnx/model.onnx'].filter((f) => !existsSync(path.join(dir, f)));
if (missing.length) {
  console.error(
    `transformers-lookup: the model folder ${opt.model} lacks ${missing.join(', ')}.\n` +
      'Make it from the shipped target first:\n' +
      '  /usr/bin/python3 -m models.tools.make_transformers_model models/target.safetensors build-transformers/target\n' +
      'or pass --model DIR, a transformers.js model folder (config.json, tokenizer.json, onnx/model.onnx).',
  );
  process.exit(1);
}

env.allowRemoteModels = false;
env.localModelPath = `${path.dirname(dir)}/`;
const name = path.basename(dir);
// One intra-op thread; in a browser: device 'wasm' or 'webgpu', dtype 'fp16', 'q4', ...
const options = {
  dtype: 'fp32',
  device: 'cpu',
  session_options: { intraOpNumThreads: 1, interOpNumThreads: 1 },
};
const tokenizer = await AutoTokenizer.from_pretrained(name);
const model = await AutoModelForCausalLM.from_pretrained(name, options);
const sd = await loadSpecdec();
const contextLength = model.config.n_positions ?? model.config.max_position_embeddings;

// Decodes `maxTokens` after `prompt` with prompt lookup alone; returns { generated, ms, stats }.
async function lookup(prompt, temperature, seed, maxTokens, onText) {
  const score = transformersScorer(model, { tokenizer });
  const dec = sd.createDecoder({
    prompt: score.encode(prompt),
    targetScore: score,
    promptLookup: true,
    gamma: 'auto',
    temperature,
    seed,
    maxTokens,
    contextLength,
    distributions: false,
  });
  const text = score.textStream();
  const t0 = performance.now();
  for await (const it of dec.generate()) onText?.(text.push(it.emitted));
  const ms = performance.now() - t0;
  onText?.(text.end());
  const stats = dec.stats;
  const cutMs = score.cutMs; // cutting the cache after rejected drafts (inside the target passes' time)
  dec.dispose();
  await score.dispose();
  return { generated: stats.generated, ms, stats, cutMs };
}

// transformers.js's own generate() on the same prompt: greedy, or sampled at `temperature`.
async function generate(prompt, temperature, maxTokens) {
  const inputs = tokenizer(prompt);
  const sampling = temperature ? { do_sample: true, temperature, top_k: 0 } : { do_sample: false };
  const t0 = performance.now();
  const out = await model.generate({ ...inputs, max_new_tokens: maxTokens, ...sampling });
  return { generated: out.dims.at(-1) - inputs.input_ids.dims[1], ms: performance.now() - t0 };
}

const COPY_PROMPT =
  "KING HENRY:\nOnce more unto the breach, dear friends, once more;\nOr close the wall up with our English dead.\nIn peace there's nothing so becomes a man\nKING HENRY:\nOnce more";

if (!opt.compare) {
  const T = Number(opt.temperature);
  const r = await lookup(COPY_PROMPT, T, 1, 120, (s) => process.stdout.write(s));
  const s = r.stats;
  console.log(
    `\n\n${s.generated} tokens, ${s.tokensPerPass.toFixed(2)} per model pass, ${s.byDrafter.lookup} lookup drafts and ${s.byDrafter.none} plain steps, ${(r.ms / s.generated).toFixed(2)} ms/token`,
  );
  process.exit(0);
}

// --compare: lookup vs generate() on copy-heavy prompts (a held-out passage followed by its own
// first 20 bytes) and on ordinary ones, at T = 0, 0.8 and 1; the two run alternately (each
// first on half the prompts), and each ratio is tokens/s over the same prompts in the same
// repeat. The passages come from the end of ../shared/data/tinyshakespeare.txt (never trained
// on) when it is there.
const N = Number(opt.tokens);
const REPEATS = Number(opt.repeats);
const corpus = path.resolve('../shared/data/tinyshakespeare.txt');
const heldOut = existsSync(corpus)
  ? readFileSync(corpus, 'latin1').slice(Math.floor(0.9 * readFileSync(corpus).length))
  : null;
const passage = (i, len) => {
  if (!heldOut) return `${COPY_PROMPT.slice(i * 7)}${COPY_PROMPT}`.slice(0, len);
  let at = Math.floor(((i + 0.5) / 4) * (heldOut.length - 4 * len));
  while (heldOut[at - 1] !== '\n') at++;
  return heldOut.slice(at, at + len);
};
const tasks = {
  'copy-heavy': [0, 1, 2, 3].map((i) => passage(i, 150) + passage(i, 150).slice(0, 20)),
  ordinary: [0, 1, 2, 3].map((i) => passage(i + 0.3, 64)),
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
console.log(
  `# Prompt lookup alone vs transformers.js generate() — ${os.cpus()[0]?.model}, ${os.cpus().length} vCPU, Node ${process.version}, onnxruntime-node 1 thread, fp32`,
);
console.log(
  `4 prompts × ${N} tokens per task, ${REPEATS} repeats alternated; ratio = lookup tokens/s / generate() tokens/s in the same repeat, median [min–max]; load average at the start ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' / ')} (1 / 5 / 15 min).\n`,
);
console.log(
  '| T | task | generate() tok/s | lookup tok/s | × generate() | per repeat | tokens per pass | lookup drafts / plain steps | cache cuts, % of target-pass time | load (1 min) |\n|---|---|---|---|---|---|---|---|---|---|',
);
await generate('A', 0, 8); // warm-up
await lookup('A', 0, 1, 8);
for (const T of [0, 0.8, 1]) {
  for (const [task, prompts] of Object.entries(tasks)) {
    const ratios = [],
      gen = [],
      look = [];
    let passes = 0,
      generated = 0,
      drafts = 0,
      plains = 0,
      cutMs = 0,
      targetMs = 0;
    for (let r = 0; r < REPEATS; r++) {
      let gt = 0,
        gms = 0,
        lt = 0,
        lms = 0;
      for (const [i, p] of prompts.entries()) {
        // Alternate which runs first: the second may pay for the first's garbage collection.
        const g0 = (r + i) % 2 ? null : await generate(p, T, N);
        const l = await lookup(p, T, 100 * r + i, N);
        const g = g0 ?? (await generate(p, T, N));
        ((gt += g.generated), (gms += g.ms), (lt += l.generated), (lms += l.ms));
        ((passes += l.stats.targetPasses), (generated += l.stats.generated));
        ((drafts += l.stats.byDrafter.lookup), (plains += l.stats.byDrafter.none));
        ((cutMs += l.cutMs), (targetMs += l.stats.targetMs));
      }
      gen.push((1000 * gt) / gms);
      look.push((1000 * lt) / lms);
      ratios.push(look.at(-1) / gen.at(-1));
    }
    const cell = (xs, d) => `${median(xs).toFixed(d)} [${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}]`;
    const load = os.loadavg()[0].toFixed(1);
    console.log(
      `| ${T} | ${task} | ${median(gen).toFixed(1)} | ${median(look).toFixed(1)} | **${cell(ratios, 2)}** | ${ratios.map((x) => x.toFixed(2)).join(' ')} | ${(generated / passes).toFixed(2)} | ${drafts} / ${plains} | ${((100 * cutMs) / targetMs).toFixed(1)} | ${load} |`,
    );
  }
}
