// The checks of the 8-bit WebGPU model (issue 26 item 3), called by tests/e2e/webgpu.test.mjs as
// window.gpu.int8*: GPU logits against the WASM engine's 8-bit model (chains, a cut, a tree),
// the float file quantized at load against the quantized file, and greedy decoding in every mode
// against the WASM engine's 8-bit greedy tokens. page.mjs hands over its helpers.

/**
 * @param {object} h page.mjs's helpers: sd, bytesOf, seqOf, compareToProbs, makeTree, pathRows,
 *   describeFlips, checkCachedChains (the prompt, chains after it and a cut, each checked),
 *   greedyTokens (a WASM model's greedy tokens after a prefix), greedyOnGpu (one mode's greedy
 *   decoding with a GPU target, compared with reference tokens)
 */
export function int8Checks(h) {
  const { sd, bytesOf, seqOf, compareToProbs, makeTree, pathRows, describeFlips, checkCachedChains } = h;
  const wasm = new Map();
  const wasm8 = async (name) => {
    if (!wasm.has(name)) wasm.set(name, sd.loadModel(await bytesOf(`${name}-int8`), { weights: 'int8' }));
    return wasm.get(name);
  };
  const gpu = new Map();
  // The package's entry: sd.loadModel(bytes, { device: 'webgpu', weights }).
  const via = 'sd.loadModel';
  const load = (bytes, weights) => sd.loadModel(bytes, { device: 'webgpu', weights });
  const gpu8 = async (name) => {
    if (!gpu.has(name)) {
      const t0 = performance.now();
      const m = await load(await bytesOf(`${name}-int8`), 'int8');
      m.loadMs = performance.now() - t0;
      gpu.set(name, m);
    }
    return gpu.get(name);
  };
  const wasmGreedy8 = async (prefix, n) => h.greedyTokens(await wasm8('target'), prefix, n);

  return {
    // GPU 8-bit logits against the WASM engine's 8-bit model: the prompt, chains after the
    // cached prefix, a cut back, and a 3x2x1 tree with its root row; the same file quantized
    // at load on the GPU (from the float file) against the 8-bit file's GPU model, bit for bit.
    async int8Logits({ name = 'target', chains = [1, 2, 5, 17], tree = true, loadTime = false } = {}) {
      const g = await gpu8(name);
      await g.reset();
      const step = sd.modelStep(await wasm8(name));
      const results = [];
      const check = async (what, seq, nLast, treeArgs = null) => {
        const before = g.stats;
        const t0 = performance.now();
        const rows = treeArgs ? await g.scoreTree(seq, treeArgs) : await g.score(seq, nLast);
        const ms = performance.now() - t0;
        const ref = treeArgs ? pathRows(step, seq, treeArgs, 0, true) : step(seq, nLast);
        results.push({
          what,
          nLast,
          ms,
          ...compareToProbs(rows, ref, nLast),
          dispatches: g.stats.dispatches - before.dispatches,
          passes: g.stats.passes - before.passes,
        });
      };
      const seq = await checkCachedChains(check, chains);
      if (tree) {
        const t = makeTree([3, 2, 1], Array.from(sd.encode(' through yonder')));
        await g.score(seq, 1);
        await check('3x2x1 tree (15 nodes) with its root row', seq, 16, {
          ...t,
          first: 0,
          withRoot: true,
        });
      }
      step.dispose();
      // loadTime: a GPU model quantized at load too (by the engine's quantizer, in the WASM
      // module's loader), its logits against the 8-bit file's
      let quantizedAtLoad = null;
      if (loadTime) {
        const q = await load(await bytesOf(name), 'int8');
        const s = seqOf('ROMEO:\nBut soft');
        await g.reset();
        const a = await g.score(s, s.length);
        const b = await q.score(s, s.length);
        quantizedAtLoad = {
          weights: q.weights,
          equal: a.every((x, i) => Object.is(x, b[i])),
          weightBytes: q.weightBytes,
        };
        q.dispose();
      }
      return {
        results,
        quantizedAtLoad,
        via,
        config: g.config,
        weights: g.weights,
        weightBytes: g.weightBytes,
        fileBytes: g.fileBytes,
        lastPassDispatches: g.stats.lastPassDispatches,
        loadMs: g.loadMs,
      };
    },

    // Greedy decoding with the 8-bit GPU target in each mode against the WASM engine's 8-bit
    // greedy plain tokens. only: { label: maxTokens }.
    async int8Greedy({ only, prompt = 'ROMEO:\nWhat light through yonder window breaks?\n' } = {}) {
      const g = await gpu8('target');
      const draft = await wasm8('draft');
      const heads = await sd.loadHeads(await bytesOf('target-heads'), await wasm8('target'));
      const promptTokens = seqOf(prompt);
      const n = Math.max(...Object.values(only));
      const reference = await wasmGreedy8(promptTokens, n);
      const modes = [
        ['plain', { plain: true }],
        ['chain, gamma 4', { draft, gamma: 4 }],
        ["chain, gamma 'auto'", { draft, gamma: 'auto' }],
        ['prompt lookup', { promptLookup: true }],
        ['tree 2x2x1', { draft, tree: { branches: [2, 2, 1] } }],
        ['GPU 8-bit target + GPU 8-bit draft', { draft: await gpu8('draft'), gamma: 3 }],
        ['heads', { heads, gamma: 3 }],
        ['heads, tree 2x2', { heads, tree: { branches: [2, 2] } }],
      ];
      const out = [];
      for (const [label, options] of modes) {
        if (!(label in only)) continue;
        const before = g.stats;
        const compare = { reference, referenceGreedy: wasmGreedy8 };
        const { got, stats, ms, cmp } = await h.greedyOnGpu(g, promptTokens, only[label], options, compare);
        out.push({
          label,
          ms,
          tokens: got.length,
          equal: got.every((t, i) => t === reference[i]),
          flips: cmp.flips,
          mismatch: cmp.mismatch,
          account: describeFlips(cmp),
          gpuPasses: g.stats.passes - before.passes,
          targetPasses: stats.targetPasses,
          tokensPerPass: stats.tokensPerPass,
          byHeads: stats.byDrafter?.heads ?? 0,
        });
      }
      heads.dispose?.();
      return { modes: out, via };
    },

    // 8-bit files the GPU loader refuses, naming the tensor (as the WASM loader does).
    async int8Refusals() {
      const good = await bytesOf('draft-int8');
      const n = Number(new DataView(good.buffer, good.byteOffset).getBigUint64(0, true));
      const header = JSON.parse(new TextDecoder().decode(good.subarray(8, 8 + n)));
      const at = (name) => 8 + n + header[name].data_offsets[0];
      const { loadGpuModel } = await import('./lib/webgpu/webgpu.js');
      const refusal = async (bytes, options = {}) => {
        try {
          (await loadGpuModel(sd, bytes, options)).dispose();
          return null;
        } catch (e) {
          return `${e.name}: ${e.message}`;
        }
      };
      const edit = (fn) => {
        const b = good.slice();
        fn(b);
        return b;
      };
      const w = 'transformer.h.1.mlp.c_fc.weight';
      return {
        minus128: await refusal(edit((b) => (b[at(`${w}.q8`) + 5] = 0x80))),
        zeroScale: await refusal(edit((b) => b.fill(0, at(`${w}.scale`) + 6, at(`${w}.scale`) + 8))),
        f32Asked: await refusal(good, { weights: 'f32' }),
        badOption: await refusal(good, { weights: 'int4' }),
      };
    },

    async int8Dispose() {
      for (const m of gpu.values()) m.dispose();
      gpu.clear();
    },
  };
}
