// specdec's GPT on WebGPU: the same safetensors files and architecture as the WASM engine
// (src/model/gpt_model.cc), with the weights and the KV cache in GPU buffers and WGSL kernels of
// our own (webgpu-kernels.js). A pass over k new tokens after the cached prefix is one command
// buffer (7 dispatches per layer + 3, and one more per layer after a tree pass whose path was
// accepted) and one read-back of the last nLast rows of logits. A draft tree is one pass too
// (scoreTree: its nodes in the slots after the sequence, under a tree attention mask).
// model.scorer() is a score callback for createDecoder (targetScore / draftScore, with a
// scoreTree method) that keeps the cache by longest common prefix: a rejected draft is dropped
// by resetting the cached length, an accepted tree path is copied down to the sequence's slots
// on the GPU; nothing goes through the CPU.
//
//   const model = await loadGpuModel(bytes);            // or sd.loadModel(bytes, { device: 'webgpu' })
//   const dec = sd.createDecoder({ prompt, targetScore: model.scorer(), draft, gamma: 3 });
//
// Types: webgpu.d.ts.
import { SpecdecError, bytesArg, describe, fail, integer, tokenArray } from './errors.js';
import {
  MATMUL_COLUMNS, MATMUL_ROWS, attentionKernel, commitKernel, embedKernel, layernormKernel, matmulKernel,
} from './webgpu-kernels.js';

// ---------------------------------------------------------------------------- safetensors

/** The load in progress on each device (see _init). */
const loadsInFlight = new WeakMap();
const CONFIG_KEYS = [['vocabSize', 'vocab_size'], ['nLayer', 'n_layer'], ['nHead', 'n_head'], ['nEmbd', 'n_embd'], ['blockSize', 'block_size']];
const MAX_HEADER = 2 ** 20;

let halfTable = null;
function halfToFloat() {
  if (halfTable) return halfTable;
  halfTable = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const e = (h >> 10) & 0x1f;
    const m = h & 0x3ff;
    halfTable[h] = e === 0 ? sign * 2 ** -14 * (m / 1024) : e === 31 ? (m ? NaN : sign * Infinity) : sign * 2 ** (e - 15) * (1 + m / 1024);
  }
  return halfTable;
}

/**
 * Reads a specdec GPT safetensors file: its config (from __metadata__), and every tensor as a
 * Float32Array (F16 widened), with the checks of the C++ loader that matter here (config,
 * the exact tensor set and shapes, offsets, finite values). Messages start with "bytes:".
 * @param {Uint8Array} u8
 */
export function readGptSafetensors(u8) {
  const bad = (msg) => fail(`bytes: model file: ${msg}`);
  if (u8.byteLength < 8) bad(`${u8.byteLength} bytes, too short for a safetensors header`);
  const view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  if (headerLength > MAX_HEADER || 8 + headerLength > u8.byteLength) bad(`header length ${headerLength} is out of range`);
  let header;
  try {
    header = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + headerLength)));
  } catch (e) {
    bad(`the header is not JSON (${e.message})`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) bad('the header is not a JSON object');
  const meta = header.__metadata__ ?? {};
  const config = {};
  for (const [js, key] of CONFIG_KEYS) {
    const s = meta[key];
    if (typeof s !== 'string' || !/^(0|[1-9]\d{0,8})$/.test(s)) bad(`__metadata__ '${key}' is ${s === undefined ? 'missing' : `'${s}', not a decimal integer`}`);
    config[js] = Number(s);
  }
  const { vocabSize: V, nLayer: L, nHead: H, nEmbd: C, blockSize: T } = config;
  if (V !== 256) bad(`vocab_size = ${V}, expected 256 (byte-level tokens)`);
  if (L < 1 || L > 64) bad(`n_layer = ${L} is outside 1..64`);
  if (C < 1 || C > 4096) bad(`n_embd = ${C} is outside 1..4096`);
  if (H < 1 || C % H !== 0) bad(`n_head = ${H} does not divide n_embd = ${C}`);
  if (T < 1 || T > 8192) bad(`block_size = ${T} is outside 1..8192`);
  const expected = new Map([['transformer.wte.weight', [V, C]], ['transformer.wpe.weight', [T, C]]]);
  for (let l = 0; l < L; l++) {
    const p = `transformer.h.${l}.`;
    for (const [n, s] of [['ln_1.weight', [C]], ['ln_1.bias', [C]], ['attn.c_attn.weight', [3 * C, C]], ['attn.c_attn.bias', [3 * C]],
      ['attn.c_proj.weight', [C, C]], ['attn.c_proj.bias', [C]], ['ln_2.weight', [C]], ['ln_2.bias', [C]],
      ['mlp.c_fc.weight', [4 * C, C]], ['mlp.c_fc.bias', [4 * C]], ['mlp.c_proj.weight', [C, 4 * C]], ['mlp.c_proj.bias', [C]]]) {
      expected.set(p + n, s);
    }
  }
  expected.set('transformer.ln_f.weight', [C]);
  expected.set('transformer.ln_f.bias', [C]);
  if ('lm_head.weight' in header) expected.set('lm_head.weight', [V, C]);
  for (const name of Object.keys(header)) {
    if (name !== '__metadata__' && !expected.has(name)) bad(`unexpected tensor '${name}'`);
  }
  const dataStart = 8 + headerLength;
  const dataBytes = u8.byteLength - dataStart;
  const tensors = new Map();
  for (const [name, shape] of expected) {
    const t = header[name];
    if (!t) bad(`missing tensor '${name}'`);
    if (!Array.isArray(t.shape) || t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      bad(`tensor '${name}' has shape [${t.shape}], expected [${shape}]`);
    }
    const size = shape.reduce((a, b) => a * b, 1);
    const width = t.dtype === 'F16' ? 2 : t.dtype === 'F32' ? 4 : bad(`tensor '${name}' has dtype ${t.dtype}; expected F16 or F32`);
    const [b, e] = Array.isArray(t.data_offsets) ? t.data_offsets : [];
    if (!Number.isInteger(b) || !Number.isInteger(e) || b < 0 || e > dataBytes || e - b !== size * width) {
      bad(`tensor '${name}' has data offsets [${t.data_offsets}] that do not fit ${size} values in ${dataBytes} bytes`);
    }
    const out = new Float32Array(size);
    const at = dataStart + b;
    if (width === 2) {
      const table = halfToFloat();
      for (let i = 0; i < size; i++) out[i] = table[view.getUint16(at + 2 * i, true)];
    } else {
      for (let i = 0; i < size; i++) out[i] = view.getFloat32(at + 4 * i, true);
    }
    for (let i = 0; i < size; i++) {
      if (!Number.isFinite(out[i])) bad(`tensor '${name}' holds a non-finite value (${out[i]}) at index ${i}`);
    }
    tensors.set(name, out);
  }
  return { config, tensors, metadata: { ...meta } };
}

/**
 * FNV-1a (64 bit) over the bytes of the token embedding (wte, float32), as 16 hex digits: what a
 * heads file records of its target (target_fingerprint; model/heads.cc model_fingerprint).
 * @param {Float32Array} wte
 */
export function wteFingerprint(wte) {
  const bytes = new Uint8Array(wte.buffer, wte.byteOffset, wte.byteLength);
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]) >>> 0;
    // (hi, lo) × (2^40 + 0x1b3) mod 2^64, in 16-bit pieces so that nothing rounds
    const p0 = (lo & 0xffff) * 0x1b3;
    const mid = (p0 >>> 16) + (lo >>> 16) * 0x1b3;
    const newLo = (((mid & 0xffff) << 16) | (p0 & 0xffff)) >>> 0;
    hi = (Math.imul(hi, 0x1b3) + (mid >>> 16) + ((lo << 8) >>> 0)) >>> 0;
    lo = newLo;
  }
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

// (rows, cols) row-major -> (cols, rows4), rows4 = rows rounded up to a multiple of 4 (zeros):
// a weight matrix (out, in) as the matmul kernel reads it, a vec4 of 4 outputs per load.
function transpose(a, rows, cols) {
  const rows4 = Math.ceil(rows / 4) * 4;
  const out = new Float32Array(cols * rows4);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) out[c * rows4 + r] = a[base + c];
  }
  return out;
}
const padded = (n) => Math.ceil(n / 4) * 4;

// ---------------------------------------------------------------------------- the model

const gpuFlags = () => ({
  STORAGE: globalThis.GPUBufferUsage?.STORAGE ?? 0x80,
  COPY_DST: globalThis.GPUBufferUsage?.COPY_DST ?? 0x08,
  COPY_SRC: globalThis.GPUBufferUsage?.COPY_SRC ?? 0x04,
  UNIFORM: globalThis.GPUBufferUsage?.UNIFORM ?? 0x40,
  MAP_READ: globalThis.GPUBufferUsage?.MAP_READ ?? 0x01,
  READ: globalThis.GPUMapMode?.READ ?? 0x01,
});

/** Workgroup memory of the attention kernel: scores (blockSize), query (head size), reduction (64). */
const attentionWorkgroupBytes = ({ blockSize, nEmbd, nHead }) => (blockSize + nEmbd / nHead + 64) * 4;

/** Dispatches of one pass for a model of nLayer layers (one more per layer when it first commits a tree path). */
export const dispatchesPerPass = (nLayer) => 7 * nLayer + 3;

/** Nodes of one draft tree a pass takes (the decoder's kMaxTreeNodes). */
export const MAX_TREE_NODES = 64;
const NO_TREE = 0xffffffff;

/**
 * A GPT whose weights and KV cache live on a WebGPU device. Made by loadGpuModel (or
 * sd.loadModel(bytes, { device: 'webgpu' })).
 */
export class GpuModel {
  /** Always 'webgpu'. */
  device = 'webgpu';
  #gpu;
  #ownsDevice;
  #buffers = new Set();
  #disposed = false;
  #lost = null;
  #queue = Promise.resolve();
  #inFlight = null;
  #cached = []; // token ids whose keys and values are in the cache, slots 0 .. length - 1
  #tree = null; // { tokens, parents }: the last tree pass's nodes, at slots #cached.length + u
  #stats = { passes: 0, dispatches: 0, readbacks: 0, lastPassDispatches: 0, forwardedTokens: 0 };
  #k; // kernels, bind groups and activation buffers

  /** @internal use loadGpuModel */
  constructor(device, ownsDevice, adapterInfo, parsed, fileBytes) {
    this.#gpu = device;
    this.#ownsDevice = ownsDevice;
    /** { vendor, architecture, device, description } as the adapter reports them. */
    this.adapterInfo = adapterInfo;
    /** { vocabSize, nLayer, nHead, nEmbd, blockSize } */
    this.config = parsed.config;
    /** The file's __metadata__ (strings). */
    this.metadata = parsed.metadata;
    let n = 0;
    for (const t of parsed.tensors.values()) n += t.length;
    /** Parameters stored in the file. */
    this.nParams = n;
    /** Size of the file in bytes. */
    this.fileBytes = fileBytes;
    /** FNV-1a 64 of wte's bytes: heads made for these weights record it (target_fingerprint). */
    this.fingerprint = wteFingerprint(parsed.tensors.get('transformer.wte.weight'));
    device.lost?.then((info) => {
      if (!this.#disposed) this.#lost = info ?? { reason: 'unknown', message: '' };
    });
  }

  /** The GPUDevice the model runs on. */
  get gpuDevice() {
    return this.#gpu;
  }

  /** GPU buffers this model holds now (0 after dispose()). */
  get liveBuffers() {
    return this.#buffers.size;
  }

  /** True once dispose() has run. */
  get disposed() {
    return this.#disposed;
  }

  /** Tokens whose keys and values are in the GPU cache (the sequence's; tree nodes not counted). */
  get cachedTokens() {
    return this.#cached.length;
  }

  /** Draft-tree nodes in the cache after the sequence (from the last tree pass). */
  get cachedTreeNodes() {
    return this.#tree ? this.#tree.tokens.length : 0;
  }

  /** Counters: passes run, dispatches and read-backs in all, dispatches of the last pass, tokens forwarded. */
  get stats() {
    return { ...this.#stats };
  }

  /** @internal */
  _buffer(size, usage, data) {
    const b = this.#gpu.createBuffer({ size: Math.max(16, Math.ceil(size / 16) * 16), usage });
    this.#buffers.add(b);
    if (data) this.#gpu.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
    return b;
  }

  /** @internal builds the kernels, uploads the weights, allocates cache and activations. */
  async _init(tensors, limits) {
    const dev = this.#gpu;
    const { nEmbd: C, vocabSize: V, blockSize: T } = this.config;
    const biggest = Math.max(C * padded(4 * C), 4 * C * padded(C), C * padded(V), V * C, T * C, T * 4 * C, T * V) * 4;
    const maxBinding = Math.min(limits.maxStorageBufferBindingSize ?? Infinity, limits.maxBufferSize ?? Infinity);
    if (biggest > maxBinding) {
      fail(`bytes: the model is too large for this WebGPU device: a buffer of ${biggest} bytes exceeds maxStorageBufferBindingSize / maxBufferSize = ${maxBinding}`);
    }
    // Error scopes are per device and stay open across this build's awaits: two loads onto one
    // shared device (a target and a draft) run one after the other, so that neither reads the
    // other's errors.
    const before = loadsInFlight.get(dev) ?? Promise.resolve();
    let release;
    const mine = new Promise((r) => (release = r));
    loadsInFlight.set(dev, before.then(() => mine));
    await before;
    let built = null;
    let error = null;
    let validation = null;
    let oom = null;
    try {
      dev.pushErrorScope('out-of-memory');
      dev.pushErrorScope('validation');
      try {
        built = await this.#build(tensors);
      } catch (e) {
        error = e;
      }
      validation = await dev.popErrorScope().catch(() => null);
      oom = await dev.popErrorScope().catch(() => null);
    } finally {
      release();
    }
    if (error) throw error;
    if (oom) fail(`webgpu: out of GPU memory while uploading the model (${oom.message})`);
    if (validation) fail(`webgpu: the device refused the model's buffers or kernels (${validation.message})`);
    this.#k = built;
  }

  async #build(tensors) {
    const dev = this.#gpu;
    const cfg = this.config;
    const { nLayer: L, nEmbd: C, nHead: H, vocabSize: V, blockSize: T } = cfg;
    const F = gpuFlags();
    const W = F.STORAGE | F.COPY_DST;
    const wt = (name) => tensors.get(name);
    const layers = [];
    for (let l = 0; l < L; l++) {
      const p = `transformer.h.${l}.`;
      layers.push({
        ln1w: this._buffer(C * 4, W, wt(p + 'ln_1.weight')),
        ln1b: this._buffer(C * 4, W, wt(p + 'ln_1.bias')),
        wqkv: this._buffer(C * padded(3 * C) * 4, W, transpose(wt(p + 'attn.c_attn.weight'), 3 * C, C)),
        bqkv: this._buffer(3 * C * 4, W, wt(p + 'attn.c_attn.bias')),
        wproj: this._buffer(C * padded(C) * 4, W, transpose(wt(p + 'attn.c_proj.weight'), C, C)),
        bproj: this._buffer(C * 4, W, wt(p + 'attn.c_proj.bias')),
        ln2w: this._buffer(C * 4, W, wt(p + 'ln_2.weight')),
        ln2b: this._buffer(C * 4, W, wt(p + 'ln_2.bias')),
        wfc: this._buffer(C * padded(4 * C) * 4, W, transpose(wt(p + 'mlp.c_fc.weight'), 4 * C, C)),
        bfc: this._buffer(4 * C * 4, W, wt(p + 'mlp.c_fc.bias')),
        wmp: this._buffer(4 * C * padded(C) * 4, W, transpose(wt(p + 'mlp.c_proj.weight'), C, 4 * C)),
        bmp: this._buffer(C * 4, W, wt(p + 'mlp.c_proj.bias')),
        kc: this._buffer(T * C * 4, F.STORAGE),
        vc: this._buffer(T * C * 4, F.STORAGE),
      });
    }
    const wte = wt('transformer.wte.weight');
    const g = {
      wte: this._buffer(V * C * 4, W, wte),
      wpe: this._buffer(T * C * 4, W, wt('transformer.wpe.weight')),
      lnfw: this._buffer(C * 4, W, wt('transformer.ln_f.weight')),
      lnfb: this._buffer(C * 4, W, wt('transformer.ln_f.bias')),
      head: this._buffer(C * padded(V) * 4, W, transpose(tensors.get('lm_head.weight') ?? wte, V, C)),
      params: this._buffer(16, F.UNIFORM | F.COPY_DST),
      tokens: this._buffer(T * 4, W),
      positions: this._buffer(T * 4, W),
      ancestors: this._buffer(MAX_TREE_NODES * 2 * 4, W),
      plan: this._buffer((2 + MAX_TREE_NODES) * 4, W),
      x: this._buffer(T * C * 4, F.STORAGE),
      xn: this._buffer(T * C * 4, F.STORAGE | F.COPY_SRC), // after ln_f: the hidden states heads read
      q: this._buffer(T * C * 4, F.STORAGE),
      att: this._buffer(T * C * 4, F.STORAGE),
      h: this._buffer(T * 4 * C * 4, F.STORAGE),
      logits: this._buffer(T * V * 4, F.STORAGE | F.COPY_SRC),
      staging: this._buffer(T * (V + C) * 4, F.MAP_READ | F.COPY_DST), // logits, then hidden states
    };
    const pipeline = async (code, label) => {
      const module = dev.createShaderModule({ code, label });
      const info = await module.getCompilationInfo?.();
      const errors = (info?.messages ?? []).filter((m) => m.type === 'error');
      if (errors.length) fail(`webgpu: the ${label} kernel did not compile: ${errors.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('; ')}`);
      return dev.createComputePipelineAsync
        ? dev.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' }, label })
        : dev.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' }, label });
    };
    const [embed, ln, qkv, proj, fc, mproj, head, attn, commit] = await Promise.all([
      pipeline(embedKernel(cfg), 'embed'),
      pipeline(layernormKernel(cfg), 'layernorm'),
      pipeline(matmulKernel(cfg, C, 3 * C, 'qkv'), 'qkv'),
      pipeline(matmulKernel(cfg, C, C, 'add'), 'attn-proj'),
      pipeline(matmulKernel(cfg, C, 4 * C, 'gelu'), 'fc-gelu'),
      pipeline(matmulKernel(cfg, 4 * C, C, 'add'), 'mlp-proj'),
      pipeline(matmulKernel(cfg, C, V, 'logits'), 'lm-head'),
      pipeline(attentionKernel(cfg), 'attention'),
      pipeline(commitKernel(cfg), 'commit-path'),
    ]);
    const group = (pipe, buffers) => dev.createBindGroup({
      layout: pipe.getBindGroupLayout(0),
      entries: [g.params, ...buffers].map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const steps = [];
    const cols = (n) => Math.ceil(n / MATMUL_COLUMNS);
    // Each step: [pipeline, bind group, workgroups (rows, nLast) => [x, y]]
    steps.push([embed, group(embed, [g.tokens, g.wte, g.wpe, g.x, g.positions]), (r) => [r, 1]]);
    for (const w of layers) {
      steps.push([ln, group(ln, [g.x, w.ln1w, w.ln1b, g.xn]), (r) => [r, 1]]);
      steps.push([qkv, group(qkv, [g.xn, w.wqkv, w.bqkv, g.q, w.kc, w.vc]), (r) => [cols(3 * C), Math.ceil(r / MATMUL_ROWS)]]);
      steps.push([attn, group(attn, [g.q, w.kc, w.vc, g.att, g.ancestors]), (r) => [r, H]]);
      steps.push([proj, group(proj, [g.att, w.wproj, w.bproj, g.x]), (r) => [cols(C), Math.ceil(r / MATMUL_ROWS)]]);
      steps.push([ln, group(ln, [g.x, w.ln2w, w.ln2b, g.xn]), (r) => [r, 1]]);
      steps.push([fc, group(fc, [g.xn, w.wfc, w.bfc, g.h]), (r) => [cols(4 * C), Math.ceil(r / MATMUL_ROWS)]]);
      steps.push([mproj, group(mproj, [g.h, w.wmp, w.bmp, g.x]), (r) => [cols(C), Math.ceil(r / MATMUL_ROWS)]]);
    }
    steps.push([ln, group(ln, [g.x, g.lnfw, g.lnfb, g.xn]), (r) => [r, 1]]);
    steps.push([head, group(head, [g.xn, g.head, g.logits]), (r, nLast) => [cols(V), Math.ceil(nLast / MATMUL_ROWS)]]);
    // Committing a tree path: a dispatch per layer, before the pass that follows it.
    const commits = layers.map((w) => [commit, dev.createBindGroup({
      layout: commit.getBindGroupLayout(0),
      entries: [g.plan, w.kc, w.vc].map((buffer, binding) => ({ binding, resource: { buffer } })),
    })]);
    return { g, steps, commits };
  }

  #check(what) {
    if (this.#disposed) fail(`${what}: this WebGPU model has been disposed`);
    if (this.#lost) fail(`${what}: the WebGPU device was lost (${this.#lost.reason ?? 'unknown'}${this.#lost.message ? `: ${this.#lost.message}` : ''}); load the model again`);
  }

  // One pass: tokens fresh at slots pos0 .., the logits of the last nLast. Callers serialise.
  // tree: { base, positions, ancestors } for a tree pass (slot base holds node 0); commit: a
  // path to copy down first ([n, dst0, src...]). hidden: read back the last nLast rows' final
  // hidden states (after ln_f) too, in the same read-back: resolves to { logits, hidden }.
  async #pass(fresh, pos0, nLast, tree = null, commit = null, hidden = false) {
    const dev = this.#gpu;
    const { g, steps, commits } = this.#k;
    const F = gpuFlags();
    const rows = fresh.length;
    const V = this.config.vocabSize;
    dev.queue.writeBuffer(g.params, 0, new Uint32Array([pos0, rows, rows - nLast, tree ? tree.base : NO_TREE]));
    dev.queue.writeBuffer(g.tokens, 0, Uint32Array.from(fresh));
    const positions = tree ? tree.positions : Uint32Array.from({ length: rows }, (_, i) => pos0 + i);
    dev.queue.writeBuffer(g.positions, 0, positions);
    if (tree) dev.queue.writeBuffer(g.ancestors, 0, tree.ancestors);
    if (commit) dev.queue.writeBuffer(g.plan, 0, commit);
    const C = this.config.nEmbd;
    const logitBytes = nLast * V * 4;
    const bytes = logitBytes + (hidden ? nLast * C * 4 : 0);
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
      enc.copyBufferToBuffer(g.logits, 0, g.staging, 0, logitBytes);
      if (hidden) enc.copyBufferToBuffer(g.xn, (rows - nLast) * C * 4, g.staging, logitBytes, nLast * C * 4);
      dev.queue.submit([enc.finish()]);
    } finally {
      scope = dev.popErrorScope(); // balanced even when encoding threw
    }
    this.#stats.passes++;
    this.#stats.dispatches += dispatches;
    this.#stats.lastPassDispatches = dispatches;
    this.#stats.readbacks++;
    this.#stats.forwardedTokens += rows;
    let out;
    try {
      await g.staging.mapAsync(F.READ, 0, bytes);
      try {
        out = new Float32Array(g.staging.getMappedRange(0, bytes).slice(0));
      } finally {
        g.staging.unmap(); // never left mapped: the next pass copies into it
      }
    } catch (e) {
      scope.catch(() => {});
      // A device lost during the pass aborts the mapping before device.lost has settled: give
      // it a turn of the event loop, so that the error says what happened.
      if (!this.#disposed && !this.#lost) await Promise.race([dev.lost, new Promise((r) => setTimeout(r, 20))]);
      this.#check('score');
      throw new SpecdecError(`score: the WebGPU read-back failed (${e?.message ?? e})`);
    }
    const error = await scope;
    if (error) fail(`score: the WebGPU pass was refused (${error.message})`);
    if (!hidden) return out;
    return { logits: out.subarray(0, nLast * V), hidden: out.subarray(nLast * V) };
  }

  // After a tree pass: the part of `tokens` past the cached sequence that walks down the tree
  // (the accepted path) joins the sequence; its keys and values are copied down to the
  // sequence's slots in the next pass (the plan returned, null when nothing moves). The other
  // nodes are dropped.
  #followTree(tokens) {
    const tree = this.#tree;
    this.#tree = null;
    const cached = this.#cached;
    const base = cached.length;
    if (!tree || tokens.length <= base) return null;
    for (let i = 0; i < base; i++) if (cached[i] !== tokens[i]) return null;
    const src = [];
    let cur = -1;
    for (let j = base; j < tokens.length; j++) {
      let next = -1;
      for (let v = cur + 1; v < tree.tokens.length; v++) {
        if (tree.parents[v] === cur && tree.tokens[v] === tokens[j]) {
          next = v;
          break;
        }
      }
      if (next < 0) break;
      src.push(base + next);
      cached.push(tokens[j]);
      cur = next;
    }
    if (src.every((slot, i) => slot === base + i)) return null; // already in place
    return Uint32Array.from([src.length, base, ...src]);
  }

  // The tokens past the cache to forward for `tokens`, at least the last `need` of them.
  #keep(tokens, need) {
    const cached = this.#cached;
    const n = tokens.length;
    let common = 0;
    while (common < cached.length && common < n && cached[common] === tokens[common]) common++;
    const keep = Math.min(common, n - need);
    // Dropping rejected tokens: the cached length goes back, nothing moves on the GPU.
    if (keep < cached.length) cached.length = keep;
    return keep;
  }

  async #score(tokens, nLast, hidden = false) {
    this.#check('score');
    const n = tokens.length;
    const { blockSize } = this.config;
    if (n > blockSize) fail(`tokens: ${n} tokens exceed the context of ${blockSize} tokens (block_size); give createDecoder contextLength: ${blockSize}`);
    const commit = this.#followTree(tokens);
    const keep = this.#keep(tokens, nLast);
    const fresh = tokens.subarray(keep);
    const rows = await this.#guarded(commit, () => this.#pass(fresh, keep, nLast, null, commit, hidden));
    this.#check('score');
    for (const t of fresh) this.#cached.push(t);
    return rows;
  }

  // Runs a pass; if it fails, a path it was to commit first is forgotten with the rest of what
  // follows the committed sequence (slots past the cache are rewritten next time).
  async #guarded(commit, pass) {
    try {
      return await pass();
    } catch (e) {
      if (commit) this.#cached.length = Math.min(this.#cached.length, commit[1]);
      this.#tree = null;
      throw e;
    }
  }

  async #scoreTree(tokens, tree, hidden = false) {
    this.#check('scoreTree');
    const { blockSize } = this.config;
    const n = tree.tokens.length;
    const { first, withRoot } = tree;
    if (tokens.length + n > blockSize) fail(`tree: ${tokens.length} tokens and ${n} tree nodes exceed the context of ${blockSize} tokens (block_size)`);
    // The nodes of the last tree pass are reused when it asked about the same sequence and the
    // tree has only grown since (a drafter asks depth by depth).
    const old = this.#tree;
    let reused = 0;
    if (old && !withRoot && this.#cached.length === tokens.length && this.#cached.every((t, i) => t === tokens[i])) {
      while (reused < old.tokens.length && reused < first && old.tokens[reused] === tree.tokens[reused] && old.parents[reused] === tree.parents[reused]) reused++;
    }
    let commit = null;
    let keep = tokens.length;
    if (reused === 0) {
      commit = this.#followTree(tokens);
      keep = this.#keep(tokens, withRoot ? 1 : 0);
    }
    // The pass: the sequence's uncached tail (slots keep ..), then nodes reused .. n − 1 (slots
    // tokens.length + u), node u at position tokens.length + depth(u) − 1.
    const base = tokens.length;
    const tail = tokens.subarray(keep);
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
    const nLast = (withRoot ? 1 : 0) + n - first;
    // Reused nodes stay where they are: the pass starts after them (the tail is then empty).
    const pos0 = keep + reused;
    const rows = await this.#guarded(commit, () => this.#pass(fresh, pos0, nLast, { base, positions, ancestors }, commit, hidden));
    this.#check('scoreTree');
    for (const t of tail) this.#cached.push(t);
    this.#tree = { tokens: Array.from(tree.tokens), parents: Array.from(tree.parents) };
    return rows;
  }

  /**
   * Scores `tokens` (the whole sequence) and resolves to the logits of its last nLast positions,
   * flat nLast × vocabSize (row i: the next-token logits after tokens[0 .. length − nLast + i]).
   * Only the tokens past the longest common prefix with the cached ones are forwarded. Calls
   * are queued: one pass at a time per model. With { hidden: true } it resolves to { logits,
   * hidden }: hidden, flat nLast × nEmbd, the final hidden states (after ln_f) of those rows,
   * from the same read-back (what heads draft from).
   * @param {ArrayLike<number>} tokens
   * @param {number} [nLast]
   * @param {{ hidden?: boolean }} [options]
   * @returns {Promise<Float32Array | { logits: Float32Array, hidden: Float32Array }>}
   */
  score(tokens, nLast = 1, options = undefined) {
    let run;
    try {
      this.#check('score');
      const t = tokenArray(tokens, 'tokens');
      if (t.length === 0) fail('tokens: must hold at least one token');
      integer(nLast, 'nLast', 1, t.length);
      const bad = t.findIndex((x) => x >= this.config.vocabSize);
      if (bad >= 0) fail(`tokens[${bad}]: token id ${t[bad]} outside the vocabulary [0, ${this.config.vocabSize})`);
      const hidden = hiddenOption(options);
      run = this.#queue.then(() => this.#score(t, nLast, hidden));
    } catch (e) {
      return Promise.reject(e);
    }
    this.#queue = run.catch(() => {});
    this.#inFlight = run;
    return run;
  }

  /**
   * Scores a draft tree below the sequence `tokens` in one pass under a tree attention mask and
   * resolves to logits, flat rows × vocabSize: the row after `tokens` itself when
   * tree.withRoot, then the rows after tokens + the path of each node tree.first .. n − 1.
   * tree: { tokens, parents, first = 0, withRoot = true }, nodes in drawing order (a node's
   * parent, −1 for a child of the root, comes before it), at most 64. Queued with score().
   * { hidden: true }: { logits, hidden } as score().
   * @param {ArrayLike<number>} tokens
   * @param {{ tokens: ArrayLike<number>, parents: ArrayLike<number>, first?: number, withRoot?: boolean }} tree
   * @param {{ hidden?: boolean }} [options]
   * @returns {Promise<Float32Array | { logits: Float32Array, hidden: Float32Array }>}
   */
  scoreTree(tokens, tree, options = undefined) {
    let run;
    try {
      this.#check('scoreTree');
      const t = tokenArray(tokens, 'tokens');
      if (t.length === 0) fail('tokens: must hold at least one token');
      const V = this.config.vocabSize;
      let bad = t.findIndex((x) => x >= V);
      if (bad >= 0) fail(`tokens[${bad}]: token id ${t[bad]} outside the vocabulary [0, ${V})`);
      if (tree === null || typeof tree !== 'object') fail(`tree: expected { tokens, parents, first, withRoot }, got ${describe(tree)}`);
      const nodes = tokenArray(tree.tokens, 'tree.tokens');
      const n = nodes.length;
      if (n < 1 || n > MAX_TREE_NODES) fail(`tree.tokens: a tree of 1..${MAX_TREE_NODES} nodes, got ${n}`);
      bad = nodes.findIndex((x) => x >= V);
      if (bad >= 0) fail(`tree.tokens[${bad}]: token id ${nodes[bad]} outside the vocabulary [0, ${V})`);
      if (tree.parents === undefined || tree.parents === null || tree.parents.length !== n) fail(`tree.parents: expected ${n} entries (one per node), got ${describe(tree.parents)}`);
      const parents = Int32Array.from(tree.parents);
      for (let u = 0; u < n; u++) {
        if (!Number.isInteger(tree.parents[u]) || parents[u] < -1 || parents[u] >= u) fail(`tree.parents[${u}]: expected -1 (the root) or an earlier node 0..${u - 1}, got ${describe(tree.parents[u])}`);
      }
      const withRoot = tree.withRoot ?? true;
      if (typeof withRoot !== 'boolean') fail(`tree.withRoot: expected a boolean, got ${describe(withRoot)}`);
      const first = tree.first ?? 0;
      integer(first, 'tree.first', 0, withRoot ? 0 : n - 1);
      const hidden = hiddenOption(options);
      run = this.#queue.then(() => this.#scoreTree(t, { tokens: nodes, parents, first, withRoot }, hidden));
    } catch (e) {
      return Promise.reject(e);
    }
    this.#queue = run.catch(() => {});
    this.#inFlight = run;
    return run;
  }

  /**
   * A score callback (tokens, nLast) => Promise<Float32Array> of logits for createDecoder's
   * targetScore or draftScore (scoreOutput 'logits', the default), with a scoreTree method (so
   * that trees go through one pass each). It shares this model's KV cache.
   */
  scorer() {
    this.#check('scorer');
    const fn = (tokens, nLast, options) => this.score(tokens, nLast, options);
    Object.defineProperties(fn, {
      model: { value: this, enumerable: true },
      // createDecoder sends trees here: a tree target (or draft) in one pass per tree
      scoreTree: { value: (tokens, tree, options) => this.scoreTree(tokens, tree, options), enumerable: true },
      vocabSize: { value: this.config.vocabSize, enumerable: true },
      blockSize: { value: this.config.blockSize, enumerable: true },
      cachedTokens: { get: () => this.#cached.length, enumerable: true },
    });
    return fn;
  }

  /** Empties the KV cache (the next call forwards its whole sequence). */
  reset() {
    this.#queue = this.#queue.then(() => {
      this.#cached = [];
      this.#tree = null;
    });
    return this.#queue;
  }

  /**
   * Destroys every GPU buffer of the model (and the device, when loadGpuModel created it). A
   * pass in flight rejects with a SpecdecError; later calls reject. Idempotent.
   */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#inFlight?.catch(() => {});
    for (const b of this.#buffers) b.destroy();
    this.#buffers.clear();
    this.#k = null;
    this.#cached = [];
    this.#tree = null;
    if (this.#ownsDevice) this.#gpu.destroy?.();
  }
}
// createDecoder (core.js) recognises a GPU model as a target or draft by this brand.
Object.defineProperty(GpuModel.prototype, Symbol.for('specdec.webgpuModel'), { value: true });
if (typeof Symbol.dispose === 'symbol') {
  GpuModel.prototype[Symbol.dispose] = function dispose() {
    this.dispose();
  };
}

function hiddenOption(options) {
  if (options === undefined) return false;
  if (options === null || typeof options !== 'object') fail(`options: expected { hidden }, got ${describe(options)}`);
  for (const key of Object.keys(options)) if (key !== 'hidden') fail(`${key}: unknown option of score (known: hidden)`);
  if (options.hidden !== undefined && typeof options.hidden !== 'boolean') fail(`hidden: expected a boolean, got ${describe(options.hidden)}`);
  return options.hidden === true;
}

export const GPU_LOAD_OPTIONS = ['gpu', 'adapter', 'device', 'powerPreference'];

/**
 * Loads a specdec GPT safetensors file onto a WebGPU device.
 * @param {Uint8Array | ArrayBuffer} bytes
 * @param {{ gpu?: any, adapter?: any, device?: any, powerPreference?: 'low-power' | 'high-performance' }} [options]
 *   gpu: the GPU object (default navigator.gpu); adapter: a GPUAdapter to request a device from;
 *   device: a GPUDevice to use as it is (the model then does not destroy it on dispose()).
 * @returns {Promise<GpuModel>}
 */
export async function loadGpuModel(bytes, options = {}) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) fail(`options: expected an object, got ${describe(options)}`);
  for (const key of Object.keys(options)) {
    if (!GPU_LOAD_OPTIONS.includes(key)) fail(`${key}: unknown option of loadGpuModel (known: ${GPU_LOAD_OPTIONS.join(', ')})`);
  }
  const u8 = bytesArg(bytes, 'a safetensors file');
  let device = options.device ?? null;
  let adapter = options.adapter ?? null;
  let ownsDevice = false;
  if (!device) {
    if (!adapter) {
      const gpu = options.gpu ?? globalThis.navigator?.gpu;
      if (!gpu || typeof gpu.requestAdapter !== 'function') {
        fail("device: 'webgpu': WebGPU is not available in this browser/context (no navigator.gpu; it needs a secure context (a page served over HTTPS or from localhost) and a browser with WebGPU enabled)");
      }
      adapter = await gpu.requestAdapter(options.powerPreference ? { powerPreference: options.powerPreference } : undefined);
      if (!adapter) fail("device: 'webgpu': no WebGPU adapter (navigator.gpu.requestAdapter() returned null: no usable GPU, or WebGPU is blocked for it)");
    }
  }
  const parsed = readGptSafetensors(u8);
  const limits = (device ?? adapter).limits ?? {};
  const { nEmbd: C, vocabSize: V, blockSize: T } = parsed.config;
  const biggest = Math.max(C * padded(4 * C), 4 * C * padded(C), C * padded(V), V * C, T * C, T * 4 * C, T * V) * 4;
  const maxBinding = Math.min(limits.maxStorageBufferBindingSize ?? Infinity, limits.maxBufferSize ?? Infinity);
  if (biggest > maxBinding) {
    fail(`bytes: the model is too large for this WebGPU adapter: a buffer of ${biggest} bytes exceeds maxStorageBufferBindingSize / maxBufferSize = ${maxBinding}`);
  }
  // The attention kernel keeps a row of scores (block_size) and a query (head size) in
  // workgroup memory.
  const shared = attentionWorkgroupBytes(parsed.config);
  const maxShared = limits.maxComputeWorkgroupStorageSize ?? 16384;
  if (shared > maxShared) {
    fail(`bytes: the model is too large for this WebGPU adapter: attention over block_size = ${T} needs ${shared} bytes of workgroup memory, over maxComputeWorkgroupStorageSize = ${maxShared}`);
  }
  if (!device) {
    const requiredLimits = {};
    if (shared > 16384) requiredLimits.maxComputeWorkgroupStorageSize = shared;
    // The defaults (128 MiB bindings, 16 KiB workgroup memory) suffice unless the model is bigger.
    if (biggest > 2 ** 27) {
      requiredLimits.maxStorageBufferBindingSize = biggest;
      requiredLimits.maxBufferSize = Math.max(biggest, 2 ** 28);
    }
    try {
      device = await adapter.requestDevice({ requiredLimits });
    } catch (e) {
      fail(`device: 'webgpu': the adapter refused a device (${e?.message ?? e})`);
    }
    ownsDevice = true;
  }
  const info = adapter?.info ?? device.adapterInfo ?? {};
  const adapterInfo = {
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    device: info.device ?? '',
    description: info.description ?? '',
  };
  const model = new GpuModel(device, ownsDevice, adapterInfo, parsed, u8.byteLength);
  try {
    await model._init(parsed.tensors, device.limits ?? limits);
  } catch (e) {
    model.dispose();
    throw e;
  }
  return model;
}

/** The score callback of a GPU model (model.scorer()). */
export const gpuScorer = (model) => {
  if (!(model instanceof GpuModel)) fail(`model: expected a WebGPU model (loadGpuModel), got ${describe(model)}`);
  return model.scorer();
};
