#include "bench/bench.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/errors.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/matmul_q8.h"
#include "kernels/ops.h"
#include "model/model_source.h"
#include "model/tokenizer.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"

namespace specdec::bench {
namespace {

std::vector<float> random_floats(Rng& rng, size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.uniform() * 2.0 - 1.0) * 0.05f;
  return v;
}

// A packed weight matrix W (n, k).
struct Linear {
  size_t n, k;
  std::vector<float> packed;
  std::vector<float> bias;
};

Linear random_linear(Rng& rng, size_t n, size_t k) {
  const std::vector<float> w = random_floats(rng, n * k);
  Linear l{n, k, std::vector<float>(kernels::packed_size(n, k)), random_floats(rng, n)};
  kernels::pack_weights(w.data(), n, k, l.packed.data());
  return l;
}

// Deterministic filler text for the cost measurements (the content does not change the cost).
std::vector<int> filler_tokens(size_t n, int salt) {
  static const std::string text =
      "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
      "First Citizen:\nYou are all resolved rather to die than to famish?\n\n";
  std::vector<int> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i] = static_cast<unsigned char>(text[(i * 7 + salt) % text.size()]);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& prompts() {
  static const std::vector<std::string> p = {
      "ROMEO:",
      "First Citizen:\n",
      "KING RICHARD III:\nNow is the",
      "JULIET:\nO Romeo, Romeo",
  };
  return p;
}

Stats matmul_gflops(size_t m, size_t k, size_t n, size_t copies, int repeats, double min_ms) {
  if (m < 1 || k < 1 || n < 1 || copies < 1) fail("matmul_gflops: empty shape");
  Rng rng(42);
  std::vector<Linear> w;
  for (size_t c = 0; c < copies; ++c) w.push_back(random_linear(rng, n, k));
  const std::vector<float> x = random_floats(rng, m * k);
  std::vector<float> out(m * n);
  size_t next = 0;
  auto once = [&] {
    const Linear& l = w[next];
    next = next + 1 == copies ? 0 : next + 1;
    kernels::matmul(x.data(), m, k, l.packed.data(), n, l.bias.data(), out.data());
  };
  return rate_of(once, 2.0 * m * k * n, repeats, min_ms);
}

Stats model_matmul_gflops(const GPTConfig& cfg, size_t m, int repeats, double min_ms) {
  const size_t C = cfg.n_embd, V = cfg.vocab_size;
  Rng rng(43);
  std::vector<Linear> layers;
  for (int l = 0; l < cfg.n_layer; ++l) {
    layers.push_back(random_linear(rng, 3 * C, C));
    layers.push_back(random_linear(rng, C, C));
    layers.push_back(random_linear(rng, 4 * C, C));
    layers.push_back(random_linear(rng, C, 4 * C));
  }
  layers.push_back(random_linear(rng, V, C));
  double flops = 0.0;
  size_t max_n = 0, max_k = 0;
  for (const Linear& l : layers) {
    flops += 2.0 * m * l.n * l.k;
    max_n = std::max(max_n, l.n);
    max_k = std::max(max_k, l.k);
  }
  const std::vector<float> x = random_floats(rng, m * max_k);
  std::vector<float> out(m * max_n);
  auto once = [&] {
    for (const Linear& l : layers) {
      kernels::matmul(x.data(), m, l.k, l.packed.data(), l.n, l.bias.data(), out.data());
    }
  };
  return rate_of(once, flops, repeats, min_ms);
}

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
  const size_t lm_bytes =
      (V + kernels::kPanelRows - 1) / kernels::kPanelRows * kernels::kPanelRows * C * sizeof(float);
  out.push_back({C, V, w.lm_head.data(), nullptr, nullptr, nullptr, lm_bytes});
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

std::vector<PassBreakdown> pass_breakdown(const GPTModel& model, const std::vector<size_t>& ks,
                                          const std::vector<size_t>& pasts, int repeats) {
  const GPTConfig& cfg = model.config();
  const size_t C = cfg.n_embd, V = cfg.vocab_size, H = cfg.n_head, hs = cfg.head_size();
  const size_t L = static_cast<size_t>(cfg.n_layer), window = static_cast<size_t>(cfg.block_size);
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
  Rng rng(45);
  const std::vector<float> x = random_floats(rng, max_k * 4 * C);  // the widest matmul input
  std::vector<float> out(max_k * std::max(4 * C, V)), hidden(max_k * 4 * C), scores(window);
  // One K and V block per (layer, head), as in KVCache, and this pass's queries.
  const std::vector<float> keys = random_floats(rng, L * H * window * hs);
  const std::vector<float> values = random_floats(rng, L * H * window * hs);
  const std::vector<float> q = random_floats(rng, max_k * C);
  std::vector<float> att(max_k * C);
  Rng act_rng(46);
  std::vector<float> act(max_k * 4 * C);
  for (float& a : act) a = static_cast<float>(act_rng.uniform() * 6.0 - 3.0);  // pre-GELU range

  const std::vector<ModelMatmul> layers = model_matmuls(model);
  // Mean ms of fn() over `calls` calls.
  auto mean_ms = [](int calls, auto fn) {
    const double t0 = now_ms();
    for (int c = 0; c < calls; ++c) fn();
    return (now_ms() - t0) / calls;
  };
  std::vector<int16_t> x8;
  std::vector<float> sx;
  auto matmuls = [&](size_t k) {
    return mean_ms(3, [&] {
      for (const ModelMatmul& l : layers) run_matmul(l, x.data(), k, out.data(), x8, sx);
    });
  };
  // Attention per pass, mean over the contexts, in the cache state of a real pass: after each
  // layer's attention (timed) that layer's matmuls run (untimed) and stream its weights through
  // the caches, as in forward(), so the keys and values come from as far away as they do there.
  auto attention = [&](size_t k) {
    double total = 0.0;
    for (size_t past : pasts) {
      for (size_t l = 0; l < L; ++l) {
        const double t0 = now_ms();
        for (size_t t = 0; t < k; ++t) {
          for (size_t h = 0; h < H; ++h) {
            const size_t block = (l * H + h) * window * hs;
            kernels::attend(&q[t * C + h * hs], &keys[block], &values[block], past + t + 1, hs,
                            scores.data(), &att[t * C + h * hs]);
          }
        }
        total += now_ms() - t0;
        for (size_t j = 4 * l; j < 4 * l + 4; ++j) {
          run_matmul(layers[j], x.data(), k, out.data(), x8, sx);
        }
      }
    }
    return total / pasts.size();
  };
  auto gelus = [&](size_t k) {  // the copies that restore the input, timed alone and subtracted
    const size_t n = k * 4 * C;
    const double with = mean_ms(3, [&] {
      for (size_t l = 0; l < L; ++l) {
        std::copy(act.begin(), act.begin() + n, hidden.begin());
        kernels::gelu(hidden.data(), n);
      }
    });
    const double copies = mean_ms(3, [&] {
      for (size_t l = 0; l < L; ++l) std::copy(act.begin(), act.begin() + n, hidden.begin());
    });
    return std::max(0.0, with - copies);
  };
  const size_t n = ks.size();
  std::vector<std::vector<double>> pass(n), mm(n), mm_in(n), at(n), ge(n);
  for (int r = -1; r < repeats; ++r) {  // r = -1: warm-up
    for (size_t i = 0; i < n; ++i) {
      const size_t k = ks[i];
      double in_pass = 0.0;
      const double p = timer.once(k, &in_pass), m = matmuls(k), a = attention(k), g = gelus(k);
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

std::vector<size_t> decode_contexts(size_t block_size) {
  // The benchmark prompts are short and the decodes stop near the end of the window.
  const size_t max_context = block_size > 32 ? block_size - 16 : block_size / 2;
  // 8 evenly spaced contexts from 8 up to 7/8 of the window (decodes run from a short prompt
  // to near the end of the context).
  std::vector<size_t> out;
  if (max_context < 64) return {max_context / 2};  // a tiny context: one point in the middle
  for (size_t i = 0; i < 8; ++i) out.push_back(8 + i * (max_context * 7 / 8 - 8) / 7);
  return out;
}

struct PassTimer::Impl {
  const GPTModel& model;
  std::vector<size_t> pasts;
  size_t max_k;
  std::vector<std::unique_ptr<ModelSource>> sources;  // one per context
  std::vector<std::vector<int>> seqs[2];  // per context: two continuations of past + max_k tokens
  std::vector<int> next;                  // per context: the continuation the next call uses
};

PassTimer::PassTimer(const GPTModel& model, const std::vector<size_t>& pasts, size_t max_k)
    : impl_(nullptr) {
  const size_t window = static_cast<size_t>(model.config().block_size);
  if (max_k < 1) fail("forward_ms: k must be >= 1");
  if (pasts.empty()) fail("forward_ms: no context");
  for (size_t p : pasts) {
    if (p + max_k > window) fail("forward_ms: past ", p, " + k ", max_k, " exceed the context");
  }
  auto impl = std::make_unique<Impl>(Impl{model, pasts, max_k, {}, {}, {}});
  const std::vector<int> a = filler_tokens(window, 0);
  for (size_t p : pasts) {
    std::vector<int> sa(a.begin(), a.begin() + p + max_k), sb = sa;
    for (size_t i = p; i < p + max_k; ++i) sb[i] = (sa[i] + 1) % model.config().vocab_size;
    impl->seqs[0].push_back(sa);
    impl->seqs[1].push_back(sb);
    impl->sources.push_back(std::make_unique<ModelSource>(model));
    impl->sources.back()->next_token_probs(sb, 1);  // fills the cache (untimed)
    impl->next.push_back(0);
  }
  impl_ = impl.release();
}

PassTimer::PassTimer(PassTimer&& o) noexcept : impl_(o.impl_) { o.impl_ = nullptr; }
PassTimer::~PassTimer() { delete impl_; }

double PassTimer::once(size_t k, double* matmul_ms) {
  Impl& s = *impl_;
  if (k < 1 || k > s.max_k) fail("forward_ms: k must be in 1..", s.max_k, ", got ", k);
  const int warm = 2, calls = 3, matmul_calls = matmul_ms ? 2 : 0;
  double total = 0.0;
  kernels::MatmulTimer timer;
  for (size_t j = 0; j < s.pasts.size(); ++j) {
    const size_t len = s.pasts[j] + k;
    for (int c = 0; c < warm + calls + matmul_calls; ++c) {
      // The other continuation than the cached one: the source rolls back to the context and
      // forwards exactly k tokens.
      const std::vector<int>& full = s.seqs[s.next[j]][j];
      const std::vector<int> tokens(full.begin(), full.begin() + len);
      s.next[j] ^= 1;
      if (c >= warm + calls) kernels::set_matmul_timer(&timer);
      const double t0 = now_ms();
      s.sources[j]->next_token_probs(tokens, k);
      const double t1 = now_ms();
      kernels::set_matmul_timer(nullptr);
      if (c >= warm && c < warm + calls) total += t1 - t0;
    }
  }
  if (matmul_ms) *matmul_ms = timer.ms / (s.pasts.size() * matmul_calls);
  return total / (s.pasts.size() * calls);
}

Stats forward_ms(const GPTModel& model, size_t k, const std::vector<size_t>& pasts, int repeats) {
  if (repeats < 1) fail("forward_ms: repeats must be >= 1, got ", repeats);
  PassTimer timer(model, pasts, k);
  timer.once(k);  // warm-up
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) samples.push_back(timer.once(k));
  return summarize(samples);
}

DecodeTotals decode(const GPTModel& target, const GPTModel* draft,
                    const std::vector<std::vector<int>>& prompt_tokens, int gamma,
                    float temperature, uint64_t seed, size_t max_new_tokens) {
  DecodeTotals t;
  DecoderOptions options;
  options.plain = draft == nullptr;
  options.gamma = gamma;
  options.sampling.temperature = temperature;
  options.max_new_tokens = max_new_tokens;
  for (size_t i = 0; i < prompt_tokens.size(); ++i) {
    ModelSource target_source(target);
    std::unique_ptr<ModelSource> draft_source;
    if (draft) draft_source = std::make_unique<ModelSource>(*draft);
    SpeculativeDecoder decoder(target_source, draft_source.get(), prompt_tokens[i], options);
    Rng rng(seed + i);
    const double t0 = now_ms();
    while (!decoder.done()) decoder.step(rng);
    const DecoderStats& s = decoder.stats();
    DecodeTotals run;
    run.ms = now_ms() - t0;
    run.generated = s.generated;
    run.target_passes = s.target_passes;
    run.draft_passes = s.draft_passes;
    run.drafted = s.drafted;
    run.examined = s.examined;
    run.accepted = s.accepted;
    run.target_ms = s.target_ms;
    run.draft_ms = s.draft_ms;
    t += run;
  }
  return t;
}

}  // namespace specdec::bench
