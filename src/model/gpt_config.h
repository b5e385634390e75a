// The shape of a GPTModel, read from the "__metadata__" of its safetensors file.
#pragma once

namespace specdec {

// The lesson names these vocab_size, num_layers, num_heads, embed_dim and max_seq_len.
struct GPTConfig {
  int vocab_size = 0;  // V: 256 byte-level tokens
  int n_layer = 0;     // L (num_layers)
  int n_head = 0;      // H (num_heads)
  int n_embd = 0;      // C (embed_dim), a multiple of n_head
  int block_size = 0;  // T_max (max_seq_len): positions with an embedding

  int head_size() const { return n_embd / n_head; }
  bool operator==(const GPTConfig& o) const {
    return vocab_size == o.vocab_size && n_layer == o.n_layer && n_head == o.n_head &&
           n_embd == o.n_embd && block_size == o.block_size;
  }
};

}  // namespace specdec
