#include "model/hf_config.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "base/errors.h"
#include "model/json.h"

namespace specdec {
namespace {

using json::Value;

bool is_null(const Value* v) { return !v || v->type == Value::Type::kNull; }

// A required (or defaulted, when def >= 0) non-negative integer below 2^31.
int get_int(const Value& root, const char* key, int64_t def = -1) {
  const Value* v = root.find(key);
  if (is_null(v)) {
    if (def < 0) fail("config.json: missing '", key, "'");
    if (def >= (int64_t{1} << 31)) {
      fail("config.json: '", key, "' is missing and its default ", def, " is not below 2^31");
    }
    return static_cast<int>(def);
  }
  uint64_t u = 0;
  if (!json::to_u64(*v, &u) || u >= (uint64_t{1} << 31)) {
    fail("config.json: '", key,
         "' = ", v->type == Value::Type::kNumber ? v->text : json::type_name(v->type),
         " is not a non-negative integer below 2^31");
  }
  return static_cast<int>(u);
}

double get_double(const Value& root, const char* key, double def) {
  const Value* v = root.find(key);
  if (is_null(v)) return def;
  if (v->type != Value::Type::kNumber) fail("config.json: '", key, "' is not a number");
  const double d = json::to_double(*v);
  if (!std::isfinite(d)) fail("config.json: '", key, "' = ", v->text, " is not finite");
  return d;
}

bool get_bool(const Value& root, const char* key, bool def) {
  const Value* v = root.find(key);
  if (is_null(v)) return def;
  if (v->type != Value::Type::kBool) fail("config.json: '", key, "' is not true or false");
  return v->boolean;
}

std::string get_string(const Value& root, const char* key, const char* def) {
  const Value* v = root.find(key);
  if (is_null(v)) {
    if (!def) fail("config.json: missing '", key, "'");
    return def;
  }
  if (v->type != Value::Type::kString) fail("config.json: '", key, "' is not a string");
  return v->text;
}

// eos_token_id: an int or a list of ints.
std::vector<int> get_ids(const Value& root, const char* key) {
  const Value* v = root.find(key);
  if (is_null(v)) return {};
  if (v->type != Value::Type::kArray) return {get_int(root, key)};
  std::vector<int> ids;
  for (const Value& item : v->items) {
    uint64_t u = 0;
    if (!json::to_u64(item, &u) || u >= (uint64_t{1} << 31)) {
      fail("config.json: '", key, "' holds ", item.text, ", not a token id");
    }
    ids.push_back(static_cast<int>(u));
  }
  return ids;
}

// rope_scaling (transformers < 5) or rope_parameters (>= 5, with rope_theta inside).
void read_rope(const Value& root, FamilyConfig& c) {
  c.rope_theta = get_double(root, "rope_theta", 10000.0);
  const Value* r = root.find("rope_parameters");
  if (is_null(r)) r = root.find("rope_scaling");
  if (is_null(r)) return;
  if (r->type != Value::Type::kObject) fail("config.json: rope_scaling is not an object");
  c.rope_theta = get_double(*r, "rope_theta", c.rope_theta);
  std::string type = get_string(*r, "rope_type", "");
  if (type.empty()) type = get_string(*r, "type", "default");
  if (type == "default") return;
  if (type != "llama3") {
    fail("config.json: rope_scaling type '", type,
         "' is not supported (none, 'default' and 'llama3' are)");
  }
  c.rope_scaling.factor = get_double(*r, "factor", -1);
  c.rope_scaling.low_freq_factor = get_double(*r, "low_freq_factor", -1);
  c.rope_scaling.high_freq_factor = get_double(*r, "high_freq_factor", -1);
  c.rope_scaling.original_max_positions = get_int(*r, "original_max_position_embeddings");
  const kernels::RopeScaling& s = c.rope_scaling;
  if (!(s.factor > 0 && s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor &&
        s.original_max_positions > 0)) {
    fail("config.json: llama3 rope_scaling needs factor > 0 and 0 < low_freq_factor < ",
         "high_freq_factor (factor ", s.factor, ", low ", s.low_freq_factor, ", high ",
         s.high_freq_factor, ")");
  }
}

void read_llama(const Value& root, FamilyConfig& c) {
  c.vocab_size = get_int(root, "vocab_size");
  c.n_embd = get_int(root, "hidden_size");
  c.n_ff = get_int(root, "intermediate_size");
  c.n_layer = get_int(root, "num_hidden_layers");
  c.n_head = get_int(root, "num_attention_heads");
  c.n_kv_head = get_int(root, "num_key_value_heads", c.n_head);
  if (c.n_head == 0) fail("config.json: num_attention_heads is 0");
  c.head_dim = get_int(root, "head_dim", c.n_embd / c.n_head);
  c.max_positions = get_int(root, "max_position_embeddings");
  c.norm_eps = static_cast<float>(get_double(root, "rms_norm_eps", 1e-6));
  c.tied_head = get_bool(root, "tie_word_embeddings", false);
  const std::string act = get_string(root, "hidden_act", "silu");
  if (act != "silu") fail("config.json: hidden_act '", act, "' is not supported (silu)");
  read_rope(root, c);
  if (get_bool(root, "use_sliding_window", false)) {
    fail("config.json: use_sliding_window is true (sliding_window ",
         get_int(root, "sliding_window", 0), "): sliding-window attention is not supported");
  }
}

void read_gpt2(const Value& root, FamilyConfig& c) {
  c.vocab_size = get_int(root, "vocab_size");
  c.n_embd = get_int(root, "n_embd");
  c.n_layer = get_int(root, "n_layer");
  c.n_head = get_int(root, "n_head");
  c.n_kv_head = c.n_head;
  if (c.n_head == 0) fail("config.json: n_head is 0");
  c.head_dim = c.n_embd / c.n_head;
  c.n_ff = get_int(root, "n_inner", int64_t{4} * c.n_embd);
  c.max_positions = get_int(root, "n_positions");
  c.norm_eps = static_cast<float>(get_double(root, "layer_norm_epsilon", 1e-5));
  c.tied_head = get_bool(root, "tie_word_embeddings", true);
  const std::string act = get_string(root, "activation_function", "gelu_new");
  if (act == "gelu") {
    c.gelu_erf = true;
  } else if (act != "gelu_new" && act != "gelu_pytorch_tanh") {
    fail("config.json: activation_function '", act,
         "' is not supported (gelu_new, gelu_pytorch_tanh, gelu)");
  }
  if (!get_bool(root, "scale_attn_weights", true) ||
      get_bool(root, "scale_attn_by_inverse_layer_idx", false) ||
      get_bool(root, "reorder_and_upcast_attn", false)) {
    fail("config.json: GPT-2 attention variants (scale_attn_weights false, ",
         "scale_attn_by_inverse_layer_idx, reorder_and_upcast_attn) are not supported");
  }
}

}  // namespace

FamilyConfig parse_hf_config(const char* text, size_t size) {
  Value root;
  try {
    root = json::parse(text, size);
  } catch (const Error& e) {
    fail("config.json: ", e.what());
  }
  if (root.type != Value::Type::kObject) fail("config.json: not a JSON object");
  const std::string type = get_string(root, "model_type", nullptr);
  FamilyConfig c;
  if (!family_named(type, &c.family)) {
    fail("config.json: model_type '", type, "' is not supported (llama, qwen2, gpt2)");
  }
  static const char* const kArchitectures[] = {"GPT2LMHeadModel", "LlamaForCausalLM",
                                               "Qwen2ForCausalLM"};  // Family's order
  const std::string arch = kArchitectures[static_cast<int>(c.family)];
  if (const Value* a = root.find("architectures"); !is_null(a)) {
    bool found = false;
    if (a->type == Value::Type::kArray) {
      for (const Value& v : a->items) found = found || v.text == arch;
    }
    if (!found)
      fail("config.json: architectures does not list ", arch, " (model_type '", type, "')");
  }
  if (c.family == Family::kGPT2) {
    read_gpt2(root, c);
  } else {
    read_llama(root, c);
  }
  const Value* bos = root.find("bos_token_id");
  c.bos_token_id = is_null(bos) ? -1 : get_int(root, "bos_token_id");
  c.eos_token_ids = get_ids(root, "eos_token_id");
  return c;
}

}  // namespace specdec
