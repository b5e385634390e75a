// The per-sequence key/value cache of a GPTModel.
#pragma once

#include <cstddef>
#include <vector>

#include "base/buffer.h"
#include "model/gpt_config.h"

namespace specdec {

// Keys and values of the positions a model has seen, for every layer and key/value head (with
// grouped-query attention several query heads read one), in slots.
// The first linear_size() slots hold a plain sequence (slot i = position i). Slots after them
// may hold the nodes of a draft tree (GPTModel::forward with parents): each such slot has a
// parent (another tree slot, or kTreeRoot for the end of the sequence) and sits at position
// linear_size() + its depth. Rolling back is free: truncate() forgets slots, which the next
// forward pass overwrites; commit_path() keeps one root-to-leaf path of a tree as sequence.
class KVCache {
 public:
  static constexpr int kTreeRoot = -1;  // parent of a depth-0 tree slot: the sequence's end

  // Allocates the full block_size slots up front (the loader caps this size), uninitialised:
  // rows >= size() are never read.
  explicit KVCache(const GPTConfig& config);

  const GPTConfig& config() const { return config_; }
  size_t size() const { return size_; }  // slots held: 0 .. block_size
  size_t capacity() const { return static_cast<size_t>(config_.block_size); }
  size_t linear_size() const { return size_ - tree_parent_.size(); }  // sequence slots
  size_t tree_size() const { return tree_parent_.size(); }            // draft-tree slots

  // Parent slot of tree slot s (linear_size() <= s < size()): a tree slot or kTreeRoot.
  int parent(size_t s) const { return tree_parent_[s - linear_size()]; }
  // Depth of tree slot s: 0 for a child of the root.
  size_t depth(size_t s) const { return tree_depth_[s - linear_size()]; }

  // Keeps the first n slots. Throws specdec::Error if n > size().
  void truncate(size_t n);

  // Makes the tree slots `path` (a chain: path[0] a child of the root, each the parent of the
  // next) the continuation of the sequence, at slots linear_size() .. + path.size(), and drops
  // every other tree slot. Throws specdec::Error if path is not such a chain.
  void commit_path(const std::vector<size_t>& path);

  // (block_size, head_size) rows of one layer and KV head (0 .. kv_heads() - 1); rows >= size()
  // are not yet valid.
  float* keys(int layer, int head) { return k_.data() + offset(layer, head); }
  float* values(int layer, int head) { return v_.data() + offset(layer, head); }

 private:
  friend class GPTModel;  // the forward pass fills slots size() .. and then commits them

  size_t offset(int layer, int head) const {
    return (static_cast<size_t>(layer) * config_.kv_heads() + head) * config_.block_size *
           config_.head_size();
  }

  GPTConfig config_;
  size_t size_ = 0;
  std::vector<int> tree_parent_;    // (tree_size,) for slots linear_size() .. size()
  std::vector<size_t> tree_depth_;  // (tree_size,)
  Buffer<float> k_;                 // (L, Hkv, block_size, head_size); slots >= size_ unset
  Buffer<float> v_;                 // (L, Hkv, block_size, head_size)
};

}  // namespace specdec
