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
#include <set>

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
  c.norm_eps = static_cast<float>(f.get_f64(eps_key));  // checked by check_checkpoint_config
  if (c.n_kv_head > c.n_head || c.n_head % c.n_kv_head != 0) {
    fail("model file: ", a, "attention.head_count ", c.n_head, " is not a multiple of ", a,
         "attention.head_count_kv ", c.n_kv_head);
  }
  if (gpt2 && c.n_kv_head != c.n_head) {
    fail("model file: ", a, "attention.head_count_kv ", c.n_kv_head, " must equal head_count ",
         c.n_head, " (GPT-2 has no grouped-query attention)");
  }
  const bool even = c.n_embd % c.n_head == 0;
  if (!f.find(a + "attention.key_length") && !even) {
    fail("model file: ", a, "embedding_length ", c.n_embd, " is not a multiple of ", a,
         "attention.head_count ", c.n_head, " and no key_length is given");
  }
  c.head_dim = int_key_or(f, a + "attention.key_length", c.n_embd / c.n_head);
  const int value_length = int_key_or(f, a + "attention.value_length", c.head_dim);
  if (value_length != c.head_dim) {
    fail("model file: ", a, "attention.value_length ", value_length, " differs from key_length ",
         c.head_dim, " (not supported)");
  }
  if (gpt2) {
    if (c.head_dim * c.n_head != c.n_embd)
      fail("model file: gpt2 key_length must be n_embd / n_head");
    return c;
  }
  if (c.head_dim % 2 != 0)
    fail("model file: head_dim ", c.head_dim, " must be even (rotary pairs)");
  const std::string theta_key = a + "rope.freq_base";
  if (f.find(theta_key)) c.rope_theta = f.get_f64(theta_key);
  if (!(c.rope_theta > 1.0 && c.rope_theta < 1e12)) {
    fail("model file: ", theta_key, " must be in (1, 1e12), got ", c.rope_theta);
  }
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

enum class Need { kRequired, kOptional };

// One tensor the family reads: its GGUF and HF names, its PyTorch shape, and for llama's Q and
// K the number of heads its rows are permuted over (0: none).
struct Entry {
  std::string gguf, hf;
  std::vector<uint64_t> shape;
  Need need;
  int permuted_heads = 0;
};

std::vector<Entry> llama_plan(const FamilyConfig& c) {
  const bool qwen2 = c.family == Family::kQwen2;
  const uint64_t C = c.n_embd, F = c.n_ff, V = c.vocab_size;
  const uint64_t Q = uint64_t{1} * c.n_head * c.head_dim,
                 KV = uint64_t{1} * c.n_kv_head * c.head_dim;
  const Need qkv_bias = qwen2 ? Need::kRequired : Need::kOptional;
  const int q_heads = qwen2 ? 0 : c.n_head, k_heads = qwen2 ? 0 : c.n_kv_head;
  std::vector<Entry> plan = {
      {"token_embd.weight", "model.embed_tokens.weight", {V, C}, Need::kRequired},
      {"output_norm.weight", "model.norm.weight", {C}, Need::kRequired},
      {"output.weight", "lm_head.weight", {V, C}, Need::kOptional},
  };
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    const std::string h = "model.layers." + std::to_string(i) + ".";
    const std::vector<Entry> layer = {
        {b + "attn_norm.weight", h + "input_layernorm.weight", {C}, Need::kRequired},
        {b + "attn_q.weight", h + "self_attn.q_proj.weight", {Q, C}, Need::kRequired, q_heads},
        {b + "attn_q.bias", h + "self_attn.q_proj.bias", {Q}, qkv_bias, q_heads},
        {b + "attn_k.weight", h + "self_attn.k_proj.weight", {KV, C}, Need::kRequired, k_heads},
        {b + "attn_k.bias", h + "self_attn.k_proj.bias", {KV}, qkv_bias, k_heads},
        {b + "attn_v.weight", h + "self_attn.v_proj.weight", {KV, C}, Need::kRequired},
        {b + "attn_v.bias", h + "self_attn.v_proj.bias", {KV}, qkv_bias},
        {b + "attn_output.weight", h + "self_attn.o_proj.weight", {C, Q}, Need::kRequired},
        {b + "attn_output.bias", h + "self_attn.o_proj.bias", {C}, Need::kOptional},
        {b + "ffn_norm.weight", h + "post_attention_layernorm.weight", {C}, Need::kRequired},
        {b + "ffn_gate.weight", h + "mlp.gate_proj.weight", {F, C}, Need::kRequired},
        {b + "ffn_gate.bias", h + "mlp.gate_proj.bias", {F}, Need::kOptional},
        {b + "ffn_up.weight", h + "mlp.up_proj.weight", {F, C}, Need::kRequired},
        {b + "ffn_up.bias", h + "mlp.up_proj.bias", {F}, Need::kOptional},
        {b + "ffn_down.weight", h + "mlp.down_proj.weight", {C, F}, Need::kRequired},
        {b + "ffn_down.bias", h + "mlp.down_proj.bias", {C}, Need::kOptional},
    };
    plan.insert(plan.end(), layer.begin(), layer.end());
  }
  return plan;
}

std::vector<Entry> gpt2_plan(const FamilyConfig& c) {
  const uint64_t C = c.n_embd, F = c.n_ff, V = c.vocab_size, P = c.max_positions;
  const Need req = Need::kRequired;
  std::vector<Entry> plan = {
      {"token_embd.weight", "transformer.wte.weight", {V, C}, req},
      {"position_embd.weight", "transformer.wpe.weight", {P, C}, req},
      {"output_norm.weight", "transformer.ln_f.weight", {C}, req},
      {"output_norm.bias", "transformer.ln_f.bias", {C}, req},
      {"output.weight", "lm_head.weight", {V, C}, Need::kOptional},
  };
  // [gguf, hf, rows, columns (0: a vector)] of each block's weights and biases.
  struct Part {
    const char *gguf, *hf;
    uint64_t rows, cols;
  };
  const Part parts[] = {
      {"attn_norm", "ln_1", C, 0},          {"attn_qkv", "attn.c_attn", 3 * C, C},
      {"attn_output", "attn.c_proj", C, C}, {"ffn_norm", "ln_2", C, 0},
      {"ffn_up", "mlp.c_fc", F, C},         {"ffn_down", "mlp.c_proj", C, F},
  };
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    for (const Part& p : parts) {
      const std::vector<uint64_t> w =
          p.cols ? std::vector<uint64_t>{p.rows, p.cols} : std::vector<uint64_t>{p.rows};
      plan.push_back({b + p.gguf + ".weight", h + p.hf + ".weight", w, req});
      plan.push_back({b + p.gguf + ".bias", h + p.hf + ".bias", {p.rows}, req});
    }
  }
  return plan;
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

// A streamed tensor's fetch: its bytes at `offset` of the file, un-permuted when `heads` > 0.
std::function<void(uint8_t*)> streamed(const ByteReader& read, uint64_t offset, size_t bytes,
                                       uint64_t rows, int heads) {
  return [read, offset, bytes, rows, heads](uint8_t* into) {
    if (heads == 0) return read(offset, bytes, into);
    Buffer<uint8_t> raw(bytes);  // written whole by the read
    read(offset, bytes, raw.data());
    unpermute_rows(raw.data(), bytes, rows, heads, into);
  };
}

void add_tensor(const GgufFile& f, const GgufTensor& t, const Entry& e, const ByteReader* read,
                Checkpoint& ck) {
  const std::string where = "model file: tensor '" + t.name + "'";
  if (t.shape() != e.shape) {
    fail(where, " has shape ", shape_string(t.shape()), ", expected ", shape_string(e.shape));
  }
  if (t.ne.size() == 1 && (t.type == TensorType::kQ8_0 || t.type == TensorType::kQ4_0)) {
    fail(where, " is a vector stored as ", tensor_type_name(t.type),
         " (block types are for matrices)");
  }
  CheckpointTensor ct;
  ct.type = t.type;
  ct.shape = e.shape;
  ct.data = t.data;
  ct.bytes = t.bytes;
  if (!t.data) {
    if (!read) fail(where, " has no data (a header without a reader)");
    const uint64_t at = f.data_offset + t.offset;
    ct.fetch = streamed(*read, at, t.bytes, e.shape[0], e.permuted_heads);
    if (e.permuted_heads == 0) {
      ct.fetch_range = [read = *read, at](uint64_t offset, size_t n, uint8_t* into) {
        read(at + offset, n, into);
      };
    }
  } else if (e.permuted_heads > 0) {
    ck.owned.emplace_back(t.bytes);
    unpermute_rows(t.data, t.bytes, e.shape[0], e.permuted_heads, ck.owned.back().data());
    ct.data = ck.owned.back().data();
  }
  ck.tensors.emplace(e.hf, std::move(ct));
}

// Llama 3's rope scaling as llama.cpp writes it: per-frequency divisors. All 1 is no scaling.
void check_rope_freqs(const GgufFile& f, const GgufTensor& t, const ByteReader* read,
                      const FamilyConfig& c) {
  const uint64_t n = static_cast<uint64_t>(c.head_dim / 2);
  if (t.type != TensorType::kF32 || t.ne.size() != 1 || t.ne[0] != n) {
    fail("model file: tensor 'rope_freqs.weight' must be F32 of shape [", n, "]");
  }
  CheckpointTensor ct{t.type, t.shape(), t.data, t.bytes, {}, {}};
  if (!t.data) {
    if (!read) fail("model file: tensor 'rope_freqs.weight' has no data");
    ct.fetch = streamed(*read, f.data_offset + t.offset, t.bytes, n, 0);  // as every tensor
  }
  Buffer<uint8_t> scratch;
  const uint8_t* data = tensor_bytes(ct, scratch);
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
  if (arch == "llama") {
    family = Family::kLlama;
  } else if (arch == "qwen2") {
    family = Family::kQwen2;
  } else if (arch == "gpt2") {
    family = Family::kGPT2;
  } else {
    fail("model file: general.architecture '", arch, "' is not supported (llama, qwen2, gpt2)");
  }
  Checkpoint ck;
  ck.config = read_config(f, family, arch);
  read_vocab(f, arch, ck.config);
  // Each block has at least 9 tensors: more blocks than tensors cannot be (and would make the
  // plan below as long as the claim).
  if (static_cast<uint64_t>(ck.config.n_layer) > f.tensors.size()) {
    fail("model file: ", arch, ".block_count ", ck.config.n_layer, " exceeds the ",
         f.tensors.size(), " tensors of the file");
  }
  const std::vector<Entry> plan =
      family == Family::kGPT2 ? gpt2_plan(ck.config) : llama_plan(ck.config);
  ck.owned.reserve(2 * static_cast<size_t>(ck.config.n_layer) * 2);  // Q, K weights and biases
  size_t used = 0;
  for (const Entry& e : plan) {
    const GgufTensor* t = f.find_tensor(e.gguf);
    if (!t) {
      if (e.need == Need::kRequired) fail("model file: tensor '", e.gguf, "' is missing");
      continue;
    }
    add_tensor(f, *t, e, read, ck);
    ++used;
  }
  if (const GgufTensor* freqs = f.find_tensor("rope_freqs.weight");
      freqs && family == Family::kLlama) {
    check_rope_freqs(f, *freqs, read, ck.config);
    ++used;
  }
  if (used != f.tensors.size()) {
    std::set<std::string> known = {"rope_freqs.weight"};  // llama only: counted above
    for (const Entry& e : plan) known.insert(e.gguf);
    for (const GgufTensor& t : f.tensors) {
      if (!known.count(t.name) || (t.name == "rope_freqs.weight" && family != Family::kLlama)) {
        fail("model file: tensor '", t.name, "' is not part of a ", arch, " model");
      }
    }
  }
  ck.config.tied_head = ck.find("lm_head.weight") == nullptr;
  ck.format = CheckpointFormat::kGguf;
  check_checkpoint_config(ck.config);
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
