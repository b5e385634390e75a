// specdec/transformers: transformers.js (Node: its onnxruntime-node CPU backend, one thread)
// loading our small pair from local folders made by models/tools/make_transformers_model.py
// (build-transformers/; nothing is fetched: env.allowRemoteModels = false), as score callbacks
// of specdec's decoder. Greedy runs equal transformers.js's own generate() for 200 tokens, fp32
// and fp16 (float16 KV cache and logits); a seeded sampled run measures the built-in engine's
// acceptance; the adapter's cache forwards each token about once; chi-square: the emitted tokens
// follow the model's own distribution; models the adapter cannot drive are refused clearly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import * as tf from '@huggingface/transformers';
import { loadSpecdec, SpecdecError } from 'specdec';
import { transformersScorer, textStream } from 'specdec/transformers';
import { rowsAsFloat32 } from 'specdec/ort';
import {
  assertCacheCutBack,
  assertSampledLikeBuiltin,
  drain,
  greedyFrom as greedyFromWith,
  pooledGroup,
  softmax,
} from './adapters-support.mjs';
import { compareGreedy, describeFlips } from './greedy-ties.mjs';
import {
  FALSE_ALARM,
  MODEL_FILES,
  ROOT,
  USING_SHIPPED_MODELS,
  chiSquare,
  modelBytes,
  transformersFolder,
  transformersTarget,
  useLocalTransformers,
} from './support.mjs';

useLocalTransformers(tf);

const TARGET = transformersTarget();
const DRAFT = transformersFolder(MODEL_FILES.draft, 'draft');
const load = (name, dtype = 'fp32') =>
  tf.AutoModelForCausalLM.from_pretrained(name, {
    dtype,
    device: 'cpu',
    session_options: { intraOpNumThreads: 1, interOpNumThreads: 1 },
  });

const sd = await loadSpecdec();
const bytes = await modelBytes();
const builtin = { target: sd.loadModel(bytes.target), draft: sd.loadModel(bytes.draft) };
const tokenizer = await tf.AutoTokenizer.from_pretrained(TARGET);
const models = {
  fp32: { target: await load(TARGET), draft: await load(DRAFT) },
  fp16: { target: await load(TARGET, 'fp16'), draft: await load(DRAFT, 'fp16') },
};
const CONTEXT = builtin.target.config.blockSize;

// Decodes with the given sides (a transformers.js model, or the built-in one when left out).
async function decode(options, { target, draft } = {}) {
  const ts = target ? transformersScorer(target, { tokenizer }) : null;
  const ds = draft ? transformersScorer(draft) : null;
  const dec = sd.createDecoder({
    ...options,
    ...(ts ? { targetScore: ts } : { target: builtin.target }),
    ...(options.plain ? {} : ds ? { draftScore: ds } : { draft: builtin.draft }),
    ...(ts || ds ? { contextLength: CONTEXT } : {}),
  });
  return drain(dec, ts, ds);
}

const PROMPT = 'ROMEO:\nWhat light';
// Largest logit gap that float16's rounding may flip between a k-token pass and generate()'s
// one-token passes (the fp16 logits differ from the fp32 model's by up to ~0.1 on this pair).
const FP16_TIE = 0.1;
const ids = (tokens) => new tf.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
/** The model's next-token logits after `tokens` (one forward pass, no cache). */
async function lastLogits(model, tokens) {
  const { logits } = await model({
    input_ids: ids(tokens),
    attention_mask: tf.ones([1, tokens.length]),
  });
  const V = logits.dims.at(-1);
  return rowsAsFloat32(logits.data, logits.type, (tokens.length - 1) * V, tokens.length * V);
}
/** transformers.js's own greedy generate() after `tokens`. */
const greedyFrom = (model, tokens, n) => greedyFromWith(tf, model, tokens, n);

for (const dtype of ['fp32', 'fp16']) {
  test(`greedy (${dtype}): transformers.js target + draft through specdec emit generate()'s 200 tokens`, async () => {
    const { target, draft } = models[dtype];
    const inputs = tokenizer(PROMPT);
    const out = await target.generate({ ...inputs, max_new_tokens: 200, do_sample: false });
    const ref = Array.from(out[0].data, Number).slice(inputs.input_ids.dims[1]);
    assert.equal(ref.length, 200);
    const got = await decode({ prompt: PROMPT, temperature: 0, gamma: 4, maxTokens: 200 }, { target, draft });
    assert.equal(got.tokens.length, 200);
    if (dtype === 'fp32') {
      const first = got.tokens.findIndex((t, i) => t !== ref[i]);
      assert.equal(first, -1, `first different token at ${first}`);
    } else {
      // float16: where the runs part, it is a near-tie in the model's own logits (see greedy-ties.mjs)
      const promptIds = Array.from(inputs.input_ids.data, Number);
      const result = await compareGreedy({
        got: got.tokens,
        reference: ref,
        tie: FP16_TIE,
        logitsAfter: (prefix) => lastLogits(target, promptIds.concat(prefix)),
        continueFrom: (prefix, n) => greedyFrom(target, promptIds.concat(prefix), n),
      });
      console.log(`# fp16 against generate(): ${describeFlips(result)}`);
      assert.equal(result.mismatch, null, describeFlips(result));
    }
    // One target run per iteration; the cache forwards each position about once.
    assert.equal(got.runs, got.stats.iterations);
    assert.ok(got.forwarded < PROMPT.length + 200 + got.stats.drafted, `forwarded ${got.forwarded}`);
    assert.ok(got.stats.tokensPerPass > 1.5, `tokens per pass ${got.stats.tokensPerPass}`);
    console.log(
      `# ${dtype}: ${got.stats.tokensPerPass.toFixed(2)} tokens per target pass, alpha ${got.stats.acceptanceRate.toFixed(3)}`,
    );
  });
}

test(
  'seeded T = 0.8 (fp32): alpha and tokens per pass through transformers.js match the built-in pair',
  { skip: !USING_SHIPPED_MODELS && 'needs the shipped pair' },
  async () => {
    await assertSampledLikeBuiltin(decode, models.fp32, 'transformers.js pair vs built-in');
  },
);

test("the rows are the model's own logits for the last nLast positions; the cache is cut back to the common prefix", async () => {
  for (const dtype of ['fp32', 'fp16']) {
    const { target } = models[dtype];
    const ts = transformersScorer(target, { tokenizer });
    assert.equal(ts.cacheType, dtype === 'fp32' ? 'float32' : 'float16');
    const tokens = ts.encode('First Citizen:\nBefore we proceed any further');
    const full = await target({
      input_ids: new tf.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]),
      attention_mask: tf.ones([1, tokens.length]),
    });
    const all = Float32Array.from(full.logits.data, (x) => (typeof x === 'number' ? x : Number(x)));
    const reference = dtype === 'fp32' ? all : null; // float16 bits: compared through the fp32 run below
    const V = ts.vocabSize ?? 256;
    const rowsOf = (logits, from, count) => logits.subarray(from * V, (from + count) * V);
    let fp32Rows = null;
    if (dtype === 'fp16') {
      const ts32 = transformersScorer(models.fp32.target);
      fp32Rows = await ts32(tokens, 5);
      await ts32.dispose();
    }
    for (const [n, nLast] of [
      [tokens.length - 6, 1],
      [tokens.length, 4],
      [tokens.length - 2, 2],
    ]) {
      const cutBefore = ts.cutTensors;
      const rows = await ts(tokens.slice(0, n), nLast);
      // the third call cuts every cache tensor (key and value of each layer) once; the others none
      assert.equal(ts.cutTensors - cutBefore, n === tokens.length - 2 ? 2 * target.config.n_layer : 0);
      assert.equal(rows.length, nLast * V);
      if (reference) {
        const want = rowsOf(reference, n - nLast, nLast);
        let worst = 0;
        for (let i = 0; i < rows.length; i++) worst = Math.max(worst, Math.abs(rows[i] - want[i]));
        assert.ok(worst < 1e-3, `n ${n}, nLast ${nLast}: max |logit - forward's| = ${worst}`);
      }
    }
    if (fp32Rows) {
      // float16 logits, widened: close to the float32 model's (the cache rounded to float16)
      const rows = await ts(tokens, 5);
      let worst = 0;
      for (let i = 0; i < rows.length; i++) worst = Math.max(worst, Math.abs(rows[i] - fp32Rows[i]));
      assert.ok(worst < 0.25, `fp16 vs fp32 logits: max difference ${worst}`);
      await ts(tokens.slice(0, tokens.length - 2), 2);
    }
    // cut back to tokens.length - 2, then only the two new tokens are forwarded
    await assertCacheCutBack(ts, tokens, 'transformersScorer');
  }
});

// Chi-square: 1500 decoders (one scorer pair through the adapter, whose cache is cut back to
// the prompt every run) emit two tokens at T = 1 from the same prompt; the first follows the
// target's row after the prompt, the second the target's row after prompt + first.
test("chi-square: tokens decoded through the adapter follow the target model's distribution", async () => {
  const { target, draft } = models.fp32;
  const ts = transformersScorer(target, { tokenizer });
  const ds = transformersScorer(draft);
  const prompt = ts.encode('KING RICHARD:\nThe');
  const counts = new Map(); // first token -> Map(second -> count)
  const N = 1500;
  for (let run = 0; run < N; run++) {
    const dec = sd.createDecoder({
      prompt,
      targetScore: ts,
      draftScore: ds,
      gamma: 3,
      temperature: 1,
      seed: 5_000_000 + run,
      maxTokens: 2,
      contextLength: CONTEXT,
      distributions: false,
    });
    const out = [];
    for await (const r of dec.generate()) out.push(...r.emitted);
    dec.dispose();
    assert.equal(out.length, 2);
    const row = counts.get(out[0]) ?? new Map();
    row.set(out[1], (row.get(out[1]) ?? 0) + 1);
    counts.set(out[0], row);
  }
  const firsts = new Map([...counts].map(([t, row]) => [t, [...row.values()].reduce((a, b) => a + b, 0)]));
  const groups = [pooledGroup(firsts, softmax(await ts(prompt, 1)), N)];
  for (const [first, row] of counts) {
    const n = firsts.get(first);
    if (n < 20) continue;
    groups.push(pooledGroup(row, softmax(await ts(Int32Array.from([...prompt, first]), 1)), n));
  }
  const chi = chiSquare(groups);
  console.log(
    `# chi-square through the adapter: ${chi.stat.toFixed(1)} on ${chi.dof} dof, p = ${chi.pValue.toFixed(3)} (${groups.length} groups)`,
  );
  assert.deepEqual(chi.impossible, []);
  assert.ok(chi.pValue > FALSE_ALARM, `chi2 = ${chi.stat.toFixed(2)}, dof ${chi.dof}, p = ${chi.pValue}`);
  await ts.dispose();
  await ds.dispose();
});

test('bad input: models the adapter cannot drive, mismatched vocabularies, bad options → SpecdecError naming the cause', async () => {
  const refuses = (fn, re) => assert.throws(fn, (e) => e instanceof SpecdecError && re.test(e.message), String(re));
  // not a causal LM: a BERT-type encoder (last_hidden_state, no logits)
  const encoder = await tf.AutoModel.from_pretrained(
    transformersFolder(MODEL_FILES.target, 'target-encoder', { variant: 'encoder' }),
    { device: 'cpu' },
  );
  refuses(
    () => transformersScorer(encoder),
    /^model: BertModel is not a causal language model: its session has no logits output \(outputs: last_hidden_state\)/,
  );
  // exported without its KV cache
  const noPast = await tf.AutoModelForCausalLM.from_pretrained(
    transformersFolder(MODEL_FILES.target, 'target-nopast', { variant: 'no-past' }),
    { device: 'cpu' },
  );
  refuses(
    () => transformersScorer(noPast),
    /^model: GPT2LMHeadModel's session has no past_key_values inputs: it was exported without its KV cache/,
  );
  await encoder.dispose();
  await noPast.dispose();
  // an encoder-decoder, a pipeline, something else
  const seq2seq = Object.assign(Object.create({ constructor: { name: 'T5ForConditionalGeneration' } }), {
    forward() {},
    config: { is_encoder_decoder: true },
    sessions: { encoder_model: {}, decoder_model_merged: {} },
  });
  refuses(
    () => transformersScorer(seq2seq),
    /^model: T5ForConditionalGeneration is an encoder-decoder model, not a decoder-only causal language model/,
  );
  const pipe = Object.assign(() => {}, { model: models.fp32.target, tokenizer });
  refuses(() => transformersScorer(pipe), /^model: got a pipeline; pass pipeline\.model/);
  refuses(() => transformersScorer({}), /^model: expected a transformers\.js model/);
  refuses(() => transformersScorer(tokenizer), /^model: expected a transformers\.js model/);
  refuses(
    () => transformersScorer(models.fp32.target, { tokeniser: tokenizer }),
    /^options\.tokeniser: unknown option of transformersScorer/,
  );
  refuses(
    () => transformersScorer(models.fp32.target, { tokenizer: {} }),
    /^options\.tokenizer: expected the model's transformers\.js tokenizer/,
  );
  refuses(
    () => transformersScorer(models.fp32.target, { transformers: {} }),
    /^options\.transformers: expected the @huggingface\/transformers module/,
  );
  refuses(() => transformersScorer(models.fp32.target).encode('x'), /^encode: give options\.tokenizer/);

  // mismatched vocabularies: a draft of 300 tokens under a target of 256, and the reverse
  const other = await load(transformersFolder('random:300', 'random-v300', { dtypes: 'fp32' }));
  for (const [t, d] of [
    [models.fp32.target, other],
    [other, models.fp32.target],
  ]) {
    const dec = sd.createDecoder({
      prompt: PROMPT,
      targetScore: transformersScorer(t),
      draftScore: transformersScorer(d),
      gamma: 4,
      temperature: 1,
      seed: 3,
      maxTokens: 50,
      contextLength: CONTEXT,
    });
    await assert.rejects(
      (async () => {
        for await (const r of dec.generate()) void r;
      })(),
      (e) =>
        e instanceof SpecdecError &&
        /vocabular/.test(e.message) &&
        /(outside GPT2LMHeadModel's vocabulary \[0, (256|300)\): the target and the draft must share one vocabulary|draft and target vocabularies differ)/.test(
          e.message,
        ),
    );
    dec.dispose();
  }
  await other.dispose();
});

test("text through the model's tokenizer: encode, detokenize, textStream holds back split characters", async () => {
  const ts = transformersScorer(models.fp32.target, { tokenizer });
  const text = 'Ô Roméo — 👋\nnext line';
  const ids = ts.encode(text);
  assert.deepEqual(Array.from(ids), Array.from(new TextEncoder().encode(text))); // byte-level
  assert.equal(ts.detokenize(ids), text);
  const stream = ts.textStream();
  const parts = [];
  for (let i = 0; i < ids.length; i += 3) parts.push(stream.push(ids.slice(i, i + 3)));
  parts.push(stream.end());
  assert.equal(parts.join(''), text);
  assert.ok(
    parts.every((p) => !p.includes('\uFFFD')),
    JSON.stringify(parts),
  );
  // the generic helper takes any (ids) => string
  const s = textStream((x) => new TextDecoder().decode(Uint8Array.from(x)));
  assert.equal(s.push([0xc3]) + s.push([0xa9, 0x41]) + s.end(), 'éA');
  assert.throws(() => textStream(null), SpecdecError);
  await ts.dispose();
});

// A `detokenize` decoder option (records' text through the model's tokenizer) where the core
// has it; until then records assume byte tokens and the example streams textStream().
const hasDetokenize = (() => {
  try {
    sd.createDecoder({
      prompt: [1],
      targetStep: () => [1],
      plain: true,
      detokenize: () => '',
    }).dispose();
    return true;
  } catch {
    return false;
  }
})();
test(
  "createDecoder({ detokenize: scorer.detokenize }): records carry the tokenizer's text",
  { skip: !hasDetokenize && 'the core has no detokenize option yet' },
  async () => {
    const ts = transformersScorer(models.fp32.target, { tokenizer });
    const dec = sd.createDecoder({
      prompt: ts.encode('ROMEO:'),
      targetScore: ts,
      draft: builtin.draft,
      temperature: 0,
      maxTokens: 60,
      contextLength: CONTEXT,
      detokenize: ts.detokenize,
    });
    let text = '';
    for await (const r of dec.generate()) text += r.text;
    assert.equal(text, ts.detokenize(dec.generatedTokens));
    assert.equal(dec.generatedText, text);
    dec.dispose();
    await ts.dispose();
  },
);

test('examples/transformers.mjs runs (transformers.js target and draft, 200 tokens streamed)', () => {
  const out = execFileSync(process.execPath, ['examples/transformers.mjs'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  assert.match(out, /\n200 tokens, [\d.]+ per target pass, alpha [\d.]+, [\d.]+ ms\/token\n$/);
});
