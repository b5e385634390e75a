// The per-sequence key/value cache of a GPTModel.
#pragma once

#include <cstddef>
#include <vector>

#include "model/gpt_config.h"

namespace specdec {

// Keys and values of the positions a model has seen, for every layer and head. Rolling back
// (truncate) is free: positions past size() are simply overwritten by the next forward pass,
// which is how a rejected speculative draft is undone.
class KVCache {
 public:
  // Allocates the full block_size positions up front (the loader caps this size).
  explicit KVCache(const GPTConfig& config);

  const GPTConfig& config() const { return config_; }
  size_t size() const { return size_; }  // positions held: 0 .. block_size
  size_t capacity() const { return static_cast<size_t>(config_.block_size); }

  // Keeps the first n positions. Throws specdec::Error if n > size().
  void truncate(size_t n);

  // (block_size, head_size) rows of one layer and head; rows >= size() are not yet valid.
  float* keys(int layer, int head) { return k_.data() + offset(layer, head); }
  float* values(int layer, int head) { return v_.data() + offset(layer, head); }

 private:
  friend class GPTModel;  // the forward pass fills rows size() .. and then commits them

  size_t offset(int layer, int head) const {
    return (static_cast<size_t>(layer) * config_.n_head + head) * config_.block_size *
           config_.head_size();
  }

  GPTConfig config_;
  size_t size_ = 0;
  std::vector<float> k_;  // (L, H, block_size, head_size)
  std::vector<float> v_;  // (L, H, block_size, head_size)
};

}  // namespace specdec
