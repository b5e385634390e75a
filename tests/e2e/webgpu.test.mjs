// specdec's GPT on WebGPU (web/lib/webgpu/webgpu.js) in headless Chromium on its bundled SwiftShader
// adapter (a CPU emulation of a GPU: these tests prove correctness, not speed). The served
// folder (tests/e2e/webgpu-page/, assembled by scripts/lib/webgpu-root.mjs) runs the page's
// checks; the assertions are here. Sizes are kept small for SwiftShader on 2 cores (a pass of the
// small target takes ~0.15 s + ~0.03 s per token there).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { setup, assertClean, outDir } from './harness.mjs';
import { assembleWebgpuRoot } from '../../scripts/lib/webgpu-root.mjs';
import { FALSE_ALARM, applySampling, chiSquare } from '../js/support.mjs';

const root = path.join(outDir, 'webgpu-root');
let env;
let page;
const run = (what, arg) => page.evaluate(([w, a]) => window.gpu[w](a), [what, arg]);

before(async () => {
  assembleWebgpuRoot(root, {
    models: ['target', 'draft', 'large-target', 'target-heads', 'target-int8', 'draft-int8'],
  });
  env = await setup({ root, webgpu: true });
  page = env.page;
  await page.goto(`${env.url}index.html`);
  await page.waitForFunction(() => window.__ready === true, null, { timeout: 60_000 });
});

after(async () => {
  await env?.close();
});

const MAX_DISPATCHES = (nLayer) => 8 * nLayer + 4; // the issue's limit
const DISPATCHES = (nLayer) => 7 * nLayer + 3; // what the kernels are built to take

test('the adapter is there and is named', async () => {
  const info = await run('info');
  assert.equal(info.device, 'webgpu');
  assert.equal(typeof info.adapterInfo.vendor, 'string');
  console.log(
    `# adapter: ${JSON.stringify(info.adapterInfo)} (load ${info.loadMs.toFixed(0)} ms, ${info.liveBuffers} GPU buffers)`,
  );
});

test("small target: GPU logits equal the WASM engine's (prompt, chains after a cached prefix, after a cut) and PyTorch's", async () => {
  const r = await run('logits', 'target');
  for (const row of r.results) {
    console.log(
      `#   ${row.what}: max |Δ| / max |logit| = ${row.maxRel.toExponential(2)} (${row.ms.toFixed(0)} ms, ${row.dispatches} dispatches, ${row.readbacks} read-back)`,
    );
    assert.ok(row.maxRel <= 1e-4, `${row.what}: ${row.maxRel}`);
    assert.equal(row.skipped, 0);
    assert.equal(row.forwarded, row.nLast, `${row.what}: only the new tokens are forwarded`);
    assert.equal(row.passes, 1);
    assert.equal(row.readbacks, 1, 'one read-back per pass');
    assert.equal(row.dispatches, DISPATCHES(6), `${row.dispatches} dispatches (limit ${MAX_DISPATCHES(6)})`);
  }
  const worst = Math.max(...r.results.map((x) => x.maxRel));
  console.log(
    `# small target vs WASM: max relative logit error ${worst.toExponential(2)}; vs PyTorch (golden.json, ${r.golden.rows} rows): ${r.golden.maxRel.toExponential(2)}; ${r.dispatchesPerPass} dispatches per pass (limit ${MAX_DISPATCHES(6)})`,
  );
  assert.ok(r.golden.maxRel <= 1e-4, `golden: ${r.golden.maxRel}`);
});

test("large target: GPU logits equal the WASM engine's", async () => {
  const t0 = Date.now();
  const r = await run('logits', 'large-target');
  for (const row of r.results) assert.ok(row.maxRel <= 1e-4, `${row.what}: ${row.maxRel}`);
  const worst = Math.max(...r.results.map((x) => x.maxRel));
  const k1 = r.results.find((x) => x.nLast === 1);
  console.log(
    `# large target vs WASM: max relative logit error ${worst.toExponential(2)}; a one-token pass ${k1.ms.toFixed(0)} ms on SwiftShader; check took ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  assert.equal(r.dispatchesPerPass, DISPATCHES(6));
  assert.equal(await run('release', 'large-target'), 0, 'its buffers are destroyed');
});

test("trees: GPU tree passes equal the WASM engine's rows; a drafter's depths reuse cached nodes; an accepted path is committed on the GPU", async () => {
  const r = await run('treeLogits', 'target');
  for (const row of r.results) {
    console.log(
      `#   ${row.what}: max |Δ| / max |logit| = ${row.maxRel.toExponential(2)} (${row.nRows} rows, ${row.forwarded} forwarded, ${row.ms.toFixed(0)} ms)`,
    );
    assert.ok(row.maxRel <= 1e-4, `${row.what}: ${row.maxRel}`);
    assert.equal(row.length, row.nRows * 256);
    assert.equal(row.passes, 1, 'a tree is one pass');
    assert.equal(row.readbacks, 1);
    assert.ok(row.dispatches <= MAX_DISPATCHES(r.nLayer), `${row.dispatches} dispatches`);
  }
  const [withRoot, depth2, depth3] = r.results;
  assert.equal(withRoot.forwarded, 1 + 15, "the prefix's last token and every node");
  assert.equal(depth2.forwarded, 2);
  assert.equal(depth3.forwarded, 4, "depth 1's nodes come from the cache");
  console.log(
    `#   accepted path committed: ${r.commit.forwarded} forwarded, ${r.commit.dispatches} dispatches (limit ${MAX_DISPATCHES(r.nLayer)}), max |Δ| vs a fresh model ${r.commit.maxDiff}`,
  );
  assert.equal(r.commit.forwarded, 2, 'the path is in the cache: only the bonus token and the row asked before it');
  assert.equal(r.commit.dispatches, DISPATCHES(r.nLayer) + r.nLayer, 'a copy per layer, in the same command buffer');
  assert.ok(r.commit.dispatches <= MAX_DISPATCHES(r.nLayer));
  assert.ok(r.commit.maxDiff <= 1e-5, `committed path: ${r.commit.maxDiff}`);
  assert.equal(r.commit.cachedAfter, r.commit.length);
  assert.ok(r.rejected.maxRel <= 1e-4, `after a rejected tree: ${r.rejected.maxRel}`);
  assert.equal(r.rejected.forwarded, 3);
  assert.equal(r.rejected.dispatches, DISPATCHES(r.nLayer), 'nothing to commit');
});

test("greedy: GPU target + WASM draft emits the WASM engine's greedy plain tokens", async () => {
  const r = await run('greedy', {
    only: {
      'gamma 4': 200,
      "gamma 'auto'": 40,
      "gamma 'heuristic'": 40,
      'prompt lookup': 40,
      'GPU target + GPU draft': 32,
      'tree 2x2x1': 60,
      'tree 3x1, GPU target + GPU draft': 32,
      heads: 40,
      'heads, tree 2x2': 32,
    },
  });
  for (const m of r.modes) {
    console.log(
      `#   ${m.label}: ${m.tokens} tokens, ${m.account}, ${m.gpuPasses} GPU passes (${m.tokensPerPass.toFixed(2)} tokens per pass), ${(m.ms / 1000).toFixed(1)} s`,
    );
    assert.equal(m.mismatch, null, `${m.label}: ${m.account}`);
    for (const f of m.flips) assert.ok(f.gap < 1e-4, `${m.label}: near-tie at ${f.position}, gap ${f.gap}`);
    if (!m.flips.length) assert.ok(m.equal, `${m.label}: tokens differ`);
    assert.equal(m.gpuPasses, m.targetPasses, 'one GPU pass per target pass');
    assert.equal(m.readbacks, m.gpuPasses, 'one read-back per pass');
  }
  assert.equal(r.modes.find((m) => m.label === 'gamma 4').tokens, 200);
});

test("a WebGPU target alone (plain): the decoder stops at its block size, with the WASM engine's greedy tokens", async () => {
  const r = await run('context', { promptLength: 240, maxTokens: 40 });
  console.log(`#   240-token prompt, maxTokens 40: ${r.tokens} tokens, done ${r.done}${r.error ? `, ${r.error}` : ''}`);
  assert.equal(r.error, null);
  // as with a built-in target: 256 positions scored, the last row's token emitted unscored
  assert.equal(r.tokens, r.blockSize - 240 + 1, 'generation ends when the context is full');
  assert.equal(r.done, true);
  assert.ok(r.equal, "the WASM engine's greedy tokens");
});

test("KV rollback: after rejections the rows equal a fresh model's single pass", async () => {
  const r = await run('rollback');
  const expectForwarded = [17, 12, 9, 8, 5]; // max(nLast, length − common prefix)
  r.forEach((c, i) => {
    console.log(`#   ${c.length} tokens, nLast ${c.nLast}: ${c.forwarded} forwarded, max |Δ| vs fresh ${c.maxDiff}`);
    assert.ok(c.maxDiff <= 1e-6, `case ${i}: ${c.maxDiff}`);
    assert.equal(c.cachedAfter, c.length);
    assert.equal(c.forwarded, expectForwarded[i], `case ${i}: only the tokens past the common prefix are forwarded`);
  });
});

// The joint law of the first two tokens after a prompt (top-k 4, temperature 1): counts from
// decoding runs against p(x1) p(x2 | x1) of the WASM engine, filtered as the decoder does.
function jointChi(r, topK) {
  const p1 = applySampling(r.first, { topK });
  const counts = [];
  const probs = [];
  p1.forEach((a, x1) => {
    if (a <= 0) return;
    const p2 = applySampling(r.second[x1], { topK });
    p2.forEach((b, x2) => {
      if (b <= 0) return;
      counts.push(r.counts[`${x1},${x2}`] ?? 0);
      probs.push(a * b);
    });
  });
  const seen = Object.values(r.counts).reduce((s, c) => s + c, 0);
  assert.equal(
    counts.reduce((s, c) => s + c, 0),
    seen,
    'every sampled pair is in the filtered support',
  );
  return chiSquare([{ counts, probs }]);
}

test('exactness: two-token joint chi-square, speculative (GPU target, WASM draft; chain and tree; heads) and plain', async () => {
  for (const [label, arg] of [
    ['speculative, gamma 2', { samples: 160, gamma: 2 }],
    ['tree 2x2', { samples: 120, tree: { branches: [2, 2] }, seed: 9_000_000 }],
    ['heads, gamma 2', { samples: 100, heads: true, gamma: 2, seed: 10_000_000 }],
    ['plain', { samples: 80, plain: true, seed: 8_000_000 }],
  ]) {
    const r = await run('joint', { ...arg, topK: 4 });
    const chi = jointChi(r, 4);
    console.log(
      `#   ${label}: ${r.samples} samples in ${(r.ms / 1000).toFixed(1)} s, chi2 = ${chi.stat.toFixed(2)}, dof ${chi.dof}, p = ${chi.pValue.toPrecision(3)}${arg.plain ? '' : `, ${r.accepted}/${r.drafted} drafted tokens accepted`}`,
    );
    if (arg.heads) assert.ok(r.byHeads > 0, 'the heads drafted');
    assert.deepEqual(chi.impossible, []);
    assert.ok(chi.pValue > FALSE_ALARM, `${label}: p = ${chi.pValue}`);
  }
});

// 8-bit weights (issue 26 item 3). The GPU kernels compute every float the 8-bit matmuls
// quantize with the WASM engine's operations in its order (webgpu-q8-kernels.js), so an
// activation at a rounding tie (x · 127 / amax = k + 0.5) rounds alike on both and no row needs
// excluding: the logits agree to the WASM engine's own rounding of its probabilities.
test("8-bit weights: GPU logits equal the WASM engine's 8-bit model (chains, a cut, a tree); the load-time quantizer == the 8-bit file", async () => {
  const r = await run('int8Logits', { chains: [1, 5], loadTime: true });
  console.log(`#   loaded through ${r.via} in ${r.loadMs.toFixed(0)} ms`);
  for (const row of r.results) {
    console.log(
      `#   ${row.what}: max |Δ| / max |logit| = ${row.maxRel.toExponential(2)} (${row.ms.toFixed(0)} ms, ${row.dispatches} dispatches)`,
    );
    assert.ok(row.maxRel <= 1e-4, `${row.what}: ${row.maxRel}`);
    assert.equal(row.skipped, 0);
    assert.equal(row.passes, 1);
  }
  const { nEmbd: C, nLayer: L, vocabSize: V } = r.config;
  // bytes a one-token pass reads: the blocks' Linear weights (12 C² per layer) and the float LM head
  const linear = { f32: 12 * C * C * L * 4, int8: 12 * C * C * L * (1 + 2 / 32) };
  console.log(
    `# small target 8-bit vs WASM 8-bit: max relative logit error ${Math.max(...r.results.map((x) => x.maxRel)).toExponential(2)}; Linear weights per pass ${linear.int8} bytes (float32 ${linear.f32}: ${(linear.int8 / linear.f32).toFixed(3)}), with the float LM head ${linear.int8 + V * C * 4} vs ${linear.f32 + V * C * 4}; ${r.weightBytes} bytes of weights on the GPU`,
  );
  assert.equal(r.weights, 'int8');
  assert.equal(r.lastPassDispatches, DISPATCHES(L));
  assert.ok(r.weightBytes < (linear.f32 + (2 * V + 12 * L) * C * 4) / 2, `${r.weightBytes} bytes of weights`);
  assert.deepEqual(
    [r.quantizedAtLoad?.weights, r.quantizedAtLoad?.equal],
    ['int8', true],
    "quantized at load: the 8-bit file's logits, bit for bit",
  );
  const bad = await run('int8Refusals');
  assert.match(
    bad.minus128,
    /^SpecdecError: bytes: model file: tensor 'transformer\.h\.1\.mlp\.c_fc\.weight\.q8' holds -128 at index 5/,
  );
  assert.match(
    bad.zeroScale,
    /^SpecdecError: bytes: model file: tensor 'transformer\.h\.1\.mlp\.c_fc\.weight\.scale' holds the block scale 0 at index 3/,
  );
  assert.equal(bad.f32Asked, null, "'f32' asked of an 8-bit file: widened, as on the CPU");
  assert.match(bad.badOption, /^SpecdecError: weights: expected 'f32' or 'int8'/);
});

test('8-bit weights: greedy decoding in every mode (chain, lookup, tree, heads) emits the WASM 8-bit greedy tokens', async () => {
  // int8Greedy has more modes (plain, gamma 'auto', a GPU 8-bit draft, heads in a tree): all
  // pass; CI runs one of each kind, few tokens (SwiftShader).
  const r = await run('int8Greedy', {
    only: { 'chain, gamma 4': 16, 'prompt lookup': 12, 'tree 2x2x1': 12, heads: 12 },
  });
  for (const m of r.modes) {
    console.log(
      `#   ${m.label}: ${m.tokens} tokens, ${m.account}, ${m.gpuPasses} GPU passes (${m.tokensPerPass.toFixed(2)} tokens per pass), ${(m.ms / 1000).toFixed(1)} s`,
    );
    assert.equal(m.mismatch, null, `${m.label}: ${m.account}`);
    if (!m.flips.length) assert.ok(m.equal, `${m.label}: tokens differ`);
    assert.equal(m.gpuPasses, m.targetPasses, 'one GPU pass per target pass');
    if (m.label.startsWith('heads')) assert.ok(m.byHeads > 0, 'the heads drafted');
  }
  await run('int8Dispose');
});

test('faults: bad options, limits, no adapter, dispose, use after dispose, dispose mid-pass, device lost', async () => {
  const f = await run('faults');
  const specdec = (x, what, re) => {
    assert.equal(x.ok, false, `${what}: should fail`);
    assert.ok(x.specdec, `${what}: a SpecdecError (${x.name}: ${x.message})`);
    if (re) assert.match(x.message, re, what);
  };
  specdec(f.badDevice, 'device: cuda', /^device: expected 'wasm' or 'webgpu'/);
  assert.equal(f.badDevice.argument, 'device');
  specdec(f.badOption, 'unknown option', /^precision: unknown option/);
  assert.deepEqual(f.wasmSync, { isPromise: false, device: 'wasm', isModel: true });
  specdec(f.tooLarge, 'too large', /too large for this WebGPU adapter.*maxStorageBufferBindingSize/);
  specdec(f.noAdapter, 'no adapter', /no WebGPU adapter/);
  specdec(f.badBytes, 'bad bytes', /^bytes: model file/);
  assert.ok(f.liveBeforeDispose > 0);
  assert.equal(f.liveAfterDispose, 0, 'dispose() destroys every buffer');
  specdec(f.scoreAfterDispose, 'score after dispose', /disposed/);
  specdec(f.scorerAfterDispose, 'scorer after dispose', /disposed/);
  specdec(f.decoderAfterDispose, 'decoder after dispose', /disposed/);
  specdec(f.disposeMidPass, 'dispose mid-pass', /disposed/);
  specdec(f.queuedAfterDispose, 'queued call', /disposed/);
  assert.equal(f.liveAfterMidPass, 0);
  specdec(f.afterLost, 'after device lost', /device was lost/);
  specdec(f.decoderAfterLost, 'decoder after device lost', /device was lost/);
  assert.equal(f.liveAfterLost, 0);
  assert.ok(f.midPassSubmitted && f.lostMidPassSubmitted, 'the passes were in flight');
  specdec(f.lostMidPass, 'device lost during a pass', /device was lost/);
  assert.equal(f.liveAfterLostMidPass, 0);
  specdec(
    f.heads,
    'heads made for another target',
    /^heads: made for another target than this WebGPU model \(the heads' target_fingerprint a96fa93c7691b6e7, this model's weights [0-9a-f]{16}\)/,
  );
  assert.equal(f.fingerprint, 'a96fa93c7691b6e7', "the GPU model's wte fingerprint is the one its heads record");
  const treeErrors = [
    /^tree\.parents\[1\]: expected -1 \(the root\) or an earlier node 0\.\.0/,
    /^tree\.tokens: a tree of 1\.\.64 nodes, got 0/,
    /^tree\.parents: expected 2 entries/,
    /^tree\.first: must be in 0\.\.0/,
    /^tree: 250 tokens and 12 tree nodes exceed the context of 256 tokens/,
  ];
  f.badTree.forEach((x, i) => specdec(x, `bad tree ${i}`, treeErrors[i]));
  assert.deepEqual(f.unhandled, [], 'no unhandled rejection');
  console.log(
    `#   messages: ${f.tooLarge.message} | ${f.afterLost.message} | ${f.disposeMidPass.message} | ${f.badTree[0].message}`,
  );
});

test('no WebGPU: navigator.gpu removed → a SpecdecError saying so', async () => {
  const p = await env.context.newPage();
  await p.addInitScript(() => {
    Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true });
  });
  await p.goto(`${env.url}index.html`);
  await p.waitForFunction(() => window.__ready === true, null, { timeout: 60_000 });
  const r = await p.evaluate(() => window.gpu.noWebgpu());
  assert.equal(r.hasGpu, false);
  for (const x of [r.load, r.loadReal]) {
    assert.equal(x.ok, false);
    assert.ok(x.specdec);
    assert.match(x.message, /WebGPU is not available in this browser\/context/);
  }
  await p.close();
});

test('no WebGPU: a default Chromium launch (--disable-gpu) → a SpecdecError', async () => {
  const plain = await setup({ root });
  try {
    await plain.page.goto(`${plain.url}index.html`);
    await plain.page.waitForFunction(() => window.__ready === true, null, { timeout: 60_000 });
    const r = await plain.page.evaluate(() => window.gpu.noWebgpu());
    console.log(`#   --disable-gpu: navigator.gpu ${r.hasGpu ? 'present' : 'absent'}; ${r.loadReal.message}`);
    assert.equal(r.loadReal.ok, false);
    assert.ok(r.loadReal.specdec);
    assert.match(r.loadReal.message, /WebGPU is not available|no WebGPU adapter|refused a device/);
  } finally {
    await plain.close();
  }
});

test('dispose all: no unhandled rejection, console clean', async () => {
  const unhandled = await run('dispose');
  assert.deepEqual(unhandled, []);
  assertClean(assert, env.watch);
});
