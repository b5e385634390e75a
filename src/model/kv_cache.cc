#include "model/kv_cache.h"

#include <algorithm>

#include "base/errors.h"

namespace specdec {

KVCache::KVCache(const GPTConfig& config) : config_(config) {
  if (config.n_layer < 1 || config.n_head < 1 || config.n_embd < 1 || config.block_size < 1 ||
      config.kv_heads() < 1 || config.n_head % config.kv_heads() != 0 || config.head_size() < 1 ||
      (config.head_dim == 0 && config.n_embd % config.n_head != 0)) {
    fail("KVCache: invalid config (n_layer ", config.n_layer, ", n_head ", config.n_head,
         ", n_kv_head ", config.n_kv_head, ", n_embd ", config.n_embd, ", head_dim ",
         config.head_dim, ", block_size ", config.block_size, ")");
  }
  const size_t n = static_cast<size_t>(config.n_layer) * config.block_size * config.kv_dim();
  // Uninitialised (no pass over the whole cache, and natively no page touched before a slot is
  // written): a slot is stored before any pass reads it, and no kernel reads past a pass's slots
  // (gpt_model_test.cc: KVCacheSlotsPastSizeAreNeverRead).
  k_.resize(n);
  v_.resize(n);
}

void KVCache::truncate(size_t n) {
  if (n > size_) fail("KVCache::truncate: n = ", n, " exceeds the ", size_, " cached positions");
  const size_t linear = linear_size();
  const size_t keep_tree = n > linear ? n - linear : 0;
  tree_parent_.resize(keep_tree);
  tree_depth_.resize(keep_tree);
  size_ = n;
}

void KVCache::commit_path(const std::vector<size_t>& path) {
  const size_t linear = linear_size();
  int expected_parent = kTreeRoot;
  for (size_t d = 0; d < path.size(); ++d) {
    const size_t s = path[d];
    if (s < linear || s >= size_ || parent(s) != expected_parent) {
      fail("KVCache::commit_path: slot ", s, " at depth ", d, " does not continue the path");
    }
    expected_parent = static_cast<int>(s);
  }
  // Slot path[d] >= linear + d, and the path's slots increase, so copying in depth order never
  // overwrites a slot still to be read.
  const size_t hs = config_.head_size();
  for (int l = 0; l < config_.n_layer; ++l) {
    for (int h = 0; h < config_.kv_heads(); ++h) {
      float* k = keys(l, h);
      float* v = values(l, h);
      for (size_t d = 0; d < path.size(); ++d) {
        const size_t from = path[d], to = linear + d;
        if (from == to) continue;
        std::copy(k + from * hs, k + (from + 1) * hs, k + to * hs);
        std::copy(v + from * hs, v + (from + 1) * hs, v + to * hs);
      }
    }
  }
  tree_parent_.clear();
  tree_depth_.clear();
  size_ = linear + path.size();
}

}  // namespace specdec
