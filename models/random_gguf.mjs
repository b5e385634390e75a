// A llama-family GGUF file of random weights for a config.json-style config: the real shapes
// for the benches (bench/families.mjs: SmolLM2, TinyLlama, llama-68m) and files past a size for
// the tests. Matrices uniform in +-0.5/sqrt(rows) from a fixed LCG (activations stay O(1) through
// the layers), norms 1; matrices of `type` (f32, f16, q8_0), vectors F32.
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

/** Writes the file; returns its size in bytes. contextLength: the context_length written. */
export function writeRandomLlamaGguf(file, c, type = 'f32', contextLength = c.max_position_embeddings) {
  if (!(type in KINDS)) throw new Error(`type ${type}: expected f32, f16 or q8_0`);
  let state = 12345;
  const items = tensorList(c).map(([name, ne, matrix]) => {
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
    const kind = matrix ? KINDS[type] : GGML.F32;
    return { name, ne, kind, data: encodeTensor(values, kind) };
  });
  return writeGguf(file, hfKvs('llama', c, type, contextLength), items);
}
