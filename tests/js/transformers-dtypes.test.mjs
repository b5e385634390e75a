// specdec/transformers over the quantized files transformers.js loads (issue 28 item 2):
// dtype 'q8' (onnx/model_quantized.onnx), 'q4' and 'q4f16' (MatMulNBits) of our small target,
// written by models/tools/make_transformers_model.py (models/tools/quant_onnx.py), on Node's cpu device, one
// thread. Each loads, and specdec over it (built-in draft) emits that model's own greedy
// generate() tokens (float16: up to near-ties); a T = 0.8 chi-square through the q4f16 adapter.
// The pitfall: int8 with ONE activation scale per tensor (onnxruntime's quantize_dynamic, what
// hub q8 files use; our fixture onnx/model_q8tensor.onnx) makes a row of a k-token pass depend on
// the other rows, so the verifier's k-token function is not generate()'s one-token function;
// our q8 export quantizes each row on its own. The test measures both (top-1 agreement, alpha).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as tf from '@huggingface/transformers';
import { loadSpecdec } from 'specdec';
import { transformersScorer } from 'specdec/transformers';
import { greedyFrom as greedyFromWith, oneTokenRow, pooledGroup, softmax } from './adapters-support.mjs';
import { compareGreedy, describeFlips } from './greedy-ties.mjs';
import {
  FALSE_ALARM,
  applySampling,
  chiSquare,
  modelBytes,
  transformersTarget,
  useLocalTransformers,
} from './support.mjs';

useLocalTransformers(tf);

const TARGET = transformersTarget();
const load = (dtype, extra = {}) =>
  tf.AutoModelForCausalLM.from_pretrained(TARGET, {
    dtype,
    device: 'cpu',
    session_options: { intraOpNumThreads: 1, interOpNumThreads: 1 },
    ...extra,
  });

const sd = await loadSpecdec();
const draft = sd.loadModel((await modelBytes()).draft);
const CONTEXT = 256;
const V = 256;
const models = {};
for (const dtype of ['q8', 'q4', 'q4f16']) models[dtype] = await load(dtype);
models['q8-tensor'] = await load('fp32', { model_file_name: 'model_q8tensor' });

// ONNX Runtime's native int8 kernels on an x86 CPU without VNNI (AVX2 only: Zen 3, older Xeons)
// add products u8 x s8 in pairs into int16, which saturates (a known limit of its AVX2 path), and
// a 5-row pass takes another kernel than a 1-row one: even per row the two differ by a few
// hundredths of a logit there (0.067 on a Zen 3; < 1e-3 with VNNI on a Zen 5, 5.7e-6 in
// onnxruntime-web's WASM below). The pitfall test then asserts what still holds.
const EXACT_INT8_KERNELS = (() => {
  if (process.arch !== 'x64') return true;
  try {
    return /\b(avx512_vnni|avx_vnni)\b/.test(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    return false;
  }
})();

const enc = (text) => Array.from(new TextEncoder().encode(text));
const greedyFrom = (model, tokens, n) => greedyFromWith(tf, model, tokens, n);
async function decode(options) {
  const dec = sd.createDecoder({ contextLength: CONTEXT, draft, ...options });
  const tokens = [];
  for await (const r of dec.generate()) tokens.push(...r.emitted);
  const stats = dec.stats;
  dec.dispose();
  return { tokens, stats };
}

const PROMPT = enc('ROMEO:\nWhat light');
// float16 (q4f16) and MatMulNBits' blocked sums may round a k-token pass differently from a
// one-token pass: where the runs part, the model's own logits must be a near-tie
const TIE = { q8: 0.02, q4: 0.02, q4f16: 0.1 };
for (const dtype of ['q8', 'q4', 'q4f16']) {
  test(`dtype ${dtype}: loads, and specdec over it emits its own greedy generate() tokens`, async () => {
    const model = models[dtype];
    const ts = transformersScorer(model);
    assert.equal(ts.cacheType, dtype === 'q4f16' ? 'float16' : 'float32');
    const N = 100;
    const ref = await greedyFrom(model, PROMPT, N);
    const got = await decode({
      prompt: PROMPT,
      targetScore: ts,
      temperature: 0,
      gamma: 4,
      maxTokens: N,
    });
    const result = await compareGreedy({
      got: got.tokens,
      reference: ref,
      tie: TIE[dtype],
      logitsAfter: (prefix) => oneTokenRow(model, PROMPT.concat(prefix)),
      continueFrom: (prefix, n) => greedyFrom(model, PROMPT.concat(prefix), n),
    });
    console.log(
      `# ${dtype}: ${describeFlips(result)}; alpha ${got.stats.acceptanceRate.toFixed(3)}, ${got.stats.tokensPerPass.toFixed(2)} tokens/pass`,
    );
    assert.equal(result.mismatch, null, describeFlips(result));
    assert.equal(ts.runs, got.stats.iterations);
    await ts.dispose();
  });
}

// Chi-square at T = 0.8 through the q4f16 adapter (float16 cache and logits): 300 decoders emit
// two tokens; the first follows the tempered row after the prompt, the second the row after
// prompt + first (rows read through the adapter, as the decoder saw them).
test("chi-square at T = 0.8 (q4f16): tokens follow the quantized model's tempered distribution", async () => {
  const ts = transformersScorer(models.q4f16);
  const prompt = Int32Array.from(enc('KING RICHARD:\nThe'));
  const N = 300;
  const counts = new Map();
  for (let run = 0; run < N; run++) {
    const { tokens } = await decode({
      prompt,
      targetScore: ts,
      gamma: 3,
      temperature: 0.8,
      seed: 7_000_000 + run,
      maxTokens: 2,
      distributions: false,
    });
    const row = counts.get(tokens[0]) ?? new Map();
    row.set(tokens[1], (row.get(tokens[1]) ?? 0) + 1);
    counts.set(tokens[0], row);
  }
  const tempered = async (tokens) => applySampling(softmax(await ts(Int32Array.from(tokens), 1)), { temperature: 0.8 });
  const firsts = new Map([...counts].map(([t, row]) => [t, [...row.values()].reduce((a, b) => a + b, 0)]));
  const groups = [pooledGroup(firsts, await tempered(prompt), N)];
  for (const [first, row] of counts) {
    if (firsts.get(first) >= 20) groups.push(pooledGroup(row, await tempered([...prompt, first]), firsts.get(first)));
  }
  const chi = chiSquare(groups);
  console.log(
    `# q4f16 chi-square at T 0.8: ${chi.stat.toFixed(1)} on ${chi.dof} dof, p = ${chi.pValue.toFixed(3)} (${groups.length} groups)`,
  );
  assert.deepEqual(chi.impossible, []);
  assert.ok(chi.pValue > FALSE_ALARM, `chi2 = ${chi.stat.toFixed(2)}, dof ${chi.dof}, p = ${chi.pValue}`);
  await ts.dispose();
});

// The pitfall, measured on a held text: rows of k-token passes (k = 5, what gamma 4 verifies)
// against one-token passes (generate()'s) at the same positions, after the same cached prefix.
const HELD = enc(
  'DUKE VINCENTIO:\nNo, holy father; throw away that thought;\nBelieve not that the dribbling dart of love\nCan pierce a complete bosom.',
);
async function rowsBoth(model, k) {
  const one = transformersScorer(model);
  const many = transformersScorer(model);
  const start = 16;
  const a = [];
  const b = [];
  for (let end = start + k; end <= HELD.length; end += k) {
    for (let i = end - k + 1; i <= end; i++) a.push(await one(Int32Array.from(HELD.slice(0, i)), 1));
    const rows = await many(Int32Array.from(HELD.slice(0, end)), k);
    for (let r = 0; r < k; r++) b.push(rows.subarray(r * V, (r + 1) * V));
  }
  await one.dispose();
  await many.dispose();
  return { one: a, many: b };
}
const argmax = (row) => row.reduce((best, x, i) => (x > row[best] ? i : best), 0);
function compare({ one, many }) {
  let worst = 0;
  let agree = 0;
  const overlap = { 0.8: 0, 1: 0 }; // alpha = sum min(p, q): the k-token function as target, generate()'s as draft
  for (let r = 0; r < one.length; r++) {
    for (let i = 0; i < V; i++) worst = Math.max(worst, Math.abs(one[r][i] - many[r][i]));
    agree += argmax(one[r]) === argmax(many[r]);
    for (const T of [0.8, 1]) {
      const p = applySampling(softmax(many[r]), { temperature: T });
      const q = applySampling(softmax(one[r]), { temperature: T });
      for (let i = 0; i < V; i++) overlap[T] += Math.min(p[i], q[i]);
    }
  }
  const n = one.length;
  return { n, worst, top1: agree / n, alpha08: overlap[0.8] / n, alpha1: overlap[1] / n };
}

test('pitfall: a per-tensor activation scale makes a k-token pass another function; our q8 (a scale per row) does not', async () => {
  const perRow = compare(await rowsBoth(models.q8, 5));
  const perTensor = compare(await rowsBoth(models['q8-tensor'], 5));
  const line = (r) =>
    `max |logit diff| ${r.worst.toFixed(4)}, top-1 agreement ${r.top1.toFixed(3)}, alpha ${r.alpha08.toFixed(4)} (T 0.8) / ${r.alpha1.toFixed(4)} (T 1) over ${r.n} positions`;
  console.log(`# k = 5 pass vs one-token passes, q8 per row: ${line(perRow)}`);
  console.log(`# k = 5 pass vs one-token passes, q8 per tensor (quantize_dynamic): ${line(perTensor)}`);
  assert.equal(perRow.top1, 1);
  if (EXACT_INT8_KERNELS) {
    assert.ok(perRow.worst < 1e-3, line(perRow));
    assert.ok(perTensor.worst > 20 * Math.max(perRow.worst, 1e-3), line(perTensor));
  } else {
    // Per row, the two still agree on every argmax and as distributions; per tensor less so.
    assert.ok(perRow.alpha08 >= 0.999 && perRow.alpha1 >= 0.999, line(perRow));
    assert.ok(perTensor.worst > 10 * perRow.worst, line(perTensor));
    assert.ok(perTensor.alpha08 < perRow.alpha08 && perTensor.alpha1 < perRow.alpha1, line(perTensor));
  }
  // greedy specdec over the per-tensor file: exact for its k-token function, not generate()'s
  const ts = transformersScorer(models['q8-tensor']);
  const N = 100;
  const ref = await greedyFrom(models['q8-tensor'], PROMPT, N);
  const got = await decode({ prompt: PROMPT, targetScore: ts, temperature: 0, gamma: 4, maxTokens: N });
  console.log(
    `# q8 per tensor, greedy specdec vs its generate(): first different token at ${got.tokens.findIndex((t, i) => t !== ref[i])} of ${N}`,
  );
  await ts.dispose();
});
