// A small byte-level GPT (nanoGPT / GPT-2 shape; reference: class GPT in models/model.py):
// token + position embeddings, n_layer pre-LayerNorm blocks of causal multi-head
// self-attention and a GELU MLP, a final LayerNorm, and an LM head tied to the token
// embedding unless the file carries lm_head.weight. Weights are immutable after loading; all
// per-sequence state lives in a KVCache, so one GPTModel can serve several sequences (e.g. the
// draft and the target of self-speculation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/thread_pool.h"
#include "model/gpt_config.h"
#include "model/kv_cache.h"

namespace specdec {

// Loader limits: bound the work and memory an untrusted file can ask for.
constexpr int kByteVocabSize = 256;  // tokens are UTF-8 bytes (model/tokenizer.h)
constexpr int kMaxLayers = 64;
constexpr int kMaxEmbd = 4096;
constexpr int kMaxBlockSize = 8192;
constexpr uint64_t kMaxParamBytes = uint64_t{512} << 20;    // weights as float32
constexpr uint64_t kMaxKVCacheBytes = uint64_t{256} << 20;  // one full KVCache

// How a model holds the weights of its Linear layers (attention and MLP): float32, or 8-bit
// blocks with a scale per 32 weights (kernels/matmul_q8.h). Embeddings, layer norms, biases and
// the LM head stay float32 either way.
enum class Weights { kF32, kInt8 };
const char* weights_name(Weights w);  // "f32" / "int8"

// An (n, k) Linear weight, packed for the kernels: exactly one of f32 (kernels/matmul.h) or
// q8 + scale (kernels/matmul_q8.h) is set.
struct LinearWeights {
  std::vector<float> f32;    // packed float32; empty when 8-bit
  std::vector<int8_t> q8;    // packed int8 blocks; empty when float32
  std::vector<float> scale;  // packed block scales of q8
  bool int8() const { return !q8.empty(); }
  size_t bytes() const { return f32.size() * 4 + q8.size() + scale.size() * 4; }
};

struct LayerWeights {
  std::vector<float> ln_1_weight;     // (C,)
  std::vector<float> ln_1_bias;       // (C,)
  LinearWeights c_attn;               // (3C, C): q, k, v rows
  std::vector<float> c_attn_bias;     // (3C,)
  LinearWeights attn_proj;            // (C, C): attn.c_proj
  std::vector<float> attn_proj_bias;  // (C,)
  std::vector<float> ln_2_weight;     // (C,)
  std::vector<float> ln_2_bias;       // (C,)
  LinearWeights c_fc;                 // (4C, C): mlp.c_fc
  std::vector<float> c_fc_bias;       // (4C,)
  LinearWeights mlp_proj;             // (C, 4C): mlp.c_proj
  std::vector<float> mlp_proj_bias;   // (C,)
};

struct GPTWeights {
  std::vector<float> wte;            // (V, C) token embeddings, row-major (looked up by id)
  std::vector<float> wpe;            // (block_size, C) position embeddings
  std::vector<LayerWeights> layers;  // n_layer blocks
  std::vector<float> ln_f_weight;    // (C,)
  std::vector<float> ln_f_bias;      // (C,)
  std::vector<float> lm_head;        // (V, C) packed float32: lm_head.weight, or wte when tied
};

class GPTModel {
 public:
  // Validates everything (see safetensors.h and the checks in gpt_loader.cc) and throws
  // specdec::Error "model file: ..." on the first problem. F16 weights are widened to float.
  // weights: null keeps the file's layout (a file made by `specdec quantize` loads 8-bit);
  // kInt8 quantizes a float file's Linear weights at load (the same quantizer, so the result
  // equals loading the quantized file); kF32 refuses a quantized file.
  static GPTModel from_safetensors(const uint8_t* bytes, size_t size,
                                   const Weights* weights = nullptr);
  static GPTModel from_file(const std::string& path, const Weights* weights = nullptr);

  // Weights are large: moves only (copies would be silent and slow).
  GPTModel(GPTModel&&) = default;
  GPTModel& operator=(GPTModel&&) = default;
  GPTModel(const GPTModel&) = delete;
  GPTModel& operator=(const GPTModel&) = delete;

  const GPTConfig& config() const { return config_; }
  const GPTWeights& weights() const { return weights_; }
  Weights weight_type() const { return weight_type_; }
  // Bytes the weights take in memory (packed, padding included).
  size_t weight_bytes() const;

  // The threads forward() splits its matmuls and attention over (kernels/parallel.h): null
  // (the default) runs on the calling thread. Results are bit-identical for any pool. The pool
  // must outlive the model's use of it; one pool may serve any number of models.
  void set_thread_pool(kernels::ThreadPool* pool) { pool_ = pool; }
  kernels::ThreadPool* thread_pool() const { return pool_; }

  // Runs tokens (k >= 1 new tokens) at positions cache.size() .. cache.size() + k - 1,
  // appends their keys and values to cache and returns the (k, V) logits, row-major: row i
  // scores the token after tokens[i]. Every row is bit-identical whatever k is (batch
  // invariance), so a k-token pass equals k one-token passes.
  // Throws specdec::Error when tokens is empty, holds an id outside [0, V), would run past
  // block_size, or cache was made for another configuration.
  //
  // tree_parents (optional, one entry per token) makes the pass score a draft tree with a tree
  // attention mask: an entry kSequence continues the sequence (such tokens come first, and only
  // when the cache holds no tree slots); any other entry makes the token a tree node whose
  // parent is KVCache::kTreeRoot (the sequence's end) or the slot of an earlier tree node (a
  // tree slot already cached, or this pass's token i at slot cache.size() + i). A node sees the
  // sequence and its ancestors, sits at position sequence length + depth, and gets logits
  // bit-identical to running its path as a plain sequence.
  // hidden (optional): receives the (k, C) final hidden states (after ln_f), the rows the LM
  // head reads (Medusa-style heads read them too).
  static constexpr int kSequence = -2;
  std::vector<float> forward(const std::vector<int>& tokens, KVCache& cache,
                             const std::vector<int>* tree_parents = nullptr,
                             std::vector<float>* hidden = nullptr) const;

 private:
  GPTModel() = default;

  GPTConfig config_;
  GPTWeights weights_;
  Weights weight_type_ = Weights::kF32;
  kernels::ThreadPool* pool_ = nullptr;
};

}  // namespace specdec
