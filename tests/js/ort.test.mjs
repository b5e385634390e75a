// specdec/ort: onnxruntime-web (Node, WASM backend) running our small pair exported to ONNX in
// Optimum's naming (models/tools/export_onnx.py; the files are made on first use, in build-onnx/),
// as score callbacks of the one decoder. Greedy runs equal the built-in engine's for 200
// tokens; a seeded sampled run measures the same acceptance; the adapter's cache forwards each
// token about once; malformed sessions are refused clearly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-web';
import { loadSpecdec } from 'specdec';
import { ortScorer } from 'specdec/ort';
import { cutPool } from '../../web/lib/adapters/ort.js'; // internal: both adapters' cut caches
import { assertCacheCutBack, assertSampledLikeBuiltin, drain } from './adapters-support.mjs';
import { modelBytes, USING_SHIPPED_MODELS, MODEL_FILES } from './support.mjs';
import { onnxOf } from '../../scripts/lib/onnx-export.mjs';

ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';

const sd = await loadSpecdec();
const bytes = await modelBytes();
const target = sd.loadModel(bytes.target);
const draft = sd.loadModel(bytes.draft);

const session = async (file) =>
  ort.InferenceSession.create(readFileSync(onnxOf(file)), { executionProviders: ['wasm'] });
const targetSession = await session(MODEL_FILES.target);
const draftSession = await session(MODEL_FILES.draft);

async function run(options, { ortTarget, ortDraft }) {
  const ts = ortTarget ? ortScorer(targetSession, { ort }) : null;
  const ds = ortDraft ? ortScorer(draftSession, { ort }) : null;
  const dec = sd.createDecoder({
    ...options,
    ...(ts ? { targetScore: ts, contextLength: target.config.blockSize } : { target }),
    ...(options.plain
      ? {}
      : ds
        ? { draftScore: ds, ...(ts ? {} : { contextLength: draft.config.blockSize }) }
        : { draft }),
  });
  return drain(dec, ts, ds);
}

const greedy = { prompt: 'ROMEO:\nWhat light', temperature: 0, gamma: 4, maxTokens: 200, seed: 1 };

for (const [label, sides] of [
  ['ORT target + built-in draft', { ortTarget: true, ortDraft: false }],
  ['both ORT', { ortTarget: true, ortDraft: true }],
]) {
  test(
    `greedy: ${label} emits the built-in engine's 200 tokens`,
    { skip: !USING_SHIPPED_MODELS && 'needs the shipped pair' },
    async () => {
      const ref = await run(greedy, {});
      const got = await run(greedy, sides);
      assert.equal(got.tokens.length, 200);
      const first = got.tokens.findIndex((t, i) => t !== ref.tokens[i]);
      assert.equal(first, -1, `first different token at ${first}`);
      assert.equal(got.stats.targetPasses, ref.stats.targetPasses);
      // One target run per iteration; the cache forwards each position about once (the
      // accepted prefix is kept, the rejected tail cut), never the whole sequence again.
      assert.equal(got.runs, got.stats.iterations);
      assert.ok(got.forwarded < greedy.prompt.length + 200 + got.stats.drafted, `forwarded ${got.forwarded}`);
    },
  );
}

test(
  'seeded T = 0.8: alpha and tokens per pass with the ORT target match the built-in pair',
  { skip: !USING_SHIPPED_MODELS && 'needs the shipped pair' },
  async () => {
    await assertSampledLikeBuiltin(run, { ortTarget: true }, 'ORT target vs built-in');
  },
);

test("ortScorer logits give the built-in model's probabilities (softmax), rows for the last nLast positions", async () => {
  const ts = ortScorer(targetSession, { ort });
  const step = sd.modelStep(target);
  const tokens = Int32Array.from(sd.encode('First Citizen:\nBefore we proceed'));
  const V = target.config.vocabSize;
  for (const [n, nLast] of [
    [tokens.length - 5, 1],
    [tokens.length, 3],
    [tokens.length - 2, 2],
  ]) {
    const seq = tokens.slice(0, n);
    const logits = await ts(seq, nLast);
    const probs = step(seq, nLast);
    assert.equal(logits.length, nLast * V);
    for (let r = 0; r < nLast; r++) {
      const row = logits.subarray(r * V, (r + 1) * V);
      const max = Math.max(...row);
      const z = row.reduce((s, x) => s + Math.exp(x - max), 0);
      let worst = 0;
      for (let i = 0; i < V; i++) worst = Math.max(worst, Math.abs(Math.exp(row[i] - max) / z - probs[r * V + i]));
      assert.ok(worst < 2e-4, `row ${r} of nLast ${nLast}: max |p_ort - p| = ${worst}`);
    }
  }
  // The cache: cut back to the common prefix, then only the new tokens are forwarded.
  await assertCacheCutBack(ts, tokens, 'ortScorer');
  step.dispose();
});

test('ortScorer refuses sessions it cannot drive, with the reason', () => {
  const fake = (inputs, outputs, inputMetadata) => ({
    run: async () => ({}),
    inputNames: inputs,
    outputNames: outputs,
    inputMetadata,
  });
  const past = ['past_key_values.0.key', 'past_key_values.0.value'];
  const present = ['present.0.key', 'present.0.value'];
  const cases = [
    [null, /session: expected an onnxruntime-web InferenceSession/],
    [fake(['ids'], ['logits']), /session: the model has no input_ids input \(inputs: ids\)/],
    [fake(['input_ids'], ['out']), /session: the model has no logits output/],
    [
      fake(['input_ids'], ['logits']),
      /no past_key_values\.\{i\}\.key \/ \.value inputs: export the model with its KV cache/,
    ],
    [fake(['input_ids', ...past], ['logits', 'present.0.key']), /output present\.0\.value is missing/],
    [
      fake(['input_ids', ...past], ['logits', ...present]),
      /options\.numHeads: the session does not say its KV cache's shape/,
    ],
    [
      fake(
        ['input_ids', ...past],
        ['logits', ...present],
        [
          {
            name: 'past_key_values.0.key',
            isTensor: true,
            type: 'bfloat16',
            shape: [1, 4, 'p', 8],
          },
        ],
      ),
      /the KV cache is bfloat16; this adapter handles float32 and float16 caches/,
    ],
  ];
  for (const [s, re] of cases) assert.throws(() => ortScorer(s, { ort }), re);
  assert.throws(() => ortScorer(targetSession, { ort, heads: 4 }), /options\.heads: unknown option of ortScorer/);
  assert.throws(() => ortScorer(targetSession, { ort: {} }), /options\.ort: expected the onnxruntime-web module/);
  // numHeads / headSize given by hand work where metadata is silent
  assert.equal(
    typeof ortScorer(fake(['input_ids', ...past], ['logits', ...present]), {
      ort,
      numHeads: 4,
      headSize: 8,
    }),
    'function',
  );
});

test('examples/ort-target.mjs runs (ORT target, specdec draft, 200 tokens)', async () => {
  const { execFileSync } = await import('node:child_process');
  const { ROOT } = await import('./support.mjs');
  onnxOf(MODEL_FILES.target);
  const out = execFileSync(process.execPath, ['examples/ort-target.mjs'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  assert.match(out, /\n200 tokens, [\d.]+ per ORT run, alpha [\d.]+, [\d.]+ ms\/token\n$/);
});

// ------------------------------------------------------------------ float16 caches

// The float16 export (models/tools/export_onnx.py --fp16: float16 weights, KV cache and logits), made
// on demand in build-onnx/ like onnxOf's.
async function fp16Session(file) {
  const { execFileSync } = await import('node:child_process');
  const { existsSync, statSync } = await import('node:fs');
  const { ROOT } = await import('./support.mjs');
  const out = `${ROOT}/build-onnx/${file.split('/').pop().replace('.safetensors', '')}_fp16.onnx`;
  if (!existsSync(out) || statSync(out).mtimeMs < statSync(file).mtimeMs) {
    execFileSync('/usr/bin/python3', ['-m', 'models.tools.export_onnx', '--fp16', file, out], {
      stdio: ['ignore', 'ignore', 'inherit'],
      cwd: ROOT,
    });
  }
  return ort.InferenceSession.create(readFileSync(out), { executionProviders: ['wasm'] });
}

test('float16 KV cache: speculative greedy through ortScorer equals plain greedy on the same session; logits near float32', async () => {
  const session16 = await fp16Session(MODEL_FILES.target);
  assert.equal(session16.inputMetadata.find((m) => m.name === 'past_key_values.0.key').type, 'float16');
  const decodeWith = async (options) => {
    const ts = ortScorer(session16, { ort });
    const dec = sd.createDecoder({
      prompt: 'ROMEO:\nWhat light',
      temperature: 0,
      maxTokens: 200,
      targetScore: ts,
      contextLength: target.config.blockSize,
      ...options,
    });
    for await (const r of dec.generate()) void r;
    const out = { tokens: dec.generatedTokens, iterations: dec.stats.iterations, runs: ts.runs };
    dec.dispose();
    await ts.dispose();
    return out;
  };
  const plain = await decodeWith({ plain: true });
  const spec = await decodeWith({ draft, gamma: 4 });
  assert.equal(spec.tokens.length, 200);
  const first = spec.tokens.findIndex((t, i) => t !== plain.tokens[i]);
  assert.equal(first, -1, `first different token at ${first}`);
  assert.equal(spec.runs, spec.iterations);
  assert.ok(spec.iterations < 150, `iterations ${spec.iterations}`);
  // the rows: float16 logits widened, close to the float32 export's
  const s16 = ortScorer(session16, { ort });
  const s32 = ortScorer(targetSession, { ort });
  const tokens = Int32Array.from(sd.encode('First Citizen:\nBefore we proceed'));
  const [a, b] = [await s16(tokens, 3), await s32(tokens, 3)];
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  assert.ok(worst < 0.25, `max |logit16 - logit32| = ${worst}`);
  await s16(tokens.subarray(0, 10), 1); // a cut of float16 tensors
  assert.equal(s16.cachedTokens, 10);
  const again = await s16(tokens, 3); // the same rows, from the cut cache (other pass shapes: rounding)
  let drift = 0;
  for (let i = 0; i < a.length; i++) drift = Math.max(drift, Math.abs(again[i] - a[i]));
  assert.ok(drift < 0.05, `rows after the cut differ by ${drift}`);
  await s16.dispose();
  await s32.dispose();
  await session16.release();
});

test('ortScorer: cacheType where the session does not say its cache type', () => {
  const fake = (inputs, outputs) => ({
    run: async () => ({}),
    inputNames: inputs,
    outputNames: outputs,
  });
  const past = ['past_key_values.0.key', 'past_key_values.0.value'];
  const present = ['present.0.key', 'present.0.value'];
  const s = fake(['input_ids', ...past], ['logits', ...present]);
  assert.equal(typeof ortScorer(s, { ort, numHeads: 4, headSize: 8, cacheType: 'float16' }), 'function');
  assert.throws(
    () => ortScorer(s, { ort, numHeads: 4, headSize: 8, cacheType: 'int8' }),
    /options\.cacheType: expected 'float32' or 'float16'/,
  );
});

test('cutPool: cuts land in reused buffers, correct after reuse; outgrown or detached buffers are not reused', () => {
  // a fake cache tensor (1, H, S, D) whose values say where they came from: h * 1000 + s * 10 + d
  const at = (S, D) => (_, i) => Math.floor(i / (S * D)) * 1000 + Math.floor((i / D) % S) * 10 + (i % D);
  const tensorOf = (H, S, D, Type = Float32Array) => ({
    dims: [1, H, S, D],
    data: Type.from({ length: H * S * D }, at(S, D)),
  });
  const make = (data, dims) => ({ data, dims });
  const pool = cutPool();
  const cases = [
    // [H, S, D, n, type, takes the buffer the previous cut released, free buffers after]
    [2, 6, 3, 4, Float32Array, false, 1],
    [2, 7, 3, 5, Float32Array, true, 1], // fits the first buffer's room (1.25x, page-rounded)
    [4, 9, 2, 3, Uint16Array, true, 1], // float16 bits
    [8, 200, 4, 190, Float32Array, false, 2], // larger than any free buffer
  ];
  let last = null;
  for (const [H, S, D, n, Type, reused, free] of cases) {
    const src = tensorOf(H, S, D, Type);
    const cut = pool.cut(src, src.data, n, make);
    assert.deepEqual(cut.dims, [1, H, n, D]);
    assert.ok(cut.data instanceof Type);
    assert.deepEqual(Array.from(cut.data), Array.from({ length: H * n * D }, at(n, D)), `H ${H} S ${S} n ${n}`);
    if (last) assert.equal(cut.data.buffer === last, reused, `buffer reuse for H ${H} S ${S} n ${n}`);
    pool.release(cut);
    pool.release(cut); // released twice: listed once
    pool.release({ dims: [1, 1, 1, 1] }); // not made by the pool: nothing
    assert.equal(pool.free, free);
    last = cut.data.buffer;
  }
  // a buffer detached meanwhile (transferred to a worker) has no room left: never picked
  const big = pool.cut(tensorOf(8, 200, 4), tensorOf(8, 200, 4).data, 190, make); // takes the big one
  const small = pool.cut(tensorOf(2, 6, 3), tensorOf(2, 6, 3).data, 4, make); // takes the other
  pool.release(small);
  structuredClone(small.data.buffer, { transfer: [small.data.buffer] });
  const again = pool.cut(tensorOf(2, 6, 3), tensorOf(2, 6, 3).data, 4, make);
  assert.notEqual(again.data.buffer, small.data.buffer);
  assert.deepEqual(Array.from(again.data), Array.from({ length: 24 }, at(4, 3)));
  void big;
});
