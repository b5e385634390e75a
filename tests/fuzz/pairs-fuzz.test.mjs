// A hostile pass over pairs and the decoder's options (issue 57): random targets and drafts
// (built-in models of 80 and 256 tokens, step functions and score callbacks of random widths,
// some disagreeing), random options at and past their edges (budgets past 2^32, gammas, trees,
// temperatures and topP too small or too large for a float, stop tokens, prompts outside the
// vocabulary) and random ways of ending generate(). Every error must be a SpecdecError whose
// message starts with the option, source or method it is about; a run that goes must keep its
// prompt, its budget, its stop tokens and the target's vocabulary; a loop that ends frees the
// decoder for the next. A fixed seed; a few seconds. Run: node --test
// tests/fuzz/pairs-fuzz.test.mjs (FUZZ_CASES=N for more, FUZZ_SEED=S for another sequence).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadSpecdec, SpecdecError } from 'specdec';
import { TINY_MODEL, familyFiles } from '../js/support.mjs';
import { seeded } from './seeded.mjs';
import { DECODER_OPTIONS } from '../../web/lib/decoder/options.js';

const CASES = Number(process.env.FUZZ_CASES ?? 300);
const { int, pick, chance } = seeded(Number(process.env.FUZZ_SEED ?? 0x2545f491));

const sd = await loadSpecdec();
const models = {
  80: await sd.loadModel(familyFiles('llama')),
  256: await sd.loadModel(readFileSync(TINY_MODEL)),
};

// What an error may start with: an option, a source or a method of the decoder.
const NAMES = new Set([...DECODER_OPTIONS, 'createDecoder', 'options', 'Decoder', 'generate']);
// The numbers the caller gave, as JS writes them: a refusal's "got X" must be one of them (not
// the value a narrowing made of it: -2147483648 for 2^32 + 4, inf for 1e300, 0 for 1e-300).
const numbersIn = (x, out = new Set()) => {
  if (typeof x === 'number' || typeof x === 'bigint') out.add(Object.is(x, -0) ? '-0' : String(x));
  else if (Array.isArray(x) || (x?.constructor === Object && x !== null))
    for (const v of Object.values(x)) numbersIn(v, out);
  return out;
};
function checkError(e, what, o) {
  assert.ok(e instanceof SpecdecError, `${what}: not a SpecdecError: ${e?.stack ?? e}`);
  const head = /^([A-Za-z]+)/.exec(e.message)?.[1];
  assert.ok(NAMES.has(head), `${what}: the message names no option: ${e.message}`);
  const got = /got (?:number )?(\S+)$/.exec(e.message)?.[1];
  if (got !== undefined && /^-?[\d.]|^(nan|inf|NaN|Infinity)$/.test(got))
    assert.ok(numbersIn(o).has(got), `${what}: the message shows ${got}, not a value given: ${e.message}`);
}

// Uniform-ish rows over `width` ids (deterministic in the tokens).
const rowOf = (width, tokens) => {
  const row = new Float32Array(width);
  const last = tokens[tokens.length - 1] ?? 0;
  for (let i = 0; i < width; i++) row[i] = 1 + ((i * 7 + last * 3 + tokens.length) % 5);
  const sum = row.reduce((a, b) => a + b, 0);
  return row.map((v) => v / sum);
};

// A source for role: [options, its width, whether the width is known before the first pass].
function source(role) {
  const width = pick([4, 16, 80, 256, 257]);
  switch (int(4)) {
    case 0:
    case 1: {
      const w = pick([80, 256]);
      return [{ [role]: models[w] }, w, true];
    }
    case 2:
      return [{ [`${role}Step`]: (tokens) => rowOf(width, tokens) }, width, false];
    default: {
      const async = chance(0.3);
      const score = (tokens, nLast) => {
        const out = new Float32Array(nLast * width);
        for (let r = 0; r < nLast; r++)
          out.set(rowOf(width, tokens.subarray(0, tokens.length - nLast + r + 1)), r * width);
        return async ? Promise.resolve(out) : out;
      };
      return [{ [`${role}Score`]: score, scoreOutput: 'probs' }, width, false];
    }
  }
}

const EDGES = {
  gamma: [1, 4, 32, 0, 33, -1, 2 ** 31, 2 ** 32 + 4, 1.5, 'auto', 'heuristic', 'x', NaN],
  gammaMax: [1, 8, 32, 33, 0, 2 ** 32 + 8, -(2 ** 33)],
  temperature: [0, 1, 0.7, 1e-300, 1e300, 3.4e38, 3.5e38, 1e-46, -1, NaN, Infinity, -0],
  topP: [1, 0.5, 1e-300, 1e-46, 1.0000001, 0, -0, NaN, 2],
  topK: [0, 1, 3, -1, 2 ** 31, 1.5],
  maxTokens: [1, 3, 7, 0, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 3, 2 ** 53 - 1, 2 ** 53, -1, 1.5, Infinity, NaN],
  stopTokens: [[], [0], [1, 2], [-1], [2 ** 31], [1.5], new Array(257).fill(1), 'x'],
  tree: [
    { branches: [2, 2] },
    { branches: [3, 1, 1] },
    { branches: [] },
    { branches: [9] },
    { branches: [0] },
    { branches: [2 ** 32 + 2] },
  ],
  promptLookup: [true, { minNgram: 2 }, { minNgram: 0 }, { minNgram: 2 ** 32 + 1 }, { maxNgram: 99 }],
  seed: [1, 2 ** 53 - 1, -1, 1.5, 'x', 2n ** 64n - 1n, 2n ** 64n],
  prompt: [[0], [1, 2, 3], [79], [80], [255], [256], [-1], [], 'HELLO', 'P', '語', [2 ** 31]],
  contextLength: [1, 8, 0, 2 ** 31],
};

function options() {
  const plain = chance(0.1);
  const [target, tw, tKnown] = source('target');
  const o = { ...target, seed: 1, prompt: [1, 2] };
  let mismatch = false; // both widths known and different: refused by createDecoder
  if (plain) o.plain = true;
  else if (chance(0.15)) o.promptLookup = true;
  else {
    const [draft, dw, dKnown] = source('draft');
    mismatch = tKnown && dKnown && dw !== tw;
    Object.assign(o, draft, { scoreOutput: o.scoreOutput ?? draft.scoreOutput });
  }
  if (o.scoreOutput === undefined) delete o.scoreOutput;
  for (const [name, values] of Object.entries(EDGES)) {
    if (chance(name === 'prompt' ? 0.5 : 0.15)) o[name] = pick(values);
  }
  if (o.maxTokens === undefined && chance(0.8)) o.maxTokens = pick([1, 3, 7]);
  return { o, tw, mismatch };
}

// The run's promises: its prompt kept, its budget, its stop tokens, the target's vocabulary.
function checkRun(dec, o, tw, what) {
  const generated = dec.generatedTokens;
  if (Array.isArray(o.prompt)) assert.deepEqual(dec.tokens.slice(0, dec.promptLength), o.prompt, `${what}: prompt`);
  const budget = o.maxTokens;
  if (Number.isInteger(budget) && budget > 0) assert.ok(generated.length <= budget, `${what}: over the budget`);
  const stops = Array.isArray(o.stopTokens) ? o.stopTokens : [];
  const at = generated.findIndex((t) => stops.includes(t));
  if (at >= 0) assert.equal(at, generated.length - 1, `${what}: went on past stop token ${generated[at]}`);
  if (tw !== undefined)
    for (const t of generated) assert.ok(t >= 0 && t < tw, `${what}: token ${t} outside [0, ${tw})`);
}

async function drive(dec, how) {
  if (how === 'step') {
    for (let i = 0; i < 4 && !dec.done; i++) await dec.step();
    return;
  }
  const g = dec.generate({ maxTokens: pick([2, 5, 0]) });
  let n = 0;
  for await (const it of g) {
    if (it === undefined) break;
    if (++n === 3 && how === 'break') break;
    if (n === 2 && how === 'return') await g.return();
    if (n === 6) break;
  }
  // Whichever way the loop ended, the decoder is free for the next one.
  for await (const it of dec.generate({ maxTokens: 1 })) if (it) break;
}

test(`pairs and options: ${CASES} hostile cases, every error typed and named`, async () => {
  const seen = { made: 0, refused: 0, failed: 0 };
  for (let i = 0; i < CASES; i++) {
    const { o, tw, mismatch } = options();
    const what = `case ${i} ${JSON.stringify(o, (k, v) => (typeof v === 'function' ? 'fn' : v?.config ? `model ${v.config.vocabSize}` : typeof v === 'bigint' ? `${v}n` : v))}`;
    let dec;
    try {
      dec = sd.createDecoder(o);
    } catch (e) {
      if (process.env.FUZZ_VERBOSE) console.log('# refused', e.message.slice(0, 110));
      checkError(e, what, o);
      seen.refused++;
      continue;
    }
    seen.made++;
    assert.ok(!mismatch, `${what}: two models of other vocabularies were not refused up front`);
    try {
      await drive(dec, pick(['step', 'generate', 'break', 'return']));
    } catch (e) {
      if (process.env.FUZZ_VERBOSE) console.log('# failed', e.message.slice(0, 110));
      checkError(e, what, o);
      seen.failed++;
    }
    checkRun(dec, o, tw, what);
    dec.dispose();
  }
  console.log(`# ${JSON.stringify(seen)}`);
  assert.ok(seen.made > CASES / 10 && seen.refused > CASES / 10, JSON.stringify(seen));
});
