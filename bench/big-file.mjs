// A model file past 4 GiB through the npm package under Node: the TinyLlama-1.1B shape in F32
// (4.40 GB of weights, every value zero) as a GGUF file and as a Hugging Face folder's
// model.safetensors, loaded with weights: 'int8' (1.6 GB held). Nothing of 4 GiB is allocated:
// each file is a ChunkedBytes (web/lib/sources.js) of its header and views of one zeroed
// 64 MiB buffer, which the loader reads a tensor at a time, as it reads a file that arrived in
// chunks. The CI's test of the same arithmetic (offsets past 2^32, quickly): tests/js/large-files.test.mjs.
//   node bench/big-file.mjs [--formats gguf,hf]
import { loadSpecdec } from '../web/lib/node.js';
import { ChunkedBytes } from '../web/lib/sources.js';
import { T, ALIGNMENT, GGML } from '../models/tools/gguf_file.mjs';
import { hfKvs } from '../models/tools/export_gguf_hf.mjs';

const config = {
  model_type: 'llama',
  architectures: ['LlamaForCausalLM'],
  hidden_act: 'silu',
  hidden_size: 2048,
  intermediate_size: 5632,
  num_hidden_layers: 22,
  num_attention_heads: 32,
  num_key_value_heads: 4,
  vocab_size: 32000,
  max_position_embeddings: 2048,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: false,
};
const ZEROS = new Uint8Array(2 ** 26);
const formats = (process.argv.find((a, i) => process.argv[i - 1] === '--formats') ?? 'gguf,hf').split(',');

// [GGUF name, Hugging Face name, shape in PyTorch order] of every tensor.
function tensors(c) {
  const C = c.hidden_size;
  const KV = (c.num_key_value_heads * C) / c.num_attention_heads;
  const list = [['token_embd.weight', 'model.embed_tokens.weight', [c.vocab_size, C]]];
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const [g, h] = [`blk.${i}.`, `model.layers.${i}.`];
    list.push(
      [g + 'attn_norm.weight', h + 'input_layernorm.weight', [C]],
      [g + 'attn_q.weight', h + 'self_attn.q_proj.weight', [C, C]],
      [g + 'attn_k.weight', h + 'self_attn.k_proj.weight', [KV, C]],
      [g + 'attn_v.weight', h + 'self_attn.v_proj.weight', [KV, C]],
      [g + 'attn_output.weight', h + 'self_attn.o_proj.weight', [C, C]],
      [g + 'ffn_norm.weight', h + 'post_attention_layernorm.weight', [C]],
      [g + 'ffn_gate.weight', h + 'mlp.gate_proj.weight', [c.intermediate_size, C]],
      [g + 'ffn_up.weight', h + 'mlp.up_proj.weight', [c.intermediate_size, C]],
      [g + 'ffn_down.weight', h + 'mlp.down_proj.weight', [C, c.intermediate_size]],
    );
  }
  list.push(['output_norm.weight', 'model.norm.weight', [C]], ['output.weight', 'lm_head.weight', [c.vocab_size, C]]);
  return list.map(([g, h, shape]) => ({ g, h, shape, bytes: 4 * shape.reduce((a, b) => a * b, 1) }));
}

// `head`, then `n` zero bytes as views of ZEROS.
function withZeros(head, n) {
  const chunks = [head];
  for (let left = n; left > 0; left -= ZEROS.byteLength)
    chunks.push(ZEROS.subarray(0, Math.min(left, ZEROS.byteLength)));
  return new ChunkedBytes(chunks);
}

// A GGUF header (the values this script writes: u32, f32, bool, string, arrays of string / i32).
function ggufFile(kvs, list) {
  const parts = [];
  const u32 = (v) => parts.push(new Uint8Array(new Uint32Array([v]).buffer));
  const u64 = (v) => parts.push(new Uint8Array(new BigUint64Array([BigInt(v)]).buffer));
  const str = (s) => {
    const b = new TextEncoder().encode(s);
    u64(b.length);
    parts.push(b);
  };
  const value = (type, v) => {
    if (type === T.STRING) str(v);
    else if (type === T.FLOAT32) parts.push(new Uint8Array(new Float32Array([v]).buffer));
    else if (type === T.BOOL) parts.push(new Uint8Array([v ? 1 : 0]));
    else if (type === T.UINT32 || type === T.INT32) u32(v >>> 0);
    else throw new Error(`value type ${type} not written here`);
  };
  u32(0x46554747);
  u32(3);
  u64(list.length);
  u64(kvs.length);
  for (const [key, type, v, elem] of kvs) {
    str(key);
    u32(type);
    if (type !== T.ARRAY) value(type, v);
    else {
      u32(elem);
      u64(v.length);
      for (const x of v) value(elem, x);
    }
  }
  let offset = 0;
  for (const t of list) {
    str(t.g);
    u32(t.shape.length);
    for (const n of [...t.shape].reverse()) u64(n);
    u32(GGML.F32);
    u64(offset);
    offset += t.bytes; // multiples of 32 here
  }
  const length = parts.reduce((n, p) => n + p.byteLength, 0);
  const head = new Uint8Array(Math.ceil(length / ALIGNMENT) * ALIGNMENT);
  let at = 0;
  for (const p of parts) head.set(p, (at += p.byteLength) - p.byteLength);
  return withZeros(head, offset);
}

function safetensorsFile(list) {
  const header = {};
  let offset = 0;
  for (const t of list) header[t.h] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, (offset += t.bytes)] };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const head = new Uint8Array(8 + json.byteLength);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  head.set(json, 8);
  return withZeros(head, offset);
}

const sd = await loadSpecdec();
const list = tensors(config);
const sources = {
  gguf: () => ggufFile(hfKvs('llama', config, 'f32', 2048), list),
  hf: () => ({ 'config.json': JSON.stringify(config), 'model.safetensors': safetensorsFile(list) }),
};
for (const format of formats) {
  const source = sources[format]();
  const bytes = format === 'gguf' ? source.length : source['model.safetensors'].length;
  const t0 = performance.now();
  const model = sd.loadModel(source, { weights: 'int8' });
  const seconds = (performance.now() - t0) / 1000;
  const step = sd.modelStep(model);
  const row = step([1, 2, 3], 1);
  step.dispose();
  console.log(
    `${format}: ${(bytes / 1e9).toFixed(2)} GB file (${(bytes / 2 ** 30).toFixed(2)} GiB), ${model.nParams} parameters,` +
      ` int8 at load: ${model.weightBytes} bytes held, loaded in ${seconds.toFixed(1)} s; a pass gives ${row.length} probabilities`,
  );
  model.dispose();
}
