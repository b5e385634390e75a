#include "model/checkpoint.h"

#include <cmath>
#include <fstream>
#include <memory>

#include "base/errors.h"
#include "model/model_limits.h"

namespace specdec {

const char* family_name(Family f) {
  static const char* const kNames[] = {"gpt2", "llama", "qwen2"};  // Family's order
  return kNames[static_cast<int>(f)];
}

bool family_named(const std::string& name, Family* f) {
  for (Family each : {Family::kGPT2, Family::kLlama, Family::kQwen2}) {
    if (name == family_name(each)) {
      *f = each;
      return true;
    }
  }
  return false;
}

const char* format_name(CheckpointFormat f) {
  static const char* const kNames[] = {"specdec", "gguf", "hf"};  // CheckpointFormat's order
  return kNames[static_cast<int>(f)];
}

namespace {

void in_range(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) fail("model file: config ", field, " = ", v, " is outside ", lo, "..", hi);
}

}  // namespace

void check_token_id(const char* what, int64_t id, int vocab_size) {
  if (id < 0 || id >= vocab_size) {
    fail("model file: ", what, " ", id, " is outside the vocabulary of ", vocab_size,
         " tokens (the embedding's rows)");
  }
}

void check_checkpoint_config(const FamilyConfig& f) {
  in_range("vocab_size", f.vocab_size, 1, kMaxFamilyVocab);
  in_range("n_layer", f.n_layer, 1, kMaxFamilyLayers);
  in_range("n_embd", f.n_embd, 1, kMaxFamilyEmbd);
  in_range("n_head", f.n_head, 1, kMaxFamilyEmbd);
  in_range("n_kv_head", f.n_kv_head, 1, f.n_head);
  in_range("head_dim", f.head_dim, 1, kMaxFamilyEmbd);
  in_range("n_head * head_dim", int64_t{f.n_head} * f.head_dim, 1, kMaxFamilyEmbd);
  in_range("n_ff", f.n_ff, 1, 4 * kMaxFamilyEmbd);
  in_range("max_positions", f.max_positions, 1, 1 << 30);
  if (!(std::isfinite(f.norm_eps) && f.norm_eps > 0.0f && f.norm_eps < 1.0f)) {
    fail("model file: config norm_eps = ", f.norm_eps, " must be finite and in (0, 1)");
  }
  if (f.n_head % f.n_kv_head != 0) {
    fail("model file: config n_kv_head = ", f.n_kv_head, " does not divide n_head = ", f.n_head);
  }
  if (f.family == Family::kGPT2) {
    if (f.n_head * f.head_dim != f.n_embd || f.n_kv_head != f.n_head) {
      fail("model file: a gpt2 config needs n_head * head_dim = n_embd and n_kv_head = n_head (",
           f.n_head, " x ", f.head_dim, " vs ", f.n_embd, ", ", f.n_kv_head, ")");
    }
  } else {
    if (f.head_dim % 2 != 0) fail("model file: config head_dim = ", f.head_dim, " is odd (rotary)");
    if (!(f.rope_theta >= 1e-3 && f.rope_theta <= 1e12))
      fail("model file: config rope_theta = ", f.rope_theta, " is outside 0.001..1e+12");
  }
  if (f.tokenizer_tokens > f.vocab_size) {
    fail("model file: the tokenizer has ", f.tokenizer_tokens, " tokens, more than the ",
         f.vocab_size, " rows of the embedding");
  }
  if (f.bos_token_id != -1) check_token_id("bos_token_id", f.bos_token_id, f.vocab_size);
  for (int id : f.eos_token_ids) check_token_id("eos_token_id", id, f.vocab_size);
}

bool is_gpt2_block_linear(const std::string& name) {
  if (name.rfind("transformer.h.", 0) != 0) return false;
  for (const std::string s :
       {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"}) {
    if (name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      return true;
    }
  }
  return false;
}

const char* tensor_type_name(TensorType t) {
  static const char* const kNames[] = {"F32", "F16", "BF16", "Q8_0", "Q4_0"};  // TensorType's order
  return kNames[static_cast<int>(t)];
}

const uint8_t* tensor_bytes(const CheckpointTensor& t, Buffer<uint8_t>& scratch) {
  if (t.data || !t.fetch) return t.data;
  resize_scratch(scratch, t.bytes);
  t.fetch(scratch.data());
  return scratch.data();
}

CheckpointTensor stored_tensor(TensorType type, std::vector<uint64_t> shape, size_t bytes,
                               const uint8_t* data, const ByteReader& read, uint64_t offset) {
  CheckpointTensor t{type, std::move(shape), data, bytes, {}, {}};
  if (!data && read) {
    t.fetch = [read, offset, bytes](uint8_t* into) { read(offset, bytes, into); };
    t.fetch_range = [read, offset](uint64_t at, size_t n, uint8_t* into) {
      read(offset + at, n, into);
    };
  }
  return t;
}

void rewrite_tensor(CheckpointTensor& t, Checkpoint& ck,
                    std::function<void(const uint8_t* stored, uint8_t* out)> rewrite) {
  t.fetch_range = nullptr;
  if (t.data) {
    ck.owned.emplace_back(t.bytes);
    rewrite(t.data, ck.owned.back().data());
    t.data = ck.owned.back().data();
    return;
  }
  t.fetch = [stored = std::move(t.fetch), rewrite = std::move(rewrite),
             n = t.bytes](uint8_t* into) {
    Buffer<uint8_t> in(n);  // written whole by the fetch
    stored(in.data());
    rewrite(in.data(), into);
  };
}

ByteReader file_reader(const std::string& path, uint64_t* size) {
  auto in = std::make_shared<std::ifstream>(path, std::ios::binary | std::ios::ate);
  if (!*in) fail("model file '", path, "': cannot open");
  const std::streamoff end = in->tellg();
  if (end < 0) fail("model file '", path, "': cannot read its size");
  *size = static_cast<uint64_t>(end);
  return [in, path](uint64_t offset, size_t bytes, uint8_t* into) {
    in->clear();
    in->seekg(static_cast<std::streamoff>(offset));
    if (!in->read(reinterpret_cast<char*>(into), static_cast<std::streamsize>(bytes))) {
      fail("model file '", path, "': cannot read ", bytes, " bytes at offset ", offset);
    }
  };
}

const CheckpointTensor* Checkpoint::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

}  // namespace specdec
