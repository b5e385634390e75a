// specdec/transformers with transformers.js on WebGPU (device 'webgpu', onnxruntime-web's WebGPU
// execution provider) in headless Chromium on its SwiftShader adapter, through the page a
// transformers.js developer would copy: examples/transformers-webgpu/ (target on WebGPU, draft
// on WASM). SwiftShader is a CPU emulation of a GPU: this proves correctness, not speed — its
// figures say nothing about a real GPU. It compiles every WebGPU program of a model's first pass
// (~15-30 s on 2 busy cores), so one page holds every check: the example streams its first run,
// then tests/e2e/transformers-worker/webgpu-checks.mjs drives the example's own models. The model
// is small for SwiftShader: the served target is our small model (models/draft.safetensors, 2
// layers) in float32, its draft the same model's 4-bit copy (dtype q4 of
// models/tools/make_transformers_model.py) on WASM. SwiftShader has no shader-f16: transformers.js
// refuses fp16 there, so fp16 and q4f16 run only where the adapter has it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describeFlips } from '../js/greedy-ties.mjs';
import { FALSE_ALARM, chiSquare } from '../js/support.mjs';
import { setup, openTransformersExample, assertClean, screenshot, repoRoot, outDir } from './harness.mjs';

const root = path.join(outDir, 'transformers-webgpu-root');
const ORT_DIST = 'node_modules/@huggingface/transformers/node_modules/onnxruntime-web/dist'; // as main.js has it
let env;
let page;
let info;
const check = (name, arg) => page.evaluate(([n, a]) => window.checks[n](a), [name, arg]);

// Counts the GPUBuffers of every GPUDevice of the page (made, destroyed, live, bytes live).
function gpuAccounting() {
  const gpu = { made: 0, destroyed: 0, live: new Set(), bytes: 0 };
  window.__gpu = gpu;
  if (typeof GPUDevice === 'undefined') return;
  const create = GPUDevice.prototype.createBuffer;
  GPUDevice.prototype.createBuffer = function createBuffer(descriptor) {
    const buffer = create.call(this, descriptor);
    gpu.made++;
    gpu.live.add(buffer);
    gpu.bytes += buffer.size;
    return buffer;
  };
  const destroy = GPUBuffer.prototype.destroy;
  GPUBuffer.prototype.destroy = function destroyBuffer() {
    if (gpu.live.delete(this)) {
      gpu.destroyed++;
      gpu.bytes -= this.size;
    }
    return destroy.call(this);
  };
}

before(async () => {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  // the repository's layout, as examples/transformers-webgpu/ expects it; the model folders are ours
  assert.ok(
    existsSync(path.join(repoRoot, ORT_DIST, 'ort-wasm-simd-threaded.asyncify.wasm')),
    `${ORT_DIST} (transformers.js's onnxruntime-web) is not where examples/transformers-webgpu/main.js looks`,
  );
  for (const dir of ['node_modules', 'web', 'examples']) symlinkSync(path.join(repoRoot, dir), path.join(root, dir));
  cpSync(
    path.join(repoRoot, 'tests/e2e/transformers-worker/webgpu-checks.mjs'),
    path.join(root, 'checks/webgpu-checks.mjs'),
  );
  cpSync(path.join(repoRoot, 'tests/js/greedy-ties.mjs'), path.join(root, 'checks/greedy-ties.mjs'));
  const small = path.join(repoRoot, 'build-transformers/draft');
  execFileSync(
    '/usr/bin/python3',
    ['-m', 'models.tools.make_transformers_model', path.join(repoRoot, 'models/draft.safetensors'), small],
    { stdio: ['ignore', 'ignore', 'inherit'], cwd: repoRoot },
  );
  const models = path.join(root, 'build-transformers');
  cpSync(small, path.join(models, 'target'), { recursive: true });
  cpSync(small, path.join(models, 'draft'), { recursive: true });
  const q4 = path.join(small, 'onnx/model_q4.onnx');
  if (existsSync(q4))
    cpSync(q4, path.join(models, 'draft/onnx/model.onnx')); // the example loads its draft as fp32
  else console.log("# no model_q4.onnx: the draft is the target's own float32 copy (every draft accepted)");
  env = await setup({ root, webgpu: true, isolation: false }); // a plain static host: ORT on one thread
  await env.context.addInitScript(gpuAccounting);
  page = env.page;
  const t0 = Date.now();
  await openTransformersExample(page, env.url, { timeout: 240_000, polling: 250 });
  const loadMs = Date.now() - t0;
  await page.evaluate(() =>
    import('/checks/webgpu-checks.mjs').then((m) => {
      window.checks = m.checks;
    }),
  );
  info = await check('info');
  console.log(
    `# example page on ${JSON.stringify(info.adapter)}: ${info.status} (${(loadMs / 1000).toFixed(1)} s from page load, WebGPU programs compiled on SwiftShader)`,
  );
});

after(() => env?.close());

test('examples/transformers-webgpu: the target on WebGPU (SwiftShader), the text streamed a span per iteration', async () => {
  await screenshot(page, 'transformers-webgpu-example');
  assert.equal(info.device, 'webgpu');
  assert.equal(info.dtype, info.adapter.f16 ? 'fp16' : 'fp32');
  assert.equal(info.first.tokens, 64);
  assert.equal(info.first.generated, 64);
  assert.equal(info.spans, info.first.iterations, 'one span per iteration');
  assert.ok(
    info.text.startsWith('ROMEO:\n') && info.text.length > 'ROMEO:\n'.length + 32 && !info.text.includes('\uFFFD'),
    info.text,
  );
  assert.match(info.status, /^64 tokens, target on webgpu \((fp32|fp16)\): [\d.]+ per target pass$/);
  console.log(
    `#   ${info.spans} iterations, ${info.corrected} with the draft cut; ${info.first.tokensPerPass.toFixed(2)} tokens per target pass`,
  );
});

// fp32 on SwiftShader; on an adapter with shader-f16 the example loads the target in fp16, and
// float16's k-token and one-token passes may round a near-tie either way (tests/js/greedy-ties.mjs)
test("WebGPU: greedy specdec emits the target's own generate() tokens on the same device", async () => {
  const fp16 = info.dtype === 'fp16';
  const r = await check('greedy', {
    prompt: 'ROMEO:\nBut soft',
    tokens: 24,
    tie: fp16 ? 0.1 : 1e-3,
  });
  console.log(
    `#   24 tokens: ${describeFlips(r.compared)}; ${r.stats.iterations} iterations (${r.cut} cut a draft), ${r.stats.tokensPerPass.toFixed(2)} tokens per target pass; specdec ${(r.ms / 1000).toFixed(1)} s, generate() ${(r.generateMs / 1000).toFixed(1)} s on SwiftShader`,
  );
  assert.equal(r.tokens.length, 24);
  assert.equal(r.compared.mismatch, null, describeFlips(r.compared));
  if (!r.compared.flips.length) assert.deepEqual(r.tokens, r.reference);
  assert.equal(r.cacheType, fp16 ? 'float16' : 'float32');
  assert.equal(r.targetRuns, r.stats.iterations, 'one forward() per iteration');
});

test("WebGPU: the KV cache cut back on rejection gives a fresh pass's rows; only new tokens are forwarded", async () => {
  const { cases, counts } = await check('cut');
  const expected = [
    [0, 24, 24],
    [24, 21, 4],
    [21, 21, 3],
    [21, 22, 1],
  ]; // cached before, after, forwarded (the cut keeps at most length - nLast)
  cases.forEach((c, i) => {
    console.log(
      `#   ${c.length} tokens, nLast ${c.nLast}: cache ${c.cachedBefore} -> ${c.cachedAfter}, ${c.forwarded} forwarded, max |Δ| vs a fresh pass ${c.maxDiff.toExponential(2)} (max |logit| ${c.maxAbs.toFixed(1)})`,
    );
    assert.equal(c.rows, c.nLast);
    // float16 (an adapter with shader-f16): a k-token pass after a cut and a fresh pass round apart
    const tolerance = info.dtype === 'fp16' ? 0.1 : 1e-4 * Math.max(1, c.maxAbs);
    assert.ok(c.maxDiff <= tolerance, `case ${i}: ${c.maxDiff}`);
    assert.deepEqual([c.cachedBefore, c.cachedAfter, c.forwarded], expected[i], `case ${i}`);
  });
  assert.equal(counts.ortLive, 0, 'every ORT tensor on the GPU disposed');
});

test("WebGPU: a sampled run (T = 1) follows the target's distribution (chi-square of each token's probability integral transform)", async () => {
  const bins = 8;
  const r = await check('sampled', { prompt: 'KING RICHARD:\nThe', tokens: 64, seed: 7, bins });
  const chi = chiSquare([{ counts: r.counts, probs: new Array(bins).fill(1 / bins) }]);
  console.log(
    `#   64 tokens, ${r.stats.iterations} iterations (${r.cut} cut a draft), alpha ${r.stats.acceptanceRate.toFixed(2)}: bins ${r.counts.join(' ')}, chi2 ${chi.stat.toFixed(1)} on ${chi.dof} dof, p = ${chi.pValue.toFixed(3)}`,
  );
  assert.equal(r.tokens.length, 64);
  assert.ok(chi.pValue > FALSE_ALARM, `chi2 ${chi.stat}, p ${chi.pValue}`);
});

test("WebGPU: 50 decoders leak no GPU buffer (ORT's GPU tensors all disposed, live GPUBuffers flat)", async () => {
  const r = await check('leak', { n: 50, prompt: 'To be' });
  const at = (i) => r.after[i - 1];
  console.log(
    `#   50 decoders in ${(r.ms / 1000).toFixed(1)} s: live GPUBuffers after 1/10/50: ${at(1).gpuLive}/${at(10).gpuLive}/${at(50).gpuLive} (${(at(50).gpuBytes / 1e6).toFixed(2)} MB), ORT GPU tensors made ${at(50).ortMade}, live ${at(50).ortLive}`,
  );
  console.log(
    `#   control, 3 passes not disposed: ORT GPU tensors live ${r.control.leaked.ortLive}, live GPUBuffers ${r.control.before.gpuLive} -> ${r.control.leaked.gpuLive}; disposed: ${r.control.released.ortLive}`,
  );
  for (const [i, c] of r.after.entries())
    assert.equal(c.ortLive, 0, `decoder ${i + 1}: ORT tensors on the GPU not disposed`);
  assert.ok(at(50).gpuLive <= at(10).gpuLive, `live GPUBuffers grew from ${at(10).gpuLive} to ${at(50).gpuLive}`);
  assert.ok(at(50).gpuBytes <= at(10).gpuBytes, `GPU bytes grew from ${at(10).gpuBytes} to ${at(50).gpuBytes}`);
  // the accounting sees a leak when there is one
  assert.equal(r.control.leaked.ortLive, r.control.tensors);
  assert.ok(r.control.tensors > 0);
  assert.equal(r.control.released.ortLive, 0);
});

test('WebGPU fp16 (and q4f16): only on an adapter with shader-f16', (t) => {
  if (!info.adapter.f16) {
    t.skip(
      'SwiftShader has no shader-f16: transformers.js refuses fp16 there ("The device (webgpu) does not support fp16"); a q4f16 file loads but its Cast kernels need f16',
    );
    return;
  }
  assert.equal(info.dtype, 'fp16'); // and the tests above ran the fp16 target
});

test('no console errors, page errors or requests off the origin', () => {
  assertClean(assert, env.watch);
});
