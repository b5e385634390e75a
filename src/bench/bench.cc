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
    const double ms = now_ms() - t0;
    const DecoderStats& s = decoder.stats();
    t += DecodeTotals{s.generated, s.target_passes, s.draft_passes,
                      s.drafted,   s.examined,      s.accepted,
                      ms,          s.target_ms,     s.draft_ms};
  }
  return t;
}

}  // namespace specdec::bench
