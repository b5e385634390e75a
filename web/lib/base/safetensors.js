// specdec's one safetensors reader in JS (the C++ one: src/model/safetensors.cc, whose checks
// and messages this follows). Used by the package (the models' info, the WebGPU model, the ORT adapter), the
// page's build (web/page/vite.config.js), the GGUF exporter and the benches; plain ESM that runs
// in browsers and in Node alike.
//
//   a file: u64 header length n (little-endian) | n bytes of JSON | the data section
//   the JSON: { "__metadata__": { key: string }, name: { dtype, shape, data_offsets: [b, e] } }
//             b, e: byte offsets into the data section; e - b = numel × the dtype's width
//
// What specdec's GPT files hold on top of it (config, tensor set) the C++ loader checks (src/model).
//
// Also here: the float16 -> float32 table (one copy: adapters/ort.js widens float16 logits with it), the
// float32 -> float16 rounding (one copy: 8-bit block scales, GGUF's Q8_0), and the FNV-1a 64
// fingerprint of a model's token embedding (model/heads.cc model_fingerprint).
import { SpecdecError } from './errors.js';

/** The longest header read (as the C++ loader: about 10k tensor entries). */
export const MAX_HEADER_BYTES = 2 ** 20;
/** The highest tensor rank read. */
export const MAX_TENSOR_RANK = 8;

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

// ---------------------------------------------------------------------------- dtypes

/**
 * The dtypes read, by their safetensors name: bytes per value, and how to widen n values that
 * start at byte `at` of a DataView into a Float32Array. A new dtype is one more entry. I8 (8-bit
 * weights) widens to its integers: the per-block scale is a tensor of its own (F16), applied by
 * the model that reads both (src/model/quantize.h), as model/safetensors.cc read_tensor_f32 does.
 * @type {Record<string, { bytes: number, toFloat32(view: DataView, at: number, out: Float32Array): void }>}
 */
export const DTYPES = {
  F32: {
    bytes: 4,
    toFloat32(view, at, out) {
      for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(at + 4 * i, true);
    },
  },
  F16: {
    bytes: 2,
    toFloat32(view, at, out) {
      const table = halfToFloatTable();
      for (let i = 0; i < out.length; i++) out[i] = table[view.getUint16(at + 2 * i, true)];
    },
  },
  I8: {
    bytes: 1,
    toFloat32(view, at, out) {
      for (let i = 0; i < out.length; i++) out[i] = view.getInt8(at + i);
    },
  },
};

// ---------------------------------------------------------------------------- the header

/** A shape as the messages write it: [2, 3]. */
export const shapeText = (shape) => `[${shape.join(', ')}]`;
const jsonType = (v) =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v;
const isCount = (x) => Number.isSafeInteger(x) && x >= 0;

/**
 * The header length a file starts with (the 8 bytes after which n bytes of JSON follow), checked
 * against the limit: what to read of a file to parse its header alone.
 * @param {Uint8Array} bytes at least the file's first 8 bytes
 * @param {string} [label] what the messages start with
 */
export function safetensorsHeaderLength(bytes, label = 'model file') {
  const bad = (msg) => {
    throw new SpecdecError(`${label}: ${msg}`);
  };
  if (bytes.byteLength < 8) bad(`${bytes.byteLength} bytes is too short for the 8-byte header length`);
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  if (n > MAX_HEADER_BYTES) bad(`header length ${n} exceeds the limit of ${MAX_HEADER_BYTES} bytes`);
  return n;
}

/**
 * Parses and checks a safetensors header as the C++ loader does: the length within the limit
 * and the file, a JSON object, __metadata__ of strings, each tensor { dtype, shape,
 * data_offsets } with a known dtype, rank ≤ 8, offsets inside the data section spanning exactly
 * its values, no two tensors overlapping. Messages start with `label` ("model file: ...").
 * @param {Uint8Array} bytes the file, or at least its 8 + header-length first bytes
 * @param {{ label?: string, fileBytes?: number, dtypes?: typeof DTYPES }} [options] fileBytes: the whole file's size
 *   when `bytes` holds its header only (default bytes.byteLength); dtypes: the dtypes accepted (default DTYPES; a
 *   tool may add one, as models/tools/export_gguf.mjs adds BF16)
 * @returns {{ metadata: Record<string, string>, tensors: Map<string, { dtype: string, shape: number[], numel: number, begin: number, end: number }>, dataStart: number, nParams: number }}
 *   begin, end: byte offsets in the data section, which starts at byte dataStart of the file;
 *   nParams: the values of all tensors.
 */
export function readSafetensorsHeader(
  bytes,
  { label = 'model file', fileBytes = bytes.byteLength, dtypes = DTYPES } = {},
) {
  const bad = (msg) => {
    throw new SpecdecError(`${label}: ${msg}`);
  };
  if (fileBytes < 8) bad(`${fileBytes} bytes is too short for the 8-byte header length`);
  const n = safetensorsHeaderLength(bytes, label);
  if (n > fileBytes - 8)
    bad(`header length ${n} exceeds the ${fileBytes - 8} bytes after the length field (truncated file?)`);
  if (n > bytes.byteLength - 8) bad(`header length ${n}: only ${bytes.byteLength - 8} bytes of the header were given`);
  let header;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    bad(`header: not JSON (${e.message})`);
  }
  if (jsonType(header) !== 'object') bad(`header must be a JSON object, got ${jsonType(header)}`);
  const dataStart = 8 + n;
  const dataBytes = fileBytes - dataStart;
  const metadata = [];
  const tensors = new Map();
  let nParams = 0;
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (jsonType(entry) !== 'object') bad(`__metadata__ must be an object, got ${jsonType(entry)}`);
      for (const [key, value] of Object.entries(entry)) {
        if (typeof value !== 'string') bad(`__metadata__ value of '${key}' must be a string, got ${jsonType(value)}`);
        metadata.push([key, value]);
      }
      continue;
    }
    const where = `tensor '${name}'`;
    if (jsonType(entry) !== 'object') bad(`${where}: entry must be an object, got ${jsonType(entry)}`);
    for (const key of Object.keys(entry)) {
      if (key !== 'dtype' && key !== 'shape' && key !== 'data_offsets') bad(`${where}: unknown key '${key}'`);
    }
    const { dtype, shape, data_offsets: offsets } = entry;
    for (const [key, v] of [
      ['dtype', dtype],
      ['shape', shape],
      ['data_offsets', offsets],
    ]) {
      if (v === undefined) bad(`${where}: missing '${key}'`);
    }
    if (typeof dtype !== 'string') bad(`${where}: dtype must be a string`);
    if (!Object.hasOwn(dtypes, dtype))
      bad(`${where} has dtype '${dtype}' (supported: ${Object.keys(dtypes).join(', ')})`);
    if (!Array.isArray(shape) || shape.length > MAX_TENSOR_RANK)
      bad(`${where}: shape must be an array of at most ${MAX_TENSOR_RANK} integers`);
    if (!shape.every(isCount)) bad(`${where}: shape must hold non-negative integers`);
    const numel = shape.reduce((a, b) => a * b, 1);
    const width = dtypes[dtype].bytes;
    if (!Number.isSafeInteger(numel * width)) bad(`${where}: shape ${shapeText(shape)} is too large`);
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount))
      bad(`${where}: data_offsets must be two non-negative integers`);
    const [begin, end] = offsets;
    const range = `[${begin}, ${end}]`;
    if (begin > end || end > dataBytes)
      bad(`${where}: data_offsets ${range} are outside the data section of ${dataBytes} bytes`);
    if (end - begin !== numel * width)
      bad(
        `${where}: data_offsets ${range} span ${end - begin} bytes, but shape ${shapeText(shape)} of ${dtype} needs ${numel * width}`,
      );
    tensors.set(name, { dtype, shape: [...shape], numel, begin, end });
    nParams += numel;
  }
  // Sorted by start, a tensor overlaps an earlier one iff it starts before the furthest end so
  // far. Empty tensors occupy no bytes and cannot overlap.
  const spans = [...tensors].filter(([, t]) => t.end > t.begin).sort((a, b) => a[1].begin - b[1].begin);
  let furthest = null;
  for (const span of spans) {
    const [name, t] = span;
    if (furthest && t.begin < furthest[1].end) {
      bad(
        `tensors '${furthest[0]}' and '${name}' overlap (bytes [${furthest[1].begin}, ${furthest[1].end}) and [${t.begin}, ${t.end}))`,
      );
    }
    if (!furthest || t.end > furthest[1].end) furthest = span;
  }
  // fromEntries: a key such as '__proto__' stays a key
  return { metadata: Object.fromEntries(metadata), tensors, dataStart, nParams };
}

// ---------------------------------------------------------------------------- tensors

/**
 * The raw bytes of a tensor (a view into `bytes`, which must hold the whole file).
 * @param {Uint8Array} bytes
 * @param {{ dataStart: number }} file what readSafetensorsHeader returned for these bytes
 * @param {{ begin: number, end: number }} tensor one of its tensors
 */
export function tensorBytes(bytes, file, tensor) {
  return bytes.subarray(file.dataStart + tensor.begin, file.dataStart + tensor.end);
}

/**
 * A tensor's values as a new Float32Array (widened from its dtype).
 * @param {Uint8Array} bytes the whole file
 * @param {{ dataStart: number }} file what readSafetensorsHeader returned for these bytes
 * @param {{ dtype: string, numel: number, begin: number }} tensor one of its tensors
 * @param {typeof DTYPES} [dtypes] the table its dtype is looked up in (readSafetensorsHeader's)
 */
export function tensorFloat32(bytes, file, tensor, dtypes = DTYPES) {
  const out = new Float32Array(tensor.numel);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  dtypes[tensor.dtype].toFloat32(view, file.dataStart + tensor.begin, out);
  return out;
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

// What the JS side reports of one of our files the C++ loader accepted: its __metadata__,
// parameters and size, from the header alone (bytes: a Uint8Array or model/sources.js ChunkedBytes,
// anything with byteLength and subarray).
export function safetensorsInfo(bytes) {
  const fileBytes = bytes.byteLength;
  const head = bytes.subarray(0, 8 + safetensorsHeaderLength(bytes.subarray(0, 8)));
  const { metadata, tensors, nParams } = readSafetensorsHeader(head, { fileBytes });
  // An 8-bit weight's scales are not parameters of their own.
  let scales = 0;
  for (const [name, t] of tensors) if (name.endsWith('.scale')) scales += t.numel;
  return { metadata, nParams: nParams - scales, fileBytes };
}
