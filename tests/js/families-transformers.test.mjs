// Issue 40 item 7, its transformers.js half: the Llama / Qwen2 / GPT-2 fixture folders
// (tests/fixtures/families, tests/fixtures/makers/hf_tiny.py) run by transformers.js and by our engine on the same ids.
// models/tools/make_transformers_model.py exports each folder to ONNX (fp32, KV cache in Optimum's naming,
// kept under build-transformers/ while fresh) with config.json copied from the fixture.
// How independent: the graph's arithmetic is our torch code (hf_tiny.py reads the folder into llama.py's
// Llama with Qwen2's q/k/v biases, GQA, head_dim and the tied or untied head from config.json, or into
// model.py's GPT with GPT-2's Conv1D weights transposed and gelu_new, and checks that module against the
// float64 reference of the transformers modeling math before exporting it); transformers.js supplies the
// config's reading (the class, the cache's shapes), position_ids, the KV cache handling and the generate
// loop. The independent float64 check of our engine is families.test.mjs (11 tokens); this one covers a
// 64-token greedy run. The fixtures say max_position_embeddings 64: the RoPE folders are exported with 128
// (only a cap there, our loader accepts it); GPT-2's wpe table has 32 rows (n_positions 32), so GPT-2
// generates 28 tokens after its 4-token prompt: 32 positions in all. These random models with tied heads
// fall into repeating a token under greedy decoding; the prompts are ones after which the argmax still
// changes a few times, and the logits are also compared on a pseudo-random sequence of ids.
//  - transformers.js greedy generate() after the prompt; its logits rows (one forward on the whole
//    sequence, and on the random ids) against our probabilities: per row
//    max_j |(log p(j) - log p(top)) - (z(j) - z(top))|, top the reference's argmax, over the row's scale
//    z(top) - min z, <= 1e-4;
//  - our argmax equals generate()'s token at every generated position, except near-ties (the reference's
//    top-2 gap <= 2e-4 of the scale: the tolerance lets each logit move by 1e-4), counted and printed;
//    and our own plain greedy decode equals generate() up to the first near-tie.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as tf from '@huggingface/transformers';
import { loadSpecdec } from 'specdec';
import { greedyFrom } from './adapters-support.mjs';
import { TRANSFORMERS_FOLDERS, familyDir, familyFiles, transformersFolder, useLocalTransformers } from './support.mjs';

useLocalTransformers(tf);
const sd = await loadSpecdec();
const TOL = 1e-4;
const FAMILIES = {
  llama: { cls: 'LlamaForCausalLM', prompt: [60, 61, 62, 63] },
  qwen2: { cls: 'Qwen2ForCausalLM', prompt: [3, 17, 42, 5] },
  gpt2: { cls: 'GPT2LMHeadModel', prompt: [3, 17, 42, 0] },
};
/** n ids in 0..V-1 from a fixed linear congruential sequence. */
const randomIds = (n, V) =>
  Array.from({ length: n }, (_, i) => Number((BigInt(i + 1) * 2654435761n) % 4294967291n) % V);

/** One row: the relative error, the reference's argmax and top-2 gap (relative), and ours. */
function compareRow(p, z) {
  let top = 0;
  let ours = 0;
  for (let j = 1; j < z.length; j++) {
    if (z[j] > z[top]) top = j;
    if (p[j] > p[ours]) ours = j;
  }
  let min = Infinity;
  let second = -Infinity;
  let err = 0;
  const lpTop = Math.log(p[top]);
  for (let j = 0; j < z.length; j++) {
    min = Math.min(min, z[j]);
    if (j !== top) second = Math.max(second, z[j]);
    err = Math.max(err, Math.abs(Math.log(p[j]) - lpTop - (z[j] - z[top])));
  }
  const scale = z[top] - min;
  return { rel: err / scale, top, ours, gap: (z[top] - second) / scale };
}

for (const [family, { cls, prompt: PROMPT }] of Object.entries(FAMILIES)) {
  test(`${family}: transformers.js on the ONNX export of the fixture agrees with our engine`, async () => {
    const name = transformersFolder(familyDir(family), `family-${family}`, { positions: 128 });
    const config = JSON.parse(readFileSync(path.join(TRANSFORMERS_FOLDERS, name, 'config.json'), 'utf8'));
    const model = await tf.AutoModelForCausalLM.from_pretrained(name, {
      dtype: 'fp32',
      device: 'cpu',
      session_options: { intraOpNumThreads: 1, interOpNumThreads: 1 },
    });
    // our engine on the same folder: the exported config.json, the fixture's safetensors
    const ours = sd.loadModel({ ...familyFiles(family), 'config.json': JSON.stringify(config) });
    const step = sd.modelStep(ours);
    try {
      assert.equal(model.constructor.name, cls);
      const kvHeads = config.num_key_value_heads ?? config.n_head;
      const cache = model.sessions.model.inputMetadata.find((m) => m.name === 'past_key_values.0.key');
      if (cache?.shape) assert.equal(cache.shape[1], kvHeads, 'the cache has the KV heads of config.json');

      const N = Math.min(64, (config.n_positions ?? Infinity) - PROMPT.length);
      const generated = await greedyFrom(tf, model, PROMPT, N);
      assert.equal(generated.length, N);
      const seq = [...PROMPT, ...generated];
      const T = seq.length;
      const V = config.vocab_size;
      const row = (a, t) => a.subarray(t * V, (t + 1) * V);
      /** Both sides' rows of every prefix of ids, compared; worst: the largest relative error. */
      const rows = async (ids) => {
        const out = await model({
          input_ids: new tf.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
          attention_mask: tf.ones([1, ids.length]),
        });
        const probs = step(ids, ids.length);
        const compared = ids.map((_, t) => compareRow(row(probs, t), row(out.logits.data, t)));
        const worst = compared.reduce((w, r, t) => (r.rel > w.rel ? { rel: r.rel, t } : w), { rel: 0, t: -1 });
        // the measure tells rows apart: our row 5 against the reference's row 6 is far off
        assert.ok(compareRow(row(probs, 5), row(out.logits.data, 6)).rel > 100 * TOL);
        return { compared, worst };
      };
      const { compared, worst } = await rows(seq);
      const random = (await rows(randomIds(T, V))).worst;

      const nearTies = [];
      const wrong = [];
      for (let t = PROMPT.length - 1; t < T - 1; t++) {
        const r = compared[t]; // predicts the generated token at position t + 1
        if (r.gap <= 2 * TOL) nearTies.push(t + 1);
        else if (r.ours !== seq[t + 1]) wrong.push(`position ${t + 1}: ours ${r.ours}, transformers.js ${seq[t + 1]}`);
      }

      const dec = sd.createDecoder({ target: ours, prompt: PROMPT, temperature: 0, maxTokens: N, plain: true });
      let plain;
      try {
        while (!dec.done) dec.step();
        plain = Array.from(dec.generatedTokens);
      } finally {
        dec.dispose();
      }
      const upTo = nearTies.length ? nearTies[0] - PROMPT.length : N;
      console.log(
        `# ${family}: ${T} rows, worst ${worst.rel.toExponential(2)} (row ${worst.t}; random ids ${random.rel.toExponential(2)}), ` +
          `greedy ${N - wrong.length - nearTies.length}/${N} equal (${new Set(generated).size} distinct), near-ties ${nearTies.length ? nearTies.join(' ') : 'none'}`,
      );
      assert.ok(worst.rel <= TOL, `${family} row ${worst.t}: ${worst.rel}`);
      assert.ok(random.rel <= TOL, `${family} random ids, row ${random.t}: ${random.rel}`);
      assert.deepEqual(wrong, []);
      assert.ok(nearTies.length <= N / 8, `near-ties at ${nearTies}: too many for the greedy check to mean much`);
      assert.deepEqual(plain.slice(0, upTo), generated.slice(0, upTo), 'our plain greedy decode');
    } finally {
      step.dispose();
      ours.dispose();
      await model.dispose();
    }
  });
}
