// The GGUF frontend (model/gguf.h): the container's metadata round trips, the checkpoint of each
// family (names, shapes, config, tensors left in the caller's buffer), llama's Q/K rows
// un-permuted back to Hugging Face's order, the block types arriving byte for byte, and hostile
// files, each refused with its message.
//
// The files are made here by a small GGUF writer (GgufWriter) that writes each field as it is
// told, so that a test can write a wrong one. Models are written as llama.cpp's converter writes
// them: HF tensors renamed, llama's q_proj / k_proj permuted with the converter's
// reshape-swapaxes-reshape (written below as a generic axis swap, independently of the loader's
// row formula), types encoded as ggml's reference quantizers do.
//
// SPECDEC_GGUF_CORPUS=DIR ./gguf_test --gtest_filter=Gguf.WritesFuzzCorpus writes the seed corpus
// of tests/fuzz/fuzz_gguf.cc into DIR.
#include "model/gguf.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.h"
#include "kernels/half.h"
#include "model/gpt_model.h"
#include "model/heads.h"
#include "model/hf_folder.h"
#include "model/kv_cache.h"
#include "model/safetensors.h"

namespace specdec {
namespace {

// ------------------------------------------------------------------ the writer

void put(std::vector<uint8_t>& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_str(std::vector<uint8_t>& b, const std::string& s) {
  put(b, s.size(), 8);
  b.insert(b.end(), s.begin(), s.end());
}
template <typename T>
void put_raw(std::vector<uint8_t>& b, T v) {
  uint8_t tmp[sizeof(T)];
  std::memcpy(tmp, &v, sizeof(T));
  b.insert(b.end(), tmp, tmp + sizeof(T));
}

enum Ggml : uint32_t { kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kBF16 = 30 };

struct WTensor {
  std::string name;
  std::vector<uint64_t> ne;  // ne[0] fastest
  uint32_t type = kF32;
  std::vector<uint8_t> data;
  std::optional<uint64_t> offset;  // else the next aligned place
};

// Writes a GGUF file field by field; every field can be set to something wrong.
struct GgufWriter {
  uint32_t magic = kGgufMagic, version = 3;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> kvs;  // key, type + value bytes
  std::vector<WTensor> tensors;
  uint64_t alignment = 32;
  std::optional<uint64_t> tensor_count, kv_count;

  void kv(const std::string& key, GgufType type, const std::vector<uint8_t>& value) {
    std::vector<uint8_t> b;
    put(b, static_cast<uint32_t>(type), 4);
    b.insert(b.end(), value.begin(), value.end());
    for (auto& e : kvs) {
      if (e.first == key) {
        e.second = b;
        return;
      }
    }
    kvs.emplace_back(key, b);
  }
  void u32(const std::string& key, uint32_t v) {
    std::vector<uint8_t> b;
    put(b, v, 4);
    kv(key, GgufType::kU32, b);
  }
  void f32(const std::string& key, float v) {
    std::vector<uint8_t> b;
    put_raw(b, v);
    kv(key, GgufType::kF32, b);
  }
  void str(const std::string& key, const std::string& v) {
    std::vector<uint8_t> b;
    put_str(b, v);
    kv(key, GgufType::kString, b);
  }
  void strings(const std::string& key, const std::vector<std::string>& v) {
    std::vector<uint8_t> b;
    put(b, static_cast<uint32_t>(GgufType::kString), 4);
    put(b, v.size(), 8);
    for (const std::string& s : v) put_str(b, s);
    kv(key, GgufType::kArray, b);
  }
  void erase(const std::string& key) {
    for (size_t i = 0; i < kvs.size(); ++i) {
      if (kvs[i].first == key) kvs.erase(kvs.begin() + i);
    }
  }
  WTensor* find(const std::string& name) {
    for (WTensor& t : tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }

  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> b;
    put(b, magic, 4);
    put(b, version, 4);
    put(b, tensor_count.value_or(tensors.size()), 8);
    put(b, kv_count.value_or(kvs.size()), 8);
    for (const auto& [key, value] : kvs) {
      put_str(b, key);
      b.insert(b.end(), value.begin(), value.end());
    }
    auto pad = [&](uint64_t n) { return (alignment - n % alignment) % alignment; };
    uint64_t next = 0;
    std::vector<uint64_t> offsets;
    for (const WTensor& t : tensors) {
      put_str(b, t.name);
      put(b, t.ne.size(), 4);
      for (uint64_t n : t.ne) put(b, n, 8);
      put(b, t.type, 4);
      offsets.push_back(t.offset.value_or(next));
      put(b, offsets.back(), 8);
      next = offsets.back() + t.data.size() + pad(t.data.size());
    }
    b.resize(b.size() + pad(b.size()));
    const size_t data_start = b.size();
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (offsets[i] > (1u << 24)) continue;  // a hostile offset: nothing written there
      const size_t end = data_start + offsets[i] + tensors[i].data.size();
      if (b.size() < end) b.resize(end);
      std::memcpy(b.data() + data_start + offsets[i], tensors[i].data.data(),
                  tensors[i].data.size());
    }
    return b;
  }
};

// ------------------------------------------------------------------ encoders (ggml's reference)

std::vector<uint8_t> encode_f32(const std::vector<float>& x) {
  std::vector<uint8_t> b;
  for (float v : x) put_raw(b, v);
  return b;
}
std::vector<uint8_t> encode_f16(const std::vector<float>& x) {
  std::vector<uint8_t> b;
  for (float v : x) put(b, kernels::f32_to_f16(v), 2);
  return b;
}
std::vector<uint8_t> encode_bf16(const std::vector<float>& x) {  // round to nearest even
  std::vector<uint8_t> b;
  for (float v : x) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    put(b, (u + 0x7fff + ((u >> 16) & 1)) >> 16, 2);
  }
  return b;
}
// quantize_row_q8_0_ref: d = amax / 127 stored as F16, q = roundf(x / d) with 1/d unrounded.
std::vector<uint8_t> encode_q8_0(const std::vector<float>& x) {
  std::vector<uint8_t> b;
  for (size_t k = 0; k < x.size(); k += 32) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[k + j]));
    const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
    put(b, kernels::f32_to_f16(d), 2);
    for (int j = 0; j < 32; ++j) b.push_back(static_cast<uint8_t>(std::roundf(x[k + j] * id)));
  }
  return b;
}
// quantize_row_q4_0_ref: d = (value of largest magnitude) / -8, nibble = min(15, x/d + 8.5),
// byte j holds element j (low nibble) and element j + 16 (high nibble).
std::vector<uint8_t> encode_q4_0(const std::vector<float>& x) {
  std::vector<uint8_t> b;
  for (size_t k = 0; k < x.size(); k += 32) {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[k + j]) > amax) amax = std::fabs(x[k + j]), max = x[k + j];
    }
    const float d = max / -8, id = d ? 1.0f / d : 0.0f;
    put(b, kernels::f32_to_f16(d), 2);
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(15, static_cast<int>(x[k + j] * id + 8.5f));
      const int hi = std::min(15, static_cast<int>(x[k + j + 16] * id + 8.5f));
      b.push_back(static_cast<uint8_t>(lo | (hi << 4)));
    }
  }
  return b;
}
std::vector<uint8_t> encode(const std::vector<float>& x, uint32_t type) {
  switch (type) {
    case kF16:
      return encode_f16(x);
    case kBF16:
      return encode_bf16(x);
    case kQ8_0:
      return encode_q8_0(x);
    case kQ4_0:
      return encode_q4_0(x);
    default:
      return encode_f32(x);
  }
}

// ------------------------------------------------------------------ tiny models in HF layout

struct HfTensor {
  std::vector<uint64_t> shape;  // PyTorch order
  std::vector<float> values;
};

struct Dims {
  int n_layer = 2, n_embd = 64, n_head = 4, n_kv_head = 2, head_dim = 16, n_ff = 96, vocab = 48,
      ctx = 32;
  bool tied = false;
};

float next_value(uint64_t& state) {  // an LCG: deterministic values in [-1, 1)
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return static_cast<float>((state >> 40) & 0xffffff) / (1 << 23) - 1.0f;
}

// A random model in HF names and layout (Linear (out, in)); `family` as checkpoint.h names it.
std::map<std::string, HfTensor> hf_model(Family family, const Dims& d) {
  std::map<std::string, HfTensor> m;
  uint64_t state = 42 + static_cast<uint64_t>(family);
  auto add = [&](const std::string& name, std::vector<uint64_t> shape) {
    uint64_t n = 1;
    for (uint64_t s : shape) n *= s;
    HfTensor t{shape, std::vector<float>(n)};
    for (float& v : t.values) v = next_value(state);
    m[name] = t;
  };
  const uint64_t C = d.n_embd, F = d.n_ff, V = d.vocab, Q = d.n_head * d.head_dim,
                 KV = d.n_kv_head * d.head_dim;
  if (family == Family::kGPT2) {
    add("transformer.wte.weight", {V, C});
    add("transformer.wpe.weight", {static_cast<uint64_t>(d.ctx), C});
    for (int i = 0; i < d.n_layer; ++i) {
      const std::string h = "transformer.h." + std::to_string(i) + ".";
      for (const char* ln : {"ln_1", "ln_2"})
        add(h + ln + ".weight", {C}), add(h + ln + ".bias", {C});
      add(h + "attn.c_attn.weight", {3 * C, C}), add(h + "attn.c_attn.bias", {3 * C});
      add(h + "attn.c_proj.weight", {C, C}), add(h + "attn.c_proj.bias", {C});
      add(h + "mlp.c_fc.weight", {F, C}), add(h + "mlp.c_fc.bias", {F});
      add(h + "mlp.c_proj.weight", {C, F}), add(h + "mlp.c_proj.bias", {C});
    }
    add("transformer.ln_f.weight", {C}), add("transformer.ln_f.bias", {C});
  } else {
    add("model.embed_tokens.weight", {V, C});
    for (int i = 0; i < d.n_layer; ++i) {
      const std::string h = "model.layers." + std::to_string(i) + ".";
      add(h + "input_layernorm.weight", {C});
      add(h + "self_attn.q_proj.weight", {Q, C});
      add(h + "self_attn.k_proj.weight", {KV, C});
      add(h + "self_attn.v_proj.weight", {KV, C});
      if (family == Family::kQwen2) {
        add(h + "self_attn.q_proj.bias", {Q});
        add(h + "self_attn.k_proj.bias", {KV});
        add(h + "self_attn.v_proj.bias", {KV});
      }
      add(h + "self_attn.o_proj.weight", {C, Q});
      add(h + "post_attention_layernorm.weight", {C});
      add(h + "mlp.gate_proj.weight", {F, C});
      add(h + "mlp.up_proj.weight", {F, C});
      add(h + "mlp.down_proj.weight", {C, F});
    }
    add("model.norm.weight", {C});
  }
  if (!d.tied) add("lm_head.weight", {V, C});
  return m;
}

// The converter's permute(w, n_head): w.reshape(n_head, 2, rows / n_head / 2, *rest)
// .swapaxes(1, 2).reshape(w.shape), with the axis swap done by strides.
std::vector<float> llama_cpp_permute(const HfTensor& t, int n_head) {
  const uint64_t rows = t.shape[0], rest = t.values.size() / rows;
  const uint64_t dims[4] = {static_cast<uint64_t>(n_head), 2, rows / n_head / 2, rest};
  const uint64_t in_stride[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  // Output axes (0, 2, 1, 3) of the input.
  std::vector<float> out;
  for (uint64_t a = 0; a < dims[0]; ++a)
    for (uint64_t c = 0; c < dims[2]; ++c)
      for (uint64_t b = 0; b < dims[1]; ++b)
        for (uint64_t e = 0; e < dims[3]; ++e)
          out.push_back(t.values[a * in_stride[0] + b * in_stride[1] + c * in_stride[2] + e]);
  return out;
}

// HF name -> GGUF name, as llama.cpp's tensor map spells them.
std::string gguf_name(const std::string& hf) {
  static const std::pair<const char*, const char*> kWhole[] = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
      {"transformer.wte.weight", "token_embd.weight"},
      {"transformer.wpe.weight", "position_embd.weight"},
      {"transformer.ln_f.weight", "output_norm.weight"},
      {"transformer.ln_f.bias", "output_norm.bias"}};
  for (const auto& [h, g] : kWhole) {
    if (hf == h) return g;
  }
  static const std::pair<const char*, const char*> kParts[] = {
      {"input_layernorm", "attn_norm"},
      {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"},
      {"post_attention_layernorm", "ffn_norm"},
      {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},
      {"ln_1", "attn_norm"},
      {"attn.c_attn", "attn_qkv"},
      {"attn.c_proj", "attn_output"},
      {"ln_2", "ffn_norm"},
      {"mlp.c_fc", "ffn_up"},
      {"mlp.c_proj", "ffn_down"}};
  const size_t layer_at = hf.find_first_of("0123456789");
  const size_t dot = hf.find('.', layer_at);
  const std::string rest = hf.substr(dot + 1);
  const std::string suffix = rest.substr(rest.rfind('.'));
  const std::string part = rest.substr(0, rest.rfind('.'));
  for (const auto& [h, g] : kParts) {
    if (part == h) return "blk." + hf.substr(layer_at, dot - layer_at) + "." + g + suffix;
  }
  ADD_FAILURE() << "no GGUF name for " << hf;
  return hf;
}

// Matrices in `matrix_type`, vectors F32 (as llama.cpp's converter writes them).
GgufWriter gguf_model(Family family, const Dims& d, uint32_t matrix_type,
                      const std::map<std::string, HfTensor>& hf) {
  GgufWriter w;
  const std::string arch = family_name(family);
  w.str("general.architecture", arch);
  w.u32("general.alignment", 32);
  w.u32(arch + ".context_length", d.ctx);
  w.u32(arch + ".embedding_length", d.n_embd);
  w.u32(arch + ".block_count", d.n_layer);
  w.u32(arch + ".feed_forward_length", d.n_ff);
  w.u32(arch + ".attention.head_count", d.n_head);
  if (family == Family::kGPT2) {
    w.f32(arch + ".attention.layer_norm_epsilon", 1e-5f);
  } else {
    w.u32(arch + ".attention.head_count_kv", d.n_kv_head);
    w.f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
    w.f32(arch + ".rope.freq_base", 500000.0f);
    w.u32(arch + ".rope.dimension_count", d.head_dim);
    if (d.head_dim * d.n_head != d.n_embd) w.u32(arch + ".attention.key_length", d.head_dim);
  }
  std::vector<std::string> tokens;
  for (int i = 0; i < d.vocab - 2; ++i) tokens.push_back("t" + std::to_string(i));
  w.str("tokenizer.ggml.model", "gpt2");
  w.strings("tokenizer.ggml.tokens", tokens);
  w.u32("tokenizer.ggml.bos_token_id", 1);
  w.u32("tokenizer.ggml.eos_token_id", 2);
  for (const auto& [name, t] : hf) {
    std::vector<float> values = t.values;
    if (family == Family::kLlama && name.find("q_proj") != std::string::npos) {
      values = llama_cpp_permute(t, d.n_head);
    } else if (family == Family::kLlama && name.find("k_proj") != std::string::npos) {
      values = llama_cpp_permute(t, d.n_kv_head);
    }
    const uint32_t type = t.shape.size() == 1 ? kF32 : matrix_type;
    w.tensors.push_back(
        {gguf_name(name), {t.shape.rbegin(), t.shape.rend()}, type, encode(values, type), {}});
  }
  return w;
}

// ------------------------------------------------------------------ metadata round trips

struct MetaCase {
  const char* name;
  GgufType type;
  std::vector<uint8_t> value;  // as stored after the type
  std::function<void(const GgufFile&, const std::string&)> check;
};

std::vector<uint8_t> le(uint64_t v, int n) {
  std::vector<uint8_t> b;
  put(b, v, n);
  return b;
}
template <typename T>
std::vector<uint8_t> raw(T v) {
  std::vector<uint8_t> b;
  put_raw(b, v);
  return b;
}
std::vector<uint8_t> array(GgufType elem, uint64_t n, std::vector<uint8_t> elems) {
  std::vector<uint8_t> b = le(static_cast<uint32_t>(elem), 4);
  put(b, n, 8);
  b.insert(b.end(), elems.begin(), elems.end());
  return b;
}
std::vector<uint8_t> cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> b;
  for (const auto& p : parts) b.insert(b.end(), p.begin(), p.end());
  return b;
}
std::vector<uint8_t> sv(const std::string& s) {
  std::vector<uint8_t> b;
  put_str(b, s);
  return b;
}

TEST(Gguf, MetadataRoundTripsEveryType) {
  using F = GgufFile;
  const auto negative = [](const F& f, const std::string& k) {
    EXPECT_THROW(f.get_u64(k), Error);  // "must not be negative"
  };
  const std::vector<MetaCase> cases = {
      {"u8", GgufType::kU8, le(200, 1), [](const F& f, auto k) { EXPECT_EQ(f.get_u64(k), 200u); }},
      {"i8", GgufType::kI8, le(0x80, 1), negative},
      {"u16", GgufType::kU16, le(65535, 2),
       [](const F& f, auto k) { EXPECT_EQ(f.get_u64(k), 65535u); }},
      {"i16", GgufType::kI16, le(0x7ffe, 2),
       [](const F& f, auto k) { EXPECT_EQ(f.get_u64(k), 32766u); }},
      {"u32", GgufType::kU32, le(4000000000u, 4),
       [](const F& f, auto k) { EXPECT_EQ(f.get_u64(k), 4000000000u); }},
      {"i32", GgufType::kI32, le(0xffffffffu, 4), negative},
      {"u64", GgufType::kU64, le(1ULL << 40, 8),
       [](const F& f, auto k) { EXPECT_EQ(f.get_u64(k), 1ULL << 40); }},
      {"i64", GgufType::kI64, raw<int64_t>(5000000000LL),
       [](const F& f, auto k) { EXPECT_EQ(f.get_u64(k), 5000000000u); }},
      {"i64 negative", GgufType::kI64, raw<int64_t>(-5000000000LL), negative},
      {"f32", GgufType::kF32, raw(1.5e-5f),
       [](const F& f, auto k) { EXPECT_EQ(f.get_f64(k), double{1.5e-5f}); }},
      {"f64", GgufType::kF64, raw(1e300),
       [](const F& f, auto k) { EXPECT_EQ(f.get_f64(k), 1e300); }},
      {"bool", GgufType::kBool, le(1, 1),
       [](const F& f, auto k) { EXPECT_EQ(*f.find(k)->data, 1); }},
      {"string", GgufType::kString, sv("héllo"),
       [](const F& f, auto k) { EXPECT_EQ(f.get_string(k), "héllo"); }},
      {"empty string", GgufType::kString, sv(""),
       [](const F& f, auto k) { EXPECT_EQ(f.get_string(k), ""); }},
      {"i32 array", GgufType::kArray,
       array(GgufType::kI32, 3, cat({le(1, 4), le(0xffffffffu, 4), le(7, 4)})),
       [](const F& f, auto k) {
         EXPECT_EQ(f.array_size(k), 3u);
         EXPECT_EQ(f.find(k)->bytes, 12u);
       }},
      {"string array", GgufType::kArray,
       array(GgufType::kString, 3, cat({sv("a"), sv(""), sv("Ġthe")})),
       [](const F& f, auto k) {
         EXPECT_EQ(f.array_size(k), 3u);
         EXPECT_EQ(f.find(k)->bytes, 3 * 8 + 1 + 0 + 5u);  // lengths and UTF-8 bytes
       }},
      {"empty array", GgufType::kArray, array(GgufType::kF64, 0, {}),
       [](const F& f, auto k) { EXPECT_EQ(f.array_size(k), 0u); }},
  };
  GgufWriter w;
  for (const MetaCase& c : cases) w.kv(c.name, c.type, c.value);
  const std::vector<uint8_t> b = w.bytes();
  const GgufFile f = parse_gguf(b.data(), b.size());
  EXPECT_EQ(f.metadata.size(), cases.size());
  for (const MetaCase& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_NE(f.find(c.name), nullptr);
    EXPECT_EQ(f.find(c.name)->type, c.type);
    c.check(f, c.name);
  }
  // Wrong types, negative integers and missing keys are named.
  const auto message = [&](const std::function<void()>& read) -> std::string {
    try {
      read();
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_EQ(message([&] { f.get_string("u32"); }), "model file: key 'u32' must be string, got u32");
  EXPECT_EQ(message([&] { f.get_u64("i8"); }),
            "model file: key 'i8' must not be negative, got -128");
  EXPECT_THROW(f.get_u64("nope"), Error);
  EXPECT_THROW(f.get_string("i32 array"), Error);
  EXPECT_THROW(f.get_f64("u32"), Error);
}

TEST(Gguf, ALargeStringArrayStaysCheap) {
  // A 150k-token vocabulary: parsed once, read as views into the buffer.
  std::vector<std::string> tokens(150000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = "tok" + std::to_string(i);
  GgufWriter w;
  w.strings("tokenizer.ggml.tokens", tokens);
  const std::vector<uint8_t> b = w.bytes();
  const GgufFile f = parse_gguf(b.data(), b.size());
  EXPECT_EQ(f.array_size("tokenizer.ggml.tokens"), tokens.size());
  const GgufValue& v = *f.find("tokenizer.ggml.tokens");  // a view into the buffer
  EXPECT_GE(v.data, b.data());
  EXPECT_LE(v.data + v.bytes, b.data() + b.size());
  const std::string last(reinterpret_cast<const char*>(v.data + v.bytes - 9), 9);
  EXPECT_EQ(last, "tok149999");
}

// ------------------------------------------------------------------ checkpoints of each family

bool inside(const uint8_t* p, const std::vector<uint8_t>& b) {
  return p >= b.data() && p < b.data() + b.size();
}

struct FamilyCase {
  const char* name;
  Family family;
  uint32_t matrix_type;
  Dims dims;
};

Dims tied(Dims d) {
  d.tied = true;
  return d;
}
Dims narrow_heads(Dims d) {  // head_dim * n_head != n_embd: key_length in the file
  d.n_head = 2, d.n_kv_head = 1;
  return d;
}

TEST(Gguf, CheckpointOfEachFamilyHasHfNamesShapesAndRows) {
  const std::vector<FamilyCase> cases = {
      {"llama F32", Family::kLlama, kF32, Dims{}},
      {"llama Q8_0 tied", Family::kLlama, kQ8_0, tied(Dims{})},
      {"llama F16 key_length", Family::kLlama, kF16, narrow_heads(Dims{})},
      {"llama BF16", Family::kLlama, kBF16, Dims{}},
      {"llama Q4_0", Family::kLlama, kQ4_0, Dims{}},
      {"qwen2 F32 tied", Family::kQwen2, kF32, tied(Dims{})},
      {"qwen2 Q8_0", Family::kQwen2, kQ8_0, Dims{}},
      {"gpt2 F32 tied", Family::kGPT2, kF32, tied(Dims{})},
      {"gpt2 F16", Family::kGPT2, kF16, Dims{}},
      {"gpt2 Q8_0", Family::kGPT2, kQ8_0, tied(Dims{})},
  };
  for (const FamilyCase& c : cases) {
    SCOPED_TRACE(c.name);
    Dims d = c.dims;
    if (c.family == Family::kGPT2) d.n_kv_head = d.n_head, d.head_dim = d.n_embd / d.n_head;
    const auto hf = hf_model(c.family, d);
    const std::vector<uint8_t> b = gguf_model(c.family, d, c.matrix_type, hf).bytes();
    const Checkpoint ck = checkpoint_from_gguf(b.data(), b.size());

    const FamilyConfig& k = ck.config;
    EXPECT_EQ(k.family, c.family);
    EXPECT_EQ(k.vocab_size, d.vocab);
    EXPECT_EQ(k.n_layer, d.n_layer);
    EXPECT_EQ(k.n_head, d.n_head);
    EXPECT_EQ(k.n_kv_head, d.n_kv_head);
    EXPECT_EQ(k.n_embd, d.n_embd);
    EXPECT_EQ(k.head_dim, d.head_dim);
    EXPECT_EQ(k.n_ff, d.n_ff);
    EXPECT_EQ(k.max_positions, d.ctx);
    EXPECT_EQ(k.norm_eps, c.family == Family::kGPT2 ? 1e-5f : 1e-6f);
    if (c.family != Family::kGPT2) {
      EXPECT_EQ(k.rope_theta, 500000.0);
    }
    EXPECT_EQ(k.tied_head, d.tied);
    EXPECT_EQ(k.bos_token_id, 1);
    EXPECT_EQ(k.eos_token_ids, std::vector<int>{2});

    ASSERT_EQ(ck.tensors.size(), hf.size());
    for (const auto& [name, t] : hf) {
      SCOPED_TRACE(name);
      const CheckpointTensor* ct = ck.find(name);
      ASSERT_NE(ct, nullptr);
      EXPECT_EQ(ct->shape, t.shape);
      const uint32_t type = t.shape.size() == 1 ? kF32 : c.matrix_type;
      EXPECT_STREQ(tensor_type_name(ct->type), ggml_type_name(type).c_str());
      // The HF rows, encoded as the file encodes them: llama's Q and K un-permuted, block types
      // byte for byte.
      const std::vector<uint8_t> want = encode(t.values, type);
      ASSERT_EQ(ct->bytes, want.size());
      EXPECT_EQ(std::memcmp(ct->data, want.data(), want.size()), 0);
      const bool permuted =
          c.family == Family::kLlama &&
          (name.find("q_proj") != std::string::npos || name.find("k_proj") != std::string::npos);
      EXPECT_EQ(inside(ct->data, b), !permuted) << "only rewritten tensors are copied";
    }
    EXPECT_EQ(ck.owned.size(), c.family == Family::kLlama ? 2u * d.n_layer : 0u);
  }
}

TEST(Gguf, LlamaQKInTheFileAreNotInHfOrder) {
  // The test above would pass vacuously if the writer did not permute: check that it does.
  const Dims d;
  const auto hf = hf_model(Family::kLlama, d);
  const GgufWriter w = gguf_model(Family::kLlama, d, kF32, hf);
  const std::vector<uint8_t> b = w.bytes();
  const GgufFile f = parse_gguf(b.data(), b.size());
  const GgufTensor* q = f.find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  const std::vector<uint8_t> hf_bytes =
      encode_f32(hf.at("model.layers.0.self_attn.q_proj.weight").values);
  EXPECT_NE(std::memcmp(q->data, hf_bytes.data(), hf_bytes.size()), 0);
  // Row 1 of head 0 in the file is HF row d/2 (the second rotary half's first row).
  const size_t row = 4 * d.n_embd;
  EXPECT_EQ(std::memcmp(q->data + row, hf_bytes.data() + (d.head_dim / 2) * row, row), 0);
}

TEST(Gguf, RopeFreqsOfOnesAreAccepted) {
  const Dims d;
  GgufWriter w = gguf_model(Family::kLlama, d, kF32, hf_model(Family::kLlama, d));
  w.tensors.push_back(
      {"rope_freqs.weight", {8}, kF32, encode_f32(std::vector<float>(8, 1.0f)), {}});
  const std::vector<uint8_t> b = w.bytes();
  const Checkpoint ck = checkpoint_from_gguf(b.data(), b.size());
  EXPECT_EQ(ck.find("rope_freqs.weight"), nullptr);
}

// ------------------------------------------------------------------ hostile files

struct HostileCase {
  const char* name;
  std::function<void(GgufWriter&)> mutate;
  const char* message;  // a part of the expected message
};

std::string error_of(const std::vector<uint8_t>& b) {
  // A copy of exactly the file's size, so that ASan sees any read past its end.
  const std::vector<uint8_t> exact(b.begin(), b.end());
  try {
    check_checkpoint(checkpoint_from_gguf(exact.data(), exact.size()));  // what loading checks
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

void set_ne(GgufWriter& w, const char* name, std::vector<uint64_t> ne) { w.find(name)->ne = ne; }

TEST(Gguf, HostileFilesAreRefusedWithTheirMessage) {
  using W = GgufWriter;
  const std::vector<HostileCase> cases = {
      {"magic", [](W& w) { w.magic = 0x46554746; },
       "model file: not a GGUF file (magic 0x46554746)"},
      {"big-endian", [](W& w) { w.version = 0x03000000; },
       "big-endian GGUF (version field 0x3000000)"},
      {"version 1", [](W& w) { w.version = 1; }, "GGUF version 1 is not supported"},
      {"huge tensor count", [](W& w) { w.tensor_count = 1ULL << 40; },
       "tensor_count 1099511627776 exceeds"},
      {"huge kv count", [](W& w) { w.kv_count = 1ULL << 60; },
       "metadata_kv_count 1152921504606846976 cannot fit"},
      {"alignment 48", [](W& w) { w.u32("general.alignment", 48); },
       "general.alignment 48 is not a power of two"},
      {"alignment 0", [](W& w) { w.u32("general.alignment", 0); },
       "general.alignment 0 is not a power of two"},
      {"alignment type", [](W& w) { w.kv("general.alignment", GgufType::kU64, le(32, 8)); },
       "general.alignment must be u32, got u64"},
      {"offset unaligned", [](W& w) { w.tensors[1].offset = 4; },
       "offset 4 is not a multiple of the alignment 32"},
      {"offset out of file", [](W& w) { w.tensors[1].offset = 1ULL << 40; },
       "are outside the data section"},
      {"offset overflow", [](W& w) { w.tensors[1].offset = UINT64_MAX - 31; },
       "are outside the data section"},
      {"overlap", [](W& w) { w.tensors[2].offset = 0; }, "overlap"},
      {"duplicate tensor", [](W& w) { w.tensors[2].name = w.tensors[1].name; },
       "duplicate tensor '"},
      {"duplicate key", [](W& w) { w.kvs.push_back(w.kvs[0]); },
       "duplicate key 'general.architecture'"},
      {"n_dims 5",
       [](W& w) {
         w.tensors[0].ne = {1, 1, 1, 1, 1};
       },
       "n_dims 5 (must be 1..4)"},
      {"n_dims 0", [](W& w) { w.tensors[0].ne = {}; }, "n_dims 0 (must be 1..4)"},
      {"zero dimension",
       [](W& w) {
         w.tensors[0].ne = {64, 0};
       },
       "dimensions [64, 0] are empty or too large"},
      {"dimension overflow",
       [](W& w) {
         w.tensors[0].ne = {1ULL << 32, 1ULL << 32};
       },
       "are empty or too large"},
      {"Q4_K", [](W& w) { w.tensors[0].type = kQ4_K; },
       "has type Q4_K (supported: F32, F16, BF16, Q8_0, Q4_0)"},
      {"unknown type", [](W& w) { w.tensors[0].type = 99; }, "has type type 99"},
      {"Q8_0 row of 48",
       [](W& w) {
         w.tensors[0].type = kQ8_0, w.tensors[0].ne = {48, 2};
       },
       "ne[0] = 48 is not a multiple of 32"},
      {"long name", [](W& w) { w.tensors[0].name = std::string(64, 'x'); },
       "name length 64 exceeds the limit of 63"},
      {"value type 13", [](W& w) { w.kv("x", static_cast<GgufType>(13), {}); },
       "key 'x' has unknown value type 13"},
      {"nested array", [](W& w) { w.kv("x", GgufType::kArray, array(GgufType::kArray, 0, {})); },
       "nested arrays are not supported"},
      {"huge string array",
       [](W& w) { w.kv("x", GgufType::kArray, array(GgufType::kString, 1ULL << 50, {})); },
       "strings cannot fit"},
      {"huge u32 array",
       [](W& w) { w.kv("x", GgufType::kArray, array(GgufType::kU32, 1ULL << 62, {})); },
       "elements of u32 cannot fit"},
      {"huge string", [](W& w) { w.kv("x", GgufType::kString, le(1ULL << 62, 8)); },
       "key 'x' needs 4611686018427387904 bytes"},
      {"bool 2", [](W& w) { w.kv("x", GgufType::kBool, {2}); },
       "key 'x': bool must be 0 or 1, got 2"},
      {"architecture", [](W& w) { w.str("general.architecture", "phi3"); },
       "general.architecture 'phi3' is not supported (llama, qwen2, gpt2)"},
      {"no architecture", [](W& w) { w.erase("general.architecture"); },
       "key 'general.architecture' is missing"},
      {"rope scaling", [](W& w) { w.str("llama.rope.scaling.type", "linear"); },
       "llama.rope.scaling.type 'linear' is not supported"},
      {"rope factor", [](W& w) { w.f32("llama.rope.scaling.factor", 4.0f); },
       "llama.rope.scaling.factor 4 (rope scaling)"},
      {"rope_freqs",
       [](W& w) {
         w.tensors.push_back(
             {"rope_freqs.weight", {8}, kF32, encode_f32(std::vector<float>(8, 8.0f)), {}});
       },
       "holds Llama 3 rope scaling (factor 8 at 0)"},
      {"partial rotary", [](W& w) { w.u32("llama.rope.dimension_count", 8); },
       "partial rotary is not supported"},
      {"sliding window", [](W& w) { w.u32("llama.attention.sliding_window", 16); },
       "sliding-window attention is not supported"},
      {"missing tensor", [](W& w) { w.tensors.erase(w.tensors.begin() + 3); }, "missing tensor '"},
      {"extra tensor",
       [](W& w) {
         w.tensors.push_back(
             {"blk.9.attn_q.weight", {32}, kF32, encode_f32(std::vector<float>(32)), {}});
       },
       "tensor 'blk.9.attn_q.weight' is not part of a llama model"},
      {"wrong shape",
       [](W& w) {
         set_ne(w, "blk.0.attn_q.weight", {32, 128});
       },
       "'model.layers.0.self_attn.q_proj.weight' has shape [128, 32], expected [64, 64]"},
      {"quantized vector", [](W& w) { w.find("blk.0.attn_norm.weight")->type = kQ8_0; },
       "'model.layers.0.input_layernorm.weight' of type Q8_0 has shape [64]; block types need a "
       "matrix"},
      {"kv heads", [](W& w) { w.u32("llama.attention.head_count_kv", 3); },
       "config n_kv_head = 3 does not divide n_head = 4"},
      {"block count", [](W& w) { w.u32("llama.block_count", 1u << 30); },
       "config n_layer = 1073741824 is outside 1..128"},
      {"eps 0", [](W& w) { w.f32("llama.attention.layer_norm_rms_epsilon", 0.0f); },
       "config norm_eps = 0 must be finite and in (0, 1)"},
      {"bos", [](W& w) { w.u32("tokenizer.ggml.bos_token_id", 48); },
       "bos_token_id 48 is outside the vocabulary of 48 tokens"},
      {"tokens",
       [](W& w) { w.strings("tokenizer.ggml.tokens", std::vector<std::string>(49, "x")); },
       "the tokenizer has 49 tokens, more than the 48 rows of the embedding"},
      {"heads as array",
       [](W& w) {
         w.kv("llama.attention.head_count", GgufType::kArray, array(GgufType::kU32, 1, le(4, 4)));
       },
       "key 'llama.attention.head_count' must be an integer, got array of u32"},
      {"embedding 0", [](W& w) { w.u32("llama.embedding_length", 0); },
       "key 'llama.embedding_length' must be 1.."},
  };
  const Dims d;
  const auto hf = hf_model(Family::kLlama, d);
  const GgufWriter good = gguf_model(Family::kLlama, d, kF32, hf);
  EXPECT_EQ(error_of(good.bytes()), "(accepted)");
  for (const HostileCase& c : cases) {
    SCOPED_TRACE(c.name);
    GgufWriter w = good;
    c.mutate(w);
    const std::string message = error_of(w.bytes());
    EXPECT_EQ(message.rfind("model file: ", 0), 0u) << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
}

TEST(Gguf, Qwen2WithoutItsBiasesIsRefused) {
  const Dims d;
  GgufWriter w = gguf_model(Family::kQwen2, d, kF32, hf_model(Family::kQwen2, d));
  for (size_t i = 0; i < w.tensors.size(); ++i) {
    if (w.tensors[i].name == "blk.1.attn_k.bias") w.tensors.erase(w.tensors.begin() + i);
  }
  EXPECT_EQ(error_of(w.bytes()),
            "model file: missing tensor 'model.layers.1.self_attn.k_proj.bias' [32]");
}

// GPT-2 files may leave feed_forward_length out; its default 4 * n_embd is checked, not
// overflowed (a fuzzer's find under UBSan).
TEST(Gguf, Gpt2DefaultMlpWidthIsChecked) {
  const Dims d;
  GgufWriter w = gguf_model(Family::kGPT2, d, kF32, hf_model(Family::kGPT2, d));
  w.erase("gpt2.feed_forward_length");
  w.u32("gpt2.embedding_length", 1u << 30);
  EXPECT_NE(error_of(w.bytes()).find("key 'gpt2.feed_forward_length' must be 1..2147483647, got "
                                     "4294967296"),
            std::string::npos)
      << error_of(w.bytes());
}

TEST(Gguf, EveryTruncationIsRefused) {
  Dims d;
  d.n_layer = 1, d.n_embd = 32, d.n_head = 2, d.n_kv_head = 1, d.n_ff = 32, d.vocab = 8, d.ctx = 8;
  const std::vector<uint8_t> b =
      gguf_model(Family::kLlama, d, kQ8_0, hf_model(Family::kLlama, d)).bytes();
  ASSERT_EQ(error_of(b), "(accepted)");
  // Every byte of the header and the tensor infos (every field), then every 37th of the data.
  const size_t data_offset = parse_gguf(b.data(), b.size()).data_offset;
  for (size_t n = 0; n < b.size(); n += n < data_offset ? 1 : 37) {
    const std::string message = error_of({b.begin(), b.begin() + n});
    ASSERT_EQ(message.rfind("model file: ", 0), 0u) << "prefix of " << n << " bytes: " << message;
  }
}

// ------------------------------------------------------------------ models/tools/export_gguf.mjs

// A Hugging Face folder (config.json + model.safetensors, F32; GPT-2's Conv1D weights stored
// (in, out) as HF stores them) of the model `hf` (checkpoint layout).
void write_hf_folder(const std::filesystem::path& dir, Family family, const Dims& d,
                     const std::map<std::string, HfTensor>& hf) {
  std::filesystem::create_directories(dir);
  std::vector<TensorData> tensors;
  for (const auto& [name, t] : hf) {
    TensorData td{name, DType::kF32, t.shape, encode_f32(t.values)};
    const bool conv1d =
        family == Family::kGPT2 && t.shape.size() == 2 && name.find(".h.") != std::string::npos;
    if (conv1d) {  // (out, in) -> (in, out)
      const uint64_t rows = t.shape[0], cols = t.shape[1];
      std::vector<float> tr(t.values.size());
      for (uint64_t i = 0; i < rows; ++i)
        for (uint64_t j = 0; j < cols; ++j) tr[j * rows + i] = t.values[i * cols + j];
      td.shape = {cols, rows};
      td.data = encode_f32(tr);
    }
    tensors.push_back(td);
  }
  const std::vector<uint8_t> st = write_safetensors({}, tensors);
  std::ofstream(dir / "model.safetensors", std::ios::binary)
      .write(reinterpret_cast<const char*>(st.data()), static_cast<std::streamsize>(st.size()));
  std::ofstream config(dir / "config.json");
  if (family == Family::kGPT2) {
    config << "{\"model_type\": \"gpt2\", \"n_embd\": " << d.n_embd << ", \"n_head\": " << d.n_head
           << ", \"n_layer\": " << d.n_layer << ", \"n_positions\": " << d.ctx
           << ", \"n_inner\": " << d.n_ff << ", \"vocab_size\": " << d.vocab
           << ", \"layer_norm_epsilon\": 1e-5, \"bos_token_id\": 1, \"eos_token_id\": 2}";
  } else {
    config << "{\"model_type\": \"" << family_name(family) << "\", \"hidden_size\": " << d.n_embd
           << ", \"num_attention_heads\": " << d.n_head
           << ", \"num_key_value_heads\": " << d.n_kv_head << ", \"head_dim\": " << d.head_dim
           << ", \"num_hidden_layers\": " << d.n_layer << ", \"max_position_embeddings\": " << d.ctx
           << ", \"intermediate_size\": " << d.n_ff << ", \"vocab_size\": " << d.vocab
           << ", \"rms_norm_eps\": 1e-6, \"rope_theta\": 500000, \"tie_word_embeddings\": "
           << (d.tied ? "true" : "false") << ", \"bos_token_id\": 1, \"eos_token_id\": [2]}";
  }
}

TEST(Gguf, ExporterTwinsOfHfFoldersLoadAsTheFolder) {
  // The JS writer permutes, transposes and quantizes on its own; the loader must give back the
  // folder's tensors (the block types as the C++ encoders above write them: both are ggml's).
  if (std::system("node --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no node";
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("gguf_test_" + std::to_string(::getpid()));
  const std::pair<Family, const char*> cases[] = {
      {Family::kLlama, "f32"},  {Family::kLlama, "q8_0"}, {Family::kLlama, "q4_0"},
      {Family::kLlama, "bf16"}, {Family::kQwen2, "f16"},  {Family::kQwen2, "q8_0"},
      {Family::kGPT2, "f32"},   {Family::kGPT2, "q8_0"},
  };
  const std::map<std::string, uint32_t> kinds = {
      {"f32", kF32}, {"f16", kF16}, {"bf16", kBF16}, {"q8_0", kQ8_0}, {"q4_0", kQ4_0}};
  for (const auto& [family, type] : cases) {
    SCOPED_TRACE(std::string(family_name(family)) + " " + type);
    Dims d;
    d.tied = family != Family::kLlama;
    if (family == Family::kGPT2) d.n_kv_head = d.n_head;
    const auto hf = hf_model(family, d);
    const std::filesystem::path dir = tmp / family_name(family), out = tmp / "out.gguf";
    write_hf_folder(dir, family, d, hf);
    const std::string cmd = "node '" + std::string(SPECDEC_SOURCE_DIR) +
                            "/models/tools/export_gguf.mjs' '" + dir.string() + "' '" +
                            out.string() + "' --type " + type + " >/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(out, std::ios::binary);
    const std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
    const Checkpoint ck = checkpoint_from_gguf(b.data(), b.size());
    EXPECT_EQ(ck.config.n_kv_head, d.n_kv_head);
    EXPECT_EQ(ck.config.tied_head, d.tied);
    EXPECT_EQ(ck.config.eos_token_ids, std::vector<int>{2});
    ASSERT_EQ(ck.tensors.size(), hf.size());
    for (const auto& [name, t] : hf) {
      SCOPED_TRACE(name);
      const CheckpointTensor* ct = ck.find(name);
      ASSERT_NE(ct, nullptr);
      EXPECT_EQ(ct->shape, t.shape);
      const std::vector<uint8_t> want =
          encode(t.values, t.shape.size() == 1 ? kF32 : kinds.at(type));
      ASSERT_EQ(ct->bytes, want.size());
      EXPECT_EQ(std::memcmp(ct->data, want.data(), want.size()), 0);
    }
  }
  std::filesystem::remove_all(tmp);
}

// One validation (check_checkpoint_config): a folder and its GGUF twin, each given the same
// flaw, are refused by the same check in the same words, before any weight is read.
TEST(Gguf, FolderAndGgufTwinAreRefusedInTheSameWords) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gguf_twin_" + std::to_string(::getpid()));
  Dims d;
  const auto hf = hf_model(Family::kLlama, d);
  struct Case {
    const char* what;
    std::pair<std::string, std::string> config_edit;  // config.json text: from -> to
    std::function<void(GgufWriter&)> gguf_edit;
    const char* message;
  };
  const Case cases[] = {
      {"norm eps 0",
       {"\"rms_norm_eps\": 1e-6", "\"rms_norm_eps\": 0"},
       [](GgufWriter& w) { w.f32("llama.attention.layer_norm_rms_epsilon", 0.0f); },
       "model file: config norm_eps = 0 must be finite and in (0, 1)"},
      {"eos outside the vocabulary",
       {"\"eos_token_id\": [2]", "\"eos_token_id\": [48]"},
       [](GgufWriter& w) { w.u32("tokenizer.ggml.eos_token_id", 48); },
       "model file: eos_token_id 48 is outside the vocabulary of 48 tokens"},
      {"bos outside the vocabulary",
       {"\"bos_token_id\": 1", "\"bos_token_id\": 4000"},
       [](GgufWriter& w) { w.u32("tokenizer.ggml.bos_token_id", 4000); },
       "model file: bos_token_id 4000 is outside the vocabulary of 48 tokens"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    write_hf_folder(dir, Family::kLlama, d, hf);
    std::string config;
    {
      std::ifstream in(dir / "config.json");
      config.assign(std::istreambuf_iterator<char>(in), {});
    }
    const size_t at = config.find(c.config_edit.first);
    ASSERT_NE(at, std::string::npos);
    std::ofstream(dir / "config.json")
        << config.replace(at, c.config_edit.first.size(), c.config_edit.second);
    std::string folder_error = "(accepted)";
    try {
      read_hf_folder(dir.string());
    } catch (const Error& e) {
      folder_error = e.what();
    }
    GgufWriter w = gguf_model(Family::kLlama, d, kF32, hf);
    c.gguf_edit(w);
    EXPECT_EQ(folder_error, error_of(w.bytes()));
    EXPECT_NE(folder_error.find(c.message), std::string::npos) << folder_error;
  }
  // The tokenizer larger than the embedding: GGUF's tokens array; a folder's count, read from its
  // tokenizer.json by the caller (the JS loader), checked by the same rule.
  write_hf_folder(dir, Family::kLlama, d, hf);
  Checkpoint folder = read_hf_folder(dir.string());
  folder.config.tokenizer_tokens = 50257;
  std::string folder_error;
  try {
    GPTModel::from_checkpoint(folder);
  } catch (const Error& e) {
    folder_error = e.what();
  }
  GgufWriter w = gguf_model(Family::kLlama, d, kF32, hf);
  w.strings("tokenizer.ggml.tokens", std::vector<std::string>(50257, "t"));
  EXPECT_EQ(folder_error, error_of(w.bytes()));
  EXPECT_NE(folder_error.find("the tokenizer has 50257 tokens, more than the 48 rows of the "
                              "embedding"),
            std::string::npos)
      << folder_error;
  std::filesystem::remove_all(dir);
}

// A tied head keeps the embedding once (as the head's packed rows): no (V, C) float copy, and the
// same logits, bit for bit, and the same fingerprint as the untied model whose head is the
// embedding.
TEST(Gguf, TiedHeadHoldsTheEmbeddingOnce) {
  for (Family family : {Family::kLlama, Family::kGPT2}) {
    SCOPED_TRACE(family_name(family));
    Dims d;
    d.tied = true;
    if (family == Family::kGPT2) d.n_kv_head = d.n_head, d.head_dim = d.n_embd / d.n_head;
    const std::vector<uint8_t> b = gguf_model(family, d, kF32, hf_model(family, d)).bytes();
    const Checkpoint tied_ck = checkpoint_from_gguf(b.data(), b.size());
    Checkpoint untied_ck = checkpoint_from_gguf(b.data(), b.size());
    untied_ck.config.tied_head = false;
    untied_ck.tensors["lm_head.weight"] = *untied_ck.find(
        family == Family::kGPT2 ? "transformer.wte.weight" : "model.embed_tokens.weight");
    const GPTModel tied = GPTModel::from_checkpoint(tied_ck);
    const GPTModel untied = GPTModel::from_checkpoint(untied_ck);
    EXPECT_TRUE(tied.weights().wte.empty());
    EXPECT_EQ(untied.weights().wte.size(), size_t(d.vocab) * d.n_embd);
    EXPECT_EQ(untied.weight_bytes() - tied.weight_bytes(), size_t(d.vocab) * d.n_embd * 4);
    EXPECT_EQ(model_fingerprint(tied), model_fingerprint(untied));
    const std::vector<int> tokens = {0, 5, d.vocab - 1, 3, 17, 3};  // first and last rows too
    KVCache a(tied.config()), c(untied.config());
    EXPECT_EQ(tied.forward(tokens, a), untied.forward(tokens, c));
  }
}

// The head is packed a block of rows at a time; a bad value past the first block is still named by
// its index in the whole tensor (F32), or its block (Q8_0 scale).
TEST(Gguf, HeadBlocksNameTheWholeTensorsIndex) {
  Dims d;
  d.tied = true, d.vocab = 1100;
  auto hf = hf_model(Family::kLlama, d);
  const size_t bad = 1050 * size_t(d.n_embd) + 5;  // row 1050: the second block of 1024 rows
  hf["model.embed_tokens.weight"].values[bad] = std::nanf("");
  const std::vector<uint8_t> b = gguf_model(Family::kLlama, d, kF32, hf).bytes();
  try {
    GPTModel::from_checkpoint(checkpoint_from_gguf(b.data(), b.size()));
    FAIL() << "accepted a NaN";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "'model.embed_tokens.weight' holds a non-finite value (nan) at index " +
                  std::to_string(bad)),
              std::string::npos)
        << e.what();
  }
}

// A streamed GGUF file (its header from a prefix, grown until it holds it; each tensor read when
// the loader converts it) gives the model the whole file gives, bit for bit; reads nothing but
// the header before the model is built; and refuses a cut file with the same message.
TEST(Gguf, StreamedFileLoadsAsTheWholeFile) {
  const std::pair<Family, uint32_t> cases[] = {{Family::kLlama, kQ8_0},
                                               {Family::kLlama, kF32},
                                               {Family::kQwen2, kF16},
                                               {Family::kGPT2, kF32}};
  for (const auto& [family, type] : cases) {
    SCOPED_TRACE(std::string(family_name(family)) + " " + ggml_type_name(type));
    Dims d;
    if (family == Family::kGPT2) d.n_kv_head = d.n_head, d.head_dim = d.n_embd / d.n_head;
    const std::vector<uint8_t> b = gguf_model(family, d, type, hf_model(family, d)).bytes();
    uint64_t tensor_reads = 0, largest = 0;
    const ByteReader read = [&](uint64_t offset, size_t n, uint8_t* into) {
      ASSERT_LE(offset + n, b.size());
      std::memcpy(into, b.data() + offset, n);
      tensor_reads += offset > 0;  // the header's reads are prefixes
      if (offset > 0) largest = std::max<uint64_t>(largest, n);
    };
    const Checkpoint streamed = checkpoint_from_gguf_stream(b.size(), read, 64);  // grows 4x
    // The default first read holds the whole (small) file: the tensors are still read on demand,
    // never views of the header's buffer, which is gone when the checkpoint is returned.
    const Checkpoint whole_first = checkpoint_from_gguf_stream(b.size(), read);
    for (const auto& [name, t] : whole_first.tensors) EXPECT_EQ(t.data, nullptr) << name;
    const GgufFile whole = parse_gguf(b.data(), b.size());
    EXPECT_EQ(tensor_reads, 0u) << "tensors read before the model is built";
    const GPTModel a = GPTModel::from_checkpoint(streamed);
    const GPTModel a2 = GPTModel::from_checkpoint(whole_first);
    const GPTModel c = GPTModel::from_checkpoint(checkpoint_from_gguf(b.data(), b.size()));
    EXPECT_EQ(a.weight_type(), c.weight_type());
    uint64_t largest_tensor = 0;
    for (const GgufTensor& t : whole.tensors)
      largest_tensor = std::max<uint64_t>(largest_tensor, t.bytes);
    EXPECT_EQ(largest, largest_tensor) << "one tensor at a time";
    EXPECT_GE(tensor_reads, whole.tensors.size());
    const std::vector<int> tokens = {1, 7, 3, d.vocab - 1, 0};
    KVCache ka(a.config()), ka2(a2.config()), kc(c.config());
    const std::vector<float> want = c.forward(tokens, kc);
    EXPECT_EQ(a.forward(tokens, ka), want);
    EXPECT_EQ(a2.forward(tokens, ka2), want);
  }
  // Cut files: the same refusal as the whole (cut) buffer gives, wherever the cut falls.
  Dims d;
  const std::vector<uint8_t> b =
      gguf_model(Family::kLlama, d, kQ8_0, hf_model(Family::kLlama, d)).bytes();
  const uint64_t data_offset = parse_gguf(b.data(), b.size()).data_offset;
  for (uint64_t cut : {uint64_t{3}, uint64_t{40}, data_offset / 2, data_offset - 1, data_offset + 5,
                       uint64_t(b.size()) - 1}) {
    SCOPED_TRACE(cut);
    const std::vector<uint8_t> part(b.begin(), b.begin() + cut);
    const ByteReader read = [&](uint64_t offset, size_t n, uint8_t* into) {
      ASSERT_LE(offset + n, part.size());
      std::memcpy(into, part.data() + offset, n);
    };
    std::string streamed = "(accepted)";
    try {
      checkpoint_from_gguf_stream(part.size(), read, 64);
    } catch (const Error& e) {
      streamed = e.what();
    }
    EXPECT_NE(streamed, "(accepted)");
    EXPECT_EQ(streamed, error_of(part));
  }
}

// A streamed head (the largest tensor of a small model) is read a block of 1024 rows at a time,
// never whole, and gives the model the whole file gives, bit for bit.
TEST(Gguf, StreamedHeadIsReadABlockOfRowsAtATime) {
  const std::pair<Family, uint32_t> cases[] = {
      {Family::kLlama, kQ8_0}, {Family::kLlama, kF32}, {Family::kQwen2, kF16}};
  for (const auto& [family, type] : cases) {
    SCOPED_TRACE(std::string(family_name(family)) + " " + ggml_type_name(type));
    Dims d;
    d.vocab = 2100, d.tied = family == Family::kLlama;  // 3 blocks of rows: 1024, 1024, 52
    const std::vector<uint8_t> b = gguf_model(family, d, type, hf_model(family, d)).bytes();
    const GgufFile whole = parse_gguf(b.data(), b.size());
    const GgufTensor* head = whole.find_tensor(d.tied ? "token_embd.weight" : "output.weight");
    ASSERT_NE(head, nullptr);
    const uint64_t begin = whole.data_offset + head->offset, end = begin + head->bytes;
    std::vector<uint64_t> head_reads;
    const ByteReader read = [&](uint64_t offset, size_t n, uint8_t* into) {
      ASSERT_LE(offset + n, b.size());
      std::memcpy(into, b.data() + offset, n);
      if (offset >= begin && offset < end) head_reads.push_back(n);
    };
    const GPTModel a = GPTModel::from_checkpoint(checkpoint_from_gguf_stream(b.size(), read, 64));
    const uint64_t row = head->bytes / d.vocab;
    EXPECT_EQ(head_reads, (std::vector<uint64_t>{1024 * row, 1024 * row, 52 * row}));
    const GPTModel c = GPTModel::from_checkpoint(checkpoint_from_gguf(b.data(), b.size()));
    const std::vector<int> tokens = {1, 7, 3, d.vocab - 1, 1500};
    KVCache ka(a.config()), kc(c.config());
    EXPECT_EQ(a.forward(tokens, ka), c.forward(tokens, kc));
  }
}

// Writes the seed corpus of tests/fuzz/fuzz_gguf.cc when SPECDEC_GGUF_CORPUS names a folder.
TEST(Gguf, WritesFuzzCorpus) {
  const char* dir = std::getenv("SPECDEC_GGUF_CORPUS");
  if (!dir) GTEST_SKIP() << "SPECDEC_GGUF_CORPUS not set";
  Dims d;
  d.n_layer = 1, d.n_embd = 32, d.n_head = 2, d.n_kv_head = 1, d.n_ff = 32, d.vocab = 8, d.ctx = 8;
  const std::pair<const char*, std::pair<Family, uint32_t>> seeds[] = {
      {"llama-f32", {Family::kLlama, kF32}}, {"llama-q8_0", {Family::kLlama, kQ8_0}},
      {"qwen2-f16", {Family::kQwen2, kF16}}, {"qwen2-q4_0", {Family::kQwen2, kQ4_0}},
      {"gpt2-bf16", {Family::kGPT2, kBF16}},
  };
  for (const auto& [name, what] : seeds) {
    Dims dd = d;
    if (what.second != kQ8_0 && what.second != kQ4_0) {  // no blocks of 32: smaller still
      dd.n_embd = 8, dd.head_dim = 4, dd.n_ff = 8;
    }
    if (what.first == Family::kGPT2) dd.n_kv_head = dd.n_head;
    const std::vector<uint8_t> b =
        gguf_model(what.first, dd, what.second, hf_model(what.first, dd)).bytes();
    ASSERT_EQ(error_of(b), "(accepted)");
    std::ofstream(std::string(dir) + "/seed-" + name, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
}

}  // namespace
}  // namespace specdec
