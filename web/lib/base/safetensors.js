// Number formats of model files that the package needs in JS, where the C++ loader has no part:
// the float16 -> float32 table (adapters/ort.js widens float16 logits with it), the float32 ->
// float16 rounding (the 8-bit block scales the GPU uploads, GGUF's Q8_0 in models/tools), and the
// FNV-1a 64 fingerprint of a model's token embedding (model/heads.cc model_fingerprint; the GPU
// model checks a heads file's target with it). Files themselves are read by the C++ loader only
// (src/model/load.h, through the module: model/load-model.js); the repository's Node tools read
// headers through it too (models/tools/safetensors.mjs).

// ---------------------------------------------------------------------------- float16

let halfTable = null; // float16 bits -> float32, made on first use (256 KB)

/**
 * float16 bits (0 .. 65535) -> float32, exactly (every half is a float): the bits that
 * model/safetensors.cc f16_to_f32 computes, NaN payloads and signed zeros included.
 * @returns {Float32Array}
 */
export function halfToFloatTable() {
  if (halfTable) return halfTable;
  const bits = new Uint32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    let exponent = (h >> 10) & 0x1f;
    let mantissa = h & 0x3ff;
    if (exponent === 0x1f) {
      bits[h] = sign | 0x7f800000 | (mantissa << 13); // inf / NaN
    } else if (exponent !== 0) {
      bits[h] = sign | ((exponent + 112) << 23) | (mantissa << 13); // rebias 15 -> 127
    } else if (mantissa === 0) {
      bits[h] = sign; // signed zero
    } else {
      // subnormal, mantissa × 2^-24: normalised (a float has the range for it)
      exponent = 113;
      while ((mantissa & 0x400) === 0) {
        mantissa <<= 1;
        exponent--;
      }
      bits[h] = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
    }
  }
  halfTable = new Float32Array(bits.buffer);
  return halfTable;
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/**
 * float32 -> float16 bits, round to nearest even (src/kernels/half.cc f32_to_f16): the scales
 * of 8-bit blocks (webgpu/webgpu-q8.js) and of GGUF's Q8_0 (models/tools/export_gguf.mjs).
 * @param {number} x
 * @returns {number}
 */
export function f32ToF16(x) {
  f32Scratch[0] = x;
  const u = u32Scratch[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rest > mid || (rest === mid && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half++;
  return sign | half; // a carry into the exponent is the correct rounding (up to infinity)
}

// ---------------------------------------------------------------------------- fingerprint

/**
 * FNV-1a (64 bit) over bytes, as 16 hex digits.
 * @param {Uint8Array} bytes
 */
export function fnv1a64(bytes) {
  let hi = 0xcbf29ce4; // the offset basis 0xcbf29ce484222325 in two 32-bit halves
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

/**
 * FNV-1a 64 over the bytes of the token embedding (wte, float32), as 16 hex digits: what a
 * heads file records of its target (target_fingerprint; model/heads.cc model_fingerprint).
 * @param {Float32Array} wte
 */
export const wteFingerprint = (wte) => fnv1a64(new Uint8Array(wte.buffer, wte.byteOffset, wte.byteLength));

/**
 * The __metadata__ of a safetensors file (bytes as the loader takes them), from its header as
 * module M's C++ reader parses and checks it.
 * @param {any} M the instantiated module
 * @param {{ length: number, subarray: Function }} bytes
 * @returns {Record<string, string>}
 */
export const safetensorsMetadata = (M, bytes) => Object.fromEntries(M.safetensorsHeader(bytes, false).metadata);
