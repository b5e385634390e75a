// A decoder-only transformer: our byte-level nanoGPT files (reference: class GPT in
// models/model.py) and the Llama / Qwen2 / GPT-2 checkpoints (model/checkpoint.h) in one
// forward pass with named differences (GPTConfig): token embeddings (+ learned positions, or
// rotary positions on q and k), n_layer pre-norm blocks (LayerNorm or RMSNorm) of causal
// self-attention (grouped-query when n_kv_head < n_head) and an MLP (GELU, tanh GELU or
// SwiGLU), a final norm, and an LM head tied to the token embedding unless the checkpoint
// carries lm_head.weight. Weights are immutable after loading; all
// per-sequence state lives in a KVCache, so one GPTModel can serve several sequences (e.g. the
// draft and the target of self-speculation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "kernels/thread_pool.h"
#include "model/checkpoint.h"
#include "model/gpt_config.h"
#include "model/kv_cache.h"
#include "model/model_limits.h"

namespace specdec {

// How a model holds the weights of its Linear layers (attention and MLP): float32, or 8-bit
// blocks with a scale per 32 weights (kernels/matmul_q8.h). Embeddings, layer norms and biases
// stay float32 either way; so does the LM head, unless the model is 8-bit and its checkpoint
// stores the head in blocks (a GGUF Q8_0 / Q4_0 file): then the head keeps its blocks.
enum class Weights { kF32, kInt8 };
const char* weights_name(Weights w);  // "f32" / "int8"

// An (n, k) Linear weight, packed for the kernels: exactly one of f32 (kernels/matmul.h) or
// q8 + scale (kernels/matmul_q8.h) is set.
struct LinearWeights {
  // Buffers (base/buffer.h): sized uninitialised, every byte then written by the packer.
  Buffer<float> f32;    // packed float32; empty when 8-bit
  Buffer<int8_t> q8;    // packed int8 blocks; empty when float32
  Buffer<float> scale;  // packed block scales of q8
  bool int8() const { return !q8.empty(); }
  size_t bytes() const { return f32.size() * 4 + q8.size() + scale.size() * 4; }
};

// A bias or a norm's bias that a family does not have is empty. Q = H hd, KV = Hkv hd; nanoGPT:
// Q = KV = C, F = 4C.
struct LayerWeights {
  std::vector<float> ln_1_weight;     // (C,)
  std::vector<float> ln_1_bias;       // (C,) LayerNorm only
  LinearWeights c_attn;               // (Q + 2 KV, C): q, k, v rows fused (q_proj|k_proj|v_proj)
  std::vector<float> c_attn_bias;     // (Q + 2 KV,) or empty
  LinearWeights attn_proj;            // (C, Q): attn.c_proj / o_proj
  std::vector<float> attn_proj_bias;  // (C,) or empty
  std::vector<float> ln_2_weight;     // (C,)
  std::vector<float> ln_2_bias;       // (C,) LayerNorm only
  LinearWeights c_fc;                 // (F, C) mlp.c_fc; SwiGLU: (2F, C) gate_proj|up_proj fused
  std::vector<float> c_fc_bias;       // (F,) / (2F,) or empty
  LinearWeights mlp_proj;             // (C, F): mlp.c_proj / down_proj
  std::vector<float> mlp_proj_bias;   // (C,) or empty
};

struct GPTWeights {
  std::vector<float> wte;            // (V, C) token embeddings, row-major; empty when tied
  std::vector<float> wpe;            // (block_size, C) learned position embeddings, or empty
  std::vector<float> rope_cos;       // (block_size, hd / 2) rotary table (kernels/rope.h), or empty
  std::vector<float> rope_sin;       // (block_size, hd / 2)
  std::vector<LayerWeights> layers;  // n_layer blocks
  std::vector<float> ln_f_weight;    // (C,)
  std::vector<float> ln_f_bias;      // (C,) LayerNorm only
  LinearWeights lm_head;             // (V, C) lm_head.weight, or wte when tied: float32, or
                                     // 8-bit blocks as stored (see Weights above)
};

// out (m, n) = in (m, k) @ W^T + bias (null: none), for either layout of W; an 8-bit W first
// quantizes in per block of 32 into x8 (m * k) and sx (m * k / 32), which may be null for a
// float32 W.
void apply_linear(kernels::ThreadPool* pool, const float* in, size_t m, size_t k,
                  const LinearWeights& W, size_t n, const float* bias, float* out, int16_t* x8,
                  float* sx);

// Token `token`'s embedding (C floats): a view of its wte row, or, when the head is tied (the
// embedding held once, as the head's packed rows), the row unpacked into scratch (C floats;
// 8-bit rows dequantized, exact).
const float* token_embedding(const GPTConfig& cfg, const GPTWeights& w, size_t token,
                             float* scratch);

// Every check GPTModel::from_checkpoint makes before it allocates anything, without building:
// the one validation of the config (check_checkpoint_config), the memory limits, the tensor set
// (names, shapes, types, byte sizes). Returns the forward pass's config and the weights the model
// would hold. For loaders that take a checkpoint elsewhere (the WebGPU backend's reader).
struct CheckedCheckpoint {
  GPTConfig config;
  Weights weights = Weights::kF32;
};
CheckedCheckpoint check_checkpoint(const Checkpoint& checkpoint, const Weights* weights = nullptr,
                                   int context = 0);

class GPTModel {
 public:
  // A single model file (our safetensors or GGUF: model/load.h open_checkpoint) through
  // from_checkpoint: validates everything and throws specdec::Error "model file: ..." on the
  // first problem. weights: null keeps the file's layout (a file made by `specdec quantize` loads
  // 8-bit); kInt8 quantizes a float file's Linear weights at load (the same quantizer, so the
  // result equals loading the quantized file); kF32 widens a quantized file's blocks (exact).
  // from_file streams the file a tensor at a time.
  static GPTModel from_safetensors(const uint8_t* bytes, size_t size,
                                   const Weights* weights = nullptr);
  static GPTModel from_file(const std::string& path, const Weights* weights = nullptr);

  // A model from a checkpoint (model/checkpoint.h) of any frontend: the one way in. Checks
  // the config (check_checkpoint_config, the kMaxFamily* limits) and every tensor's name, shape,
  // type and byte size against it, refusing non-finite values, and throws specdec::Error "model
  // file: ..." naming the tensor and shape. F16 / BF16 widen to float. Q8_0 / Q4_0 Linear weights
  // load as our 8-bit blocks without requantizing (same scale, same quants; a zero scale or a -128
  // quant is accepted, a non-finite scale refused); with weights kF32 they are widened to float
  // instead (exact), as quantized embeddings always are; a quantized LM head stays 8-bit in an
  // 8-bit model (float32 otherwise). weights: null keeps the checkpoint's kind (8-bit if any Linear
  // weight is quantized: its float Linear weights are then quantized); kInt8 quantizes float
  // Linear weights at load, as from_safetensors does.
  // context: the positions the model runs (its KVCache capacity): 0 = min(max_positions,
  // kDefaultFamilyContext); never more than max_positions nor kMaxBlockSize.
  static GPTModel from_checkpoint(const Checkpoint& checkpoint, const Weights* weights = nullptr,
                                  int context = 0);
  // Natively: a directory is a Hugging Face folder (model/hf_folder.h, default context), a file
  // starting "GGUF" a GGUF file (model/gguf.h, streamed a tensor at a time), any other path one
  // of our safetensors files (from_file).
  static GPTModel from_path(const std::string& path, const Weights* weights = nullptr);

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
