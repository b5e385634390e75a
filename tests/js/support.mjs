// Shared helpers of the JS tests (not a test file itself: node --test runs *.test.mjs).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chiSquareSurvival } from '../../web/page/src/pitfalls/stats.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// The model pair the model tests use: the shipped models when both exist, else the tiny test
// fixtures (f32 target, f16 draft of the same weights). The one place to switch.
const SHIPPED = {
  target: path.join(ROOT, 'models/target.safetensors'),
  draft: path.join(ROOT, 'models/draft.safetensors'),
};
const FIXTURES = {
  target: path.join(ROOT, 'tests/fixtures/tiny_f32.safetensors'),
  draft: path.join(ROOT, 'tests/fixtures/tiny_f16.safetensors'),
};
export const MODEL_FILES = existsSync(SHIPPED.target) && existsSync(SHIPPED.draft) ? SHIPPED : FIXTURES;
export const USING_SHIPPED_MODELS = MODEL_FILES === SHIPPED;

export const TINY_MODEL = FIXTURES.target;

export async function modelBytes() {
  return { target: await readFile(MODEL_FILES.target), draft: await readFile(MODEL_FILES.draft) };
}

// The native CLI (scripts/test builds it first). Tests that compare with it skip when it is
// missing, unless SPECDEC_REQUIRE_NATIVE=1 (set by scripts/test) makes that a failure.
export const NATIVE_CLI = process.env.SPECDEC_CLI ?? path.join(ROOT, 'build/specdec');
export const REQUIRE_NATIVE = process.env.SPECDEC_REQUIRE_NATIVE === '1';

// ------------------------------------------------------------------ files and bits

/** The Llama / Qwen2 / GPT-2 fixture folders (tests/fixtures/makers/hf_tiny.py): tests/fixtures/families/{llama,qwen2,gpt2}. */
export const familyDir = (family) => path.join(ROOT, 'tests/fixtures/families', family);

/** A family fixture folder as sd.loadModel takes it: file name -> bytes (reference.json included). */
export const familyFiles = (family) =>
  Object.fromEntries(
    readdirSync(familyDir(family)).map((name) => [name, readFileSync(path.join(familyDir(family), name))]),
  );

/**
 * The GGUF twin of a Hugging Face folder, written to `out` by models/tools/export_gguf.mjs run as
 * a command (weights of `type`: 'f32', 'q8_0', ...); returns `out`.
 */
export function exportGgufFile(folder, out, type) {
  execFileSync(process.execPath, [path.join(ROOT, 'models/tools/export_gguf.mjs'), folder, out, '--type', type]);
  return out;
}

/** The model's probabilities for a few tokens (sd.modelStep of [1, 5, 9, 2]); the model is disposed. */
export function probsOf(sd, model) {
  const step = sd.modelStep(model);
  try {
    return step([1, 5, 9, 2], 4);
  } finally {
    step.dispose();
    model.dispose();
  }
}

/** Whether two typed arrays hold the same bytes (floats compared bit for bit, not by value). */
export const sameBits = (a, b) =>
  a.length === b.length &&
  Buffer.compare(
    Buffer.from(a.buffer, a.byteOffset, a.byteLength),
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  ) === 0;

/**
 * A safetensors file taken apart for the loaders' refusal tests: its header text and data
 * section, file(headerText, body = data) to put a file together again, edited(from, to): the
 * file with one piece of its header replaced (asserting that the piece is there), and
 * withHeaderLength(n): the file as it is but for the header length it states (a BigInt).
 */
export function safetensorsParts(bytes) {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = new TextDecoder().decode(bytes.subarray(8, 8 + n));
  const data = bytes.subarray(8 + n);
  const file = (headerText, body = data) => {
    const h = new TextEncoder().encode(headerText);
    const out = new Uint8Array(8 + h.length + body.length);
    new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
    out.set(h, 8);
    out.set(body, 8 + h.length);
    return out;
  };
  const edited = (from, to) => {
    assert.ok(header.includes(from), `'${from}' in the file's header`);
    return file(header.replace(from, to));
  };
  const withHeaderLength = (n) => {
    const out = bytes.slice();
    new DataView(out.buffer).setBigUint64(0, n, true);
    return out;
  };
  return { header, data, file, edited, withHeaderLength };
}

// ------------------------------------------------------------------ records

// The fields an IterationRecord starts with, in the order web/lib/decoder/records.js writes them
// (records.test checks the order and what follows; api.test checks they are there).
export const RECORD_FIELDS = [
  'iteration',
  'proposed',
  'proposedText',
  'positions',
  'nAccepted',
  'correction',
  'bonus',
  'uFinal',
  'residual',
  'residualTop',
  'emitted',
  'emittedText',
  'text',
  'targetCached',
  'draftCached',
  'draftMs',
  'targetMs',
  'ms',
  'vocab',
];

// ------------------------------------------------------------------ statistics

// The false-alarm probability every statistical test of the project is held to.
export const FALSE_ALARM = 1e-6;

/**
 * P(chi2 with dof degrees of freedom >= stat): the regularised upper incomplete gamma of the
 * page's statistics module (checked against mpmath in chisq.test.mjs), one implementation for
 * the page and the tests.
 */
export const chiSquareSf = chiSquareSurvival;

/**
 * Pearson's statistic summed over groups of cells: groups[i] = { counts, probs }, each group
 * a multinomial (counts sum n_i, expected n_i probs). Cells of probability 0 must stay empty.
 * Returns { stat, dof, pValue, impossible }.
 */
export function chiSquare(groups) {
  let stat = 0;
  let dof = 0;
  const impossible = [];
  groups.forEach(({ counts, probs }, g) => {
    const n = counts.reduce((a, b) => a + b, 0);
    if (n === 0) return;
    let cells = 0;
    counts.forEach((c, i) => {
      if (probs[i] <= 0) {
        if (c > 0) impossible.push(`group ${g} cell ${i}`);
        return;
      }
      const e = probs[i] * n;
      stat += ((c - e) * (c - e)) / e;
      cells++;
    });
    dof += cells - 1;
  });
  return { stat, dof, pValue: dof > 0 ? chiSquareSf(stat, dof) : 1, impossible };
}

/**
 * Asserts that observed counts fit their laws (groups as for chiSquare): no count in a cell of
 * probability 0, and Pearson's test passed at FALSE_ALARM; `detail` ends the failure message.
 */
export function assertChiSquareFits(groups, detail = '') {
  const chi = chiSquare(groups);
  assert.deepEqual(chi.impossible, []);
  assert.ok(chi.pValue > FALSE_ALARM, `chi2 = ${chi.stat.toFixed(2)}, dof ${chi.dof}, p = ${chi.pValue}${detail}`);
}

/** assertChiSquareFits for transition counts (counts[s][t]: token t after token s) against the rows expected[s]. */
export const assertTransitionsFit = (counts, expected) =>
  assertChiSquareFits(counts.map((row, s) => ({ counts: row, probs: expected[s] })));

/**
 * Context-dependent toy models for the decoder tests: first-order Markov chains over 4 tokens
 * (the next-token law depends on the last token). Zeros where the other has mass exercise
 * rejections that must use the residual (target 0 where the draft proposes) and tokens only the
 * residual can give. Since the target is a Markov chain, an exact decoder emits a Markov chain
 * with the target's (filtered) transition rows.
 */
export const MARKOV_TARGET = [
  [0.6, 0.4, 0, 0],
  [0.1, 0.6, 0.2, 0.1],
  [0.25, 0.25, 0.25, 0.25],
  [0.05, 0.15, 0.3, 0.5],
];
export const MARKOV_DRAFT = [
  [0.2, 0.2, 0.3, 0.3],
  [0.3, 0.3, 0.3, 0.1],
  [0.1, 0.2, 0.3, 0.4],
  [0, 0.5, 0.5, 0],
];
/** Step functions over those chains: tokens -> the row of the last token. */
export function markovSteps() {
  const t = MARKOV_TARGET.map((r) => Float32Array.from(r));
  const d = MARKOV_DRAFT.map((r) => Float32Array.from(r));
  return {
    targetStep: (tokens) => t[tokens[tokens.length - 1]],
    draftStep: (tokens) => d[tokens[tokens.length - 1]],
  };
}

/** Sampling settings applied to a probability row, in double precision (as sampling.h). */
export function applySampling(row, { temperature = 1, topK = 0, topP = 1 } = {}) {
  let p = Array.from(row);
  const n = p.length;
  if (temperature === 0) {
    let best = 0;
    for (let i = 1; i < n; i++) if (p[i] > p[best]) best = i;
    return p.map((_, i) => (i === best ? 1 : 0));
  }
  if (temperature !== 1) {
    const max = Math.max(...p);
    p = p.map((x) => (x > 0 ? Math.exp((Math.log(x) - Math.log(max)) / temperature) : 0));
  }
  const order = p.map((_, i) => i).sort((a, b) => p[b] - p[a] || a - b);
  let keepCount = topK > 0 && topK < n ? topK : n;
  if (topP < 1) {
    let total = 0;
    for (let r = 0; r < keepCount; r++) total += p[order[r]];
    let cum = 0;
    let k = 0;
    while (k < keepCount) {
      cum += p[order[k]];
      k++;
      if (cum >= (topP - 1e-6) * total) break;
    }
    keepCount = Math.max(k, 1);
  }
  const keep = new Set(order.slice(0, keepCount));
  const kept = p.map((x, i) => (keep.has(i) ? x : 0));
  const s = kept.reduce((a, b) => a + b, 0);
  return kept.map((x) => x / s);
}

// ---- transformers.js folders (tests/js/transformers*.test.mjs) ----------------------------
export const TRANSFORMERS_FOLDERS = path.join(ROOT, 'build-transformers');

/**
 * The transformers.js folder of a model file (or a Hugging Face folder) under build-transformers/
 * (made, or kept when up to date, by models/tools/make_transformers_model.py); returns its name for
 * from_pretrained.
 */
export function transformersFolder(source, name, { variant, dtypes, positions } = {}) {
  const flags = [
    ...(variant ? ['--variant', variant] : []),
    ...(dtypes ? ['--dtypes', dtypes] : []),
    ...(positions ? ['--positions', String(positions)] : []),
  ];
  execFileSync(
    '/usr/bin/python3',
    [
      '-m',
      'models.tools.make_transformers_model',
      source.startsWith('random:') ? source : path.resolve(source),
      path.join(TRANSFORMERS_FOLDERS, name),
      ...flags,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'], cwd: ROOT },
  );
  return name;
}

/**
 * The small target's folder with every dtype the transformers tests load: one export for all of
 * them (a test asking for fewer dtypes would make the folder again without the others).
 */
export const transformersTarget = () =>
  transformersFolder(MODEL_FILES.target, 'target', { dtypes: 'fp32,fp16,q8,q4,q4f16,q8-tensor' });

/** transformers.js loading from build-transformers/ only (nothing fetched), quietly. */
export function useLocalTransformers(tf) {
  tf.env.allowRemoteModels = false;
  tf.env.localModelPath = `${TRANSFORMERS_FOLDERS}/`;
  tf.env.logLevel = tf.LogLevel?.ERROR ?? 40;
}
