#!/usr/bin/env node
// Converts one of specdec's byte-level GPT files (F16 safetensors, nanoGPT tensor names, config in
// __metadata__) into a GGUF v3 file that llama.cpp loads as architecture `gpt2`, for comparing
// against llama.cpp's WebAssembly build (bench/wllama.mjs) on the same weights. No dependencies
// but the package's safetensors reader (web/lib/base/safetensors.js) and the GGUF container writer
// beside it (models/tools/gguf_file.mjs).
//
//   node models/tools/export_gguf.mjs IN.safetensors OUT.gguf [--type f32|f16|q8_0]
//   node models/tools/export_gguf.mjs HF_FOLDER OUT.gguf [--type f32|f16|bf16|q8_0|q4_0] [--context N]
//
// A Hugging Face folder (config.json + model.safetensors, or shards listed in
// model.safetensors.index.json; F32 / F16 / BF16 tensors) of model_type llama, qwen2 or gpt2 is
// written as llama.cpp's converter writes it (conversion/llama.py, qwen2, gpt2.py): tensors renamed
// (blk.N.attn_q ...), llama's q_proj / k_proj permuted for its pair-wise rotary, GPT-2's Conv1D
// weights transposed to (out, in), vectors F32 and matrices of --type, a tied lm_head left out.
// The tokenizer is a byte one of vocab_size tokens (byteTokenizerKvs), with the folder's BOS / EOS
// ids: specdec's loader (src/model/gguf.h) reads only the ids, llama.cpp needs a tokenizer to load.
// (That half is models/tools/export_gguf_hf.mjs.) This makes GGUF twins of the tiny HF models of the tests (tests/e2e/families-wllama.test.mjs
// runs them in llama.cpp). --context N writes context_length N (llama / qwen2 only).
//
// An 8-bit file (specdec quantize / models/tools/quantize.py: metadata weights = int8, each block
// Linear as NAME.q8 I8 (out, in) and NAME.scale F16 (out, in / 32)) is written as Q8_0 whatever
// --type says: its blocks become Q8_0 blocks bit for bit (Q8_0 is the same format: one F16
// scale and 32 int8 per block), so llama.cpp runs exactly the weights specdec's int8 engine
// runs; its F16 tensors stay F16 (matrices) or widen to F32 (1-D), as --type f16 does.
//
// f32 (the default) widens every F16 value exactly. f16 keeps the matrices' F16 bits as they are
// and widens the 1-D tensors (norms, biases) to F32, as llama.cpp's own converter does; q8_0
// quantizes the matrices with ggml's Q8_0 (blocks of 32: one F16 scale amax/127, 32 int8).
//
// What llama.cpp's gpt2 loader expects (src/models/gpt2.cpp, src/llama-vocab.cpp):
// - tensors token_embd, position_embd, blk.N.{attn_norm, attn_qkv, attn_output, ffn_norm, ffn_up,
//   ffn_down}.{weight,bias}, output_norm.{weight,bias}; `output.weight` is optional and falls back
//   to token_embd (tied LM head, as ours), so it is not written.
// - GGUF lists a tensor's dimensions fastest-varying first (ne[0] = row length), the reverse of
//   the PyTorch shape; row-major data is written as is. nanoGPT's nn.Linear weights are
//   (out, in), which is what ggml's mul_mat wants (ne = {in, out}): no transposition. (HF GPT-2's
//   Conv1D weights are (in, out) and would need one; these are not.) c_attn's rows are Q, K, V in
//   that order, which is how llama.cpp splits attn_qkv.
// - position_embd must have block_size rows: gpt2.context_length = block_size.
// - tokenizer: model "gpt2" (byte-level BPE) needs a merges array, which may be empty; the 256
//   tokens are the bytes 0..255 spelled through GPT-2's bytes_to_unicode, so that llama.cpp's
//   byte-level (de)tokenizer maps token i to byte i. No merges: every byte stays its own token.
//   Pre-tokenizer "gpt-2" (without one llama.cpp warns and uses 'default'); add_bos false.
//   BOS/EOS default to id 11 for "gpt2" vocabularies; set here to 0 (the NUL byte, absent from
//   the training text) so that the end-of-generation token is one the models never produce.
//   (llama.cpp then logs "special_eos_id is not in special_eog_ids" and adds it: harmless.)
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { halfToFloatTable } from '../../web/lib/base/safetensors.js';
import { readSafetensorsHeader, tensorBytes } from './safetensors.mjs';
import { ALIGNMENT, FTYPE, GGML, T, byteTokenizerKvs, encodeTensor, writeGguf } from './gguf_file.mjs';
import { exportHfFolder } from './export_gguf_hf.mjs';

function usage(message) {
  if (message) console.error(`export_gguf: ${message}`);
  console.error(
    'usage: node models/tools/export_gguf.mjs IN.safetensors|HF_FOLDER OUT.gguf [--type f32|f16|bf16|q8_0|q4_0] [--context N]',
  );
  process.exit(2);
}

// ---- F16 ----------------------------------------------------------------------------------
// Exact F16 -> F32 (every F16 value is a float): the package's table (web/lib/base/safetensors.js).
const F16_TABLE = halfToFloatTable();

// ---- safetensors --------------------------------------------------------------------------
// The container checked by the package's reader (web/lib/base/safetensors.js); every tensor F16, but
// an 8-bit file's quants (NAME.q8, I8), kept as { shape, q8 }.
function readSafetensors(file) {
  const buf = readFileSync(file);
  const parsed = readSafetensorsHeader(buf, { label: file });
  const tensors = new Map();
  for (const [name, t] of parsed.tensors) {
    const raw = tensorBytes(buf, parsed, t);
    if (t.dtype === 'I8' && name.endsWith('.q8')) {
      tensors.set(name, { shape: t.shape, q8: Int8Array.from(raw, (b) => (b << 24) >> 24) });
      continue;
    }
    if (t.dtype === 'F32') {
      // F32 files (test fixtures): written as F32 whatever --type says.
      const f32 = new Float32Array(t.numel);
      const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      for (let i = 0; i < t.numel; i++) f32[i] = view.getFloat32(4 * i, true);
      tensors.set(name, { shape: t.shape, f32 });
      continue;
    }
    if (t.dtype !== 'F16') throw new Error(`${name}: dtype ${t.dtype}; expected F16 or F32`);
    // Copy: the slice may sit at an odd byte offset.
    const bits = new Uint16Array(t.numel);
    for (let i = 0; i < t.numel; i++) bits[i] = raw[2 * i] | (raw[2 * i + 1] << 8);
    tensors.set(name, { shape: t.shape, bits });
  }
  return { meta: parsed.metadata, tensors };
}

function tensorData(bits, kind, rowLength) {
  if (kind === GGML.F32) {
    const f = new Float32Array(bits.length);
    for (let i = 0; i < bits.length; i++) f[i] = F16_TABLE[bits[i]];
    return Buffer.from(f.buffer);
  }
  if (kind === GGML.F16) {
    const b = Buffer.alloc(bits.length * 2);
    for (let i = 0; i < bits.length; i++) b.writeUInt16LE(bits[i], 2 * i);
    return b;
  }
  // Q8_0, as ggml's quantize_row_q8_0_ref (models/tools/gguf_file.mjs).
  if (rowLength % 32) throw new Error(`q8_0 needs rows of a multiple of 32 values, got ${rowLength}`);
  return encodeTensor(
    Float32Array.from(bits, (b) => F16_TABLE[b]),
    GGML.Q8_0,
  );
}

// Q8_0 blocks from an 8-bit file's quants (out, in) and F16 scales (out, in / 32): the same bits.
function q8Blocks(q8, scaleBits, shape) {
  const [rows, k] = shape;
  const per = k / 32;
  if (!Number.isInteger(per) || scaleBits.length !== rows * per)
    throw new Error(`8-bit tensor ${JSON.stringify(shape)}: ${scaleBits.length} scales, expected ${rows * per}`);
  const b = Buffer.alloc(rows * per * 34);
  for (let i = 0; i < rows * per; i++) {
    b.writeUInt16LE(scaleBits[i], 34 * i);
    for (let j = 0; j < 32; j++) b.writeInt8(q8[32 * i + j], 34 * i + 2 + j);
  }
  return b;
}

export function exportGguf(inFile, outFile, type = 'f32') {
  if (!(type in FTYPE)) throw new Error(`--type ${type}: expected f32, f16 or q8_0`);
  const { meta, tensors } = readSafetensors(inFile);
  const int8 = meta.weights === 'int8';
  if (int8) type = 'q8_0';
  const cfg = {};
  for (const k of ['vocab_size', 'n_layer', 'n_head', 'n_embd', 'block_size']) {
    const v = Number(meta[k]);
    if (!Number.isInteger(v) || v <= 0)
      throw new Error(`${inFile}: __metadata__.${k} missing or not a positive integer (${meta[k]})`);
    cfg[k] = v;
  }
  if (cfg.vocab_size !== 256)
    throw new Error(`${inFile}: vocab_size ${cfg.vocab_size}; this exporter writes the 256-byte vocabulary`);
  if (meta.tokenizer !== undefined && meta.tokenizer !== 'bytes')
    throw new Error(`${inFile}: tokenizer ${meta.tokenizer}; expected bytes`);
  if (cfg.n_embd % cfg.n_head)
    throw new Error(`${inFile}: n_embd ${cfg.n_embd} not a multiple of n_head ${cfg.n_head}`);
  const C = cfg.n_embd;
  const F = 4 * C;

  // [gguf name, safetensors name, expected PyTorch shape]
  const plan = [
    ['token_embd.weight', 'transformer.wte.weight', [cfg.vocab_size, C]],
    ['position_embd.weight', 'transformer.wpe.weight', [cfg.block_size, C]],
  ];
  for (let i = 0; i < cfg.n_layer; i++) {
    const h = `transformer.h.${i}.`;
    const b = `blk.${i}.`;
    plan.push(
      [`${b}attn_norm.weight`, `${h}ln_1.weight`, [C]],
      [`${b}attn_norm.bias`, `${h}ln_1.bias`, [C]],
      [`${b}attn_qkv.weight`, `${h}attn.c_attn.weight`, [3 * C, C]],
      [`${b}attn_qkv.bias`, `${h}attn.c_attn.bias`, [3 * C]],
      [`${b}attn_output.weight`, `${h}attn.c_proj.weight`, [C, C]],
      [`${b}attn_output.bias`, `${h}attn.c_proj.bias`, [C]],
      [`${b}ffn_norm.weight`, `${h}ln_2.weight`, [C]],
      [`${b}ffn_norm.bias`, `${h}ln_2.bias`, [C]],
      [`${b}ffn_up.weight`, `${h}mlp.c_fc.weight`, [F, C]],
      [`${b}ffn_up.bias`, `${h}mlp.c_fc.bias`, [F]],
      [`${b}ffn_down.weight`, `${h}mlp.c_proj.weight`, [C, F]],
      [`${b}ffn_down.bias`, `${h}mlp.c_proj.bias`, [C]],
    );
  }
  plan.push(['output_norm.weight', 'transformer.ln_f.weight', [C]], ['output_norm.bias', 'transformer.ln_f.bias', [C]]);
  const used = new Set(plan.map((p) => p[1]));
  for (const p of [...plan]) if (int8 && tensors.has(`${p[1]}.q8`)) used.add(`${p[1]}.q8`).add(`${p[1]}.scale`);
  for (const name of tensors.keys()) {
    // A separate LM head equal to wte would be tied; anything else is not a model of this kind.
    if (!used.has(name) && name !== 'lm_head.weight') throw new Error(`${inFile}: unexpected tensor ${name}`);
  }
  if (tensors.has('lm_head.weight')) {
    const a = tensors.get('lm_head.weight').bits ?? tensors.get('lm_head.weight').f32;
    const w = tensors.get('transformer.wte.weight').bits ?? tensors.get('transformer.wte.weight').f32;
    if (a.length !== w.length || a.some((v, i) => v !== w[i]))
      throw new Error(`${inFile}: lm_head.weight differs from transformer.wte.weight (untied heads are not handled)`);
  }

  const kind2d = int8 ? GGML.F16 : { f32: GGML.F32, f16: GGML.F16, q8_0: GGML.Q8_0 }[type];
  const items = plan.map(([gname, sname, shape]) => {
    const q = int8 && tensors.get(`${sname}.q8`);
    if (q) {
      const sc = tensors.get(`${sname}.scale`);
      if (!sc) throw new Error(`${inFile}: ${sname}.scale missing beside ${sname}.q8`);
      if (JSON.stringify(q.shape) !== JSON.stringify(shape))
        throw new Error(`${sname}.q8: shape ${JSON.stringify(q.shape)}, expected ${JSON.stringify(shape)}`);
      return {
        name: gname,
        ne: [...shape].reverse(),
        kind: GGML.Q8_0,
        data: q8Blocks(q.q8, sc.bits, shape),
      };
    }
    const t = tensors.get(sname);
    if (!t) throw new Error(`${inFile}: tensor ${sname} missing`);
    if (JSON.stringify(t.shape) !== JSON.stringify(shape))
      throw new Error(`${sname}: shape ${JSON.stringify(t.shape)}, expected ${JSON.stringify(shape)}`);
    if (t.f32)
      return {
        name: gname,
        ne: [...shape].reverse(),
        kind: GGML.F32,
        data: Buffer.from(t.f32.buffer),
      };
    const kind = shape.length === 1 ? GGML.F32 : kind2d;
    return {
      name: gname,
      ne: [...shape].reverse(),
      kind,
      data: tensorData(t.bits, kind, shape[shape.length - 1]),
    };
  });

  const name = meta.name ?? path.basename(inFile, '.safetensors');
  const kvs = [
    ['general.architecture', T.STRING, 'gpt2'],
    ['general.name', T.STRING, String(name)],
    ['general.alignment', T.UINT32, ALIGNMENT],
    ['general.file_type', T.UINT32, FTYPE[type]],
    ['gpt2.context_length', T.UINT32, cfg.block_size],
    ['gpt2.embedding_length', T.UINT32, C],
    ['gpt2.feed_forward_length', T.UINT32, F],
    ['gpt2.block_count', T.UINT32, cfg.n_layer],
    ['gpt2.attention.head_count', T.UINT32, cfg.n_head],
    ['gpt2.attention.layer_norm_epsilon', T.FLOAT32, 1e-5],
    ['tokenizer.ggml.bos_token_id', T.UINT32, 0],
    ['tokenizer.ggml.eos_token_id', T.UINT32, 0],
    ...byteTokenizerKvs(256),
  ];
  const bytes = writeGguf(outFile, kvs, items);
  return {
    config: cfg,
    tensors: items.length,
    bytes,
    type,
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  let type = 'f32';
  let contextLength;
  const files = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--type') type = args[++i];
    else if (args[i].startsWith('--type=')) type = args[i].slice(7);
    else if (args[i] === '--context') contextLength = Number(args[++i]);
    else if (args[i] === '-h' || args[i] === '--help') usage();
    else if (args[i].startsWith('-')) usage(`unknown option ${args[i]}`);
    else files.push(args[i]);
  }
  if (files.length !== 2) usage();
  try {
    if (statSync(files[0]).isDirectory()) {
      const r = exportHfFolder(files[0], files[1], type, { contextLength });
      console.log(`export_gguf: ${files[1]}: ${r.arch}, ${r.tensors} tensors (${r.type}), ${r.bytes} bytes`);
      process.exit(0);
    }
    if (!['f32', 'f16', 'q8_0'].includes(type)) usage(`--type ${type}: expected f32, f16 or q8_0`);
    if (contextLength !== undefined) usage('--context: for Hugging Face folders only');
    const r = exportGguf(files[0], files[1], type);
    const c = r.config;
    console.log(
      `export_gguf: ${files[1]}: gpt2, ${c.n_layer} layers x ${c.n_embd}, ${c.n_head} heads, context ${c.block_size}, ${r.tensors} tensors (${r.type}), ${r.bytes} bytes`,
    );
  } catch (e) {
    console.error(`export_gguf: ${e.message}`);
    process.exit(1);
  }
}
