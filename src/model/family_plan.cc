// The tensor plan of the Llama / Qwen2 / GPT-2 families and our files (model/family_plan.h) and
// the checks of a checkpoint's tensors against it. The conversions are family_convert.cc's.
#include "model/family_plan.h"

#include <cmath>
#include <cstring>
#include <iterator>
#include <set>
#include <utility>

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

namespace {

// A width of the plan, named so that the tables below hold no numbers.
enum Dim : uint8_t { kNone, kC, kQ, kKV, kF, k3C };

uint64_t width(Dim d, const GPTConfig& c) {
  switch (d) {
    case kC:
      return c.n_embd;
    case kQ:
      return c.q_dim();
    case kKV:
      return c.kv_dim();
    case kF:
      return c.ff();
    case k3C:
      return 3 * uint64_t(c.n_embd);
    default:
      return 0;
  }
}

struct VectorSpec {
  std::vector<float> LayerWeights::*field;
  const char* name;  // after the layer's prefix, without ".weight" / ".bias"
  const char* suffix;
};

// A Linear layer: up to 3 parts fused (rows in this order), in_features k; "{part}.weight" and
// "{part}.bias".
struct LinearSpec {
  LinearWeights LayerWeights::*weight;
  std::vector<float> LayerWeights::*bias;
  std::pair<const char*, Dim> parts[3];
  Dim k;
};

const VectorSpec kGpt2Vectors[] = {{&LayerWeights::ln_1_weight, "ln_1", ".weight"},
                                   {&LayerWeights::ln_1_bias, "ln_1", ".bias"},
                                   {&LayerWeights::ln_2_weight, "ln_2", ".weight"},
                                   {&LayerWeights::ln_2_bias, "ln_2", ".bias"}};
const LinearSpec kGpt2Linears[] = {
    {&LayerWeights::c_attn, &LayerWeights::c_attn_bias, {{"attn.c_attn", k3C}}, kC},
    {&LayerWeights::attn_proj, &LayerWeights::attn_proj_bias, {{"attn.c_proj", kC}}, kC},
    {&LayerWeights::c_fc, &LayerWeights::c_fc_bias, {{"mlp.c_fc", kF}}, kC},
    {&LayerWeights::mlp_proj, &LayerWeights::mlp_proj_bias, {{"mlp.c_proj", kC}}, kF}};
const VectorSpec kLlamaVectors[] = {
    {&LayerWeights::ln_1_weight, "input_layernorm", ".weight"},
    {&LayerWeights::ln_2_weight, "post_attention_layernorm", ".weight"}};
const LinearSpec kLlamaLinears[] = {
    {&LayerWeights::c_attn,
     &LayerWeights::c_attn_bias,
     {{"self_attn.q_proj", kQ}, {"self_attn.k_proj", kKV}, {"self_attn.v_proj", kKV}},
     kC},
    {&LayerWeights::attn_proj, &LayerWeights::attn_proj_bias, {{"self_attn.o_proj", kC}}, kQ},
    {&LayerWeights::c_fc,
     &LayerWeights::c_fc_bias,
     {{"mlp.gate_proj", kF}, {"mlp.up_proj", kF}},
     kC},
    {&LayerWeights::mlp_proj, &LayerWeights::mlp_proj_bias, {{"mlp.down_proj", kC}}, kF}};

}  // namespace

// The layer's tensors: Llama / Qwen2 (model.layers.{l}.) or GPT-2 and our files
// (transformer.h.{l}.), from the tables above. GPT-2's biases are required; Qwen2's q/k/v biases
// too; every other bias is optional (all of a Linear's parts or none).
LayerPlan layer_plan(Family family, const GPTConfig& c, int l) {
  const bool gpt2 = family == Family::kGPT2;
  const std::string at = (gpt2 ? "transformer.h." : "model.layers.") + std::to_string(l) + ".";
  LayerPlan p;
  const VectorSpec* vectors = gpt2 ? kGpt2Vectors : kLlamaVectors;
  const size_t n_vectors = gpt2 ? std::size(kGpt2Vectors) : std::size(kLlamaVectors);
  for (size_t i = 0; i < n_vectors; ++i) {
    const VectorSpec& v = vectors[i];
    p.vectors.push_back({v.field, {at + v.name + v.suffix, width(kC, c)}});
  }
  for (const LinearSpec& s : gpt2 ? kGpt2Linears : kLlamaLinears) {  // 4 each
    LinearPlan lp{s.weight, s.bias, {}, {}, width(s.k, c), gpt2};
    for (const auto& [name, rows] : s.parts) {
      if (!name) break;
      lp.parts.push_back({at + name + ".weight", width(rows, c)});
      lp.bias_parts.push_back({at + name + ".bias", width(rows, c)});
    }
    p.linears.push_back(std::move(lp));
  }
  if (family == Family::kQwen2) p.linears[0].bias_required = true;  // q/k/v biases always
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
