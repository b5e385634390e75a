// The GGUF v3 container as llama.cpp reads it, for models/tools/export_gguf.mjs: the metadata value
// types, the header (magic, version, counts, key/value pairs), the tensor infos (name,
// dimensions fastest-varying first, ggml type, offset in the data section) and the data section,
// every part aligned to general.alignment (32 bytes); and the tensor encodings written into it
// (F32, F16, BF16, and ggml's reference quantizers for Q8_0 and Q4_0), with the permutation
// llama.cpp's converter applies to a llama model's Q and K rows.
import { closeSync, openSync, writeSync } from 'node:fs';
import { f32ToF16 } from '../../web/lib/base/safetensors.js';

const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const GGUF_VERSION = 3;
// GGUF metadata value types.
export const T = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
};
export const ALIGNMENT = 32;

class Bytes {
  constructor() {
    this.parts = [];
    this.length = 0;
  }
  push(b) {
    this.parts.push(b);
    this.length += b.length;
  }
  u32(v) {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  i32(v) {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }
  u64(v) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  f32(v) {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }
  str(s) {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  concat() {
    return Buffer.concat(this.parts, this.length);
  }
}

function writeValue(out, type, v) {
  switch (type) {
    case T.UINT32:
      return out.u32(v);
    case T.INT32:
      return out.i32(v);
    case T.FLOAT32:
      return out.f32(v);
    case T.BOOL:
      return out.push(Buffer.from([v ? 1 : 0]));
    case T.STRING:
      return out.str(v);
    default:
      throw new Error(`value type ${type} not written by this script`);
  }
}

function writeKv(out, key, type, value, elemType) {
  out.str(key);
  out.u32(type);
  if (type === T.ARRAY) {
    out.u32(elemType);
    out.u64(value.length);
    for (const v of value) writeValue(out, elemType, v);
  } else {
    writeValue(out, type, value);
  }
}

/**
 * Writes a GGUF file: `kvs` as [key, type, value, element type of an array], `items` as
 * { name, ne, kind, data } (ne fastest-varying first; data the tensor's bytes in ggml's layout).
 * Returns the file's size in bytes.
 */
export function writeGguf(outFile, kvs, items) {
  const head = new Bytes();
  head.u32(GGUF_MAGIC);
  head.u32(GGUF_VERSION);
  head.u64(items.length);
  head.u64(kvs.length);
  for (const kv of kvs) writeKv(head, ...kv);
  const pad = (n) => (ALIGNMENT - (n % ALIGNMENT)) % ALIGNMENT;
  let offset = 0;
  for (const it of items) {
    head.str(it.name);
    head.u32(it.ne.length);
    for (const n of it.ne) head.u64(n);
    head.u32(it.kind);
    head.u64(offset); // relative to the start of the (aligned) data section
    it.offset = offset;
    offset += it.data.length + pad(it.data.length);
  }
  const header = head.concat();
  const fd = openSync(outFile, 'w');
  try {
    writeSync(fd, header);
    writeSync(fd, Buffer.alloc(pad(header.length)));
    for (const it of items) {
      writeSync(fd, it.data);
      writeSync(fd, Buffer.alloc(pad(it.data.length)));
    }
  } finally {
    closeSync(fd);
  }
  return header.length + pad(header.length) + offset;
}

// ---- tensor encodings -----------------------------------------------------------------------
// ggml tensor types written here.
export const GGML = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 8, BF16: 30 };

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** Float32 values (row-major, rows of a multiple of 32 for Q8_0 / Q4_0) as ggml stores `kind`. */
export function encodeTensor(values, kind) {
  const n = values.length;
  if (kind === GGML.F32) return Buffer.from(Float32Array.from(values).buffer);
  if (kind === GGML.F16 || kind === GGML.BF16) {
    const b = Buffer.alloc(2 * n);
    for (let i = 0; i < n; i++) {
      f32Scratch[0] = values[i];
      const u = u32Scratch[0];
      // BF16: the top half of the f32 bits, rounded to nearest even (NaN stays a quiet NaN).
      const bf = Number.isNaN(values[i]) ? (u >>> 16) | 0x40 : (u + 0x7fff + ((u >>> 16) & 1)) >>> 16;
      b.writeUInt16LE(kind === GGML.F16 ? f32ToF16(values[i]) : bf & 0xffff, 2 * i);
    }
    return b;
  }
  if (n % 32) throw new Error(`blocks of 32 need a multiple of 32 values, got ${n}`);
  const q4 = kind === GGML.Q4_0;
  if (!q4 && kind !== GGML.Q8_0) throw new Error(`ggml type ${kind} not written by this script`);
  const size = q4 ? 18 : 34;
  const b = Buffer.alloc((n / 32) * size);
  for (let k = 0; k < n / 32; k++) {
    const x = (j) => Math.fround(values[32 * k + j]);
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) if (Math.abs(x(j)) > amax) ((amax = Math.abs(x(j))), (max = x(j)));
    // quantize_row_q8_0_ref: d = amax / 127, q = roundf(x / d); quantize_row_q4_0_ref: d = the
    // value of largest magnitude / -8, nibble = min(15, trunc(x / d + 8.5)), byte j = element j
    // (low nibble) and element j + 16 (high). 1/d is taken from the unrounded d.
    const d = Math.fround(q4 ? max / -8 : amax / 127);
    const id = d ? Math.fround(1 / d) : 0;
    b.writeUInt16LE(f32ToF16(d), size * k);
    if (q4) {
      const nib = (j) => Math.min(15, Math.trunc(Math.fround(Math.fround(x(j) * id) + 8.5)));
      for (let j = 0; j < 16; j++) b.writeUInt8(nib(j) | (nib(j + 16) << 4), size * k + 2 + j);
    } else {
      for (let j = 0; j < 32; j++) {
        const v = Math.fround(x(j) * id);
        b.writeInt8(Math.sign(v) * Math.round(Math.abs(v)), size * k + 2 + j); // roundf: half away from zero
      }
    }
  }
  return b;
}

/**
 * llama.cpp's converter on a llama model's q_proj (nHead = heads) and k_proj (nHead = KV heads),
 * weights or biases: w.reshape(nHead, 2, rows / nHead / 2, ...rest).swapaxes(1, 2), so that its
 * pair-wise rotary (2i, 2i + 1) computes Hugging Face's half rotation (i, i + d / 2).
 */
export function llamaPermute(values, rows, nHead) {
  const rest = values.length / rows;
  const half = rows / nHead / 2;
  if (!Number.isInteger(half)) throw new Error(`permute: ${rows} rows over ${nHead} heads of an even size`);
  const out = new Float32Array(values.length);
  let o = 0;
  for (let h = 0; h < nHead; h++)
    for (let i = 0; i < half; i++)
      for (let s = 0; s < 2; s++) {
        const from = ((h * 2 + s) * half + i) * rest;
        out.set(values.subarray(from, from + rest), o);
        o += rest;
      }
  return out;
}

// ---- tensor names ---------------------------------------------------------------------------
// HF name (after `model.layers.N.` / `[transformer.]h.N.`) -> GGUF name (after `blk.N.`).
const BLOCK_NAMES = {
  input_layernorm: 'attn_norm',
  'self_attn.q_proj': 'attn_q',
  'self_attn.k_proj': 'attn_k',
  'self_attn.v_proj': 'attn_v',
  'self_attn.o_proj': 'attn_output',
  post_attention_layernorm: 'ffn_norm',
  'mlp.gate_proj': 'ffn_gate',
  'mlp.up_proj': 'ffn_up',
  'mlp.down_proj': 'ffn_down',
  ln_1: 'attn_norm',
  'attn.c_attn': 'attn_qkv',
  'attn.c_proj': 'attn_output',
  ln_2: 'ffn_norm',
  'mlp.c_fc': 'ffn_up',
  'mlp.c_proj': 'ffn_down',
};
const WHOLE_NAMES = {
  'model.embed_tokens': 'token_embd',
  'model.norm': 'output_norm',
  lm_head: 'output',
  wte: 'token_embd',
  wpe: 'position_embd',
  ln_f: 'output_norm',
};

/** The GGUF name llama.cpp gives a Hugging Face llama / qwen2 / gpt2 tensor. */
export function ggufName(hf) {
  const name = hf.replace(/^transformer\./, '');
  const m = /^(?:model\.layers|h)\.(\d+)\.(.+)\.(weight|bias)$/.exec(name);
  if (m && BLOCK_NAMES[m[2]]) return `blk.${m[1]}.${BLOCK_NAMES[m[2]]}.${m[3]}`;
  const w = /^(.+)\.(weight|bias)$/.exec(name);
  if (w && WHOLE_NAMES[w[1]]) return `${WHOLE_NAMES[w[1]]}.${w[2]}`;
  throw new Error(`tensor ${hf}: no GGUF name for it`);
}

// llama_ftype values (general.file_type).
export const FTYPE = { f32: 0, f16: 1, q8_0: 7, bf16: 32, q4_0: 2 };
const TOKEN_TYPE_NORMAL = 1;

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes are
// moved to U+0100.. in byte order.
export function bytesToUnicode() {
  const keep = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const set = new Set(keep);
  const map = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) map[b] = String.fromCodePoint(set.has(b) ? b : 256 + n++);
  return map;
}

// A tokenizer of vocab_size tokens for llama.cpp, which loads no model without one (the folders
// of the tests have none; specdec's loader reads only the special ids): byte-level BPE as for
// specdec's byte files (export_gguf.mjs), token i = byte i (through bytes_to_unicode) for i < 256, and ids from 256
// on the ASCII pieces `[i]`, which no text tokenizes into (no merges). A text prompt of bytes
// < vocab_size is its bytes' ids. (wllama's n_probs fails on a piece that is not UTF-8 alone:
// bytes 0x80..0xFF; keep k small or the vocabulary under 128 there, families-probes.md.)
export function byteTokenizerKvs(vocabSize) {
  const bytes = bytesToUnicode();
  const tokens = Array.from({ length: vocabSize }, (_, i) => (i < 256 ? bytes[i] : `[${i}]`));
  return [
    ['tokenizer.ggml.model', T.STRING, 'gpt2'],
    ['tokenizer.ggml.pre', T.STRING, 'gpt-2'],
    ['tokenizer.ggml.tokens', T.ARRAY, tokens, T.STRING],
    ['tokenizer.ggml.token_type', T.ARRAY, tokens.map(() => TOKEN_TYPE_NORMAL), T.INT32],
    ['tokenizer.ggml.merges', T.ARRAY, [], T.STRING],
    ['tokenizer.ggml.add_bos_token', T.BOOL, false],
    ['tokenizer.ggml.add_eos_token', T.BOOL, false],
  ];
}
