// 8-bit weights for the WebGPU model (issue 26): the same blocks as the WASM engine's
// (src/kernels/matmul_q8.h: 32 int8 along the input dimension, one binary16 scale per block),
// read from a quantized file or quantized at load with the engine's quantizer, and packed for
// the GPU. The kernels that read them: webgpu-q8-kernels.js.
//
// GPU layout of W (n, k), B = k / 32 blocks: quants as u32 words, block b of row n at words
// (b n + n) 8 .. + 7 (byte i of a word is element 4 j + i of the block: little-endian), so that
// neighbouring invocations (rows n, n + 1) read neighbouring 32-byte pieces; scales as binary16
// bits, two per u32, scale (b, n) at half b N + n. Bytes per weight: 1 + 2 / 32.
import { fail } from './errors.js';
import { readGptSafetensors } from './gpt-safetensors.js';
import { f32ToF16, halfToFloatTable, readSafetensorsHeader, tensorBytes, tensorFloat32 } from './safetensors.js';

export const Q8_BLOCK = 32;
/** The Linear layers of a block held as 8-bit weights (the rest stays float32). */
export const Q8_LINEARS = ['attn.c_attn', 'attn.c_proj', 'mlp.c_fc', 'mlp.c_proj'];

// round half to even of a float, clamped to [-127, 127] first (matmul_q8.cc round_clamp).
function roundClamp(v) {
  if (v !== v) return 0;
  v = Math.min(127, Math.max(-127, v));
  let r = Math.round(v);
  if (r - v === 0.5 && r % 2 !== 0) r -= 1;
  return r;
}

/**
 * The engine's weight quantizer (matmul_q8.h quantize_weights_q8), bit for bit: W (n, k)
 * row-major -> quants (n, k) and scales (n, k / 32) as binary16 bits.
 * @param {Float32Array} w
 */
export function quantizeWeights(w, n, k) {
  const B = k / Q8_BLOCK;
  const q = new Int8Array(n * k);
  const scales = new Uint16Array(n * B);
  const half = halfToFloatTable();
  for (let r = 0; r < n; r++) {
    for (let b = 0; b < B; b++) {
      const at = r * k + b * Q8_BLOCK;
      let amax = 0;
      for (let j = 0; j < Q8_BLOCK; j++) amax = Math.max(amax, Math.abs(w[at + j]));
      const h = f32ToF16(Math.fround(amax / 127));
      const d = half[h];
      if (d === 0) {
        scales[r * B + b] = 0x3c00; // 1.0, every quant 0
        continue;
      }
      if (!Number.isFinite(d)) fail(`bytes: a weight of ${Math.fround(amax)} is too large for a binary16 block scale`);
      scales[r * B + b] = h;
      for (let j = 0; j < Q8_BLOCK; j++) q[at + j] = roundClamp(Math.fround(w[at + j] / d));
    }
  }
  return { q, scales };
}

/**
 * A specdec GPT file for the GPU: float (and quantized at load when weights is 'int8') or
 * stored quantized (__metadata__ weights: int8, X.weight.q8 I8 and X.weight.scale F16, as
 * src/model/gpt_loader.cc reads it and with its refusals). Returns readGptSafetensors' fields
 * and q8: Map of 'transformer.h.l.attn.c_attn' ... -> { n, k, q: Int8Array, scales: Uint16Array }
 * (null for float weights), weights: 'f32' | 'int8'.
 * @param {Uint8Array} u8
 * @param {'f32' | 'int8' | undefined} want
 */
export function readGpuModel(u8, want) {
  const label = 'bytes: model file';
  const file = readSafetensorsHeader(u8, { label });
  const stored = file.metadata.weights;
  if (stored !== undefined && stored !== 'f32' && stored !== 'int8')
    fail(`${label}: __metadata__ 'weights' = '${stored}', expected 'f32' or 'int8'`);
  if (stored !== 'int8') {
    for (const name of file.tensors.keys()) {
      if (name.endsWith('.q8') || name.endsWith('.scale'))
        fail(
          `${label}: tensor '${name}' is 8-bit, but the file's __metadata__ does not say weights: int8 (mixed layouts)`,
        );
    }
    const parsed = readGptSafetensors(u8, { file });
    if (want !== 'int8') return { ...parsed, q8: null, weights: 'f32' };
    return { ...parsed, ...quantizeLinears(parsed), weights: 'int8' };
  }
  if (want === 'f32')
    fail(
      `weights: 'f32' asked, but the file holds 8-bit weights (__metadata__ weights: int8); load it with weights: 'int8' or load its float file`,
    );
  const q8 = new Map();
  const need = (name, dtype, shape) => {
    const t = file.tensors.get(name);
    if (!t) fail(`${label}: missing tensor '${name}'`);
    if (t.dtype !== dtype) fail(`${label}: tensor '${name}' has dtype ${t.dtype}, expected ${dtype}`);
    if (t.shape.join() !== shape.join())
      fail(`${label}: tensor '${name}' has shape [${t.shape.join(', ')}], expected [${shape.join(', ')}]`);
    return t;
  };
  const C = Number(file.metadata.n_embd);
  const L = Number(file.metadata.n_layer);
  if (!(C > 0 && C % Q8_BLOCK === 0))
    fail(`${label}: n_embd = ${file.metadata.n_embd} is not a multiple of ${Q8_BLOCK} (8-bit blocks)`);
  for (let l = 0; Number.isInteger(L) && l < L && l < 64; l++) {
    for (const [lin, n, k] of [
      ['attn.c_attn', 3 * C, C],
      ['attn.c_proj', C, C],
      ['mlp.c_fc', 4 * C, C],
      ['mlp.c_proj', C, 4 * C],
    ]) {
      const name = `transformer.h.${l}.${lin}.weight`;
      if (file.tensors.has(name)) fail(`${label}: tensor '${name}' is float beside 8-bit weights (mixed layouts)`);
      const tq = need(`${name}.q8`, 'I8', [n, k]);
      const ts = need(`${name}.scale`, 'F16', [n, k / Q8_BLOCK]);
      const q = new Int8Array(tq.numel);
      q.set(new Int8Array(tensorBytes(u8, file, tq).slice().buffer));
      const bad = q.indexOf(-128);
      if (bad >= 0) fail(`${label}: tensor '${name}.q8' holds -128 at index ${bad} (quants are in [-127, 127])`);
      const raw = tensorBytes(u8, file, ts);
      const scales = new Uint16Array(raw.slice().buffer);
      const values = tensorFloat32(u8, file, ts);
      const badScale = values.findIndex((s) => !(Number.isFinite(s) && s > 0));
      if (badScale >= 0)
        fail(
          `${label}: tensor '${name}.scale' holds the block scale ${values[badScale]} at index ${badScale} (scales must be finite and > 0)`,
        );
      q8.set(`transformer.h.${l}.${lin}`, { n, k, q, scales });
    }
  }
  // The other tensors: readGptSafetensors checks them as it checks any file, and leaves the
  // 8-bit ones (read above) to this reader.
  const skip = (name) => name.endsWith('.q8') || name.endsWith('.scale') || q8.has(name.replace(/\.weight$/, ''));
  return { ...readGptSafetensors(u8, { file, skip }), q8, weights: 'int8' };
}

// Quantizes the Linear weights of a float model (readGptSafetensors' tensors) at load.
function quantizeLinears({ config, tensors }) {
  const { nLayer: L, nEmbd: C } = config;
  if (C % Q8_BLOCK !== 0) fail(`weights: 'int8' needs n_embd a multiple of ${Q8_BLOCK}, got ${C}`);
  const q8 = new Map();
  for (let l = 0; l < L; l++) {
    for (const lin of Q8_LINEARS) {
      const key = `transformer.h.${l}.${lin}`;
      const w = tensors.get(`${key}.weight`);
      const k = lin === 'mlp.c_proj' ? 4 * C : C;
      const n = w.length / k;
      q8.set(key, { n, k, ...quantizeWeights(w, n, k) });
      tensors.delete(`${key}.weight`);
    }
  }
  return { q8, tensors };
}

/**
 * W (n, k) 8-bit -> the GPU's layout (see the top): { quants: Uint32Array, scales: Uint32Array }.
 * @param {{ n: number, k: number, q: Int8Array, scales: Uint16Array }} w
 */
export function packForGpu({ n, k, q, scales }) {
  const B = k / Q8_BLOCK;
  const quants = new Uint32Array(B * n * 8);
  const bytes = new Uint8Array(quants.buffer);
  const src = new Uint8Array(q.buffer, q.byteOffset, q.byteLength);
  const sc = new Uint16Array(Math.ceil((B * n) / 2) * 2);
  for (let r = 0; r < n; r++) {
    for (let b = 0; b < B; b++) {
      bytes.set(src.subarray(r * k + b * Q8_BLOCK, r * k + (b + 1) * Q8_BLOCK), (b * n + r) * Q8_BLOCK);
      sc[b * n + r] = scales[r * B + b];
    }
  }
  return { quants, scales: new Uint32Array(sc.buffer) };
}
