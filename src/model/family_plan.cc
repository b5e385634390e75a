// The tensor plan of the Llama / Qwen2 / GPT-2 families and our files (model/family_plan.h) and
// the checks of a checkpoint's tensors against it. The conversions are family_convert.cc's.
#include "model/family_plan.h"

#include <cmath>
#include <cstring>
#include <set>

#include "base/errors.h"
#include "kernels/bf16.h"
#include "kernels/half.h"
#include "kernels/matmul_q8.h"
#include "model/safetensors.h"

namespace specdec::family {

using kernels::kQ8Block;

bool is_quantized(TensorType t) { return t == TensorType::kQ8_0 || t == TensorType::kQ4_0; }

uint64_t weight_bytes(const GPTConfig& c, bool int8, bool head_int8, bool tied) {
  const uint64_t C = c.n_embd, V = c.vocab_size, L = c.n_layer, Q = c.q_dim(), KV = c.kv_dim();
  const uint64_t FC = c.mlp == MlpKind::kSwiGlu ? 2 * c.ff() : c.ff();
  const uint64_t linear = L * ((Q + 2 * KV) * C + C * Q + FC * C + C * c.ff());
  const auto held = [](uint64_t n, bool eight) { return eight ? n + n / kQ8Block * 4 : 4 * n; };
  const uint64_t T = c.block_size;
  const uint64_t positions = c.positions == PositionKind::kLearned ? T * C : T * c.head_size();
  const uint64_t vectors = L * (Q + 2 * KV + FC + 6 * C) + 2 * C;  // biases and norms, at most
  return held(linear, int8) + held(V * C, head_int8) +
         4 * ((tied ? 0 : V * C) + positions + vectors);
}

// The layer's tensors: Llama / Qwen2 (model.layers.{l}.) or GPT-2 (transformer.h.{l}.).
LayerPlan layer_plan(Family family, const GPTConfig& c, int l) {
  const uint64_t C = c.n_embd, Q = c.q_dim(), KV = c.kv_dim(), F = c.ff();
  LayerPlan p;
  if (family == Family::kGPT2) {
    const std::string h = "transformer.h." + std::to_string(l) + ".";
    p.vectors = {{&LayerWeights::ln_1_weight, {h + "ln_1.weight", C}},
                 {&LayerWeights::ln_1_bias, {h + "ln_1.bias", C}},
                 {&LayerWeights::ln_2_weight, {h + "ln_2.weight", C}},
                 {&LayerWeights::ln_2_bias, {h + "ln_2.bias", C}}};
    auto lin = [&](LinearWeights LayerWeights::*w, std::vector<float> LayerWeights::*b,
                   const std::string& name, uint64_t n, uint64_t k) {
      return LinearPlan{w, b, {{h + name + ".weight", n}}, {{h + name + ".bias", n}}, k, true};
    };
    p.linears = {lin(&LayerWeights::c_attn, &LayerWeights::c_attn_bias, "attn.c_attn", 3 * C, C),
                 lin(&LayerWeights::attn_proj, &LayerWeights::attn_proj_bias, "attn.c_proj", C, C),
                 lin(&LayerWeights::c_fc, &LayerWeights::c_fc_bias, "mlp.c_fc", F, C),
                 lin(&LayerWeights::mlp_proj, &LayerWeights::mlp_proj_bias, "mlp.c_proj", C, F)};
    return p;
  }
  const std::string m = "model.layers." + std::to_string(l) + ".";
  const std::string a = m + "self_attn.", f = m + "mlp.";
  p.vectors = {{&LayerWeights::ln_1_weight, {m + "input_layernorm.weight", C}},
               {&LayerWeights::ln_2_weight, {m + "post_attention_layernorm.weight", C}}};
  const bool qwen2 = family == Family::kQwen2;  // q/k/v biases always
  p.linears = {{&LayerWeights::c_attn,
                &LayerWeights::c_attn_bias,
                {{a + "q_proj.weight", Q}, {a + "k_proj.weight", KV}, {a + "v_proj.weight", KV}},
                {{a + "q_proj.bias", Q}, {a + "k_proj.bias", KV}, {a + "v_proj.bias", KV}},
                C,
                qwen2},
               {&LayerWeights::attn_proj,
                &LayerWeights::attn_proj_bias,
                {{a + "o_proj.weight", C}},
                {{a + "o_proj.bias", C}},
                Q,
                false},
               {&LayerWeights::c_fc,
                &LayerWeights::c_fc_bias,
                {{f + "gate_proj.weight", F}, {f + "up_proj.weight", F}},
                {{f + "gate_proj.bias", F}, {f + "up_proj.bias", F}},
                C,
                false},
               {&LayerWeights::mlp_proj,
                &LayerWeights::mlp_proj_bias,
                {{f + "down_proj.weight", C}},
                {{f + "down_proj.bias", C}},
                F,
                false}};
  return p;
}

GlobalNames global_names(Family family) {
  if (family == Family::kGPT2) {
    return {"transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight",
            "transformer.ln_f.bias"};
  }
  return {"model.embed_tokens.weight", "", "model.norm.weight", ""};
}

namespace {

// Bytes a tensor of this type and shape must hold; refuses a block type whose rows are not
// whole blocks.
uint64_t expected_bytes(const std::string& name, const CheckpointTensor& t) {
  uint64_t numel = 1;
  for (uint64_t d : t.shape) numel *= d;
  switch (t.type) {
    case TensorType::kF32:
      return numel * 4;
    case TensorType::kF16:
    case TensorType::kBF16:
      return numel * 2;
    default:
      break;
  }
  if (t.shape.size() != 2 || t.shape[1] % kQ8Block != 0) {
    fail("model file: tensor '", name, "' of type ", tensor_type_name(t.type), " has shape ",
         shape_string(t.shape), "; block types need a matrix whose rows are blocks of ", kQ8Block);
  }
  return numel / kQ8Block * (t.type == TensorType::kQ8_0 ? 34 : 18);
}

// Checks one tensor's presence, shape and byte size; returns it or null (absent, optional).
const CheckpointTensor* check_tensor(const Checkpoint& ck, const std::string& name,
                                     const std::vector<uint64_t>& shape, bool required,
                                     std::set<std::string>& seen) {
  const CheckpointTensor* t = ck.find(name);
  if (!t) {
    if (required) fail("model file: missing tensor '", name, "' ", shape_string(shape));
    return nullptr;
  }
  seen.insert(name);
  if (t->shape != shape) {
    fail("model file: tensor '", name, "' has shape ", shape_string(t->shape), ", expected ",
         shape_string(shape), " (from the config)");
  }
  const uint64_t want = expected_bytes(name, *t);
  if (t->bytes != want || (want > 0 && !t->data && !t->fetch)) {
    fail("model file: tensor '", name, "' (", tensor_type_name(t->type), " ", shape_string(shape),
         ") holds ", t->bytes, " bytes, expected ", want);
  }
  if (is_quantized(t->type) && shape.size() != 2) {
    fail("model file: tensor '", name, "' is ", tensor_type_name(t->type),
         "; only matrices may be");
  }
  return t;
}

}  // namespace

// The whole tensor set: every planned tensor present with its shape, no other.
void check_tensor_set(const Checkpoint& ck, const GPTConfig& c, Family family) {
  const uint64_t C = c.n_embd, V = c.vocab_size;
  std::set<std::string> seen;
  const GlobalNames g = global_names(family);
  check_tensor(ck, g.embed, {V, C}, true, seen);
  if (!g.positions.empty()) {
    check_tensor(ck, g.positions, {uint64_t(ck.config.max_positions), C}, true, seen);
    check_tensor(ck, g.norm_b, {C}, true, seen);
  }
  check_tensor(ck, g.norm_w, {C}, true, seen);
  check_tensor(ck, "lm_head.weight", {V, C}, !ck.config.tied_head, seen);
  for (int l = 0; l < c.n_layer; ++l) {
    const LayerPlan p = layer_plan(family, c, l);
    for (const VectorPlan& v : p.vectors) check_tensor(ck, v.part.name, {v.part.rows}, true, seen);
    for (const LinearPlan& lp : p.linears) {
      for (const Part& w : lp.parts) check_tensor(ck, w.name, {w.rows, lp.k}, true, seen);
      size_t n_bias = 0;
      for (const Part& b : lp.bias_parts) {
        n_bias += check_tensor(ck, b.name, {b.rows}, lp.bias_required, seen) != nullptr;
      }
      if (n_bias != 0 && n_bias != lp.bias_parts.size()) {
        fail("model file: tensor '", lp.bias_parts[0].name, "' and its siblings: ", n_bias, " of ",
             lp.bias_parts.size(), " biases present (all or none)");
      }
    }
  }
  for (const auto& [name, t] : ck.tensors) {
    if (!seen.count(name)) {
      fail("model file: unexpected tensor '", name, "' ", shape_string(t.shape), " for a ",
           family_name(family), " model of ", c.n_layer, " layers");
    }
  }
}

}  // namespace specdec::family
