#!/usr/bin/env node
// The subword pair (models/subword-target.gguf, models/subword-draft.gguf) through the package's
// one model entry, sd.loadPretrained, as a learner's own files load; prints one JSON object:
//
//   node models/tools/subword_check.mjs [--ref REF.json] [--alpha] [--speed] [--lib web/lib/node.js]
//
// - roundTrip: the held-out tenth of the corpus (../shared/data/tinyshakespeare.txt) and a line
//   with characters the corpus lacks (é, €: byte fallback) encode and decode to themselves; with
//   --ref, the ids equal SentencePiece's own (REF.json from `python3 -m models.tools.subword ref`).
// - logits (--ref): the engine's next-token log-probabilities against PyTorch's at REF's
//   positions, max |difference| and max relative difference of the probabilities above 1e-3.
// - greedyEqual: 64 greedy tokens with the draft (gamma 4) equal 64 plain greedy tokens.
// - alpha (--alpha): real decoding, gamma 4, 16 held-out prompts of 64 characters, 120 new
//   tokens each, at T = 0 and 0.8: accepted / examined, and tokens per target pass.
// - speed (--speed): one thread, 200 tokens from "ROMEO:" at T = 0.8, plain and speculative
//   runs interleaved (5 of each after a warm-up): the median times and their ratio.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const lib = path.resolve(opt('--lib') ?? path.join(ROOT, 'web/lib/node.js'));
const { loadSpecdec } = await import(lib);
const sd = await loadSpecdec({ threads: 1 });
const load = (name) => sd.loadPretrained(readFileSync(path.join(ROOT, 'models', `subword-${name}.gguf`)));
const target = await load('target');
const draft = await load('draft');
const tok = target.tokenizer;
const corpus = readFileSync(path.join(ROOT, '..', 'shared', 'data', 'tinyshakespeare.txt'));
const heldOut = corpus.subarray(Math.floor(0.9 * corpus.length)).toString('utf8'); // data.py's split
const out = { lib: path.relative(ROOT, lib), tokenizer: tok.kind, addsBos: tok.addsBos };

// --- the tokenizer
const strip = (ids) => (ids[0] === tok.bosId ? ids.slice(1) : ids);
const extra = 'Café owner: “€5, señor?” — naïve 日本\n';
const heldIds = strip([...tok.encode(heldOut)]);
out.roundTrip = {
  heldOutChars: heldOut.length,
  heldOutTokens: heldIds.length,
  charsPerToken: +(heldOut.length / heldIds.length).toFixed(3),
  heldOut: tok.decode(heldIds) === heldOut,
  extra: tok.decode(strip([...tok.encode(extra)])) === extra,
};
const ref = opt('--ref') && JSON.parse(readFileSync(opt('--ref'), 'utf8'));
if (ref) {
  out.roundTrip.idsEqualSentencePiece =
    ref.heldOutIds.length === heldIds.length && ref.heldOutIds.every((v, i) => v === heldIds[i]);
  out.logits = {};
  for (const [name, model] of [
    ['target', target],
    ['draft', draft],
  ]) {
    const step = sd.modelStep(model);
    const n = ref.logp[name].length;
    const probs = step(ref.ids, n);
    step.dispose();
    let maxAbs = 0;
    let maxRel = 0;
    const V = probs.length / n;
    for (let r = 0; r < n; r++) {
      for (let v = 0; v < V; v++) {
        const p = probs[r * V + v];
        const q = Math.exp(ref.logp[name][r][v]);
        maxAbs = Math.max(maxAbs, Math.abs(Math.log(p) - ref.logp[name][r][v]));
        if (q > 1e-3) maxRel = Math.max(maxRel, Math.abs(p - q) / q);
      }
    }
    out.logits[name] = {
      positions: n,
      maxAbsLogProbDiff: +maxAbs.toExponential(2),
      maxRelProbDiff: +maxRel.toExponential(2),
    };
  }
}

// --- decoding
const run = (o) => {
  const dec = sd.createDecoder({ target, gamma: 4, distributions: false, ...o });
  while (!dec.done) dec.step();
  const r = { tokens: dec.generatedTokens, stats: dec.stats };
  dec.dispose();
  return r;
};
const plain = run({ prompt: 'ROMEO:', plain: true, temperature: 0, maxTokens: 64 });
const spec = run({ prompt: 'ROMEO:', draft, temperature: 0, maxTokens: 64 });
out.greedyEqual = plain.tokens.length === 64 && plain.tokens.every((t, i) => t === spec.tokens[i]);
out.sample = tok.decode(spec.tokens);

if (args.includes('--alpha')) {
  out.alpha = {};
  const prompts = Array.from({ length: 16 }, (_, i) =>
    heldOut.slice(Math.floor((i * heldOut.length) / 16)).slice(0, 64),
  );
  for (const temperature of [0, 0.8]) {
    let accepted = 0;
    let examined = 0;
    let generated = 0;
    let passes = 0;
    prompts.forEach((prompt, i) => {
      const { stats } = run({ prompt, draft, temperature, seed: i + 1, maxTokens: 120 });
      [accepted, examined] = [accepted + stats.accepted, examined + stats.examined];
      [generated, passes] = [generated + stats.generated, passes + stats.targetPasses];
    });
    out.alpha[`T${temperature}`] = {
      alpha: +(accepted / examined).toFixed(3),
      tokensPerPass: +(generated / passes).toFixed(2),
    };
  }
}

if (args.includes('--speed')) {
  const o = { prompt: 'ROMEO:', temperature: 0.8, seed: 3, maxTokens: 200 };
  const time = (extra) => {
    const t0 = performance.now();
    const r = run({ ...o, ...extra });
    return { ms: performance.now() - t0, tokens: r.tokens.length, perPass: r.stats.tokensPerPass };
  };
  time({ plain: true });
  time({ draft });
  const plainMs = [];
  const specMs = [];
  let last;
  for (let i = 0; i < 5; i++) {
    plainMs.push(time({ plain: true }).ms);
    last = time({ draft });
    specMs.push(last.ms);
  }
  const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
  out.speed = {
    threads: 1,
    tokens: last.tokens,
    plainMs: +median(plainMs).toFixed(1),
    speculativeMs: +median(specMs).toFixed(1),
    speedup: +(median(plainMs) / median(specMs)).toFixed(2),
    tokensPerPass: +last.perPass.toFixed(2),
  };
}
console.log(JSON.stringify(out, null, 1));
