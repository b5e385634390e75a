#include "model/kv_cache.h"

#include "specdec/errors.h"

namespace specdec {

KVCache::KVCache(const GPTConfig& config) : config_(config) {
  if (config.n_layer < 1 || config.n_head < 1 || config.n_embd < 1 || config.block_size < 1 ||
      config.n_embd % config.n_head != 0) {
    fail("KVCache: invalid config (n_layer ", config.n_layer, ", n_head ", config.n_head,
         ", n_embd ", config.n_embd, ", block_size ", config.block_size, ")");
  }
  const size_t n = static_cast<size_t>(config.n_layer) * config.block_size * config.n_embd;
  k_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
}

void KVCache::truncate(size_t n) {
  if (n > size_) fail("KVCache::truncate: n = ", n, " exceeds the ", size_, " cached positions");
  size_ = n;
}

}  // namespace specdec
