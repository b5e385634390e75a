// The Hugging Face half of models/tools/export_gguf.mjs (its command line takes a folder too): a folder
// (config.json + model.safetensors, or shards listed in model.safetensors.index.json; F32 / F16 /
// BF16 tensors) of model_type llama, qwen2 or gpt2 written as llama.cpp's converter writes it.
// See export_gguf.mjs's header for the layout and the byte tokenizer written beside the weights.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DTYPES, readSafetensorsHeader, tensorFloat32 } from './safetensors.mjs';
import {
  ALIGNMENT,
  FTYPE,
  GGML,
  T,
  byteTokenizerKvs,
  encodeTensor,
  ggufName,
  llamaPermute,
  writeGguf,
} from './gguf_file.mjs';
import { sentencePieceKvs } from './sentencepiece_model.mjs';

const CONV1D = /\.(c_attn|c_proj|c_fc)\.weight$/; // GPT-2's Conv1D: stored (in, out)

// The package's dtypes and BF16 (a float's top 16 bits: widened exactly), which HF folders use
// and the package's JS reader does not take.
const HF_DTYPES = {
  ...DTYPES,
  BF16: {
    bytes: 2,
    toFloat32(view, at, out) {
      const bits = new Uint32Array(out.buffer, out.byteOffset, out.length);
      for (let i = 0; i < out.length; i++) bits[i] = view.getUint16(at + 2 * i, true) << 16;
    },
  },
};

function readHfFolder(dir) {
  const config = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const index = path.join(dir, 'model.safetensors.index.json');
  const files = existsSync(index)
    ? [...new Set(Object.values(JSON.parse(readFileSync(index, 'utf8')).weight_map))]
    : ['model.safetensors'];
  const tensors = new Map();
  for (const file of files) {
    const buf = readFileSync(path.join(dir, file));
    const parsed = readSafetensorsHeader(buf, { label: file, dtypes: HF_DTYPES });
    for (const [name, t] of parsed.tensors)
      tensors.set(name, { shape: t.shape, values: tensorFloat32(buf, parsed, t, HF_DTYPES) });
  }
  return { config, tensors };
}

// The hyper-parameters under llama.cpp's keys (gguf-py constants).
// tokenizerKvs: the folder's own tokenizer (a SentencePiece tokenizer.model), else a byte one.
export function hfKvs(arch, c, type, contextLength, tokenizerKvs) {
  const gpt2 = arch === 'gpt2';
  const C = c.hidden_size ?? c.n_embd;
  const H = c.num_attention_heads ?? c.n_head;
  const headDim = c.head_dim ?? C / H;
  const kvs = [
    ['general.architecture', T.STRING, arch],
    ['general.alignment', T.UINT32, ALIGNMENT],
    ['general.file_type', T.UINT32, FTYPE[type]],
    [`${arch}.context_length`, T.UINT32, contextLength ?? c.max_position_embeddings ?? c.n_positions],
    [`${arch}.embedding_length`, T.UINT32, C],
    [`${arch}.block_count`, T.UINT32, c.num_hidden_layers ?? c.n_layer],
    [`${arch}.feed_forward_length`, T.UINT32, c.intermediate_size ?? c.n_inner ?? 4 * C],
    [`${arch}.attention.head_count`, T.UINT32, H],
  ];
  if (gpt2) kvs.push([`${arch}.attention.layer_norm_epsilon`, T.FLOAT32, c.layer_norm_epsilon ?? 1e-5]);
  else
    kvs.push(
      [`${arch}.attention.head_count_kv`, T.UINT32, c.num_key_value_heads ?? H],
      [`${arch}.attention.layer_norm_rms_epsilon`, T.FLOAT32, c.rms_norm_eps],
      [`${arch}.rope.freq_base`, T.FLOAT32, c.rope_theta ?? 10000],
      [`${arch}.rope.dimension_count`, T.UINT32, headDim],
      [`${arch}.attention.key_length`, T.UINT32, headDim],
      [`${arch}.attention.value_length`, T.UINT32, headDim],
    );
  if (Number.isInteger(c.bos_token_id)) kvs.push(['tokenizer.ggml.bos_token_id', T.UINT32, c.bos_token_id]);
  const eos = [c.eos_token_id].flat().filter(Number.isInteger);
  if (eos.length) kvs.push(['tokenizer.ggml.eos_token_id', T.UINT32, eos[0]]);
  kvs.push(...(tokenizerKvs ?? byteTokenizerKvs(c.vocab_size)));
  return kvs;
}

/**
 * Writes the GGUF twin of a Hugging Face folder. contextLength: the context_length written in
 * place of max_position_embeddings (llama / qwen2 only: rotary positions run past the trained
 * length unchanged; GPT-2's learned positions end at n_positions).
 */
export function exportHfFolder(dir, outFile, type = 'f32', { contextLength } = {}) {
  const kinds = { f32: GGML.F32, f16: GGML.F16, bf16: GGML.BF16, q8_0: GGML.Q8_0, q4_0: GGML.Q4_0 };
  if (!(type in kinds)) throw new Error(`--type ${type}: expected f32, f16, bf16, q8_0 or q4_0`);
  const { config: c, tensors } = readHfFolder(dir);
  const arch = c.model_type;
  if (!['llama', 'qwen2', 'gpt2'].includes(arch)) throw new Error(`${dir}: model_type ${arch} (llama, qwen2, gpt2)`);
  if (c.rope_scaling) throw new Error(`${dir}: rope_scaling ${JSON.stringify(c.rope_scaling)} is not written`);
  if (contextLength !== undefined && (arch === 'gpt2' || !(Number.isInteger(contextLength) && contextLength > 0)))
    throw new Error(
      `--context ${contextLength}: a positive integer, for llama / qwen2 only (GPT-2's positions are learned)`,
    );
  const tied = c.tie_word_embeddings ?? arch === 'gpt2';
  const H = c.num_attention_heads ?? c.n_head;
  const items = [];
  for (const [name, t] of tensors) {
    if (/\.attn\.(masked_)?bias$|rotary_emb\.inv_freq$/.test(name) || (tied && name === 'lm_head.weight')) continue;
    let { shape, values } = t;
    if (arch === 'gpt2' && CONV1D.test(name)) {
      const [rows, cols] = shape; // (in, out) -> (out, in)
      const out = new Float32Array(values.length);
      for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = values[i * cols + j];
      ((shape = [cols, rows]), (values = out));
    }
    if (arch === 'llama' && /\.(q|k)_proj\./.test(name)) {
      values = llamaPermute(values, shape[0], /q_proj/.test(name) ? H : (c.num_key_value_heads ?? H));
    }
    const kind = shape.length === 1 ? GGML.F32 : kinds[type];
    items.push({ name: ggufName(name), ne: [...shape].reverse(), kind, data: encodeTensor(values, kind) });
  }
  const spModel = path.join(dir, 'tokenizer.model'); // SentencePiece: written as llama.cpp's converter does
  const tokenizer = arch === 'llama' && existsSync(spModel) ? sentencePieceKvs(readFileSync(spModel)) : undefined;
  if (tokenizer && tokenizer[1][2].length !== c.vocab_size)
    throw new Error(`${spModel}: ${tokenizer[1][2].length} pieces, config.json vocab_size ${c.vocab_size}`);
  const kvs = hfKvs(arch, c, type, contextLength, tokenizer);
  return { arch, tensors: items.length, bytes: writeGguf(outFile, kvs, items), type };
}
