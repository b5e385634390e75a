// checkpoint_from_gguf (gguf.h): a GGUF file of architecture llama / qwen2 / gpt2 into
// checkpoint.h's one layout. Hyperparameters come from the `{arch}.*` keys (llama.cpp's
// gguf-py constants), tensor names from the tables below; the tensors stay in the caller's
// buffer except llama's Q and K rows, which are un-permuted into Checkpoint::owned.
//
// GPT-2: llama.cpp's converter (conversion/gpt2.py) transposes HF's Conv1D weights (in, out)
// before writing them, so a GGUF gpt2 matrix is (out, in) already, as checkpoint.h wants.
#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>

#include "base/errors.h"
#include "model/gguf.h"
#include "model/safetensors.h"  // shape_string

namespace specdec {
namespace {

int positive_int(uint64_t v, const std::string& key) {
  if (v < 1 || v > INT_MAX) fail("model file: key '", key, "' must be 1..", INT_MAX, ", got ", v);
  return static_cast<int>(v);
}

int int_key(const GgufFile& f, const std::string& key) { return positive_int(f.get_u64(key), key); }

int int_key_or(const GgufFile& f, const std::string& key, int fallback) {
  return f.find(key) ? int_key(f, key) : fallback;
}

// Rope scaling of any kind changes the angles: refused unless it says none.
void check_rope(const GgufFile& f, const std::string& arch, int head_dim, int context) {
  const std::string type_key = arch + ".rope.scaling.type";
  const bool typed = f.find(type_key) != nullptr;
  if (typed && f.get_string(type_key) != "none") {
    fail("model file: ", type_key, " '", f.get_string(type_key),
         "' is not supported (only 'none')");
  }
  for (const char* suffix : {".rope.scale_linear", ".rope.scaling.factor"}) {
    const std::string key = arch + suffix;
    if (f.find(key) && !typed) {
      const double factor = f.get_f64(key);
      if (factor != 0.0 && factor != 1.0) {
        fail("model file: ", key, " ", factor, " (rope scaling) is not supported");
      }
    }
  }
  const std::string dims_key = arch + ".rope.dimension_count";
  if (f.find(dims_key) && f.get_u64(dims_key) != static_cast<uint64_t>(head_dim)) {
    fail("model file: ", dims_key, " ", f.get_u64(dims_key), " differs from head_dim ", head_dim,
         " (partial rotary is not supported)");
  }
  const std::string window_key = arch + ".attention.sliding_window";
  if (f.find(window_key) && f.get_u64(window_key) < static_cast<uint64_t>(context)) {
    fail("model file: ", window_key, " ", f.get_u64(window_key), " is shorter than the context ",
         context, " (sliding-window attention is not supported)");
  }
}

FamilyConfig read_config(const GgufFile& f, Family family, const std::string& arch) {
  FamilyConfig c;
  c.family = family;
  const std::string a = arch + ".";
  c.n_layer = int_key(f, a + "block_count");
  c.n_embd = int_key(f, a + "embedding_length");
  c.n_head = int_key(f, a + "attention.head_count");
  c.n_kv_head = int_key_or(f, a + "attention.head_count_kv", c.n_head);
  c.max_positions = int_key(f, a + "context_length");
  const bool gpt2 = family == Family::kGPT2;
  const std::string ff_key = a + "feed_forward_length";
  // GPT-2 files may leave the MLP width out: 4 * n_embd, checked like a stored value.
  c.n_ff =
      gpt2 && !f.find(ff_key) ? positive_int(4 * uint64_t(c.n_embd), ff_key) : int_key(f, ff_key);
  const std::string eps_key =
      a + (gpt2 ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon");
  c.norm_eps = static_cast<float>(f.get_f64(eps_key));
  // Head counts, head_dim, norm_eps and rope_theta are checked by check_checkpoint_config.
  if (!f.find(a + "attention.key_length") && c.n_embd % c.n_head != 0) {
    fail("model file: ", a, "embedding_length ", c.n_embd, " is not a multiple of ", a,
         "attention.head_count ", c.n_head, " and no key_length is given");
  }
  c.head_dim = int_key_or(f, a + "attention.key_length", c.n_embd / c.n_head);
  const int value_length = int_key_or(f, a + "attention.value_length", c.head_dim);
  if (value_length != c.head_dim) {
    fail("model file: ", a, "attention.value_length ", value_length, " differs from key_length ",
         c.head_dim, " (not supported)");
  }
  if (gpt2) return c;
  const std::string theta_key = a + "rope.freq_base";
  if (f.find(theta_key)) c.rope_theta = f.get_f64(theta_key);
  check_rope(f, arch, c.head_dim, c.max_positions);
  return c;
}

// The vocabulary (token_embd's rows), the tokenizer's size and the special ids.
void read_vocab(const GgufFile& f, const std::string& arch, FamilyConfig& c) {
  const GgufTensor* embd = f.find_tensor("token_embd.weight");
  if (!embd) fail("model file: tensor 'token_embd.weight' is missing");
  if (embd->ne.size() != 2) {
    fail("model file: tensor 'token_embd.weight' has shape ", shape_string(embd->shape()),
         ", expected (vocab, ", c.n_embd, ")");
  }
  c.vocab_size = positive_int(embd->ne[1], "token_embd.weight rows");
  const std::string vocab_key = arch + ".vocab_size";
  if (f.find(vocab_key) && f.get_u64(vocab_key) != static_cast<uint64_t>(c.vocab_size)) {
    fail("model file: ", vocab_key, " ", f.get_u64(vocab_key), " differs from the ", c.vocab_size,
         " rows of token_embd.weight");
  }
  // The tokenizer's size and the special ids are checked with every format's
  // (check_checkpoint_config); ids wider than an int are refused here, in the same words.
  if (f.find("tokenizer.ggml.tokens")) {
    const uint64_t n = f.array_size("tokenizer.ggml.tokens");
    c.tokenizer_tokens = static_cast<int>(std::min<uint64_t>(n, INT_MAX));
  }
  auto token_id = [&](const char* key, const char* what) {
    const uint64_t id = f.get_u64(key);
    check_token_id(what, static_cast<int64_t>(std::min<uint64_t>(id, INT64_MAX)), c.vocab_size);
    return static_cast<int>(id);
  };
  if (f.find("tokenizer.ggml.bos_token_id"))
    c.bos_token_id = token_id("tokenizer.ggml.bos_token_id", "bos_token_id");
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
    if (!f.find(key)) continue;
    const int id = token_id(key, "eos_token_id");
    if (c.eos_token_ids.empty() || c.eos_token_ids[0] != id) c.eos_token_ids.push_back(id);
  }
}

// GGUF's names (llama.cpp's gguf-py constants) of each family's tensors, before ".weight" /
// ".bias": the block's after "blk.{i}." and Hugging Face's after the layer's prefix, then the
// others. Which tensors a family needs, and their shapes, the model's loader checks
// (family::check_tensor_set), in the same words for every format. permuted: llama's Q (1) and K
// (2) rows, permuted over n_head / n_kv_head heads by llama.cpp's converter.
struct Name {
  const char *gguf, *hf;
  int permuted = 0;
};
const Name kLlamaBlock[] = {
    {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj", 1},
    {"attn_k", "self_attn.k_proj", 2},   {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},       {nullptr, nullptr}};
const Name kLlamaGlobal[] = {{"token_embd", "model.embed_tokens"},
                             {"output_norm", "model.norm"},
                             {"output", "lm_head"},
                             {nullptr, nullptr}};
const Name kGpt2Block[] = {
    {"attn_norm", "ln_1"}, {"attn_qkv", "attn.c_attn"}, {"attn_output", "attn.c_proj"},
    {"ffn_norm", "ln_2"},  {"ffn_up", "mlp.c_fc"},      {"ffn_down", "mlp.c_proj"},
    {nullptr, nullptr}};
const Name kGpt2Global[] = {{"token_embd", "transformer.wte"},
                            {"position_embd", "transformer.wpe"},
                            {"output_norm", "transformer.ln_f"},
                            {"output", "lm_head"},
                            {nullptr, nullptr}};

// The Hugging Face name of a GGUF tensor ("" when the family has none) and its permutation.
std::string hf_name(const std::string& name, const FamilyConfig& c, int* permuted) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return "";
  const std::string stem = name.substr(0, dot), suffix = name.substr(dot);
  if (suffix != ".weight" && suffix != ".bias") return "";
  const bool gpt2 = c.family == Family::kGPT2;
  *permuted = 0;
  for (const Name* n = gpt2 ? kGpt2Global : kLlamaGlobal; n->gguf; ++n) {
    if (stem == n->gguf) return n->hf + suffix;
  }
  for (int i = 0; i < c.n_layer && stem.rfind("blk.", 0) == 0; ++i) {
    const std::string block = "blk." + std::to_string(i) + ".";
    if (stem.rfind(block, 0) != 0) continue;
    for (const Name* n = gpt2 ? kGpt2Block : kLlamaBlock; n->gguf; ++n) {
      if (stem.compare(block.size(), std::string::npos, n->gguf) != 0) continue;
      if (c.family == Family::kLlama) *permuted = n->permuted;
      return (gpt2 ? "transformer.h." : "model.layers.") + std::to_string(i) + "." + n->hf + suffix;
    }
  }
  return "";
}

// GGUF row h·d + 2i + s holds HF row h·d + s·d/2 + i (s ∈ {0, 1}, i < d/2, d = rows / heads):
// llama.cpp's converter interleaves each head's two rotary halves. Whole rows move, so any
// row-wise type (F32, F16, BF16, Q8_0 and Q4_0 blocks of a row) moves as it is.
void unpermute_rows(const uint8_t* in, size_t bytes, uint64_t rows, int heads, uint8_t* out) {
  const size_t row_bytes = bytes / rows;
  const uint64_t d = rows / static_cast<uint64_t>(heads);
  for (uint64_t h = 0; h < static_cast<uint64_t>(heads); ++h) {
    for (uint64_t i = 0; i < d / 2; ++i) {
      for (uint64_t s = 0; s < 2; ++s) {
        const uint64_t hf_row = h * d + s * (d / 2) + i, gguf_row = h * d + 2 * i + s;
        std::memcpy(out + hf_row * row_bytes, in + gguf_row * row_bytes, row_bytes);
      }
    }
  }
}

// The tensor as the file stores it: in the caller's buffer, or streamed through `read`.
CheckpointTensor stored(const GgufFile& f, const GgufTensor& t, const ByteReader* read) {
  if (!t.data && !read)
    fail("model file: tensor '", t.name, "' has no data (a header without a reader)");
  return stored_tensor(t.type, t.shape(), t.bytes, t.data, read ? *read : ByteReader(),
                       f.data_offset + t.offset);
}

// Llama 3's rope scaling as llama.cpp writes it: per-frequency divisors. All 1 is no scaling.
void check_rope_freqs(const GgufFile& f, const GgufTensor& t, const ByteReader* read,
                      const FamilyConfig& c) {
  const uint64_t n = static_cast<uint64_t>(c.head_dim / 2);
  if (t.type != TensorType::kF32 || t.ne.size() != 1 || t.ne[0] != n) {
    fail("model file: tensor 'rope_freqs.weight' must be F32 of shape [", n, "]");
  }
  Buffer<uint8_t> scratch;
  const uint8_t* data = tensor_bytes(stored(f, t, read), scratch);
  for (uint64_t i = 0; i < n; ++i) {
    float x;
    std::memcpy(&x, data + 4 * i, 4);
    if (x != 1.0f) {
      fail("model file: tensor 'rope_freqs.weight' holds Llama 3 rope scaling (factor ", x, " at ",
           i, "): not supported");
    }
  }
}

}  // namespace

Checkpoint checkpoint_from_gguf(const GgufFile& f, const ByteReader* read) {
  const std::string arch(f.get_string("general.architecture"));
  Family family;
  if (!family_named(arch, &family)) {
    fail("model file: general.architecture '", arch, "' is not supported (llama, qwen2, gpt2)");
  }
  Checkpoint ck;
  ck.format = CheckpointFormat::kGguf;
  ck.config = read_config(f, family, arch);
  read_vocab(f, arch, ck.config);
  check_checkpoint_config(ck.config);
  const FamilyConfig& c = ck.config;
  for (const GgufTensor& t : f.tensors) {
    if (t.name == "rope_freqs.weight" && family == Family::kLlama) {
      check_rope_freqs(f, t, read, c);
      continue;
    }
    int permuted = 0;
    const std::string name = hf_name(t.name, c, &permuted);
    if (name.empty()) fail("model file: tensor '", t.name, "' is not part of a ", arch, " model");
    CheckpointTensor ct = stored(f, t, read);
    if (permuted) {
      const uint64_t rows = ct.shape[0], heads = permuted == 1 ? c.n_head : c.n_kv_head;
      rewrite_tensor(ct, ck, [rows, heads, bytes = t.bytes](const uint8_t* in, uint8_t* out) {
        unpermute_rows(in, bytes, rows, static_cast<int>(heads), out);
      });
    }
    ck.tensors.emplace(name, std::move(ct));
  }
  ck.config.tied_head = ck.find("lm_head.weight") == nullptr;
  return ck;
}

Checkpoint checkpoint_from_gguf(const uint8_t* bytes, size_t size) {
  return checkpoint_from_gguf(parse_gguf(bytes, size));
}

Checkpoint checkpoint_from_gguf_stream(uint64_t size, const ByteReader& read, size_t first_read) {
  uint64_t want = std::max<uint64_t>(first_read, 64);
  for (;;) {
    std::vector<uint8_t> header(static_cast<size_t>(std::min(want, size)));
    read(0, header.size(), header.data());
    try {
      // The metadata views point into `header`, which the checkpoint does not need after this.
      return checkpoint_from_gguf(parse_gguf_header(header.data(), header.size(), size), &read);
    } catch (const GgufNeedsMore& more) {
      want = std::max(more.bytes, want > size / 4 ? size : want * 4);
    }
  }
}

}  // namespace specdec
