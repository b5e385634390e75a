// The forward pass of specdec's GPT on a WebGPU device, layer for layer as in
// src/model/gpt_model.cc: the model's buffers (weights, KV cache, activations), its kernels
// (webgpu-kernels.js) and the pass as a list of dispatches, built once per model; and the
// encoding of one pass into a command buffer. GpuModel (webgpu-model.js) decides what each pass
// forwards and where its tokens sit in the cache.
import { fail } from '../base/errors.js';
import {
  MATMUL_COLUMNS,
  MATMUL_ROWS,
  attentionKernel,
  commitKernel,
  embedKernel,
  layernormKernel,
  matmulKernel,
} from './webgpu-kernels.js';
import {
  HEAD_ROWS,
  Q8_COLUMNS,
  q8AttentionKernel,
  q8HeadKernel,
  q8LayernormKernel,
  q8MatmulKernel,
  q8Rows,
} from './webgpu-q8-kernels.js';
import { wteFingerprint } from '../base/safetensors.js';
import { packForGpu } from './webgpu-q8.js';

/** Nodes of one draft tree a pass takes (the decoder's kMaxTreeNodes). */
export const MAX_TREE_NODES = 64;
/** The uniform block's treeBase when a pass is not a tree pass. */
export const NO_TREE = 0xffffffff;

/** Dispatches of one pass for a model of nLayer layers (one more per layer when it first commits a tree path). */
export const dispatchesPerPass = (nLayer) => 7 * nLayer + 3;

export const gpuFlags = () => ({
  STORAGE: globalThis.GPUBufferUsage?.STORAGE ?? 0x80,
  COPY_DST: globalThis.GPUBufferUsage?.COPY_DST ?? 0x08,
  COPY_SRC: globalThis.GPUBufferUsage?.COPY_SRC ?? 0x04,
  UNIFORM: globalThis.GPUBufferUsage?.UNIFORM ?? 0x40,
  MAP_READ: globalThis.GPUBufferUsage?.MAP_READ ?? 0x01,
  READ: globalThis.GPUMapMode?.READ ?? 0x01,
});

const padded = (n) => Math.ceil(n / 4) * 4;

/** Bytes of the model's largest buffer (a weight matrix, the cache of a layer or an activation). */
export function largestBuffer({ nEmbd: C, vocabSize: V, blockSize: T }) {
  return Math.max(C * padded(4 * C), 4 * C * padded(C), C * padded(V), V * C, T * C, T * 4 * C, T * V) * 4;
}

/** Workgroup memory of the attention kernel: scores (blockSize), query (head size), reduction (64). */
export const attentionWorkgroupBytes = ({ blockSize, nEmbd, nHead }) => (blockSize + nEmbd / nHead + 64) * 4;

// (rows, cols) row-major -> (cols, rows4), rows4 = rows rounded up to a multiple of 4 (zeros):
// a weight matrix (out, in) as the matmul kernel reads it, a vec4 of 4 outputs per load.
function transpose(a, rows, cols) {
  const rows4 = padded(rows);
  const out = new Float32Array(cols * rows4);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) out[c * rows4 + r] = a[base + c];
  }
  return out;
}

/**
 * Uploads the weights, allocates the cache and the activations, compiles the kernels and binds
 * them: { g: the model-wide buffers, steps: [pipeline, bind group, (rows, nLast) => workgroups]
 * of a pass, commits: [pipeline, bind group] per layer (copying an accepted tree path down),
 * fingerprint: wteFingerprint of the token embedding }.
 * @param {any} dev a GPUDevice
 * @param {{ vocabSize: number, nLayer: number, nHead: number, nEmbd: number, blockSize: number }} cfg
 * @param {{ int8: boolean, has: (name: string) => boolean, tensor: (name: string) => Float32Array, linear: (name: string) => { q: Int8Array, scales: Float32Array } }} weights
 *   the file's tensors, each read when its buffer is made (webgpu-checkpoint.js); int8: the
 *   blocks' Linear weights as 8-bit blocks, and the 8-bit kernels
 * @param {(size: number, usage: number, data?: Float32Array) => any} buffer makes a buffer the model owns
 * @param {boolean} [dot4] the adapter's WGSL has dot4I8Packed (packed_4x8_integer_dot_product)
 */
export async function buildGraph(dev, cfg, weights, buffer, dot4 = false) {
  const { nLayer: L, nEmbd: C, nHead: H, vocabSize: V, blockSize: T } = cfg;
  const F = gpuFlags();
  const W = F.STORAGE | F.COPY_DST;
  const q8 = weights.int8;
  const wt = (name) => weights.tensor(name);
  // A Linear weight: float (in, out) for matmulKernel, or 8-bit [quants, scales] (webgpu-q8.js).
  const linear = (name, n, k) => {
    if (!q8) return buffer(k * padded(n) * 4, W, transpose(wt(`${name}.weight`), n, k));
    const { quants, scales } = packForGpu(weights.linear(`${name}.weight`), n, k);
    return [buffer(quants.byteLength, W, quants), buffer(scales.byteLength, W, scales)];
  };
  const layers = [];
  for (let l = 0; l < L; l++) {
    const p = `transformer.h.${l}.`;
    layers.push({
      ln1w: buffer(C * 4, W, wt(p + 'ln_1.weight')),
      ln1b: buffer(C * 4, W, wt(p + 'ln_1.bias')),
      wqkv: linear(p + 'attn.c_attn', 3 * C, C),
      bqkv: buffer(3 * C * 4, W, wt(p + 'attn.c_attn.bias')),
      wproj: linear(p + 'attn.c_proj', C, C),
      bproj: buffer(C * 4, W, wt(p + 'attn.c_proj.bias')),
      ln2w: buffer(C * 4, W, wt(p + 'ln_2.weight')),
      ln2b: buffer(C * 4, W, wt(p + 'ln_2.bias')),
      wfc: linear(p + 'mlp.c_fc', 4 * C, C),
      bfc: buffer(4 * C * 4, W, wt(p + 'mlp.c_fc.bias')),
      wmp: linear(p + 'mlp.c_proj', C, 4 * C),
      bmp: buffer(C * 4, W, wt(p + 'mlp.c_proj.bias')),
      kc: buffer(T * C * 4, F.STORAGE),
      vc: buffer(T * C * 4, F.STORAGE),
    });
  }
  const wte = wt('transformer.wte.weight');
  const fingerprint = wteFingerprint(wte);
  const g = {
    wte: buffer(V * C * 4, W, wte),
    wpe: buffer(T * C * 4, W, wt('transformer.wpe.weight')),
    lnfw: buffer(C * 4, W, wt('transformer.ln_f.weight')),
    lnfb: buffer(C * 4, W, wt('transformer.ln_f.bias')),
    head: buffer(C * padded(V) * 4, W, transpose(weights.has('lm_head.weight') ? wt('lm_head.weight') : wte, V, C)),
    params: buffer(16, F.UNIFORM | F.COPY_DST),
    tokens: buffer(T * 4, W),
    positions: buffer(T * 4, W),
    ancestors: buffer(MAX_TREE_NODES * 2 * 4, W),
    plan: buffer((2 + MAX_TREE_NODES) * 4, W),
    x: buffer(T * C * 4, F.STORAGE),
    xn: buffer(T * C * 4, F.STORAGE | F.COPY_SRC), // after ln_f: the hidden states heads read
    q: buffer(T * C * 4, F.STORAGE),
    att: buffer(T * C * 4, F.STORAGE),
    h: buffer(T * 4 * C * 4, F.STORAGE),
    logits: buffer(T * V * 4, F.STORAGE | F.COPY_SRC),
    staging: buffer(T * (V + C) * 4, F.MAP_READ | F.COPY_DST), // logits, then hidden states
  };
  const pipeline = async (code, label) => {
    const module = dev.createShaderModule({ code, label });
    const info = await module.getCompilationInfo?.();
    const errors = (info?.messages ?? []).filter((m) => m.type === 'error');
    if (errors.length)
      fail(
        `webgpu: the ${label} kernel did not compile: ${errors.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('; ')}`,
      );
    return dev.createComputePipelineAsync
      ? dev.createComputePipelineAsync({
          layout: 'auto',
          compute: { module, entryPoint: 'main' },
          label,
        })
      : dev.createComputePipeline({
          layout: 'auto',
          compute: { module, entryPoint: 'main' },
          label,
        });
  };
  // 8-bit weights: the kernels of webgpu-q8-kernels.js (the WASM engine's arithmetic, see there).
  const mm = q8 ? (K, N, mode) => q8MatmulKernel(cfg, K, N, mode, dot4) : (K, N, mode) => matmulKernel(cfg, K, N, mode);
  const [embed, ln, qkv, proj, fc, mproj, head, attn, commit] = await Promise.all([
    pipeline(embedKernel(cfg), 'embed'),
    pipeline(q8 ? q8LayernormKernel(cfg) : layernormKernel(cfg), 'layernorm'),
    pipeline(mm(C, 3 * C, 'qkv'), 'qkv'),
    pipeline(mm(C, C, 'add'), 'attn-proj'),
    pipeline(mm(C, 4 * C, 'gelu'), 'fc-gelu'),
    pipeline(mm(4 * C, C, 'add'), 'mlp-proj'),
    pipeline(q8 ? q8HeadKernel(cfg) : matmulKernel(cfg, C, V, 'logits'), 'lm-head'),
    pipeline(q8 ? q8AttentionKernel(cfg) : attentionKernel(cfg), 'attention'),
    pipeline(commitKernel(cfg), 'commit-path'),
  ]);
  const group = (pipe, buffers) =>
    dev.createBindGroup({
      layout: pipe.getBindGroupLayout(0),
      entries: [g.params, ...buffers.flat()].map((b, binding) => ({
        binding,
        resource: { buffer: b },
      })),
    });
  const steps = [];
  const cols = (n) => Math.ceil(n / (q8 ? Q8_COLUMNS : MATMUL_COLUMNS));
  const tiles = (K) => (r) => Math.ceil(r / (q8 ? q8Rows(K) : MATMUL_ROWS));
  const [c1, c4] = [tiles(C), tiles(4 * C)];
  // Each step: [pipeline, bind group, workgroups (rows, nLast) => [x, y]]
  steps.push([embed, group(embed, [g.tokens, g.wte, g.wpe, g.x, g.positions]), (r) => [r, 1]]);
  for (const w of layers) {
    steps.push([ln, group(ln, [g.x, w.ln1w, w.ln1b, g.xn]), (r) => [r, 1]]);
    steps.push([qkv, group(qkv, [g.xn, w.wqkv, w.bqkv, g.q, w.kc, w.vc]), (r) => [cols(3 * C), c1(r)]]);
    steps.push([attn, group(attn, [g.q, w.kc, w.vc, g.att, g.ancestors]), (r) => [r, H]]);
    steps.push([proj, group(proj, [g.att, w.wproj, w.bproj, g.x]), (r) => [cols(C), c1(r)]]);
    steps.push([ln, group(ln, [g.x, w.ln2w, w.ln2b, g.xn]), (r) => [r, 1]]);
    steps.push([fc, group(fc, [g.xn, w.wfc, w.bfc, g.h]), (r) => [cols(4 * C), c1(r)]]);
    steps.push([mproj, group(mproj, [g.h, w.wmp, w.bmp, g.x]), (r) => [cols(C), c4(r)]]);
  }
  steps.push([ln, group(ln, [g.x, g.lnfw, g.lnfb, g.xn]), (r) => [r, 1]]);
  steps.push([
    head,
    group(head, [g.xn, g.head, g.logits]),
    (r, nLast) => [cols(V), Math.ceil(nLast / (q8 ? HEAD_ROWS : MATMUL_ROWS))],
  ]);
  // Committing a tree path: a dispatch per layer, before the pass that follows it.
  const commits = layers.map((w) => [
    commit,
    dev.createBindGroup({
      layout: commit.getBindGroupLayout(0),
      entries: [g.plan, w.kc, w.vc].map((b, binding) => ({ binding, resource: { buffer: b } })),
    }),
  ]);
  return { g, steps, commits, fingerprint };
}

/**
 * Writes a pass's inputs and submits it: the tokens `fresh` at cache slots pos0 .., the logits of
 * the last nLast rows copied to the staging buffer (and their hidden states after them when
 * `hidden`). tree: { base, positions, ancestors } for a tree pass (slot base holds node 0);
 * commit: a path to copy down first ([n, dst0, src...]). The encoding runs in a validation
 * error scope: returns { dispatches, scope } (scope: the popped scope's promise); an encoding
 * that throws pops it too.
 */
export function submitPass(dev, graph, cfg, { fresh, pos0, nLast, tree, commit, hidden }) {
  const { g, steps, commits } = graph;
  const rows = fresh.length;
  const { vocabSize: V, nEmbd: C } = cfg;
  dev.queue.writeBuffer(g.params, 0, new Uint32Array([pos0, rows, rows - nLast, tree ? tree.base : NO_TREE]));
  dev.queue.writeBuffer(g.tokens, 0, Uint32Array.from(fresh));
  const positions = tree ? tree.positions : Uint32Array.from({ length: rows }, (_, i) => pos0 + i);
  dev.queue.writeBuffer(g.positions, 0, positions);
  if (tree) dev.queue.writeBuffer(g.ancestors, 0, tree.ancestors);
  if (commit) dev.queue.writeBuffer(g.plan, 0, commit);
  const dispatches = steps.length + (commit ? commits.length : 0);
  dev.pushErrorScope('validation');
  let scope;
  try {
    const enc = dev.createCommandEncoder();
    const pass = enc.beginComputePass();
    if (commit) {
      for (const [pipe, bind] of commits) {
        pass.setPipeline(pipe);
        pass.setBindGroup(0, bind);
        pass.dispatchWorkgroups(1);
      }
    }
    for (const [pipe, bind, size] of steps) {
      const [x, y] = size(rows, nLast);
      pass.setPipeline(pipe);
      pass.setBindGroup(0, bind);
      pass.dispatchWorkgroups(x, y);
    }
    pass.end();
    enc.copyBufferToBuffer(g.logits, 0, g.staging, 0, nLast * V * 4);
    if (hidden) enc.copyBufferToBuffer(g.xn, (rows - nLast) * C * 4, g.staging, nLast * V * 4, nLast * C * 4);
    dev.queue.submit([enc.finish()]);
  } finally {
    scope = dev.popErrorScope(); // balanced even when encoding threw
  }
  return { dispatches, scope };
}

/**
 * The inputs of a tree pass: the sequence's uncached tail at slots keep .., then tree nodes
 * reused .. n − 1 at slots base + u, node u at position base + depth(u) − 1, seeing the
 * sequence and its ancestors (two 32-bit masks per node).
 * @param {Int32Array} tail the sequence's tokens past the cache
 * @param {number} keep cached tokens of the sequence
 * @param {number} base the sequence's length (the slot of node 0)
 * @param {{ tokens: Int32Array, parents: Int32Array }} tree
 * @param {number} reused nodes already in the cache from the last tree pass
 */
export function treePassInputs(tail, keep, base, tree, reused) {
  const n = tree.tokens.length;
  const fresh = new Int32Array(tail.length + n - reused);
  fresh.set(tail);
  fresh.set(tree.tokens.subarray(reused), tail.length);
  const positions = new Uint32Array(fresh.length);
  for (let i = 0; i < tail.length; i++) positions[i] = keep + i;
  const depth = new Int32Array(n);
  const ancestors = new Uint32Array(2 * MAX_TREE_NODES);
  for (let u = 0; u < n; u++) {
    const parent = tree.parents[u];
    depth[u] = parent < 0 ? 1 : depth[parent] + 1;
    if (parent >= 0) {
      ancestors[2 * u] = ancestors[2 * parent];
      ancestors[2 * u + 1] = ancestors[2 * parent + 1];
    }
    ancestors[2 * u + (u >> 5)] |= 1 << (u & 31);
    if (u >= reused) positions[tail.length + u - reused] = base + depth[u] - 1;
  }
  return { fresh, tree: { base, positions, ancestors } };
}
