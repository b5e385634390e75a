// GPTModel from a safetensors file: the model-specific checks on top of the container's
// (config ranges, the exact tensor set, shapes and dtypes, memory caps, finite weights, valid
// 8-bit blocks), then F16 -> float and packing of every matrix for the kernels (float32, or
// 8-bit blocks: stored so, or quantized here). Nothing is allocated for the weights until every
// check that the header allows has passed.
//
// A quantized file (made by `specdec quantize` or models/quantize.py) has __metadata__
// "weights": "int8" and stores each Linear weight X.weight (n, k) of the blocks (attn.c_attn,
// attn.c_proj, mlp.c_fc, mlp.c_proj) as two tensors: X.weight.q8, I8 (n, k), values in
// [-127, 127], and X.weight.scale, F16 (n, k / 32), finite and > 0 (kernels/matmul_q8.h).
// Everything else is stored as in a float file.
#include <cmath>
#include <cstring>
#include <set>

#include "base/errors.h"
#include "kernels/matmul.h"
#include "kernels/matmul_q8.h"
#include "model/gpt_model.h"
#include "model/safetensors.h"

namespace specdec {
namespace {

// The five config keys of __metadata__ ("12" as a decimal string, as models/model.py writes them):
// digits only, no sign, no leading zero. A value of more than 9 digits is out of every range;
// it is reported as such (kOutOfRange), not as malformed.
constexpr int kOutOfRange = -1;

int config_value(const SafetensorsView& view, const char* key) {
  auto it = view.metadata.find(key);
  if (it == view.metadata.end()) fail("model file: __metadata__ lacks '", key, "' (model config)");
  const std::string& s = it->second;
  bool digits = !s.empty() && (s.size() == 1 || s[0] != '0');
  for (char c : s) digits = digits && c >= '0' && c <= '9';
  if (!digits) {
    fail("model file: __metadata__ '", key, "' = '", s,
         "' is not a decimal integer (digits only, no sign or leading zero)");
  }
  return s.size() <= 9 ? std::stoi(s) : kOutOfRange;
}

GPTConfig read_config(const SafetensorsView& view) {
  GPTConfig c;
  c.vocab_size = config_value(view, "vocab_size");
  c.n_layer = config_value(view, "n_layer");
  c.n_head = config_value(view, "n_head");
  c.n_embd = config_value(view, "n_embd");
  c.block_size = config_value(view, "block_size");
  // The written value, for messages (a value past 9 digits is kept as text).
  auto shown = [&](const char* key, int v) {
    return v == kOutOfRange ? view.metadata.at(key) : std::to_string(v);
  };
  if (c.vocab_size != kByteVocabSize) {
    fail("model file: vocab_size = ", shown("vocab_size", c.vocab_size), ", expected ",
         kByteVocabSize, " (byte-level tokens)");
  }
  auto in_range = [&](const char* key, int v, int lo, int hi) {
    if (v == kOutOfRange || v < lo || v > hi) {
      fail("model file: ", key, " = ", shown(key, v), " is outside ", lo, "..", hi);
    }
  };
  in_range("n_layer", c.n_layer, 1, kMaxLayers);
  in_range("n_embd", c.n_embd, 1, kMaxEmbd);
  in_range("n_head", c.n_head, 1, c.n_embd);
  in_range("block_size", c.block_size, 1, kMaxBlockSize);
  if (c.n_embd % c.n_head != 0) {
    fail("model file: n_head = ", c.n_head, " does not divide n_embd = ", c.n_embd);
  }
  return c;
}

struct Expected {
  std::string name;
  std::vector<uint64_t> shape;
  bool q8 = false;     // 8-bit quants: I8
  bool scale = false;  // 8-bit block scales: F16
};

// The tensors of block l ("transformer.h.<l>." + name), in file order: a vector (rows x C,) or
// a Linear weight (rows x C, cols x C), and the field of LayerWeights it loads into.
struct BlockTensor {
  const char* name;
  uint64_t rows, cols;                       // in units of C; cols = 0: a vector
  std::vector<float> LayerWeights::*vector;  // vectors
  LinearWeights LayerWeights::*linear;       // Linear weights
};
const BlockTensor kBlockTensors[] = {
    {"ln_1.weight", 1, 0, &LayerWeights::ln_1_weight, nullptr},
    {"ln_1.bias", 1, 0, &LayerWeights::ln_1_bias, nullptr},
    {"attn.c_attn.weight", 3, 1, nullptr, &LayerWeights::c_attn},
    {"attn.c_attn.bias", 3, 0, &LayerWeights::c_attn_bias, nullptr},
    {"attn.c_proj.weight", 1, 1, nullptr, &LayerWeights::attn_proj},
    {"attn.c_proj.bias", 1, 0, &LayerWeights::attn_proj_bias, nullptr},
    {"ln_2.weight", 1, 0, &LayerWeights::ln_2_weight, nullptr},
    {"ln_2.bias", 1, 0, &LayerWeights::ln_2_bias, nullptr},
    {"mlp.c_fc.weight", 4, 1, nullptr, &LayerWeights::c_fc},
    {"mlp.c_fc.bias", 4, 0, &LayerWeights::c_fc_bias, nullptr},
    {"mlp.c_proj.weight", 1, 4, nullptr, &LayerWeights::mlp_proj},
    {"mlp.c_proj.bias", 1, 0, &LayerWeights::mlp_proj_bias, nullptr},
};

std::string block_prefix(int l) { return "transformer.h." + std::to_string(l) + "."; }

std::vector<Expected> expected_tensors(const GPTConfig& c, bool has_lm_head, bool int8) {
  const uint64_t C = c.n_embd, V = c.vocab_size;
  std::vector<Expected> e = {{"transformer.wte.weight", {V, C}},
                             {"transformer.wpe.weight", {uint64_t(c.block_size), C}}};
  for (int l = 0; l < c.n_layer; ++l) {
    for (const BlockTensor& b : kBlockTensors) {
      const std::string name = block_prefix(l) + b.name;
      const uint64_t n = b.rows * C, k = b.cols * C;
      if (!b.linear) {
        e.push_back({name, {n}});
      } else if (!int8) {
        e.push_back({name, {n, k}});
      } else {
        e.push_back({name + ".q8", {n, k}, true, false});
        e.push_back({name + ".scale", {n, k / kernels::kQ8Block}, false, true});
      }
    }
  }
  e.push_back({"transformer.ln_f.weight", {C}});
  e.push_back({"transformer.ln_f.bias", {C}});
  if (has_lm_head) e.push_back({"lm_head.weight", {V, C}});
  return e;
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// Whether the file is quantized (__metadata__ "weights": "int8"; absent or "f32": float).
bool file_is_int8(const SafetensorsView& view) {
  auto it = view.metadata.find("weights");
  if (it == view.metadata.end() || it->second == "f32") return false;
  if (it->second == "int8") return true;
  fail("model file: __metadata__ 'weights' = '", it->second, "', expected 'f32' or 'int8'");
}

// The tensor as float, rejecting non-finite values (they would poison every logit).
std::vector<float> load_floats(const TensorView& t) {
  std::vector<float> out(t.numel);
  read_tensor_f32(t, out.data());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) {
      fail("model file: tensor '", t.name, "' holds a non-finite value (", out[i], ") at index ",
           i);
    }
  }
  return out;
}

// Checks 8-bit blocks: quants in [-127, 127], scales finite and > 0; names the tensor.
void check_q8(const std::string& name, const int8_t* w8, size_t n_quants, const float* scales,
              size_t n_scales) {
  for (size_t i = 0; i < n_quants; ++i) {
    if (w8[i] == -128) {
      fail("model file: tensor '", name, ".q8' holds -128 at index ", i,
           " (8-bit weights are in [-127, 127])");
    }
  }
  for (size_t i = 0; i < n_scales; ++i) {
    if (!(std::isfinite(scales[i]) && scales[i] > 0.0f)) {
      fail("model file: tensor '", name, ".scale' holds the block scale ", scales[i], " at index ",
           i, " (scales must be finite and > 0)");
    }
  }
}

// 8-bit blocks w8 (n, k) and scales (n, k / 32), checked, packed for kernels::matmul_q8.
LinearWeights pack_q8(const std::string& name, const std::vector<int8_t>& w8,
                      const std::vector<float>& scales, size_t n, size_t k) {
  check_q8(name, w8.data(), w8.size(), scales.data(), scales.size());
  LinearWeights out;
  out.q8.resize(kernels::q8_packed_bytes(n, k));
  out.scale.resize(kernels::q8_packed_scales(n, k));
  kernels::pack_weights_q8(w8.data(), scales.data(), n, k, out.q8.data(), out.scale.data());
  return out;
}

// An (n, k) Linear weight packed for the kernels: float32, or 8-bit (stored, or quantized).
LinearWeights load_linear(const SafetensorsView& view, const std::string& name, bool stored_int8,
                          bool want_int8) {
  if (!stored_int8) {
    const TensorView& t = *view.find(name);
    const std::vector<float> w = load_floats(t);
    const size_t n = t.shape[0], k = t.shape[1];
    if (!want_int8) {
      LinearWeights out;
      out.f32.resize(kernels::packed_size(n, k));
      kernels::pack_weights(w.data(), n, k, out.f32.data());
      return out;
    }
    std::vector<int8_t> w8(n * k);
    std::vector<float> scales(n * (k / kernels::kQ8Block));
    kernels::quantize_weights_q8(w.data(), n, k, w8.data(), scales.data());
    // A weight too large for a binary16 scale (|w| > 65504 * 127) is refused like a bad file.
    return pack_q8(name, w8, scales, n, k);
  }
  const TensorView& tq = *view.find(name + ".q8");
  const TensorView& ts = *view.find(name + ".scale");
  const size_t n = tq.shape[0], k = tq.shape[1];
  std::vector<int8_t> w8(n * k);
  std::memcpy(w8.data(), tq.data, w8.size());
  std::vector<float> scales(ts.numel);
  read_tensor_f32(ts, scales.data());
  return pack_q8(name, w8, scales, n, k);
}

// A matrix that stays float32 (the LM head), packed for kernels::matmul.
Buffer<float> load_packed(const TensorView& t) {
  const std::vector<float> w = load_floats(t);
  const size_t n = t.shape[0], k = t.shape[1];
  Buffer<float> packed(kernels::packed_size(n, k));
  kernels::pack_weights(w.data(), n, k, packed.data());
  return packed;
}

// Memory caps, from the config alone (shapes are checked against it next).
void check_memory_caps(const GPTConfig& cfg, bool has_lm_head) {
  const uint64_t C = cfg.n_embd, V = cfg.vocab_size, L = cfg.n_layer, T = cfg.block_size;
  const uint64_t n_params =
      V * C * (has_lm_head ? 2 : 1) + T * C + L * (12 * C * C + 13 * C) + 2 * C;
  if (n_params * 4 > kMaxParamBytes) {
    fail("model file: ", n_params, " parameters (", n_params * 4,
         " bytes as float32) exceed the limit of ", kMaxParamBytes, " bytes");
  }
  const uint64_t kv_bytes = 2 * L * T * C * 4;
  if (kv_bytes > kMaxKVCacheBytes) {
    fail("model file: a KV cache of n_layer x block_size x n_embd = ", L, " x ", T, " x ", C,
         " needs ", kv_bytes, " bytes, over the limit of ", kMaxKVCacheBytes);
  }
}

// One layout: a float file holds no 8-bit tensor, a quantized one no float Linear weight.
void check_one_layout(const SafetensorsView& view, bool stored_int8) {
  for (const auto& [name, t] : view.tensors) {
    const bool q8_name = ends_with(name, ".q8") || ends_with(name, ".scale");
    if (q8_name && !stored_int8) {
      fail("model file: tensor '", name,
           "' is part of an 8-bit weight, but __metadata__ 'weights' is not 'int8' (mixed "
           "layouts)");
    }
    if (stored_int8 && view.find(name + ".q8")) {
      fail("model file: tensor '", name, "' is float beside its 8-bit '", name,
           ".q8' (mixed layouts: a quantized file stores each Linear weight as .q8 + .scale "
           "only)");
    }
  }
}

// Exactly the expected tensors, with the expected shapes and dtypes.
void check_tensor_set(const SafetensorsView& view, const std::vector<Expected>& expected) {
  std::set<std::string> names;
  for (const Expected& e : expected) {
    names.insert(e.name);
    const TensorView* t = view.find(e.name);
    if (!t) fail("model file: missing tensor '", e.name, "'");
    if (t->shape != e.shape) {
      fail("model file: tensor '", e.name, "' has shape ", shape_string(t->shape), ", expected ",
           shape_string(e.shape), e.scale ? " (one scale per block of 32 weights)" : "");
    }
    const DType want = e.q8 ? DType::kI8 : DType::kF16;
    if ((e.q8 || e.scale) && t->dtype != want) {
      fail("model file: tensor '", e.name, "' has dtype ", dtype_name(t->dtype), ", expected ",
           dtype_name(want));
    }
    if (!e.q8 && t->dtype == DType::kI8) {
      fail("model file: tensor '", e.name, "' has dtype I8; only 8-bit Linear weights (.q8) may");
    }
  }
  for (const auto& [name, t] : view.tensors) {
    if (!names.count(name)) fail("model file: unexpected tensor '", name, "'");
  }
}

}  // namespace

GPTModel GPTModel::from_safetensors(const uint8_t* bytes, size_t size, const Weights* weights) {
  const SafetensorsView view = parse_safetensors(bytes, size);
  const GPTConfig cfg = read_config(view);
  const bool stored_int8 = file_is_int8(view);
  if (stored_int8 && weights && *weights == Weights::kF32) {
    fail(
        "model file: stores 8-bit weights (__metadata__ 'weights' = 'int8'); it cannot be "
        "loaded as float32 (load the float file instead)");
  }
  const bool want_int8 = stored_int8 || (weights && *weights == Weights::kInt8);
  if (want_int8 && cfg.n_embd % kernels::kQ8Block != 0) {
    fail("model file: 8-bit weights need n_embd to be a multiple of ", kernels::kQ8Block,
         " (blocks of 32 weights along each row); n_embd = ", cfg.n_embd);
  }
  const bool has_lm_head = view.find("lm_head.weight") != nullptr;
  check_memory_caps(cfg, has_lm_head);
  check_one_layout(view, stored_int8);
  check_tensor_set(view, expected_tensors(cfg, has_lm_head, stored_int8));

  auto tensor = [&](const std::string& name) -> const TensorView& { return *view.find(name); };
  GPTModel model;
  model.config_ = cfg;
  model.weight_type_ = want_int8 ? Weights::kInt8 : Weights::kF32;
  GPTWeights& w = model.weights_;
  // Tied head (nanoGPT): the logits are x @ wte^T, and the embedding is held once, as the head's
  // packed rows (token_embedding unpacks a row).
  if (has_lm_head) w.wte = load_floats(tensor("transformer.wte.weight"));
  w.wpe = load_floats(tensor("transformer.wpe.weight"));
  for (int l = 0; l < cfg.n_layer; ++l) {
    LayerWeights lw;
    for (const BlockTensor& b : kBlockTensors) {
      const std::string name = block_prefix(l) + b.name;
      if (b.linear) {
        lw.*b.linear = load_linear(view, name, stored_int8, want_int8);
      } else {
        lw.*b.vector = load_floats(tensor(name));
      }
    }
    w.layers.push_back(std::move(lw));
  }
  w.ln_f_weight = load_floats(tensor("transformer.ln_f.weight"));
  w.ln_f_bias = load_floats(tensor("transformer.ln_f.bias"));
  w.lm_head.f32 = load_packed(tensor(has_lm_head ? "lm_head.weight" : "transformer.wte.weight"));
  return model;
}

GPTModel GPTModel::from_file(const std::string& path, const Weights* weights) {
  const std::vector<uint8_t> bytes = read_file(path, 8 + kMaxHeaderBytes + kMaxParamBytes);
  return from_safetensors(bytes.data(), bytes.size(), weights);
}

}  // namespace specdec
