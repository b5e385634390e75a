// The matmuls of a model's forward pass: the bytes and operations they cost (the roofline), and
// where the time of a pass goes (pass_breakdown).
#include <algorithm>

#include "base/errors.h"
#include "bench/bench.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/matmul_q8.h"
#include "kernels/ops.h"
#include "sampling/rng.h"

namespace specdec::bench {
namespace {

// One linear layer of a model as the matmul kernel sees it: W (n, k) packed (float32 w, or
// 8-bit q8 + scale), bias or null.
struct ModelMatmul {
  size_t k, n;
  const float* w;
  const float* bias;
  const int8_t* q8 = nullptr;
  const float* scale = nullptr;
  size_t bytes = 0;  // of the packed weights
};

ModelMatmul linear_of(const LinearWeights& w, size_t k, size_t n, const float* bias) {
  return {k, n, w.f32.data(), bias, w.int8() ? w.q8.data() : nullptr, w.scale.data(), w.bytes()};
}

// out (m, n) = x (m, k) W^T + bias on one thread, as forward() runs it (8-bit: x quantized
// first, into x8 / sx of at least m * k and m * k / 32).
void run_matmul(const ModelMatmul& l, const float* x, size_t m, float* out,
                std::vector<int16_t>& x8, std::vector<float>& sx) {
  if (!l.q8) return kernels::matmul(x, m, l.k, l.w, l.n, l.bias, out);
  if (x8.size() < m * l.k) x8.resize(m * l.k);
  if (sx.size() < m * l.k / kernels::kQ8Block) sx.resize(m * l.k / kernels::kQ8Block);
  kernels::quantize_rows_q8(x, m, l.k, x8.data(), sx.data());
  kernels::matmul_q8(x8.data(), sx.data(), m, l.k, l.q8, l.scale, l.n, l.bias, out);
}

// Every matmul of a forward pass of `model`, in forward order (per layer: c_attn, attn c_proj,
// c_fc, mlp c_proj; then the LM head).
std::vector<ModelMatmul> model_matmuls(const GPTModel& model) {
  const size_t C = model.config().n_embd, V = model.config().vocab_size;
  const GPTWeights& w = model.weights();
  std::vector<ModelMatmul> out;
  for (const LayerWeights& l : w.layers) {
    out.push_back(linear_of(l.c_attn, C, 3 * C, l.c_attn_bias.data()));
    out.push_back(linear_of(l.attn_proj, C, C, l.attn_proj_bias.data()));
    out.push_back(linear_of(l.c_fc, C, 4 * C, l.c_fc_bias.data()));
    out.push_back(linear_of(l.mlp_proj, 4 * C, C, l.mlp_proj_bias.data()));
  }
  out.push_back(linear_of(w.lm_head, C, V, nullptr));
  return out;
}

}  // namespace

size_t matmul_weight_bytes(const GPTModel& model) {
  size_t bytes = 0;
  for (const ModelMatmul& m : model_matmuls(model)) {
    if (m.q8) {  // the quants and scales the kernel reads (no header)
      bytes += m.bytes - kernels::kQ8HeaderBytes;
    } else {
      bytes += (m.n + kernels::kPanelRows - 1) / kernels::kPanelRows * kernels::kPanelRows * m.k *
               sizeof(float);
    }
  }
  return bytes;
}

double matmul_flops_per_token(const GPTModel& model) {
  double flops = 0.0;
  for (const ModelMatmul& m : model_matmuls(model)) flops += 2.0 * m.n * m.k;
  return flops;
}

double matmul_int_ops_per_token(const GPTModel& model) {
  double ops = 0.0;
  for (const ModelMatmul& m : model_matmuls(model)) {
    if (m.q8) ops += 2.0 * m.n * m.k;
  }
  return ops;
}

double roofline_ms(const GPTModel& model, size_t k, double read_gbs, double peak_gflops,
                   double peak_int_gops) {
  const double memory = matmul_weight_bytes(model) / (read_gbs * 1e6);
  const double int_ops = peak_int_gops > 0.0 ? matmul_int_ops_per_token(model) : 0.0;
  const double arithmetic = k * ((matmul_flops_per_token(model) - int_ops) / (peak_gflops * 1e6) +
                                 (int_ops > 0.0 ? int_ops / (peak_int_gops * 1e6) : 0.0));
  return std::max(memory, arithmetic);
}

namespace {

// Mean ms of fn() over `calls` calls.
template <typename Fn>
double mean_ms(int calls, Fn fn) {
  const double t0 = now_ms();
  for (int c = 0; c < calls; ++c) fn();
  return (now_ms() - t0) / calls;
}

// The kernels of GPTModel::forward timed on their own with a model's shapes (pass_breakdown),
// on random inputs: the widest matmul input, a KV cache block per (layer, head), this pass's
// queries, and pre-GELU activations.
class KernelTimes {
 public:
  KernelTimes(const GPTModel& model, const std::vector<size_t>& pasts, size_t max_k)
      : cfg_(model.config()), pasts_(pasts), layers_(model_matmuls(model)) {
    const size_t C = cfg_.n_embd, V = cfg_.vocab_size, H = cfg_.n_head, hs = cfg_.head_size();
    const size_t L = cfg_.n_layer, window = cfg_.block_size;
    Rng rng(45);
    x_ = random_floats(rng, max_k * 4 * C);
    out_.resize(max_k * std::max(4 * C, V));
    hidden_.resize(max_k * 4 * C);
    scores_.resize(window);
    keys_ = random_floats(rng, L * H * window * hs);
    values_ = random_floats(rng, L * H * window * hs);
    q_ = random_floats(rng, max_k * C);
    att_.resize(max_k * C);
    Rng act_rng(46);
    act_.resize(max_k * 4 * C);
    for (float& a : act_) a = static_cast<float>(act_rng.uniform() * 6.0 - 3.0);  // pre-GELU
  }

  // Every matmul of a pass over k tokens, on the model's own packed weights.
  double matmuls(size_t k) {
    return mean_ms(3, [&] {
      for (const ModelMatmul& l : layers_) run_matmul(l, x_.data(), k, out_.data(), x8_, sx_);
    });
  }

  // Attention per pass, mean over the contexts, in the cache state of a real pass: after each
  // layer's attention (timed) that layer's matmuls run (untimed) and stream its weights through
  // the caches, as in forward(), so the keys and values come from as far away as they do there.
  double attention(size_t k) {
    const size_t C = cfg_.n_embd, H = cfg_.n_head, hs = cfg_.head_size();
    const size_t L = cfg_.n_layer, window = cfg_.block_size;
    double total = 0.0;
    for (size_t past : pasts_) {
      for (size_t l = 0; l < L; ++l) {
        const double t0 = now_ms();
        for (size_t t = 0; t < k; ++t) {
          for (size_t h = 0; h < H; ++h) {
            const size_t block = (l * H + h) * window * hs;
            kernels::attend(&q_[t * C + h * hs], &keys_[block], &values_[block], past + t + 1, hs,
                            scores_.data(), &att_[t * C + h * hs]);
          }
        }
        total += now_ms() - t0;
        for (size_t j = 4 * l; j < 4 * l + 4; ++j) {
          run_matmul(layers_[j], x_.data(), k, out_.data(), x8_, sx_);
        }
      }
    }
    return total / pasts_.size();
  }

  // GELU over every layer's hidden layer; the copies that restore its input are timed alone
  // and subtracted.
  double gelus(size_t k) {
    const size_t n = k * 4 * cfg_.n_embd, L = cfg_.n_layer;
    const double with = mean_ms(3, [&] {
      for (size_t l = 0; l < L; ++l) {
        std::copy(act_.begin(), act_.begin() + n, hidden_.begin());
        kernels::gelu(hidden_.data(), n);
      }
    });
    const double copies = mean_ms(3, [&] {
      for (size_t l = 0; l < L; ++l) std::copy(act_.begin(), act_.begin() + n, hidden_.begin());
    });
    return std::max(0.0, with - copies);
  }

 private:
  const GPTConfig& cfg_;
  const std::vector<size_t>& pasts_;
  const std::vector<ModelMatmul> layers_;
  std::vector<float> x_, out_, hidden_, scores_, keys_, values_, q_, att_, act_;
  std::vector<int16_t> x8_;
  std::vector<float> sx_;
};

}  // namespace

std::vector<PassBreakdown> pass_breakdown(const GPTModel& model, const std::vector<size_t>& ks,
                                          const std::vector<size_t>& pasts, int repeats) {
  const size_t window = static_cast<size_t>(model.config().block_size);
  if (ks.empty() || pasts.empty()) fail("pass_breakdown: no k or no context");
  if (repeats < 1) fail("pass_breakdown: repeats must be >= 1, got ", repeats);
  const size_t max_k = *std::max_element(ks.begin(), ks.end());
  for (size_t k : ks) {
    if (k < 1) fail("pass_breakdown: k must be >= 1");
  }
  for (size_t p : pasts) {
    if (p + max_k > window) fail("pass_breakdown: past ", p, " + k ", max_k, " exceed the context");
  }
  PassTimer timer(model, pasts, max_k);
  KernelTimes kernel(model, pasts, max_k);
  const size_t n = ks.size();
  std::vector<std::vector<double>> pass(n), mm(n), mm_in(n), at(n), ge(n);
  for (int r = -1; r < repeats; ++r) {  // r = -1: warm-up
    for (size_t i = 0; i < n; ++i) {
      const size_t k = ks[i];
      double in_pass = 0.0;
      const double p = timer.once(k, &in_pass), m = kernel.matmuls(k), a = kernel.attention(k),
                   g = kernel.gelus(k);
      if (r < 0) continue;
      pass[i].push_back(p);
      mm[i].push_back(m);
      mm_in[i].push_back(in_pass);
      at[i].push_back(a);
      ge[i].push_back(g);
    }
  }
  std::vector<PassBreakdown> rows;
  for (size_t i = 0; i < n; ++i) {
    rows.push_back({ks[i], summarize(pass[i]), summarize(mm[i]), summarize(mm_in[i]),
                    summarize(at[i]), summarize(ge[i])});
  }
  return rows;
}

}  // namespace specdec::bench
