// specdec/transformers in Chromium: a module Worker runs transformers.js's browser build (WASM
// device, one thread) with our pair loaded from the served origin (env.allowRemoteModels =
// false; the ORT wasm from the origin too, not a CDN), fp32 and fp16, both as specdec score
// callbacks; greedy tokens must equal transformers.js's own generate() (fp16: but for near-ties
// rounded either way, each checked in the model's logits). The served folder is
// assembled here: the package's files, transformers.js's dist and its onnxruntime-web wasm,
// and the model folders of models/tools/make_transformers_model.py. The same browser (no WebGPU: it
// runs with --disable-gpu) opens examples/transformers-webgpu/ from the repository's layout
// (symlinked in), which then falls back to WASM; and examples/transformers.mjs, run where there
// is no build-transformers/, says what is missing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describeFlips } from '../js/greedy-ties.mjs';
import { copyWorkerPage, workerResult } from './adapter-worker/result.mjs';
import { setup, openTransformersExample, assertClean, screenshot, repoRoot, outDir } from './harness.mjs';

const root = path.join(outDir, 'transformers-worker-root');
let env;

before(async () => {
  rmSync(root, { recursive: true, force: true });
  copyWorkerPage(root, 'transformers-worker');
  cpSync(path.join(repoRoot, 'web/lib'), path.join(root, 'lib'), { recursive: true });
  cpSync(path.join(repoRoot, 'tests/js/greedy-ties.mjs'), path.join(root, 'greedy-ties.mjs'));
  const tfDir = path.dirname(createRequire(import.meta.url).resolve('@huggingface/transformers')); // its dist/
  const ortDist = path.join(path.dirname(createRequire(path.join(tfDir, 'x.js')).resolve('onnxruntime-web')));
  mkdirSync(path.join(root, 'tf'));
  cpSync(path.join(tfDir, 'transformers.js'), path.join(root, 'tf/transformers.js'));
  for (const f of ['ort-wasm-simd-threaded.asyncify.mjs', 'ort-wasm-simd-threaded.asyncify.wasm'])
    cpSync(path.join(ortDist, f), path.join(root, 'tf', f));
  for (const name of ['target', 'draft']) {
    const folder = path.join(repoRoot, 'build-transformers', name);
    execFileSync(
      '/usr/bin/python3',
      ['-m', 'models.tools.make_transformers_model', path.join(repoRoot, `models/${name}.safetensors`), folder],
      { stdio: ['ignore', 'ignore', 'inherit'], cwd: repoRoot },
    );
    cpSync(folder, path.join(root, 'models', name), { recursive: true });
  }
  for (const dir of ['node_modules', 'web', 'examples', 'build-transformers'])
    symlinkSync(path.join(repoRoot, dir), path.join(root, dir));
  env = await setup({ root });
});

after(() => env?.close());

test("transformers.js target + draft in a Worker (WASM): greedy tokens equal generate()'s, fp32 (and fp16 but for near-ties)", async () => {
  const { page, result } = await workerResult(env, 'transformers-worker', 240_000);
  assert.equal(result.type, 'done', result.message);
  for (const [dtype, r] of Object.entries(result.runs)) {
    assert.equal(r.tokens.length, 120, dtype);
    if (dtype === 'fp32') assert.deepEqual(r.tokens, r.reference, dtype);
    else {
      // float16 in Chromium's ORT: its k-token and one-token kernels round differently, so a
      // near-tie may go either way; each place the runs part must be one (greedy-ties.mjs)
      assert.equal(r.compared.mismatch, null, describeFlips(r.compared));
      console.log(`# fp16 in a Worker against generate(): ${describeFlips(r.compared)}`);
    }
    assert.equal(r.cacheType, dtype === 'fp32' ? 'float32' : 'float16');
    assert.equal(r.targetRuns, r.iterations); // one forward() per iteration
    assert.ok(r.tokensPerPass > 1.5, `${dtype}: tokens per pass ${r.tokensPerPass}`);
    assert.ok(r.text.length > 0 && !r.text.includes('\uFFFD'));
    console.log(
      `# ${dtype} in a Worker: ${r.tokens.length} tokens in ${r.ms.toFixed(0)} ms (generate(): ${r.generateMs.toFixed(0)} ms), ${r.tokensPerPass.toFixed(2)} tokens per target pass`,
    );
  }
  assertClean(assert, env.watch);
  await page.close();
});

test('examples/transformers-webgpu without WebGPU: the target falls back to WASM, the text streamed a span per iteration', async () => {
  const page = await env.context.newPage();
  await openTransformersExample(page, env.url, { timeout: 120_000 });
  const r = await page.evaluate(async () => {
    const ex = await import('/examples/transformers-webgpu/main.js');
    return {
      device: ex.device,
      dtype: ex.dtype,
      iterations: ex.first.iterations,
      generated: ex.first.generated,
      spans: document.querySelectorAll('#out span').length,
      text: document.getElementById('out').textContent,
      status: document.getElementById('status').textContent,
    };
  });
  await screenshot(page, 'transformers-example-wasm');
  console.log(`# the example without WebGPU: ${r.status} (${r.iterations} iterations)`);
  assert.equal(r.device, 'wasm');
  assert.equal(r.dtype, 'fp32');
  assert.equal(r.generated, 64);
  assert.equal(r.spans, r.iterations);
  assert.ok(r.text.startsWith('ROMEO:\n') && r.text.length > 40 && !r.text.includes('\uFFFD'), r.text);
  assertClean(assert, env.watch);
  await page.close();
});

test('examples/transformers.mjs without its model folders says which files are missing and how to make them', () => {
  const cwd = mkdtempSync(path.join(tmpdir(), 'specdec-no-models-'));
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'examples/transformers.mjs')], {
    cwd,
    encoding: 'utf8',
  });
  rmSync(cwd, { recursive: true, force: true });
  assert.equal(r.status, 1, r.stderr);
  assert.match(
    r.stderr,
    /missing in build-transformers\/ \(from .*\): target\/config\.json, target\/tokenizer\.json, target\/onnx\/model\.onnx, draft\/config\.json, draft\/onnx\/model\.onnx/,
  );
  assert.match(
    r.stderr,
    /-m models\.tools\.make_transformers_model models\/target\.safetensors build-transformers\/target/,
  );
  assert.doesNotMatch(r.stderr, /tokenizer_class/);
});
