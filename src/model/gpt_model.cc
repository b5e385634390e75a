// The forward pass: one function, top to bottom, as in llama2.c. Every SIMD line lives in
// kernels/; here only shapes and data flow.
#include "model/gpt_model.h"

#include <algorithm>

#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "specdec/errors.h"

namespace specdec {

using kernels::add_inplace;
using kernels::attend;
using kernels::gelu;
using kernels::layernorm;
using kernels::matmul;

std::vector<float> GPTModel::forward(const std::vector<int>& tokens, KVCache& cache) const {
  const GPTConfig& cfg = config_;
  const size_t T = tokens.size();  // new tokens in this pass
  const size_t C = cfg.n_embd, V = cfg.vocab_size, H = cfg.n_head, hs = cfg.head_size();
  const size_t pos0 = cache.size();  // position of tokens[0]
  // Validate before touching the cache, so that a failed call leaves it as it was.
  if (!(cache.config() == cfg)) fail("forward: the KV cache was made for another model config");
  if (T == 0) fail("forward: tokens is empty");
  if (pos0 + T > static_cast<size_t>(cfg.block_size)) {
    fail("forward: ", pos0, " cached + ", T, " new tokens exceed the context of ", cfg.block_size,
         " tokens (block_size)");
  }
  for (size_t t = 0; t < T; ++t) {
    if (tokens[t] < 0 || tokens[t] >= cfg.vocab_size) {
      fail("forward: token ", tokens[t], " at index ", t, " is outside [0, ", V, ")");
    }
  }

  // Activations, one row per new token.
  std::vector<float> x(T * C);           // (T, C) residual stream
  std::vector<float> xn(T * C);          // (T, C) layer-norm output
  std::vector<float> qkv(T * 3 * C);     // (T, 3C) q | k | v, heads side by side in each
  std::vector<float> att(T * C);         // (T, C) attention output, heads concatenated
  std::vector<float> proj(T * C);        // (T, C) a block's contribution to the residual
  std::vector<float> hidden(T * 4 * C);  // (T, 4C) MLP hidden layer
  std::vector<float> scores(pos0 + T);   // (pos0 + T,) one query row's attention weights
  std::vector<float> logits(T * V);      // (T, V)

  // x = wte[token] + wpe[position]
  for (size_t t = 0; t < T; ++t) {
    const float* tok = weights_.wte.data() + static_cast<size_t>(tokens[t]) * C;
    const float* pos = weights_.wpe.data() + (pos0 + t) * C;
    for (size_t c = 0; c < C; ++c) x[t * C + c] = tok[c] + pos[c];
  }

  for (int l = 0; l < cfg.n_layer; ++l) {
    const LayerWeights& w = weights_.layers[l];

    // x = x + attn(ln_1(x))
    for (size_t t = 0; t < T; ++t) {
      layernorm(&x[t * C], w.ln_1_weight.data(), w.ln_1_bias.data(), C, &xn[t * C]);
    }
    matmul(xn.data(), T, C, w.c_attn.data(), 3 * C, w.c_attn_bias.data(), qkv.data());
    // Store this pass's keys and values first: query t attends to positions 0 .. pos0 + t,
    // which include the earlier tokens of the same pass.
    for (size_t t = 0; t < T; ++t) {
      for (size_t h = 0; h < H; ++h) {
        const float* k = &qkv[t * 3 * C + C + h * hs];
        const float* v = &qkv[t * 3 * C + 2 * C + h * hs];
        std::copy(k, k + hs, cache.keys(l, h) + (pos0 + t) * hs);
        std::copy(v, v + hs, cache.values(l, h) + (pos0 + t) * hs);
      }
    }
    for (size_t t = 0; t < T; ++t) {
      for (size_t h = 0; h < H; ++h) {
        attend(&qkv[t * 3 * C + h * hs], cache.keys(l, h), cache.values(l, h), pos0 + t + 1, hs,
               scores.data(), &att[t * C + h * hs]);
      }
    }
    matmul(att.data(), T, C, w.attn_proj.data(), C, w.attn_proj_bias.data(), proj.data());
    add_inplace(x.data(), proj.data(), T * C);

    // x = x + mlp(ln_2(x)), mlp = c_proj(gelu(c_fc(.)))
    for (size_t t = 0; t < T; ++t) {
      layernorm(&x[t * C], w.ln_2_weight.data(), w.ln_2_bias.data(), C, &xn[t * C]);
    }
    matmul(xn.data(), T, C, w.c_fc.data(), 4 * C, w.c_fc_bias.data(), hidden.data());
    gelu(hidden.data(), T * 4 * C);
    matmul(hidden.data(), T, 4 * C, w.mlp_proj.data(), C, w.mlp_proj_bias.data(), proj.data());
    add_inplace(x.data(), proj.data(), T * C);
  }

  // logits = ln_f(x) @ lm_head^T
  for (size_t t = 0; t < T; ++t) {
    layernorm(&x[t * C], weights_.ln_f_weight.data(), weights_.ln_f_bias.data(), C, &xn[t * C]);
  }
  matmul(xn.data(), T, C, weights_.lm_head.data(), V, nullptr, logits.data());
  cache.size_ = pos0 + T;
  return logits;
}

}  // namespace specdec
