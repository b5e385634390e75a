// The forward pass: one function, top to bottom, as in llama2.c. Every SIMD line lives in
// kernels/; here only shapes and data flow.
#include "model/gpt_model.h"

#include <algorithm>

#include "base/errors.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/matmul_q8.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "kernels/rope.h"

namespace specdec {

using kernels::add_inplace;
using kernels::attend;
using kernels::attend_gather;
using kernels::layernorm;

namespace {

// Where each token of a pass sits and which cached slots it attends to.
struct PassLayout {
  size_t n_seq = 0;                               // leading tokens that continue the sequence
  size_t seq_len = 0;                             // sequence length every tree node sees
  std::vector<size_t> position;                   // (T,) position embedding index
  std::vector<std::vector<size_t>> tree_visible;  // (T,) tree nodes: ancestor slots + own slot
  std::vector<int> tree_parent;                   // (T - n_seq,) for the cache's bookkeeping
  std::vector<size_t> tree_depth;                 // (T - n_seq,)
};

PassLayout layout_pass(const std::vector<int>* tree_parents, const KVCache& cache, size_t T,
                       int block_size) {
  const size_t pos0 = cache.size();
  PassLayout lay;
  lay.position.resize(T);
  if (!tree_parents) {
    if (cache.tree_size() > 0) {
      fail("forward: the cache holds ", cache.tree_size(),
           " draft-tree slots (commit or truncate)");
    }
    lay.n_seq = T;
    for (size_t t = 0; t < T; ++t) lay.position[t] = pos0 + t;
    return lay;
  }
  const std::vector<int>& par = *tree_parents;
  if (par.size() != T) fail("forward: ", par.size(), " tree parents for ", T, " tokens");
  while (lay.n_seq < T && par[lay.n_seq] == GPTModel::kSequence) ++lay.n_seq;
  if (lay.n_seq > 0 && cache.tree_size() > 0) {
    fail("forward: sequence tokens after ", cache.tree_size(), " cached draft-tree slots");
  }
  for (size_t t = 0; t < lay.n_seq; ++t) lay.position[t] = pos0 + t;
  lay.seq_len = cache.linear_size() + lay.n_seq;
  lay.tree_visible.resize(T);
  for (size_t t = lay.n_seq; t < T; ++t) {
    const int p = par[t];
    const size_t slot = pos0 + t;
    size_t depth = 0;
    std::vector<size_t>& vis = lay.tree_visible[t];
    if (p == GPTModel::kSequence) fail("forward: sequence token ", t, " after tree nodes");
    if (p == KVCache::kTreeRoot) {
      depth = 0;
    } else if (p >= static_cast<int>(lay.seq_len) && static_cast<size_t>(p) < slot) {
      const size_t ps = static_cast<size_t>(p);
      if (ps >= pos0) {  // a node of this pass
        depth = lay.tree_depth[ps - pos0 - lay.n_seq] + 1;
        vis = lay.tree_visible[ps - pos0];
      } else {  // a cached tree slot: walk up to the root
        depth = cache.depth(ps) + 1;
        for (int a = p; a != KVCache::kTreeRoot; a = cache.parent(a)) {
          vis.insert(vis.begin(), static_cast<size_t>(a));
        }
      }
    } else {
      fail("forward: tree parent ", p, " of token ", t, " is not an earlier tree slot (",
           lay.seq_len, "..", slot - 1, ") or ", KVCache::kTreeRoot, " (the root)");
    }
    vis.push_back(slot);
    lay.tree_parent.push_back(p);
    lay.tree_depth.push_back(depth);
    lay.position[t] = lay.seq_len + depth;
    if (lay.position[t] >= static_cast<size_t>(block_size)) {
      fail("forward: tree node ", t, " at position ", lay.position[t], " exceeds the context of ",
           block_size, " tokens (block_size)");
    }
  }
  return lay;
}

// Checks a pass before it touches the cache, so that a failed call leaves it as it was.
void check_pass(const std::vector<int>& tokens, const KVCache& cache, const GPTConfig& cfg) {
  const size_t T = tokens.size(), pos0 = cache.size();
  if (!(cache.config() == cfg)) fail("forward: the KV cache was made for another model config");
  if (T == 0) fail("forward: tokens is empty");
  if (pos0 + T > static_cast<size_t>(cfg.block_size)) {
    fail("forward: ", pos0, " cached + ", T, " new tokens exceed the context of ", cfg.block_size,
         " tokens (block_size)");
  }
  for (size_t t = 0; t < T; ++t) {
    if (tokens[t] < 0 || tokens[t] >= cfg.vocab_size) {
      fail("forward: token ", tokens[t], " at index ", t, " is outside [0, ", cfg.vocab_size, ")");
    }
  }
}

// out (T, C) = the config's norm (LayerNorm or RMSNorm) of each row of x (T, C).
void norm_rows(const GPTConfig& cfg, const std::vector<float>& x, const std::vector<float>& weight,
               const std::vector<float>& bias, size_t T, std::vector<float>& out) {
  const size_t C = cfg.n_embd;
  for (size_t t = 0; t < T; ++t) {
    if (cfg.norm == NormKind::kRmsNorm) {
      kernels::rmsnorm(&x[t * C], weight.data(), C, cfg.norm_eps, &out[t * C]);
    } else {
      layernorm(&x[t * C], weight.data(), bias.data(), C, &out[t * C], cfg.norm_eps);
    }
  }
}

// Rotates the q and k heads of each token's row of qkv (T, Q + 2 KV) by its position.
void rope_rows(const GPTConfig& cfg, const GPTWeights& w, const PassLayout& lay, size_t T,
               std::vector<float>& qkv) {
  const size_t Q = cfg.q_dim(), QKV = Q + 2 * cfg.kv_dim(), hd = cfg.head_size(), half = hd / 2;
  for (size_t t = 0; t < T; ++t) {
    const float* c = &w.rope_cos[lay.position[t] * half];
    const float* s = &w.rope_sin[lay.position[t] * half];
    kernels::rope_half(&qkv[t * QKV], cfg.n_head, hd, c, s);
    kernels::rope_half(&qkv[t * QKV + Q], cfg.kv_heads(), hd, c, s);
  }
}

// Copies the keys and values of qkv (T, Q + 2 KV) into layer l's slots pos0 .. pos0 + T - 1.
void store_kv(const std::vector<float>& qkv, size_t T, const GPTConfig& cfg, int l,
              KVCache& cache) {
  const size_t Q = cfg.q_dim(), KV = cfg.kv_dim(), QKV = Q + 2 * KV;
  const size_t Hkv = cfg.kv_heads(), hs = cfg.head_size(), pos0 = cache.size();
  for (size_t t = 0; t < T; ++t) {
    for (size_t h = 0; h < Hkv; ++h) {
      const float* k = &qkv[t * QKV + Q + h * hs];
      const float* v = &qkv[t * QKV + Q + KV + h * hs];
      std::copy(k, k + hs, cache.keys(l, h) + (pos0 + t) * hs);
      std::copy(v, v + hs, cache.values(l, h) + (pos0 + t) * hs);
    }
  }
}

// att (T, Q) = each token's heads attending over layer l's cached slots: a sequence token to
// slots 0 .. pos0 + t, a tree node to the sequence, its ancestors and itself; query head h reads
// KV head h / (H / Hkv). One (token, head) pair per item, split over the pool: each output row
// of att is one item's, computed as on one thread. scores: (pos0 + T,) one query row's weights,
// per thread.
void attend_pass(kernels::ThreadPool* pool, const std::vector<float>& qkv, const PassLayout& lay,
                 size_t T, const GPTConfig& cfg, int l, KVCache& cache, std::vector<float>& att) {
  const size_t Q = cfg.q_dim(), QKV = Q + 2 * cfg.kv_dim(), H = cfg.n_head;
  const size_t group = H / cfg.kv_heads(), hs = cfg.head_size(), pos0 = cache.size();
  // A multiply-add of attention (scores, softmax's exp, the weighted sum) costs ~4 of a matmul's
  // (`specdec bench --only breakdown`: 5.4 against 19 GMAC/s), so short contexts split too.
  constexpr size_t kAttendMacCost = 4;
  const size_t attend_macs = 2 * T * H * (pos0 + T) * hs * kAttendMacCost;
  const size_t parts = kernels::parts_for(pool, attend_macs, kernels::kMinMacsPerPart);
  kernels::for_ranges(pool, parts, T * H, 1, [&](size_t i0, size_t i1) {
    thread_local std::vector<float> scores;
    if (scores.size() < pos0 + T) scores.resize(pos0 + T);
    for (size_t i = i0; i < i1; ++i) {
      const size_t t = i / H, h = i % H, kvh = h / group;
      const float* q = &qkv[t * QKV + h * hs];
      float* out = &att[t * Q + h * hs];
      if (t < lay.n_seq) {
        attend(q, cache.keys(l, kvh), cache.values(l, kvh), pos0 + t + 1, hs, scores.data(), out);
      } else {
        const std::vector<size_t>& vis = lay.tree_visible[t];
        attend_gather(q, cache.keys(l, kvh), cache.values(l, kvh), lay.seq_len, vis.data(),
                      vis.size(), hs, scores.data(), out);
      }
    }
  });
}

// The bias of a Linear layer, or null when the family has none.
const float* bias_or_null(const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); }

// x (T, C) = wte[token] (+ wpe[position] for learned positions).
void embed(const GPTConfig& cfg, const GPTWeights& w, const std::vector<int>& tokens,
           const PassLayout& lay, std::vector<float>& x) {
  const size_t C = cfg.n_embd;
  std::vector<float> row(w.wte.empty() ? C : 0);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const float* tok = token_embedding(cfg, w, static_cast<size_t>(tokens[t]), row.data());
    if (cfg.positions == PositionKind::kRotary) {
      std::copy(tok, tok + C, &x[t * C]);
      continue;
    }
    const float* pos = w.wpe.data() + lay.position[t] * C;
    for (size_t c = 0; c < C; ++c) x[t * C + c] = tok[c] + pos[c];
  }
}

}  // namespace

std::vector<float> GPTModel::forward(const std::vector<int>& tokens, KVCache& cache,
                                     const std::vector<int>* tree_parents,
                                     std::vector<float>* hidden) const {
  const GPTConfig& cfg = config_;
  const size_t T = tokens.size();  // new tokens in this pass
  const size_t C = cfg.n_embd, V = cfg.vocab_size, F = cfg.ff();
  const size_t Q = cfg.q_dim(), QKV = Q + 2 * cfg.kv_dim();  // q width; q | k | v width
  const bool swiglu = cfg.mlp == MlpKind::kSwiGlu;
  const size_t FC = swiglu ? 2 * F : F;  // c_fc's outputs: gate | up, or fc
  const size_t pos0 = cache.size();      // slot of tokens[0]
  check_pass(tokens, cache, cfg);
  const PassLayout lay = layout_pass(tree_parents, cache, T, cfg.block_size);
  kernels::ThreadPool* const pool = pool_;  // null: one thread

  // Activations, one row per new token.
  std::vector<float> x(T * C);      // (T, C) residual stream
  std::vector<float> xn(T * C);     // (T, C) norm output
  std::vector<float> qkv(T * QKV);  // (T, Q + 2 KV) q | k | v, heads side by side in each
  std::vector<float> att(T * Q);    // (T, Q) attention output, heads concatenated
  std::vector<float> proj(T * C);   // (T, C) a block's contribution to the residual
  std::vector<float> fc(T * FC);    // (T, FC) c_fc's output
  std::vector<float> act(swiglu ? T * F : 0);  // (T, F) SwiGLU's output (GELU works in fc)
  std::vector<float> logits(T * V);            // (T, V)
  // 8-bit weights: a Linear layer's input quantized per block of 32 (kernels/matmul_q8.h).
  const bool int8 = weight_type_ == Weights::kInt8;
  const size_t K = std::max({C, Q, F});                         // widest Linear input
  std::vector<int16_t> x8(int8 ? T * K : 0);                    // (T, k) k <= K
  std::vector<float> sx(int8 ? T * K / kernels::kQ8Block : 0);  // (T, k / 32)
  // out (T, n) = in (T, k) @ W^T + bias, for either layout of W.
  auto linear = [&](const float* in, size_t k, const LinearWeights& W, size_t n,
                    const std::vector<float>& bias, float* out) {
    apply_linear(pool, in, T, k, W, n, bias_or_null(bias), out, x8.data(), sx.data());
  };

  embed(cfg, weights_, tokens, lay, x);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const LayerWeights& w = weights_.layers[l];

    // x = x + attn(norm_1(x)); this pass's keys and values are stored first, since token t
    // attends to slots that include the earlier tokens of the same pass.
    norm_rows(cfg, x, w.ln_1_weight, w.ln_1_bias, T, xn);
    linear(xn.data(), C, w.c_attn, QKV, w.c_attn_bias, qkv.data());
    if (cfg.positions == PositionKind::kRotary) rope_rows(cfg, weights_, lay, T, qkv);
    store_kv(qkv, T, cfg, l, cache);
    attend_pass(pool, qkv, lay, T, cfg, l, cache, att);
    linear(att.data(), Q, w.attn_proj, C, w.attn_proj_bias, proj.data());
    add_inplace(x.data(), proj.data(), T * C);

    // x = x + mlp(norm_2(x)): c_proj(gelu(c_fc(.))) or down(silu(gate(.)) * up(.))
    norm_rows(cfg, x, w.ln_2_weight, w.ln_2_bias, T, xn);
    linear(xn.data(), C, w.c_fc, FC, w.c_fc_bias, fc.data());
    if (swiglu) {
      kernels::swiglu(pool, fc.data(), T, F, act.data());
    } else if (cfg.mlp == MlpKind::kGeluTanh) {
      kernels::gelu_tanh(pool, fc.data(), T * F);
    } else {
      kernels::gelu(pool, fc.data(), T * F);
    }
    linear(swiglu ? act.data() : fc.data(), F, w.mlp_proj, C, w.mlp_proj_bias, proj.data());
    add_inplace(x.data(), proj.data(), T * C);
  }

  // logits = norm_f(x) @ lm_head^T
  norm_rows(cfg, x, weights_.ln_f_weight, weights_.ln_f_bias, T, xn);
  linear(xn.data(), C, weights_.lm_head, V, {}, logits.data());
  if (hidden) hidden->assign(xn.begin(), xn.end());
  // Commit the pass: its slots, and the tree nodes' parents and depths.
  cache.size_ = pos0 + T;
  cache.tree_parent_.insert(cache.tree_parent_.end(), lay.tree_parent.begin(),
                            lay.tree_parent.end());
  cache.tree_depth_.insert(cache.tree_depth_.end(), lay.tree_depth.begin(), lay.tree_depth.end());
  return logits;
}

const float* token_embedding(const GPTConfig& cfg, const GPTWeights& w, size_t token,
                             float* scratch) {
  const size_t C = cfg.n_embd;
  if (!w.wte.empty()) return w.wte.data() + token * C;
  const LinearWeights& h = w.lm_head;
  if (h.int8()) {
    kernels::unpack_row_q8(h.q8.data(), h.scale.data(), cfg.vocab_size, C, token, scratch);
  } else {
    kernels::unpack_row(h.f32.data(), cfg.vocab_size, C, token, scratch);
  }
  return scratch;
}

void apply_linear(kernels::ThreadPool* pool, const float* in, size_t m, size_t k,
                  const LinearWeights& W, size_t n, const float* bias, float* out, int16_t* x8,
                  float* sx) {
  if (!W.int8()) return kernels::matmul(pool, in, m, k, W.f32.data(), n, bias, out);
  kernels::quantize_rows_q8(in, m, k, x8, sx);
  kernels::matmul_q8(pool, x8, sx, m, k, W.q8.data(), W.scale.data(), n, bias, out);
}

const char* weights_name(Weights w) { return w == Weights::kInt8 ? "int8" : "f32"; }

size_t GPTModel::weight_bytes() const {
  const GPTWeights& w = weights_;
  size_t bytes = (w.wte.size() + w.wpe.size() + w.rope_cos.size() + w.rope_sin.size() +
                  w.ln_f_weight.size() + w.ln_f_bias.size()) *
                     4 +
                 w.lm_head.bytes();
  for (const LayerWeights& l : w.layers) {
    bytes += l.c_attn.bytes() + l.attn_proj.bytes() + l.c_fc.bytes() + l.mlp_proj.bytes();
    bytes += (l.ln_1_weight.size() + l.ln_1_bias.size() + l.c_attn_bias.size() +
              l.attn_proj_bias.size() + l.ln_2_weight.size() + l.ln_2_bias.size() +
              l.c_fc_bias.size() + l.mlp_proj_bias.size()) *
             4;
  }
  return bytes;
}

}  // namespace specdec
