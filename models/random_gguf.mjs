// A llama-family checkpoint of random weights for a config.json-style config, as a GGUF file or
// as a Hugging Face folder (config.json + model.safetensors, F32): the real shapes for the
// benches (bench/families.mjs: SmolLM2, TinyLlama, llama-68m) and files past a size for the
// tests. Matrices uniform in +-0.5/sqrt(rows) from a fixed LCG (activations stay O(1) through the
// layers), norms 1; GGUF matrices of `type` (f32, f16, q8_0), vectors F32. The two formats of one
// config hold the same values in their own layouts, without llama.cpp's Q / K row permutation:
// the same sizes, not the same model.
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { GGML, encodeTensor, writeGguf } from './gguf_file.mjs';
import { hfKvs } from './export_gguf_hf.mjs';

const KINDS = { f32: GGML.F32, f16: GGML.F16, q8_0: GGML.Q8_0 };

/** The tensors of a llama-family model of config c as [HF-style GGUF name, ne, is a matrix]. */
function tensorList(c) {
  const C = c.hidden_size,
    F = c.intermediate_size,
    V = c.vocab_size;
  const hd = C / c.num_attention_heads,
    KV = c.num_key_value_heads * hd;
  const list = [['token_embd.weight', [C, V], true]];
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const b = `blk.${i}.`;
    list.push(
      [b + 'attn_norm.weight', [C], false],
      [b + 'attn_q.weight', [C, C], true],
      [b + 'attn_k.weight', [C, KV], true],
      [b + 'attn_v.weight', [C, KV], true],
      [b + 'attn_output.weight', [C, C], true],
      [b + 'ffn_norm.weight', [C], false],
      [b + 'ffn_gate.weight', [C, F], true],
      [b + 'ffn_up.weight', [C, F], true],
      [b + 'ffn_down.weight', [F, C], true],
    );
  }
  list.push(['output_norm.weight', [C], false]);
  if (!c.tie_word_embeddings) list.push(['output.weight', [C, V], true]);
  return list;
}

// The values of the tensors of tensorList(c), in order, from one generator.
function* randomValues(c) {
  let state = 12345;
  for (const [name, ne, matrix] of tensorList(c)) {
    const n = ne.reduce((a, b) => a * b, 1);
    const values = new Float32Array(n);
    if (!matrix) values.fill(1);
    else {
      const scale = 0.5 / Math.sqrt(ne[0]);
      for (let i = 0; i < n; i++) {
        state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
        values[i] = (state / 2 ** 32 - 0.5) * 2 * scale;
      }
    }
    yield [name, ne, matrix, values];
  }
}

// GGUF's llama tensor names -> Hugging Face's.
const HF_NAMES = [
  [/^token_embd\.weight$/, 'model.embed_tokens.weight'],
  [/^output_norm\.weight$/, 'model.norm.weight'],
  [/^output\.weight$/, 'lm_head.weight'],
  [/^blk\.(\d+)\.attn_norm\./, 'model.layers.$1.input_layernorm.'],
  [/^blk\.(\d+)\.ffn_norm\./, 'model.layers.$1.post_attention_layernorm.'],
  [/^blk\.(\d+)\.attn_(q|k|v)\./, 'model.layers.$1.self_attn.$2_proj.'],
  [/^blk\.(\d+)\.attn_output\./, 'model.layers.$1.self_attn.o_proj.'],
  [/^blk\.(\d+)\.ffn_(gate|up|down)\./, 'model.layers.$1.mlp.$2_proj.'],
];
const hfName = (name) => HF_NAMES.reduce((n, [from, to]) => n.replace(from, to), name);

/**
 * Writes the folder `dir` (config.json, model.safetensors of F32 tensors, written a tensor at a
 * time); returns the safetensors file's size in bytes.
 */
export function writeRandomLlamaFolder(dir, c) {
  mkdirSync(dir, { recursive: true });
  const config = { architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_act: 'silu', ...c };
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config, null, 2));
  const header = {};
  let offset = 0;
  for (const [name, ne] of tensorList(c)) {
    const bytes = 4 * ne.reduce((a, b) => a * b, 1);
    header[hfName(name)] = { dtype: 'F32', shape: [...ne].reverse(), data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const fd = openSync(path.join(dir, 'model.safetensors'), 'w');
  try {
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(json.length));
    writeSync(fd, length);
    writeSync(fd, Buffer.from(json, 'latin1'));
    for (const [, , , values] of randomValues(c)) writeSync(fd, new Uint8Array(values.buffer));
  } finally {
    closeSync(fd);
  }
  return 8 + json.length + offset;
}

/** Writes the file; returns its size in bytes. contextLength: the context_length written. */
export function writeRandomLlamaGguf(file, c, type = 'f32', contextLength = c.max_position_embeddings) {
  if (!(type in KINDS)) throw new Error(`type ${type}: expected f32, f16 or q8_0`);
  const items = [];
  for (const [name, ne, matrix, values] of randomValues(c)) {
    const kind = matrix ? KINDS[type] : GGML.F32;
    items.push({ name, ne, kind, data: encodeTensor(values, kind) });
  }
  return writeGguf(file, hfKvs('llama', c, type, contextLength), items);
}
