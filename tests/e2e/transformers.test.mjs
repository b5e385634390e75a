// specdec/transformers in Chromium: a module Worker runs transformers.js's browser build (WASM
// device, one thread) with our pair loaded from the served origin (env.allowRemoteModels =
// false; the ORT wasm from the origin too, not a CDN), fp32 and fp16, both as specdec score
// callbacks; greedy tokens must equal transformers.js's own generate() (fp16: but for near-ties
// rounded either way, each checked in the model's logits). The served folder is
// assembled here: the package's files, transformers.js's dist and its onnxruntime-web wasm,
// and the model folders of models/make_transformers_model.py.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describeFlips } from '../js/greedy-ties.mjs';
import { setup, assertClean, screenshot, repoRoot, outDir } from './harness.mjs';

const root = path.join(outDir, 'transformers-worker-root');
let env;

before(async () => {
  rmSync(root, { recursive: true, force: true });
  cpSync(path.join(repoRoot, 'tests/e2e/transformers-worker'), root, { recursive: true });
  cpSync(path.join(repoRoot, 'web/lib'), path.join(root, 'lib'), { recursive: true });
  cpSync(path.join(repoRoot, 'tests/js/greedy-ties.mjs'), path.join(root, 'greedy-ties.mjs'));
  const tfDir = path.dirname(createRequire(import.meta.url).resolve('@huggingface/transformers')); // its dist/
  const ortDist = path.join(path.dirname(createRequire(path.join(tfDir, 'x.js')).resolve('onnxruntime-web')));
  mkdirSync(path.join(root, 'tf'));
  cpSync(path.join(tfDir, 'transformers.js'), path.join(root, 'tf/transformers.js'));
  for (const f of ['ort-wasm-simd-threaded.asyncify.mjs', 'ort-wasm-simd-threaded.asyncify.wasm']) cpSync(path.join(ortDist, f), path.join(root, 'tf', f));
  for (const name of ['target', 'draft']) {
    const folder = path.join(repoRoot, 'build-transformers', name);
    execFileSync('/usr/bin/python3', [path.join(repoRoot, 'models/make_transformers_model.py'), path.join(repoRoot, `models/${name}.safetensors`), folder], { stdio: ['ignore', 'ignore', 'inherit'] });
    cpSync(folder, path.join(root, 'models', name), { recursive: true });
  }
  env = await setup({ root });
});

after(async () => {
  await env?.close();
});

test('transformers.js target + draft in a Worker (WASM): greedy tokens equal generate()\'s, fp32 (and fp16 but for near-ties)', async () => {
  const page = await env.context.newPage();
  await page.goto(`${env.url}index.html`);
  await page.waitForFunction(() => window.__result, null, { timeout: 240_000 });
  const result = await page.evaluate(() => window.__result);
  await screenshot(page, 'transformers-worker');
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
    console.log(`# ${dtype} in a Worker: ${r.tokens.length} tokens in ${r.ms.toFixed(0)} ms (generate(): ${r.generateMs.toFixed(0)} ms), ${r.tokensPerPass.toFixed(2)} tokens per target pass`);
  }
  assertClean(assert, env.watch);
  await page.close();
});
