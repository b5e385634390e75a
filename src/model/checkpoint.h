// A checkpoint as the model sees it, whatever format it came in: the architecture's
// hyperparameters and its tensors under Hugging Face state-dict names, in one layout.
// Frontends (model/specdec_file.h: our own safetensors files; model/hf_folder.h: a Hugging Face
// folder; model/gguf.h: a GGUF file; model/load.h tells a single file's format) produce one;
// check_checkpoint_config is the one validation of what they read, and GPTModel::from_checkpoint
// the one loader. Dependencies: frontends -> checkpoint -> model.
//
// The one layout every frontend delivers:
// - names are those of transformers' *ForCausalLM state dicts: Llama / Qwen2
//   "model.embed_tokens.weight", "model.layers.{i}.input_layernorm.weight",
//   "model.layers.{i}.self_attn.{q,k,v,o}_proj.weight" (Qwen2 also "{q,k,v}_proj.bias"),
//   "model.layers.{i}.post_attention_layernorm.weight", "model.layers.{i}.mlp.{gate,up,down}_proj
//   .weight", "model.norm.weight", "lm_head.weight" (absent when tied); GPT-2
//   "transformer.wte.weight", "transformer.wpe.weight", "transformer.h.{i}.ln_{1,2}.{weight,bias}",
//   "transformer.h.{i}.attn.c_{attn,proj}.{weight,bias}", "transformer.h.{i}.mlp.c_{fc,proj}
//   .{weight,bias}", "transformer.ln_f.{weight,bias}" (a checkpoint saved without the
//   "transformer." prefix gets it);
// - every Linear weight is (out_features, in_features), row-major, as torch.nn.Linear holds it:
//   GPT-2's Conv1D weights (stored (in, out)) arrive transposed;
// - rotary rows in Hugging Face's half-rotation order: a GGUF "llama" file's Q and K rows
//   (permuted by llama.cpp's converter) arrive un-permuted;
// - shape is PyTorch's order (a GGUF ne[] reversed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/buffer.h"
#include "kernels/rope.h"

namespace specdec {

enum class Family { kGPT2, kLlama, kQwen2 };
const char* family_name(Family f);  // "gpt2" / "llama" / "qwen2" (config.json model_type)
// The family of that name (config.json's model_type, GGUF's general.architecture); false if none.
bool family_named(const std::string& name, Family* f);

// The hyperparameters the forward pass needs, under config.json's names in the comments.
struct FamilyConfig {
  Family family = Family::kLlama;
  int vocab_size = 0;       // vocab_size (rows of the embedding; may exceed the tokenizer's)
  int n_layer = 0;          // num_hidden_layers / n_layer
  int n_head = 0;           // num_attention_heads / n_head
  int n_kv_head = 0;        // num_key_value_heads (GPT-2: n_head)
  int n_embd = 0;           // hidden_size / n_embd
  int head_dim = 0;         // head_dim, else n_embd / n_head
  int n_ff = 0;             // intermediate_size / n_inner (GPT-2 default 4 * n_embd)
  int max_positions = 0;    // max_position_embeddings / n_positions
  float norm_eps = 1e-5f;   // rms_norm_eps / layer_norm_epsilon
  double rope_theta = 1e4;  // rope_theta (Llama, Qwen2)
  bool tied_head = false;   // tie_word_embeddings: no lm_head.weight, the head reads the embedding
  int bos_token_id = -1;    // -1: none given
  std::vector<int> eos_token_ids;  // eos_token_id (an int or a list in config.json)
  // Added for the model (families-model): rope_scaling {rope_type "llama3", factor,
  // low_freq_factor, high_freq_factor, original_max_position_embeddings}; factor 0: none.
  kernels::RopeScaling rope_scaling;
  // GPT-2's activation_function "gelu" (exact erf, as our nanoGPT files) instead of "gelu_new"
  // / "gelu_pytorch_tanh" (the tanh GELU, the default).
  bool gelu_erf = false;
  // The tokens the file's tokenizer defines (GGUF: tokenizer.ggml.tokens; a folder: the count
  // its caller read from tokenizer.json); 0: unknown. More than vocab_size is refused.
  int tokenizer_tokens = 0;
  // The context (KV capacity) when none is asked; 0: min(max_positions, 4096). Our own files
  // run their whole block_size.
  int context = 0;
};

// The one validation of a checkpoint's hyperparameters, whatever its format (run by
// GPTModel::from_checkpoint before anything is allocated, and by loaders that check a header
// before building anything else, such as a tokenizer): ranges and the limits of gpt_model.h,
// head counts, norm_eps finite and in (0, 1), rope_theta, the tokenizer no larger than the
// embedding, BOS / EOS ids inside the vocabulary. Throws specdec::Error "model file: ..." in the
// same words for every format.
void check_checkpoint_config(const FamilyConfig& c);
// A special token id inside the vocabulary ("model file: eos_token_id 99 is outside the
// vocabulary of 80 tokens ..."), for frontends that read ids wider than an int.
void check_token_id(const char* what, int64_t id, int vocab_size);

// A GPT-2 block's Linear weight ("transformer.h.{i}." + attn.c_attn, attn.c_proj, mlp.c_fc or
// mlp.c_proj + ".weight"): Conv1D (in, out) in a Hugging Face folder, a .q8 + .scale pair in our
// 8-bit files.
bool is_gpt2_block_linear(const std::string& name);

// Where a checkpoint came from.
enum class CheckpointFormat { kSpecdec, kGguf, kHfFolder };
const char* format_name(CheckpointFormat f);  // "specdec" / "gguf" / "hf"

// How a tensor's bytes encode its values (little-endian). Q8_0 / Q4_0: GGUF's blocks of 32
// along the last (in_features) dimension: Q8_0 = f16 d + 32 int8 (34 bytes), Q4_0 = f16 d +
// 16 bytes of nibbles (18 bytes); value = d * q (Q4_0: q = nibble - 8).
enum class TensorType { kF32, kF16, kBF16, kQ8_0, kQ4_0 };
const char* tensor_type_name(TensorType t);  // "F32" ... "Q4_0", as the formats spell them

// Where a streamed file's bytes come from: copies `bytes` bytes at `offset` of the file into
// `into` (the bindings read them from the JS buffer the file is in, one tensor at a time).
using ByteReader = std::function<void(uint64_t offset, size_t bytes, uint8_t* into)>;

struct Checkpoint;

// Natively: a reader of the file at `path` (held open by the reader and its copies), and the
// file's size in *size. Throws specdec::Error naming the file when it cannot be opened or read.
ByteReader file_reader(const std::string& path, uint64_t* size);

struct CheckpointTensor {
  TensorType type = TensorType::kF32;
  std::vector<uint64_t> shape;    // PyTorch order; a Linear weight is (out, in)
  const uint8_t* data = nullptr;  // `bytes` bytes inside the caller's buffers or Checkpoint::owned
  size_t bytes = 0;
  // A streamed checkpoint's tensor (data null): writes its `bytes` bytes, in this layout
  // (rewrites done), into `into`. The model's loader fetches each tensor when it converts it and
  // drops the bytes after, so the file is never whole in memory beside the model.
  std::function<void(uint8_t* into)> fetch;
  // When the tensor is stored as the model takes it (no rewrite on the way): writes its bytes
  // [offset, offset + n) into `into`, so that a large tensor (the LM head) is read a block of
  // rows at a time. Unset otherwise (fetch the whole tensor then).
  std::function<void(uint64_t offset, size_t n, uint8_t* into)> fetch_range;
};

// A tensor stored as the model takes it: at `data`, or (data null) at `offset` of the file that
// `read` reads, fetched whole or a range at a time.
CheckpointTensor stored_tensor(TensorType type, std::vector<uint64_t> shape, size_t bytes,
                               const uint8_t* data, const ByteReader& read, uint64_t offset);

// A tensor whose stored bytes the model takes rewritten (GGUF's permuted Q / K rows, GPT-2's
// Conv1D transposes): rewrite(stored, out) runs now into ck.owned when t is in memory, else each
// time t is fetched (then whole only: fetch_range unset).
void rewrite_tensor(CheckpointTensor& t, Checkpoint& ck,
                    std::function<void(const uint8_t* stored, uint8_t* out)> rewrite);

// t's bytes: t.data, or fetched into scratch (resized to t.bytes, uninitialised before the fetch;
// a scratch kept across tensors is allocated once).
const uint8_t* tensor_bytes(const CheckpointTensor& t, Buffer<uint8_t>& scratch);

struct Checkpoint {
  CheckpointFormat format = CheckpointFormat::kHfFolder;
  FamilyConfig config;
  std::map<std::string, CheckpointTensor> tensors;  // by the names above
  // Storage for tensors a frontend had to rewrite (transposed, un-permuted); tensors point here
  // or into the buffers the frontend was given, which must outlive the checkpoint.
  std::vector<std::vector<uint8_t>> owned;

  const CheckpointTensor* find(const std::string& name) const;
};

}  // namespace specdec
