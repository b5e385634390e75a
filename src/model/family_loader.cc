// GPTModel::from_checkpoint: the config of a Llama / Qwen2 / GPT-2 checkpoint as a GPTConfig
// (named differences), its limits, then every tensor of the plan (model/family_plan.h) converted
// and packed for the kernels. Everything that can be checked is checked before any weight is
// converted.
#include <algorithm>
#include <cmath>
#include <fstream>

#include "base/errors.h"
#include "kernels/matmul.h"
#include "kernels/matmul_q8.h"
#include "kernels/rope.h"
#include "model/family_plan.h"
#include "model/gpt_model.h"

namespace specdec {
namespace {

using kernels::kQ8Block;

// The checkpoint's hyperparameters as the forward pass's named differences.
GPTConfig config_from(const FamilyConfig& f, int context) {
  check_checkpoint_config(f);
  GPTConfig c;
  c.vocab_size = f.vocab_size;
  c.n_layer = f.n_layer;
  c.n_head = f.n_head;
  c.n_kv_head = f.n_kv_head;
  c.n_embd = f.n_embd;
  c.head_dim = f.head_dim;
  c.n_ff = f.n_ff;
  c.norm_eps = f.norm_eps;
  const int cap = std::min(f.max_positions, kMaxBlockSize);
  if (context == 0)
    context = f.context ? f.context : std::min(f.max_positions, kDefaultFamilyContext);
  if (context < 1 || context > cap) {
    fail("model file: context ", context, " is outside 1..", cap, " (max_positions ",
         f.max_positions, ", limit ", kMaxBlockSize, ")");
  }
  c.block_size = context;
  if (f.family == Family::kGPT2) {
    c.mlp = f.gelu_erf ? MlpKind::kGeluErf : MlpKind::kGeluTanh;
    return c;
  }
  c.norm = NormKind::kRmsNorm;
  c.positions = PositionKind::kRotary;
  c.rope_theta = f.rope_theta;
  c.rope_scaling = f.rope_scaling;
  c.mlp = MlpKind::kSwiGlu;
  return c;
}

// Weights and KV cache within kMaxFamily*; 8-bit needs whole blocks along every Linear input.
// widths: also the 8-bit block rule (false: the byte limits alone).
void check_memory(const GPTConfig& c, bool int8, bool head_int8, bool tied, bool widths = true) {
  const uint64_t C = c.n_embd, L = c.n_layer, KV = c.kv_dim(), Q = c.q_dim();
  const uint64_t bytes = family::weight_bytes(c, int8, head_int8, tied);
  if (bytes > kMaxFamilyParamBytes) {
    fail("model file: the weights need ", bytes, " bytes in memory (", int8 ? "int8" : "f32",
         "), over the limit of ", kMaxFamilyParamBytes);
  }
  const uint64_t kv = 2 * L * uint64_t(c.block_size) * KV * 4;
  if (kv > kMaxFamilyKVCacheBytes) {
    fail("model file: a KV cache of ", L, " layers x ", c.block_size, " positions x ", KV,
         " needs ", kv, " bytes, over the limit of ", kMaxFamilyKVCacheBytes,
         " (ask for a shorter context)");
  }
  if (int8 && widths) {
    for (uint64_t k : {C, Q, uint64_t(c.ff())}) {
      if (k % kQ8Block != 0) {
        fail("model file: 8-bit weights need every Linear input width (n_embd ", C,
             ", n_head * head_dim ", Q, ", n_ff ", c.ff(), ") to be a multiple of ", kQ8Block);
      }
    }
  }
}

// What the loader converts through, kept across tensors: grown to the largest size by
// resize_scratch and never zeroed (every byte is written before it is read), so a tensor costs
// its bytes' passes only (natively, each fresh allocation also costs a page fault per 4 KiB).
struct Scratch {
  Buffer<uint8_t> bytes;  // a fetched tensor's bytes
  Buffer<float> f;        // a Linear weight (n, k) as float, or a block of the head's rows
  Buffer<int8_t> w8;      // a Linear weight's quants (n, k), row-major
  Buffer<float> scales;   // and their scales (n, k / 32)
};

// A fused Linear weight (n, k) from its parts, packed: float32, or 8-bit blocks (quantized
// parts taken as they are, float parts quantized as from_safetensors does).
LinearWeights load_linear(const Checkpoint& ck, const family::LinearPlan& p, bool int8,
                          Scratch& sc) {
  const size_t k = p.k;
  size_t n = 0;
  for (const family::Part& part : p.parts) n += part.rows;
  LinearWeights out;
  if (!int8) {
    resize_scratch(sc.f, n * k);
    size_t row = 0;
    for (const family::Part& part : p.parts) {
      family::to_floats_into(part.name, *ck.find(part.name), &sc.f[row * k], sc.bytes);
      row += part.rows;
    }
    out.f32.resize(kernels::packed_size(n, k));
    kernels::pack_weights(sc.f.data(), n, k, out.f32.data());
    return out;
  }
  resize_scratch(sc.w8, n * k);
  resize_scratch(sc.scales, n * k / kQ8Block);
  size_t row = 0;
  for (const family::Part& part : p.parts) {
    const CheckpointTensor& t = *ck.find(part.name);
    int8_t* q = &sc.w8[row * k];
    float* s = &sc.scales[row * k / kQ8Block];
    if (family::is_quantized(t.type)) {
      family::blocks_to_q8(part.name, t, q, s, sc.bytes);
    } else {
      resize_scratch(sc.f, part.rows * k);
      family::to_floats_into(part.name, t, sc.f.data(), sc.bytes);
      kernels::quantize_weights_q8(sc.f.data(), part.rows, k, q, s);
      for (size_t i = 0; i < part.rows * k / kQ8Block; ++i) {
        if (!(std::isfinite(s[i]) && s[i] > 0.0f)) {
          fail("model file: tensor '", part.name, "' cannot be quantized (block ", i, " scale ",
               s[i], ")");
        }
      }
    }
    row += part.rows;
  }
  out.q8.resize(kernels::q8_packed_bytes(n, k));
  out.scale.resize(kernels::q8_packed_scales(n, k));
  kernels::pack_weights_q8(sc.w8.data(), sc.scales.data(), n, k, out.q8.data(), out.scale.data());
  return out;
}

// The LM head (V, C) packed from tensor t (lm_head.weight, or the embedding when tied), a block of
// rows at a time: its bytes once (a streamed tensor read a block at a time where it can be), never
// a (V, C) copy beside the packed rows. An 8-bit model keeps a head stored in blocks (Q8_0 / Q4_0)
// as our 8-bit blocks, as its Linear weights; any other head is float32 (gpt_model.h, Weights).
LinearWeights packed_head(const std::string& name, const CheckpointTensor& t, size_t V, size_t C,
                          bool int8, Scratch& sc) {
  const size_t row_bytes = t.bytes / V;  // every type stores rows whole (blocks along C)
  const bool by_block = !t.data && t.fetch_range;
  const uint8_t* bytes = by_block ? nullptr : tensor_bytes(t, sc.bytes);
  const bool blocks = int8 && family::is_quantized(t.type);
  LinearWeights out;
  if (blocks) {
    out.q8.resize(kernels::q8_packed_bytes(V, C));
    out.scale.resize(kernels::q8_packed_scales(V, C));
    kernels::pack_weights_q8_begin(V, C, out.q8.data());
  } else {
    out.f32.resize(kernels::packed_size(V, C));
    kernels::pack_weights_begin(V, C, out.f32.data());
  }
  constexpr size_t kBlockRows = 1024;  // a multiple of the panel's rows
  Buffer<uint8_t> none;                // the part's bytes are in memory: nothing to fetch
  for (size_t r = 0; r < V; r += kBlockRows) {
    const size_t rows = std::min(kBlockRows, V - r);
    const uint8_t* at = bytes ? bytes + r * row_bytes : nullptr;
    if (by_block) {
      resize_scratch(sc.bytes, rows * row_bytes);
      t.fetch_range(r * row_bytes, rows * row_bytes, sc.bytes.data());
      at = sc.bytes.data();
    }
    CheckpointTensor part{t.type, {rows, C}, at, rows * row_bytes, {}, {}};
    if (blocks) {
      resize_scratch(sc.w8, rows * C);
      resize_scratch(sc.scales, rows * C / kQ8Block);
      family::blocks_to_q8(name, part, sc.w8.data(), sc.scales.data(), none, r * C / kQ8Block);
      kernels::pack_weights_q8_rows(sc.w8.data(), sc.scales.data(), r, rows, V, C, out.q8.data(),
                                    out.scale.data());
    } else {
      resize_scratch(sc.f, rows * C);
      family::to_floats_into(name, part, sc.f.data(), none, r * C);
      kernels::pack_weights_rows(sc.f.data(), r, rows, V, C, out.f32.data());
    }
  }
  return out;
}

// Whether any Linear weight of the checkpoint is stored in blocks (Q8_0 / Q4_0).
bool has_quantized_linear(const Checkpoint& ck, const GPTConfig& c, Family family) {
  for (int l = 0; l < c.n_layer; ++l) {
    for (const family::LinearPlan& p : family::layer_plan(family, c, l).linears) {
      for (const family::Part& part : p.parts) {
        if (family::is_quantized(ck.find(part.name)->type)) return true;
      }
    }
  }
  return false;
}

LayerWeights load_layer(const Checkpoint& ck, const family::LayerPlan& plan, bool int8,
                        Scratch& sc) {
  LayerWeights lw;
  for (const family::VectorPlan& v : plan.vectors) {
    lw.*v.field = family::to_floats(v.part.name, *ck.find(v.part.name));
  }
  for (const family::LinearPlan& p : plan.linears) {
    lw.*p.weight = load_linear(ck, p, int8, sc);
    std::vector<float>& bias = lw.*p.bias;
    for (const family::Part& b : p.bias_parts) {
      if (const CheckpointTensor* t = ck.find(b.name)) {
        const std::vector<float> f = family::to_floats(b.name, *t);
        bias.insert(bias.end(), f.begin(), f.end());
      }
    }
  }
  return lw;
}

}  // namespace

CheckedCheckpoint check_checkpoint(const Checkpoint& ck, const Weights* weights, int context) {
  const Family family = ck.config.family;
  const GPTConfig cfg = config_from(ck.config, context);
  const family::GlobalNames g = family::global_names(family);
  const std::string head = ck.config.tied_head ? g.embed : "lm_head.weight";
  // What the config claims is checked against the memory limits first: the least it can need
  // (8-bit unless f32 is asked for), before its tensors are looked at, so that a file claiming
  // a huge model is refused by this limit, not by a shape. Then the tensors against the config,
  // then the memory of the model as it will be held (an 8-bit model keeps a head stored in
  // blocks as 8-bit blocks: packed_head).
  const bool least_int8 = !weights || *weights == Weights::kInt8;
  check_memory(cfg, least_int8, least_int8, ck.config.tied_head, /*widths=*/weights != nullptr);
  family::check_tensor_set(ck, cfg, family);
  const bool stored_int8 = has_quantized_linear(ck, cfg, family);
  const bool int8 = weights ? *weights == Weights::kInt8 : stored_int8;
  check_memory(cfg, int8, int8 && family::is_quantized(ck.find(head)->type), ck.config.tied_head);
  return {cfg, int8 ? Weights::kInt8 : Weights::kF32};
}

GPTModel GPTModel::from_checkpoint(const Checkpoint& ck, const Weights* weights, int context) {
  const CheckedCheckpoint checked = check_checkpoint(ck, weights, context);
  const GPTConfig& cfg = checked.config;
  const bool int8 = checked.weights == Weights::kInt8;
  const Family family = ck.config.family;
  const family::GlobalNames g = family::global_names(family);
  const std::string head = ck.config.tied_head ? g.embed : "lm_head.weight";

  GPTModel model;
  model.config_ = cfg;
  model.weight_type_ = int8 ? Weights::kInt8 : Weights::kF32;
  GPTWeights& w = model.weights_;
  const size_t C = cfg.n_embd;
  // Tied: the embedding is held once, as the head's packed rows (token_embedding unpacks a row).
  if (!ck.config.tied_head) w.wte = family::to_floats(g.embed, *ck.find(g.embed));
  if (cfg.positions == PositionKind::kLearned) {
    w.wpe = family::to_floats(g.positions, *ck.find(g.positions));
    w.wpe.resize(static_cast<size_t>(cfg.block_size) * C);  // the positions the model runs
  } else {
    const size_t half = cfg.head_size() / 2, T = cfg.block_size;
    const kernels::RopeScaling& s = cfg.rope_scaling;
    const std::vector<double> inv =
        kernels::rope_inv_freq(cfg.rope_theta, cfg.head_size(), s.factor != 0.0 ? &s : nullptr);
    w.rope_cos.resize(T * half);
    w.rope_sin.resize(T * half);
    kernels::rope_table(inv, T, w.rope_cos.data(), w.rope_sin.data());
  }
  Scratch sc;
  for (int l = 0; l < cfg.n_layer; ++l) {
    w.layers.push_back(load_layer(ck, family::layer_plan(family, cfg, l), int8, sc));
  }
  w.ln_f_weight = family::to_floats(g.norm_w, *ck.find(g.norm_w));
  if (!g.norm_b.empty()) w.ln_f_bias = family::to_floats(g.norm_b, *ck.find(g.norm_b));
  sc = Scratch{};  // the layers' scratch freed before the head's (the largest tensor)
  w.lm_head = packed_head(head, *ck.find(head), cfg.vocab_size, C, int8, sc);
  return model;
}

}  // namespace specdec
