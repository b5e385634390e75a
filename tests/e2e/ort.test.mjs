// specdec/ort in Chromium: a module Worker runs onnxruntime-web (WASM backend, one thread) as
// the target of specdec's decoder with specdec's own draft, greedy, and must emit the built-in
// pair's tokens. The served folder is assembled here from the package's files, onnxruntime-web's
// dist and the ONNX export of the shipped target (models/tools/export_onnx.py).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { copyWorkerPage, workerResult } from './adapter-worker/result.mjs';
import { setup, assertClean, repoRoot, outDir } from './harness.mjs';
import { onnxOf } from '../../scripts/lib/onnx-export.mjs';

const root = path.join(outDir, 'ort-worker-root');
let env;

before(async () => {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(path.join(root, 'models'), { recursive: true });
  copyWorkerPage(root, 'ort-worker');
  cpSync(path.join(repoRoot, 'web/lib'), path.join(root, 'lib'), { recursive: true });
  const dist = path.join(repoRoot, 'node_modules/onnxruntime-web/dist');
  mkdirSync(path.join(root, 'ort'));
  for (const f of ['ort.wasm.min.mjs', 'ort-wasm-simd-threaded.mjs', 'ort-wasm-simd-threaded.wasm']) {
    cpSync(path.join(dist, f), path.join(root, 'ort', f));
  }
  for (const f of ['target.safetensors', 'draft.safetensors'])
    cpSync(path.join(repoRoot, 'models', f), path.join(root, 'models', f));
  cpSync(onnxOf(path.join(repoRoot, 'models/target.safetensors')), path.join(root, 'models/target.onnx'));
  env = await setup({ root });
});

after(() => env?.close());

test("ORT target in a Worker + specdec draft: greedy tokens equal the built-in pair's", async () => {
  const { page, result } = await workerResult(env, 'ort-worker', 120_000);
  assert.equal(result.type, 'done', result.message);
  assert.equal(result.tokens.length, 120);
  assert.deepEqual(result.tokens, result.reference);
  assert.equal(result.ortRuns, result.iterations); // one ORT run per iteration
  assert.ok(result.tokensPerPass > 1.5, `tokens per pass ${result.tokensPerPass}`);
  console.log(
    `# ORT target in a Worker: ${result.tokens.length} tokens in ${result.ms.toFixed(0)} ms, ${result.tokensPerPass.toFixed(2)} tokens per ORT run`,
  );
  assertClean(assert, env.watch);
  await page.close();
});
