// specdec/transformers on onnxruntime-web's WASM backend (what a browser's `device: 'wasm'`
// runs), one thread, registered for transformers.js under Node through
// globalThis[Symbol.for('onnxruntime')]: the quantized files of our target (q8, q4, q4f16) and the
// Llama-type model load, specdec over each emits its own greedy generate() tokens, and our q8 file's
// k-token pass equals one-token passes there too (its int8 kernels differ from the x86 ones).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as ort from 'onnxruntime-web';
import { loadSpecdec } from 'specdec';
import { transformersScorer } from 'specdec/transformers';
import { greedyFrom as greedyFromWith, oneTokenRow } from './adapters-support.mjs';
import { compareGreedy, describeFlips } from './greedy-ties.mjs';
import { ROOT, modelBytes, transformersFolder, transformersTarget, useLocalTransformers } from './support.mjs';

const require = createRequire(import.meta.url);
ort.env.wasm.numThreads = 1;
ort.env.wasm.wasmPaths = pathToFileURL(`${path.dirname(require.resolve('onnxruntime-web'))}/`).href;
ort.env.logLevel = 'error';
globalThis[Symbol.for('onnxruntime')] = ort; // before transformers.js is imported
const tf = await import('@huggingface/transformers');

useLocalTransformers(tf);
const TARGET = transformersTarget();
const LLAMA = transformersFolder(path.join(ROOT, 'models/llama.safetensors'), 'llama', {
  dtypes: 'fp32',
});
const load = (name, dtype) =>
  tf.AutoModelForCausalLM.from_pretrained(name, {
    dtype,
    device: 'auto',
    session_options: { executionProviders: ['wasm'] },
  });

const sd = await loadSpecdec();
const draft = sd.loadModel((await modelBytes()).draft);
const enc = (text) => Array.from(new TextEncoder().encode(text));
const greedyFrom = (model, tokens, n) => greedyFromWith(tf, model, tokens, n);

const PROMPT = enc('ROMEO:\nWhat light');
const TIE = { q8: 0.02, q4: 0.02, q4f16: 0.1, fp32: 0.02 };
for (const [name, dtype] of [
  [TARGET, 'q8'],
  [TARGET, 'q4'],
  [TARGET, 'q4f16'],
  [LLAMA, 'fp32'],
]) {
  test(`wasm: ${name} ${dtype} loads; specdec over it emits its own greedy generate() tokens`, async () => {
    const model = await load(name, dtype);
    const ts = transformersScorer(model);
    const N = 40;
    const ref = await greedyFrom(model, PROMPT, N);
    const dec = sd.createDecoder({
      prompt: PROMPT,
      targetScore: ts,
      draft,
      temperature: 0,
      gamma: 4,
      maxTokens: N,
      contextLength: 256,
    });
    const got = [];
    for await (const r of dec.generate()) got.push(...r.emitted);
    const result = await compareGreedy({
      got,
      reference: ref,
      tie: TIE[dtype],
      logitsAfter: (prefix) => oneTokenRow(model, PROMPT.concat(prefix)),
      continueFrom: (prefix, n) => greedyFrom(model, PROMPT.concat(prefix), n),
    });
    console.log(`# wasm ${name} ${dtype}: ${describeFlips(result)}; alpha ${dec.stats.acceptanceRate.toFixed(3)}`);
    assert.equal(result.mismatch, null, describeFlips(result));
    dec.dispose();
    await ts.dispose();
    if (dtype !== 'q8') return;
    // our q8: a k-token pass's rows equal one-token passes' on WASM's int8 kernels too
    const text = enc('DUKE VINCENTIO:\nNo, holy father; throw away that thought;');
    const one = transformersScorer(model);
    const many = transformersScorer(model);
    let worst = 0;
    for (let end = 21; end <= text.length; end += 5) {
      const rows = await many(Int32Array.from(text.slice(0, end)), 5);
      for (let r = 0; r < 5; r++) {
        const row = await one(Int32Array.from(text.slice(0, end - 4 + r)), 1);
        for (let i = 0; i < row.length; i++) worst = Math.max(worst, Math.abs(row[i] - rows[r * row.length + i]));
      }
    }
    console.log(`# wasm q8, k = 5 pass vs one-token passes: max |logit diff| ${worst.toExponential(1)}`);
    assert.ok(worst < 1e-3, `max |logit diff| ${worst}`);
    await one.dispose();
    await many.dispose();
  });
}
