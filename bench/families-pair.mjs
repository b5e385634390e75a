// bench/families.mjs --pair TARGET+DRAFT (issue 40, item 8): does speculation pay on a real
// target shape with a real draft shape? In one process, both random-weight GGUF files loaded by
// specdec's WASM engine, at each thread count:
//   c, v(k)   the lesson's costs, measured with sd.modelStep after a 16-token prompt: the target's
//             pass over k = 1..6 new tokens (forward + softmax of the k rows, what a verify pass
//             asks) ÷ its one-token pass, and the draft's one-token pass ÷ the target's; medians of
//             --repeats rounds, every k in every round;
//   predicted the lesson's speed-up E(α, γ) / (γc + v(γ + 1)) at α 0.6 and 0.8, γ 1..5, from the
//             library's own sd.expectedAcceptedTokens / sd.speculativeSpeedup, and the best γ;
//   measured  one real speculative decode of the pair against plain decoding (same prompt, seed,
//             --tokens): random weights, so α is what the two random models happen to share.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { cell, median, stats } from './stats.mjs';

/** α values and draft lengths of the prediction table; the k of v(k) run to GAMMAS' last + 1. */
export const ALPHAS = [0.6, 0.8];
export const GAMMAS = [1, 2, 3, 4, 5];
const KS = Array.from({ length: GAMMAS.at(-1) + 1 }, (_, i) => i + 1);
const PROMPT = Array.from({ length: 16 }, (_, i) => 3 + ((i * 7) % 100));

/**
 * Parses "target+draft", each "shape" or "shape:type" (type q8_0 when left out).
 * @returns {{ shape: string, type: string }[] | string} the two, or what is wrong
 */
export function parsePair(spec, shapes, types) {
  const parts = spec.split('+');
  if (parts.length !== 2) return `--pair: TARGET+DRAFT, got ${spec}`;
  const pair = parts.map((p) => {
    const [shape, type = 'q8_0'] = p.split(':');
    return { shape, type };
  });
  for (const { shape, type } of pair) {
    if (!shapes.includes(shape)) return `--pair: unknown shape ${shape} (${shapes.join(', ')})`;
    if (!types.includes(type)) return `--pair: unknown type ${type} (${types.join(', ')})`;
  }
  return pair;
}

// The prompt and k more tokens (round r's own, so that no two passes ask the same tokens).
const sequence = (k, r) => [...PROMPT, ...Array.from({ length: k }, (_, i) => 200 + ((r * 37 + i * 13) % 1000))];

// ms of one pass of step over the k tokens after the prompt (the cache holds the prompt).
function timePass(step, k, r) {
  const s = sequence(k, r);
  const t0 = performance.now();
  step(s, k);
  return performance.now() - t0;
}

// One decode, timed after its first step (the prompt's pass, and the draft's, are not decoding).
function decode(sd, options) {
  const dec = sd.createDecoder({ prompt: PROMPT, seed: 1, distributions: false, ...options });
  dec.step();
  const first = dec.generatedTokens.length;
  const t0 = performance.now();
  while (!dec.done) dec.step();
  const ms = performance.now() - t0;
  const s = dec.stats;
  const out = {
    msPerToken: s.generated > first ? ms / (s.generated - first) : null, // null: all in the first step
    alpha: s.acceptanceRate,
    tokensPerPass: s.tokensPerPass,
    tokens: dec.generatedTokens,
  };
  dec.dispose();
  return out;
}

/** The costs at one thread count: medians of ms per pass, c and v(k). */
function measureCosts(sd, target, draft, repeats) {
  const tStep = sd.modelStep(target),
    dStep = sd.modelStep(draft);
  tStep(PROMPT);
  dStep(PROMPT);
  for (const k of KS) timePass(tStep, k, 0); // warm-up
  timePass(dStep, 1, 0);
  const byK = KS.map(() => []),
    draftMs = [];
  for (let r = 1; r <= repeats; r++) {
    for (const k of KS) byK[k - 1].push(timePass(tStep, k, r));
    for (let i = 0; i < 3; i++) draftMs.push(timePass(dStep, 1, r * 3 + i));
  }
  tStep.dispose();
  dStep.dispose();
  const t1 = median(byK[0]);
  return {
    targetMs: stats(byK[0]),
    draftMs: stats(draftMs),
    c: median(draftMs) / t1,
    v: byK.map((ms, i) => ({ k: i + 1, ms: stats(ms), v: median(ms) / t1 })),
  };
}

/** The lesson's prediction from measured c and v(k): speed-up by α and γ, and the best γ. */
function predict(sd, { c, v }) {
  return ALPHAS.map((alpha) => {
    const rows = GAMMAS.map((gamma) => ({
      gamma,
      expected: sd.expectedAcceptedTokens(alpha, gamma),
      speedup: sd.speculativeSpeedup(alpha, gamma, c, v[gamma].v),
      speedupV1: sd.speculativeSpeedup(alpha, gamma, c),
    }));
    const best = rows.reduce((a, b) => (b.speedup > a.speedup ? b : a)).gamma;
    return { alpha, rows, best };
  });
}

/**
 * In the child process: loads both files, measures at each thread count; returns the report.
 * @param {{ target: string, draft: string, threads: number[], repeats: number, tokens: number,
 *   temperatures: number[], gamma?: number }} args
 */
export async function pairChild({ target, draft, threads, repeats, tokens, temperatures, gamma }) {
  const { loadSpecdec } = await import('../web/lib/node.js');
  const sd = await loadSpecdec({ threads: Math.max(...threads) });
  const load = (file) => {
    const t0 = performance.now();
    const model = sd.loadModel(readFileSync(file));
    return { model, file: path.basename(file), loadMs: performance.now() - t0, weights: model.weights };
  };
  const t = load(target),
    d = load(draft);
  const out = { target: { ...t, model: undefined }, draft: { ...d, model: undefined }, runs: [] };
  for (const T of threads) {
    sd.setThreads(T);
    const costs = measureCosts(sd, t.model, d.model, repeats);
    const predictions = predict(sd, costs);
    const g = gamma ?? predictions.at(-1).best; // the best γ at the largest α
    const decodes = temperatures.map((temperature) => {
      const plain = decode(sd, { target: t.model, plain: true, temperature, maxTokens: tokens });
      const spec = decode(sd, { target: t.model, draft: d.model, gamma: g, temperature, maxTokens: tokens });
      return {
        temperature,
        gamma: g,
        plainMsPerToken: plain.msPerToken,
        specMsPerToken: spec.msPerToken,
        speedup: plain.msPerToken && spec.msPerToken ? plain.msPerToken / spec.msPerToken : null,
        alpha: spec.alpha,
        tokensPerPass: spec.tokensPerPass,
        predicted: sd.speculativeSpeedup(spec.alpha, g, costs.c, costs.v[g].v),
        sameTokens: temperature === 0 ? plain.tokens.join() === spec.tokens.join() : null,
      };
    });
    out.runs.push({ threads: T, ...costs, predictions, decodes });
  }
  t.model.dispose();
  d.model.dispose();
  return out;
}

/** Prints the child's report as markdown tables. */
export function printPair(r) {
  const f = (x, n = 2) => (x === null || x === undefined ? '–' : x.toFixed(n));
  console.log(
    `# target ${r.target.file} (${r.target.weights}, loaded in ${f(r.target.loadMs / 1e3, 1)} s), ` +
      `draft ${r.draft.file} (${r.draft.weights}, ${f(r.draft.loadMs / 1e3, 1)} s)`,
  );
  console.log(
    '\n## Costs: ms per pass after a 16-token prompt (median [min–max]), c and v(k) = pass over k ÷ pass over 1\n',
  );
  console.log(`| threads | target ms, 1 token | draft ms, 1 token | c | ${KS.map((k) => `v(${k})`).join(' | ')} |`);
  console.log(`|---|---|---|---|${KS.map(() => '---|').join('')}`);
  for (const x of r.runs)
    console.log(
      `| ${x.threads} | ${cell(x.targetMs, 1)} | ${cell(x.draftMs, 2)} | ${f(x.c, 3)} | ${x.v.map((y) => f(y.v)).join(' | ')} |`,
    );
  console.log('\n## Predicted speed-up E(α,γ) / (γc + v(γ+1)) from those costs (in brackets: with v = 1)\n');
  console.log(`| threads | α | ${GAMMAS.map((g) => `γ = ${g}`).join(' | ')} | best γ |`);
  console.log(`|---|---|${GAMMAS.map(() => '---|').join('')}---|`);
  for (const p of r.runs[0].predictions)
    console.log(`| E(α,γ) | ${p.alpha} | ${p.rows.map((y) => f(y.expected)).join(' | ')} | |`);
  for (const x of r.runs)
    for (const p of x.predictions)
      console.log(
        `| ${x.threads} | ${p.alpha} | ${p.rows.map((y) => `${f(y.speedup)} (${f(y.speedupV1)})`).join(' | ')} | ${p.best} |`,
      );
  console.log('\n## One real decode of the pair (random weights) against plain: ms per token after the first step\n');
  console.log(
    '| threads | temperature | γ | plain ms/token | speculative ms/token | speed-up | α measured | tokens/pass | predicted at that α | same tokens |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const x of r.runs)
    for (const d of x.decodes)
      console.log(
        `| ${x.threads} | ${d.temperature} | ${d.gamma} | ${f(d.plainMsPerToken, 1)} | ${f(d.specMsPerToken, 1)} | ` +
          `${f(d.speedup)} | ${f(d.alpha, 3)} | ${f(d.tokensPerPass)} | ${f(d.predicted)} | ${d.sameTokens ?? '–'} |`,
      );
}
