// GPTModel from a safetensors file: the model-specific checks on top of the container's
// (config ranges, the exact tensor set and shapes, memory caps, finite weights), then F16 ->
// float and packing of every matrix for kernels::matmul. Nothing is allocated for the weights
// until every check that the header allows has passed.
#include <cmath>
#include <set>

#include "base/errors.h"
#include "kernels/matmul.h"
#include "model/gpt_model.h"
#include "model/safetensors.h"

namespace specdec {
namespace {

// The five config keys of __metadata__ ("12" as a decimal string, as train.py writes them):
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
};

std::vector<Expected> expected_tensors(const GPTConfig& c, bool has_lm_head) {
  const uint64_t C = c.n_embd, V = c.vocab_size;
  std::vector<Expected> e = {{"transformer.wte.weight", {V, C}},
                             {"transformer.wpe.weight", {uint64_t(c.block_size), C}}};
  for (int l = 0; l < c.n_layer; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    e.push_back({p + "ln_1.weight", {C}});
    e.push_back({p + "ln_1.bias", {C}});
    e.push_back({p + "attn.c_attn.weight", {3 * C, C}});
    e.push_back({p + "attn.c_attn.bias", {3 * C}});
    e.push_back({p + "attn.c_proj.weight", {C, C}});
    e.push_back({p + "attn.c_proj.bias", {C}});
    e.push_back({p + "ln_2.weight", {C}});
    e.push_back({p + "ln_2.bias", {C}});
    e.push_back({p + "mlp.c_fc.weight", {4 * C, C}});
    e.push_back({p + "mlp.c_fc.bias", {4 * C}});
    e.push_back({p + "mlp.c_proj.weight", {C, 4 * C}});
    e.push_back({p + "mlp.c_proj.bias", {C}});
  }
  e.push_back({"transformer.ln_f.weight", {C}});
  e.push_back({"transformer.ln_f.bias", {C}});
  if (has_lm_head) e.push_back({"lm_head.weight", {V, C}});
  return e;
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

// An (n, k) matrix packed for kernels::matmul.
std::vector<float> load_packed(const TensorView& t) {
  const std::vector<float> w = load_floats(t);
  const size_t n = t.shape[0], k = t.shape[1];
  std::vector<float> packed(kernels::packed_size(n, k));
  kernels::pack_weights(w.data(), n, k, packed.data());
  return packed;
}

}  // namespace

GPTModel GPTModel::from_safetensors(const uint8_t* bytes, size_t size) {
  const SafetensorsView view = parse_safetensors(bytes, size);
  const GPTConfig cfg = read_config(view);

  // Memory caps, from the config alone (shapes are checked against it next).
  const uint64_t C = cfg.n_embd, V = cfg.vocab_size, L = cfg.n_layer, T = cfg.block_size;
  const bool has_lm_head = view.find("lm_head.weight") != nullptr;
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

  // Exactly the expected tensors, with the expected shapes.
  const std::vector<Expected> expected = expected_tensors(cfg, has_lm_head);
  std::set<std::string> names;
  for (const Expected& e : expected) {
    names.insert(e.name);
    const TensorView* t = view.find(e.name);
    if (!t) fail("model file: missing tensor '", e.name, "'");
    if (t->shape != e.shape) {
      fail("model file: tensor '", e.name, "' has shape ", shape_string(t->shape), ", expected ",
           shape_string(e.shape));
    }
  }
  for (const auto& [name, t] : view.tensors) {
    if (!names.count(name)) fail("model file: unexpected tensor '", name, "'");
  }

  auto tensor = [&](const std::string& name) -> const TensorView& { return *view.find(name); };
  GPTModel model;
  model.config_ = cfg;
  GPTWeights& w = model.weights_;
  w.wte = load_floats(tensor("transformer.wte.weight"));
  w.wpe = load_floats(tensor("transformer.wpe.weight"));
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    LayerWeights lw;
    lw.ln_1_weight = load_floats(tensor(p + "ln_1.weight"));
    lw.ln_1_bias = load_floats(tensor(p + "ln_1.bias"));
    lw.c_attn = load_packed(tensor(p + "attn.c_attn.weight"));
    lw.c_attn_bias = load_floats(tensor(p + "attn.c_attn.bias"));
    lw.attn_proj = load_packed(tensor(p + "attn.c_proj.weight"));
    lw.attn_proj_bias = load_floats(tensor(p + "attn.c_proj.bias"));
    lw.ln_2_weight = load_floats(tensor(p + "ln_2.weight"));
    lw.ln_2_bias = load_floats(tensor(p + "ln_2.bias"));
    lw.c_fc = load_packed(tensor(p + "mlp.c_fc.weight"));
    lw.c_fc_bias = load_floats(tensor(p + "mlp.c_fc.bias"));
    lw.mlp_proj = load_packed(tensor(p + "mlp.c_proj.weight"));
    lw.mlp_proj_bias = load_floats(tensor(p + "mlp.c_proj.bias"));
    w.layers.push_back(std::move(lw));
  }
  w.ln_f_weight = load_floats(tensor("transformer.ln_f.weight"));
  w.ln_f_bias = load_floats(tensor("transformer.ln_f.bias"));
  // Tied head (nanoGPT): the logits are x @ wte^T.
  w.lm_head = load_packed(tensor(has_lm_head ? "lm_head.weight" : "transformer.wte.weight"));
  return model;
}

GPTModel GPTModel::from_file(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path, 8 + kMaxHeaderBytes + kMaxParamBytes);
  return from_safetensors(bytes.data(), bytes.size());
}

}  // namespace specdec
