// specdec/transformers on a Llama-family model (issue 28 item 3): models/llama.safetensors (a
// 4-layer Llama-type byte model: RoPE, RMSNorm, SwiGLU, grouped-query attention with 6 query
// heads over 2 key / value heads), exported by models/tools/make_transformers_model.py in
// transformers.js' layout (model_type llama, a cache of (1, 2, P, 32) per layer), loaded by
// transformers.js (Node's cpu device, one thread) and driven by the adapter as the target (with
// our built-in draft) and as the draft (under the GPT target of build-transformers/target):
// greedy runs equal transformers.js's own generate(); the cache is cut back on a rejection and
// its rows then equal a fresh pass; caches the adapter cannot cut are refused with the reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import * as tf from '@huggingface/transformers';
import { loadSpecdec, SpecdecError } from 'specdec';
import { transformersScorer } from 'specdec/transformers';
import { greedyFrom as greedyFromWith } from './adapters-support.mjs';
import { ROOT, modelBytes, transformersFolder, transformersTarget, useLocalTransformers } from './support.mjs';

useLocalTransformers(tf);

const LLAMA = transformersFolder(path.join(ROOT, 'models/llama.safetensors'), 'llama', {
  dtypes: 'fp32',
});
const TARGET = transformersTarget();
const load = (name) =>
  tf.AutoModelForCausalLM.from_pretrained(name, {
    dtype: 'fp32',
    device: 'cpu',
    session_options: { intraOpNumThreads: 1, interOpNumThreads: 1 },
  });

const sd = await loadSpecdec();
const draft = sd.loadModel((await modelBytes()).draft);
const llama = await load(LLAMA);
const gpt = await load(TARGET);
const tokenizer = await tf.AutoTokenizer.from_pretrained(LLAMA);
const CONTEXT = 256;
const ids = (tokens) => new tf.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
/** transformers.js's own greedy generate() after `tokens`. */
const greedyFrom = (model, tokens, n) => greedyFromWith(tf, model, tokens, n);
async function decode(options) {
  const dec = sd.createDecoder({ contextLength: CONTEXT, ...options });
  const tokens = [];
  for await (const r of dec.generate()) tokens.push(...r.emitted);
  const stats = dec.stats;
  dec.dispose();
  return { tokens, stats };
}

test('the Llama folder loads as LlamaForCausalLM with a grouped-query cache (2 KV heads of 32)', () => {
  assert.equal(llama.constructor.name, 'LlamaForCausalLM');
  assert.equal(llama.config.model_type, 'llama');
  const meta = llama.sessions.model.inputMetadata?.find?.((m) => m.name === 'past_key_values.0.key');
  if (meta?.shape) assert.deepEqual([meta.shape[1], meta.shape[3]], [2, 32]);
});

test('Llama as target (built-in draft) and as draft (GPT target): greedy equals generate()', async () => {
  const ts = transformersScorer(llama, { tokenizer });
  const prompt = ts.encode('ROMEO:\nWhat light');
  const N = 100;
  // as the target: the tokens are the Llama's own greedy continuation
  const ref = await greedyFrom(llama, prompt, N);
  const asTarget = await decode({ prompt, targetScore: ts, draft, temperature: 0, gamma: 4, maxTokens: N });
  assert.equal(
    asTarget.tokens.findIndex((t, i) => t !== ref[i]),
    -1,
    'first differing token',
  );
  assert.equal(ts.runs, asTarget.stats.iterations); // one Llama pass per iteration
  assert.ok(asTarget.stats.accepted < asTarget.stats.examined, 'some drafts rejected: the cache was cut');
  // as the draft: the tokens are the GPT target's greedy continuation
  const gs = transformersScorer(gpt);
  const ds = transformersScorer(llama);
  const refGpt = await greedyFrom(gpt, prompt, N);
  const asDraft = await decode({ prompt, targetScore: gs, draftScore: ds, temperature: 0, gamma: 4, maxTokens: N });
  assert.equal(
    asDraft.tokens.findIndex((t, i) => t !== refGpt[i]),
    -1,
    'first differing token',
  );
  assert.ok(asDraft.stats.accepted < asDraft.stats.examined);
  const fmt = (s) => `alpha ${s.acceptanceRate.toFixed(3)}, ${s.tokensPerPass.toFixed(2)} tokens/pass`;
  console.log(
    `# Llama target + built-in draft: ${fmt(asTarget.stats)}; GPT target + Llama draft: ${fmt(asDraft.stats)} (T 0, gamma 4, ${N} tokens)`,
  );
  for (const s of [ts, gs, ds]) await s.dispose();
});

test('the Llama cache is cut back to the common prefix: rows then equal a fresh pass', async () => {
  const ts = transformersScorer(llama);
  const text = Array.from(new TextEncoder().encode('First Citizen:\nBefore we proceed any further, hear me speak.'));
  const rejected = text.slice(0, 40).concat([120, 121, 122, 123]); // a draft that went astray
  await ts(Int32Array.from(text.slice(0, 36)), 1);
  await ts(Int32Array.from(rejected), 5);
  assert.equal(ts.cachedTokens, 44);
  const before = ts.forwardedTokens;
  const rows = await ts(Int32Array.from(text.slice(0, 46)), 3); // keeps 40, forwards 6
  assert.equal(ts.forwardedTokens - before, 6);
  assert.equal(ts.cachedTokens, 46);
  const fresh = await llama({
    input_ids: ids(text.slice(0, 46)),
    attention_mask: tf.ones([1, 46]),
  });
  const V = 256;
  const want = fresh.logits.data.subarray(43 * V, 46 * V);
  let worst = 0;
  for (let i = 0; i < rows.length; i++) worst = Math.max(worst, Math.abs(rows[i] - want[i]));
  assert.ok(worst < 1e-3, `max |cut-cache rows - fresh pass| = ${worst}`);
  await ts.dispose();
});

test('caches the adapter cannot cut back are refused with the reason', () => {
  const refuses = (fn, re) => assert.throws(fn, (e) => e instanceof SpecdecError && re.test(e.message), String(re));
  // a fake of the loaded Llama whose session's metadata declares another cache layout
  const withCache = (shape) => {
    const s = llama.sessions.model;
    const inputMetadata = s.inputMetadata.map((m) => (m.name.startsWith('past_key_values.') ? { ...m, shape } : m));
    return Object.assign(Object.create(Object.getPrototypeOf(llama)), {
      config: llama.config,
      forward: llama.forward,
      sessions: { model: { inputNames: s.inputNames, outputNames: s.outputNames, inputMetadata } },
    });
  };
  refuses(
    () => transformersScorer(withCache([1, 2, 256, 32])),
    /^model: LlamaForCausalLM's KV cache has a fixed length \(256 positions\): a static cache .* cannot be cut back/,
  );
  refuses(
    () => transformersScorer(withCache([1, 2, 'past_sequence_length', 16, 2])),
    /^model: LlamaForCausalLM's KV cache has 5 axes \(\[1,2,past_sequence_length,16,2\]\); this adapter cuts caches of shape \(batch, heads, past, head size\)/,
  );
  refuses(
    () => transformersScorer(withCache(['batch_size', 'past_sequence_length', 2, 32])),
    /^model: LlamaForCausalLM's KV cache has its sequence axis at 1, not 2/,
  );
  assert.doesNotThrow(() => transformersScorer(withCache(['batch_size', 2, 'past_sequence_length', 32])));
});
