// The shape of a GPTModel: our nanoGPT files (read from the "__metadata__" of their safetensors
// file) and the Llama / Qwen2 / GPT-2 families (model/checkpoint.h), as one struct whose named
// differences the forward pass follows. The defaults are nanoGPT's.
#pragma once

#include "kernels/rope.h"

namespace specdec {

enum class NormKind { kLayerNorm, kRmsNorm };         // LayerNorm (weight, bias) | RMSNorm (weight)
enum class PositionKind { kLearned, kRotary };        // wpe added to the embedding | RoPE on q, k
enum class MlpKind { kGeluErf, kGeluTanh, kSwiGlu };  // fc -> GELU -> proj | SwiGLU -> down

// The lesson names these vocab_size, num_layers, num_heads, embed_dim and max_seq_len.
struct GPTConfig {
  int vocab_size = 0;  // V: 256 byte-level tokens (nanoGPT), the checkpoint's otherwise
  int n_layer = 0;     // L (num_layers)
  int n_head = 0;      // H (num_heads): query heads
  int n_embd = 0;      // C (embed_dim)
  int block_size = 0;  // T_max: the context the model runs (KV capacity; learned positions <= it)
  int n_kv_head = 0;   // Hkv: key/value heads (grouped-query attention); 0: H
  int head_dim = 0;    // hd: values per head; 0: C / H
  int n_ff = 0;        // F: MLP hidden width (SwiGLU: of gate and of up); 0: 4 C
  NormKind norm = NormKind::kLayerNorm;
  float norm_eps = 1e-5f;
  PositionKind positions = PositionKind::kLearned;
  double rope_theta = 1e4;            // rotary base (PositionKind::kRotary)
  kernels::RopeScaling rope_scaling;  // Llama 3's; factor 0: none
  MlpKind mlp = MlpKind::kGeluErf;

  int kv_heads() const { return n_kv_head ? n_kv_head : n_head; }
  int head_size() const { return head_dim ? head_dim : n_embd / n_head; }
  int ff() const { return n_ff ? n_ff : 4 * n_embd; }
  int q_dim() const { return n_head * head_size(); }       // H hd: width of q and of o_proj's input
  int kv_dim() const { return kv_heads() * head_size(); }  // Hkv hd: width of k and of v
  bool operator==(const GPTConfig& o) const {
    const kernels::RopeScaling &a = rope_scaling, &b = o.rope_scaling;
    return vocab_size == o.vocab_size && n_layer == o.n_layer && n_head == o.n_head &&
           n_embd == o.n_embd && block_size == o.block_size && kv_heads() == o.kv_heads() &&
           head_size() == o.head_size() && ff() == o.ff() && norm == o.norm &&
           norm_eps == o.norm_eps && positions == o.positions && rope_theta == o.rope_theta &&
           a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
           a.high_freq_factor == b.high_freq_factor &&
           a.original_max_positions == b.original_max_positions && mlp == o.mlp;
  }
};

}  // namespace specdec
