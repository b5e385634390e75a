// 8-bit weights for the WebGPU model (issue 26): the same blocks as the WASM engine's
// (src/kernels/matmul_q8.h: 32 int8 along the input dimension, one binary16 scale per block),
// as the engine's loader hands them over (webgpu-checkpoint.js: a quantized file's blocks as
// they are, a float file quantized at load by the engine's quantizer), packed for the GPU. The
// kernels that read them: webgpu-q8-kernels.js.
//
// GPU layout of W (n, k), B = k / 32 blocks: quants as u32 words, block b of row n at words
// (b n + n) 8 .. + 7 (byte i of a word is element 4 j + i of the block: little-endian), so that
// neighbouring invocations (rows n, n + 1) read neighbouring 32-byte pieces; scales as binary16
// bits, two per u32, scale (b, n) at half b N + n. Bytes per weight: 1 + 2 / 32.
import { f32ToF16 } from '../base/safetensors.js';

export const Q8_BLOCK = 32;

/**
 * W (n, k) 8-bit -> the GPU's layout (see the top): { quants: Uint32Array, scales: Uint32Array }.
 * @param {{ q: Int8Array, scales: Float32Array }} w quants (n, k) row-major, scales (n, k / 32)
 *   (binary16 values, so that their bits are exact)
 * @param {number} n
 * @param {number} k
 */
export function packForGpu({ q, scales }, n, k) {
  const B = k / Q8_BLOCK;
  const quants = new Uint32Array(B * n * 8);
  const bytes = new Uint8Array(quants.buffer);
  const src = new Uint8Array(q.buffer, q.byteOffset, q.byteLength);
  const sc = new Uint16Array(Math.ceil((B * n) / 2) * 2);
  for (let r = 0; r < n; r++) {
    for (let b = 0; b < B; b++) {
      bytes.set(src.subarray(r * k + b * Q8_BLOCK, r * k + (b + 1) * Q8_BLOCK), (b * n + r) * Q8_BLOCK);
      sc[b * n + r] = f32ToF16(scales[r * B + b]);
    }
  }
  return { quants, scales: new Uint32Array(sc.buffer) };
}
