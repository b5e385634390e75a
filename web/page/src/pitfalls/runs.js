// The pitfalls lab's seeded runs (section 5), executed in the Web Worker (worker.js, message
// 'pitfall'): each card's correct and broken variants, on the lesson's toy distributions and
// on the real pair. Correct rules are the library's (sd.speculativeVerify, sd.createDecoder);
// the broken ones come from pitfalls/broken.js. Every random number comes from a seeded
// sd.createRng or a seeded decoder, so the same seed gives the same counts, α and tokens per
// pass; only wall-clock times (and so the measured speedups) vary from run to run.
import { derangement, permutedVocabularyDraft, verifyResamplingFromP } from './broken.js';
import { chiSquareTest, histogramTV, noiseTV, sampleToken } from './stats.js';
import { HELD_OUT_PASSAGE } from '../shared/presets.js';

/** The lesson's toy pairs: "Verify a Draft" (4 tokens) and "A Full Decode Loop" (6 tokens). */
export const TOY4 = { p: [0.5, 0.3, 0.15, 0.05], q: [0.4, 0.4, 0.15, 0.05] };
export const TOY6 = { p: [0.4, 0.25, 0.15, 0.1, 0.06, 0.04], q: [0.3, 0.3, 0.2, 0.1, 0.06, 0.04] };

/** Settings shared by the cards (the page quotes them). */
export const LAB = {
  rounds: 20000, // verification rounds per histogram
  gamma: 4, // draft tokens per round / iteration
  toyTemperature: 0.7, // temperature-mismatch: the temperature asked for...
  brokenDraftTemperature: 1, // ...and the one the broken draft samples at (never set)
  temperature: 0.8, // the real pair's sampling temperature
  context: 'ROMEO:\nWhat ', // the real pair's prompt: the histograms are of the token after it
  tokens: 96, // tokens per decode run on the real pair
  sweep: [1, 2, 3, 4, 5, 6, 8, 10, 12, 16], // γ measured by gamma-too-large
  largeGamma: 16, // gamma-too-large's broken γ
};

export class Cancelled extends Error {
  constructor() {
    super('cancelled');
    this.name = 'Cancelled';
  }
}

/**
 * Derives a card's seed from the lab's seed, so that cards do not share random streams:
 * FNV-1a of the card's name, mixed with the seed (an integer below 2^53).
 */
export function cardSeed(seed, card) {
  let h = 0x811c9dc5;
  for (let i = 0; i < card.length; i++) h = Math.imul(h ^ card.charCodeAt(i), 0x01000193);
  return (Number(seed) * 4096 + ((h >>> 0) % 4096)) % 2 ** 53;
}

/**
 * The next-token distribution after `context`, after the sampling settings, as the library
 * computes it: the first target row of a one-step plain decoder over a model or a step function.
 * @param {object} sd
 * @param {{ target?: object, targetStep?: Function }} source
 */
function rowAfter(sd, source, context, temperature) {
  const dec = sd.createDecoder({ ...source, plain: true, prompt: context, temperature, seed: 0 });
  try {
    return dec.step().targetProbs[0];
  } finally {
    dec.dispose();
  }
}

/**
 * Histogram rounds on fixed rows: each round, the draft samples `gamma` tokens from `sampleRow`
 * and `verify` (the library's or a broken one) checks them against the target row p (every
 * position) and the draft row it is told (`draftRow`). With context-free rows (the toys) every
 * emitted token of a correct rule is an independent draw from p, so all are counted; with
 * `firstOnly` (the real pair's rows at one context, gamma = 1) only the first emitted token,
 * the one those rows decide: the bonus row is then a placeholder (p) whose draw is not counted.
 */
async function histogramRounds(sd, o, hooks) {
  const { p, draftRow, sampleRow = draftRow, gamma, rounds, seed, verify, firstOnly = false } = o;
  const P = Float32Array.from(p);
  const Q = Float32Array.from(draftRow);
  const targetRows = Array.from({ length: gamma + 1 }, () => P);
  const draftRows = Array.from({ length: gamma }, () => Q);
  const counts = new Array(P.length).fill(0);
  const tokens = new Array(gamma);
  let n = 0;
  let accepted = 0;
  let examined = 0;
  const rng = sd.createRng(seed);
  try {
    for (let r = 0; r < rounds; r++) {
      for (let g = 0; g < gamma; g++) tokens[g] = sampleToken(sampleRow, rng.uniform());
      const res = verify(targetRows, draftRows, tokens, rng);
      if (firstOnly) {
        counts[res.emitted[0]]++;
        n++;
      } else {
        for (const t of res.emitted) counts[t]++;
        n += res.emitted.length;
      }
      accepted += res.nAccepted;
      examined += Math.min(gamma, res.nAccepted + 1);
      if ((r + 1) % 1000 === 0) await hooks.tick(r + 1, rounds);
    }
  } finally {
    rng.dispose();
  }
  const test = chiSquareTest(counts, p);
  return {
    counts,
    n,
    rounds,
    gamma,
    test,
    tv: histogramTV(counts, p),
    noise: noiseTV(p, n),
    alpha: examined ? accepted / examined : NaN,
    tokensPerPass: n / rounds,
  };
}

/**
 * Decodes `tokens` tokens after the context with every configuration (and plain decoding, the
 * reference of the speedups), round robin, 8 tokens at a time each, so that a slow moment of a
 * shared machine hits them all alike. Times are the decoders' own (stats.ms: step() calls).
 * @param {{ key: string, options: object }[]} configs createDecoder options besides the target
 */
async function decodeRuns(sd, models, configs, o, hooks) {
  const all = o.plain === false ? [...configs] : [{ key: 'plain', options: { plain: true } }, ...configs];
  const decoders = [];
  try {
    for (const c of all) {
      decoders.push(
        sd.createDecoder({
          target: models.target,
          ...c.options,
          prompt: o.context,
          temperature: o.temperature,
          seed: o.seed,
          maxTokens: o.tokens,
          distributions: false,
        }),
      );
    }
    const CHUNK = 8;
    const generated = decoders.map(() => 0);
    // Each decoder's ms per token of each chunk after its first (which reads the prompt): the
    // plain decoder's should agree with each other (trust.js judgeChunks).
    const chunkMs = decoders.map(() => []);
    for (let goal = CHUNK; ; goal += CHUNK) {
      let pending = false;
      for (let i = 0; i < decoders.length; i++) {
        const dec = decoders[i];
        const before = generated[i];
        const t0 = performance.now();
        while (!dec.done && generated[i] < goal) generated[i] += dec.step().emitted.length;
        const n = generated[i] - before;
        if (goal > CHUNK && n > 0) chunkMs[i].push((performance.now() - t0) / n);
        if (!dec.done) pending = true;
        await hooks.tick(Math.min(goal, o.tokens), o.tokens); // between decoders: cancel gets through
      }
      if (!pending) break;
    }
    const out = {};
    all.forEach((c, i) => {
      const s = decoders[i].stats;
      out[c.key] = {
        alpha: s.acceptanceRate,
        tokensPerPass: s.tokensPerPass,
        msPerToken: s.msPerToken,
        generated: s.generated,
        targetPasses: s.targetPasses,
        draftPasses: s.draftPasses,
        draftMs: s.draftMs,
        targetMs: s.targetMs,
        chunkMs: chunkMs[i],
        text: decoders[i].generatedText,
      };
    });
    if (out.plain) for (const c of configs) out[c.key].speedup = out.plain.msPerToken / out[c.key].msPerToken;
    return out;
  } finally {
    for (const dec of decoders) dec.dispose();
  }
}

/** sd.modelStep(model), or an error that says the module lacks it. */
function modelStepOf(sd, model) {
  if (typeof sd.modelStep !== 'function') throw new Error('modelStep: not in this build of the specdec module');
  return sd.modelStep(model);
}

const UNIFORM = new Float32Array(256).fill(1 / 256);

/**
 * A draft that ignores the context: the target's average next-byte distribution over the
 * positions of a held-out Shakespeare passage (section 4's copy-heavy preset), all scored in one
 * pass of sd.modelStep(target) — a unigram model of what the target writes.
 */
function unigramOfTarget(sd, models) {
  const step = modelStepOf(sd, models.target);
  const tokens = sd.encode(HELD_OUT_PASSAGE);
  let rows;
  try {
    rows = step(tokens, tokens.length);
  } finally {
    step.dispose();
  }
  const V = rows.length / tokens.length;
  const out = new Float32Array(V);
  for (let r = 0; r < tokens.length; r++) for (let i = 0; i < V; i++) out[i] += rows[r * V + i] / tokens.length;
  // A floor keeps every byte possible, as a draft's softmax would; then renormalised.
  let total = 0;
  for (let i = 0; i < V; i++) total += out[i] += 1e-6;
  for (let i = 0; i < V; i++) out[i] /= total;
  return out;
}

/** The histogram part of a real-pair card, summarised for the page (the top tokens of p, the rest pooled). */
function realHistogram(sd, p, h, top = 12) {
  const order = Array.from(p, (v, i) => [v, i])
    .sort((a, b) => b[0] - a[0])
    .slice(0, top)
    .map(([, i]) => i);
  return { ...h, order, labels: order.map((i) => sd.tokenText(i)), vocab: p.length };
}

/**
 * Runs one card in one state.
 * @param {object} sd the worker's specdec instance
 * @param {{ target: object, draft: object } | null} models the real pair (null: not loaded)
 * @param {{ card: string, broken: boolean, seed: number, rounds?: number }} job
 * @param {{ progress(done: number, total: number, phase: string): void, cancelled(): boolean, yield(): Promise<void> }} io
 */
export async function runPitfall(sd, models, job, io) {
  const seed = cardSeed(job.seed, job.card);
  const rounds = job.rounds ?? LAB.rounds;
  let phase = '';
  const hooks = {
    async tick(done, total) {
      io.progress(done, total, phase);
      await io.yield();
      if (io.cancelled()) throw new Cancelled();
    },
  };
  const needModels = () => {
    if (!models) throw new Error('models are not loaded');
    return models;
  };
  const t0 = performance.now();
  const result = { card: job.card, broken: job.broken, seed: job.seed, rounds };
  const verify = (t, d, x, rng) => sd.speculativeVerify(t, d, x, rng);

  switch (job.card) {
    case 'resample-from-p': {
      phase = 'rounds';
      result.histogram = await histogramRounds(
        sd,
        {
          p: TOY4.p,
          draftRow: TOY4.q,
          gamma: LAB.gamma,
          rounds,
          seed,
          verify: job.broken ? verifyResamplingFromP : verify,
        },
        hooks,
      );
      result.histogram.labels = TOY4.p.map((_, i) => String(i));
      result.p = TOY4.p;
      break;
    }
    case 'temperature-mismatch': {
      // The toy's rows are the distributions at T = 1; the library applies the temperature.
      const at = (row, T) => Array.from(rowAfter(sd, { targetStep: () => row }, [0], T));
      const pT = at(TOY6.p, LAB.toyTemperature);
      const qT = at(TOY6.q, LAB.toyTemperature);
      // BROKEN ON PURPOSE when switched on: the draft samples from q at its own temperature
      // while the verifier is told q at the requested one (the mismatch is which row is sampled).
      const sampleRow = job.broken ? at(TOY6.q, LAB.brokenDraftTemperature) : qT;
      phase = 'rounds';
      result.histogram = await histogramRounds(
        sd,
        {
          p: pT,
          draftRow: qT,
          sampleRow,
          gamma: LAB.gamma,
          rounds,
          seed,
          verify,
        },
        hooks,
      );
      result.histogram.labels = pT.map((_, i) => String(i));
      result.p = pT;
      break;
    }
    case 'tokenizer-mismatch':
    case 'changes-quality': {
      const m = needModels();
      const o = { context: LAB.context, temperature: LAB.temperature, seed, tokens: LAB.tokens };
      let draftOptions;
      let dispose = () => {};
      if (job.card === 'tokenizer-mismatch' && job.broken) {
        const step = modelStepOf(sd, m.draft);
        dispose = () => step.dispose();
        const rng = sd.createRng(seed);
        const perm = derangement(256, rng);
        rng.dispose();
        draftOptions = { draftStep: permutedVocabularyDraft(step, perm) };
      } else if (job.card === 'changes-quality' && job.broken) {
        const unigram = unigramOfTarget(sd, m);
        draftOptions = { draftStep: () => unigram };
      } else {
        draftOptions = { draft: m.draft };
      }
      try {
        const p = rowAfter(sd, { target: m.target }, o.context, o.temperature);
        const q = rowAfter(
          sd,
          draftOptions.draft ? { target: draftOptions.draft } : { targetStep: draftOptions.draftStep },
          o.context,
          o.temperature,
        );
        phase = 'rounds';
        const h = await histogramRounds(sd, { p, draftRow: q, gamma: 1, rounds, seed, verify, firstOnly: true }, hooks);
        result.histogram = realHistogram(sd, p, h);
        result.p = Array.from(p);
        phase = 'decode';
        // tokenizer-mismatch reads out no speedup: no plain reference to time.
        const plain = job.card === 'changes-quality';
        const runs = await decodeRuns(
          sd,
          m,
          [{ key: 'spec', options: { ...draftOptions, gamma: LAB.gamma } }],
          { ...o, plain },
          hooks,
        );
        result.decode = runs;
      } finally {
        dispose();
      }
      break;
    }
    case 'draft-too-weak': {
      const m = needModels();
      const o = { context: LAB.context, temperature: LAB.temperature, seed, tokens: LAB.tokens };
      phase = 'decode';
      const options = job.broken ? { draftStep: () => UNIFORM } : { draft: m.draft };
      result.decode = await decodeRuns(sd, m, [{ key: 'spec', options: { ...options, gamma: LAB.gamma } }], o, hooks);
      break;
    }
    case 'gamma-too-large': {
      // The sweep does not depend on the switch: it picks which measured γ is read out.
      const m = needModels();
      const o = { context: LAB.context, temperature: LAB.temperature, seed, tokens: LAB.tokens };
      phase = 'sweep';
      const configs = LAB.sweep.map((g) => ({
        key: `g${g}`,
        options: { draft: m.draft, gamma: g },
      }));
      const runs = await decodeRuns(sd, m, configs, o, hooks);
      result.sweep = LAB.sweep.map((g) => ({ gamma: g, ...runs[`g${g}`] }));
      result.plain = runs.plain;
      // c: one draft pass in one-token target passes (for the lesson's formula beside the curve).
      const draftMs = result.sweep.reduce((a, r) => a + r.draftMs, 0);
      const draftPasses = result.sweep.reduce((a, r) => a + r.draftPasses, 0);
      result.c = draftMs / draftPasses / (runs.plain.targetMs / runs.plain.targetPasses);
      break;
    }
    default:
      throw new Error(`unknown pitfall card ${job.card}`);
  }
  // Decoded texts are shown only by changes-quality; keep the messages small otherwise.
  if (result.decode && job.card !== 'changes-quality') for (const r of Object.values(result.decode)) delete r.text;
  if (result.sweep) for (const r of result.sweep) delete r.text;
  if (result.plain) delete result.plain.text;
  result.ms = performance.now() - t0;
  return result;
}
