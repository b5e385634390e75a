#include "bench/bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <sstream>
#if !defined(__EMSCRIPTEN__)
#include <thread>
#endif

#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/vec4.h"
#include "model/model_source.h"
#include "model/tokenizer.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"
#include "specdec/errors.h"

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

// Runs `once` (which does `flops` floating-point operations) for at least min_ms per repeat;
// returns GFLOP/s per repeat. One untimed warm-up repeat first (V8 tiers up, caches fill).
template <typename Fn>
Stats gflops_of(Fn once, double flops, int repeats, double min_ms) {
  for (int i = 0; i < 3; ++i) once();
  const double warm_end = now_ms() + min_ms;
  while (now_ms() < warm_end) once();
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    size_t calls = 0;
    const double t0 = now_ms();
    double t = t0;
    while (t - t0 < min_ms) {
      once();
      ++calls;
      t = now_ms();
    }
    samples.push_back(flops * calls / ((t - t0) * 1e6));
  }
  return summarize(samples);
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

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Stats summarize(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.min = samples.front();
  s.max = samples.back();
  s.runs = static_cast<int>(n);
  return s;
}

std::string kernel_self_check() {
  Rng rng(7);
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  std::ostringstream err;
  for (size_t k : {1, 3, 4, 7, 8, 9, 17, 64, 100, 256}) {
    for (size_t n : {1, 3, 4, 5, 8, 13, 16, 24, 33}) {
      const std::vector<float> w = random_floats(rng, n * k), bias = random_floats(rng, n);
      std::vector<float> packed(kernels::packed_size(n, k));
      kernels::pack_weights(w.data(), n, k, packed.data());
      for (size_t m = 1; m <= 9; ++m) {
        const std::vector<float> x = random_floats(rng, m * k);
        std::vector<float> want(m * n), got(m * n), got4(m * n);
        kernels::matmul_reference(x.data(), m, k, w.data(), n, bias.data(), want.data());
        kernels::matmul(x.data(), m, k, packed.data(), n, bias.data(), got.data());
        kernels::matmul_vec4(x.data(), m, k, packed.data(), n, bias.data(), got4.data());
        if (!same(got, want) || !same(got4, want)) {
          err << "matmul M=" << m << " K=" << k << " N=" << n;
          return err.str();
        }
      }
    }
  }
  for (size_t hs : {1, 3, 4, 17, 32, 36, 64}) {
    for (size_t n_keys : {1, 3, 4, 5, 9, 17, 70, 255}) {
      const std::vector<float> q = random_floats(rng, hs), keys = random_floats(rng, n_keys * hs),
                               values = random_floats(rng, n_keys * hs);
      std::vector<float> scores(n_keys), got(hs), want(hs);
      kernels::attend(q.data(), keys.data(), values.data(), n_keys, hs, scores.data(), got.data());
      kernels::attend_reference(q.data(), keys.data(), values.data(), n_keys, hs, scores.data(),
                                want.data());
      if (!same(got, want)) {
        err << "attend hs=" << hs << " n_keys=" << n_keys;
        return err.str();
      }
    }
  }
  for (size_t n : {1, 3, 4, 7, 16, 17, 256, 1024}) {
    std::vector<float> a = random_floats(rng, n), b = random_floats(rng, n);
    for (float& v : a) v *= 200.0f;  // logits-sized values for softmax
    const float d = kernels::dot(a.data(), b.data(), n),
                dr = kernels::dot_reference(a.data(), b.data(), n);
    std::vector<float> s1 = a, s2 = a, g1 = b, g2 = b, l1(n), l2(n);
    kernels::softmax(s1.data(), n);
    kernels::softmax_reference(s2.data(), n);
    for (float& v : g1) v *= 100.0f;
    g2 = g1;
    kernels::gelu(g1.data(), n);
    kernels::gelu_reference(g2.data(), n);
    std::vector<float> si1 = g1, si2 = g1;  // SiLU on GELU outputs: wide range, no NaN
    kernels::silu(si1.data(), n);
    kernels::silu_reference(si2.data(), n);
    kernels::layernorm(a.data(), b.data(), a.data(), n, l1.data());
    kernels::layernorm_reference(a.data(), b.data(), a.data(), n, l2.data());
    if (std::memcmp(&d, &dr, sizeof d) != 0)
      err << "dot n=" << n;
    else if (!same(s1, s2))
      err << "softmax n=" << n;
    else if (!same(g1, g2))
      err << "gelu n=" << n;
    else if (!same(l1, l2))
      err << "layernorm n=" << n;
    else if (!same(si1, si2))
      err << "silu n=" << n;
    if (!err.str().empty()) return err.str();
  }
  return "";
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
  return gflops_of(once, 2.0 * m * k * n, repeats, min_ms);
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
  return gflops_of(once, flops, repeats, min_ms);
}

namespace {

// The streaming loop of read_gbs: a function of its own so that V8 tiers it up after the
// warm-up calls (it has no on-stack replacement for WASM loops). Pairs of loads are added before
// they reach the 4 accumulators, so the adds' latency never limits the loads.
[[gnu::noinline]] float sum_stream(const float* p, size_t n) {
  using namespace kernels::simd;
  F4 a0 = zero(), a1 = zero(), a2 = zero(), a3 = zero();
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = add(a0, add(load(p + i), load(p + i + 4)));
    a1 = add(a1, add(load(p + i + 8), load(p + i + 12)));
    a2 = add(a2, add(load(p + i + 16), load(p + i + 20)));
    a3 = add(a3, add(load(p + i + 24), load(p + i + 28)));
  }
  return hsum(add(add(a0, a1), add(a2, a3)));
}

// One linear layer of a model as the matmul kernel sees it: W (n, k) packed, bias or null.
struct ModelMatmul {
  size_t k, n;
  const float* w;
  const float* bias;
};

// Every matmul of a forward pass of `model`, in forward order (per layer: c_attn, attn c_proj,
// c_fc, mlp c_proj; then the LM head).
std::vector<ModelMatmul> model_matmuls(const GPTModel& model) {
  const size_t C = model.config().n_embd, V = model.config().vocab_size;
  const GPTWeights& w = model.weights();
  std::vector<ModelMatmul> out;
  for (const LayerWeights& l : w.layers) {
    out.push_back({C, 3 * C, l.c_attn.data(), l.c_attn_bias.data()});
    out.push_back({C, C, l.attn_proj.data(), l.attn_proj_bias.data()});
    out.push_back({C, 4 * C, l.c_fc.data(), l.c_fc_bias.data()});
    out.push_back({4 * C, C, l.mlp_proj.data(), l.mlp_proj_bias.data()});
  }
  out.push_back({C, V, w.lm_head.data(), nullptr});
  return out;
}

}  // namespace

Stats read_gbs(size_t bytes, int repeats, double min_ms) {
  const size_t n = std::max<size_t>(32, bytes / sizeof(float)) / 32 * 32;
  std::vector<float> buf(n);
  Rng rng(44);
  for (float& x : buf) x = static_cast<float>(rng.uniform());
  float sink = 0.0f;
  // gflops_of reports "flops" per call / 1e9 per second: with bytes as the count, GB/s.
  Stats s = gflops_of([&] { sink += sum_stream(buf.data(), n); },
                      static_cast<double>(n * sizeof(float)), repeats, min_ms);
  if (sink < 0.0f) s.runs = -1;  // keeps the sums observable (never true: sums of [0, 1))
  return s;
}

size_t matmul_weight_bytes(const GPTModel& model) {
  size_t floats = 0;
  for (const ModelMatmul& m : model_matmuls(model)) floats += kernels::packed_size(m.n, m.k);
  return floats * sizeof(float);
}

PassBreakdown pass_breakdown(const GPTModel& model, size_t k, const std::vector<size_t>& pasts,
                             int repeats) {
  const GPTConfig& cfg = model.config();
  const size_t C = cfg.n_embd, V = cfg.vocab_size, H = cfg.n_head, hs = cfg.head_size();
  const size_t L = static_cast<size_t>(cfg.n_layer), window = static_cast<size_t>(cfg.block_size);
  for (size_t p : pasts) {
    if (k < 1 || p + k > window)
      fail("pass_breakdown: past ", p, " + k ", k, " exceed the context");
  }
  Rng rng(45);
  const std::vector<float> x = random_floats(rng, k * 4 * C);  // the widest matmul input
  std::vector<float> out(k * std::max(4 * C, V)), hidden(k * 4 * C), scores(window);
  // One K and V block per (layer, head), as in KVCache, and this pass's queries.
  const std::vector<float> keys = random_floats(rng, L * H * window * hs);
  const std::vector<float> values = random_floats(rng, L * H * window * hs);
  const std::vector<float> q = random_floats(rng, k * C);
  std::vector<float> att(k * C);
  Rng act_rng(46);
  std::vector<float> act(k * 4 * C);
  for (float& a : act) a = static_cast<float>(act_rng.uniform() * 6.0 - 3.0);  // pre-GELU range

  const std::vector<ModelMatmul> layers = model_matmuls(model);
  auto matmuls = [&] {
    for (const ModelMatmul& l : layers) {
      kernels::matmul(x.data(), k, l.k, l.w, l.n, l.bias, out.data());
    }
  };
  auto attention = [&](size_t past) {
    for (size_t l = 0; l < L; ++l) {
      for (size_t t = 0; t < k; ++t) {
        for (size_t h = 0; h < H; ++h) {
          const size_t block = (l * H + h) * window * hs;
          kernels::attend(&q[t * C + h * hs], &keys[block], &values[block], past + t + 1, hs,
                          scores.data(), &att[t * C + h * hs]);
        }
      }
    }
  };
  auto gelus = [&] {
    for (size_t l = 0; l < L; ++l) {
      std::copy(act.begin(), act.end(), hidden.begin());
      kernels::gelu(hidden.data(), hidden.size());
    }
  };
  auto copies = [&] {  // the copies gelus() makes, timed alone and subtracted
    for (size_t l = 0; l < L; ++l) std::copy(act.begin(), act.end(), hidden.begin());
  };
  // Mean ms per pass of fn over the contexts, 4 calls per context after 2 untimed ones.
  auto per_pass = [&](auto fn) {
    double total = 0.0;
    for (size_t p : pasts) {
      for (int c = 0; c < 6; ++c) {
        const double t0 = now_ms();
        fn(p);
        if (c >= 2) total += now_ms() - t0;
      }
    }
    return total / (pasts.size() * 4);
  };
  std::vector<double> whole, mm, at, ge;
  for (int r = -1; r < repeats; ++r) {  // r = -1: warm-up
    const double w = forward_ms(model, k, pasts, 1).median;
    const double m = per_pass([&](size_t) { matmuls(); });
    const double a = per_pass(attention);
    const double g = per_pass([&](size_t) { gelus(); }) - per_pass([&](size_t) { copies(); });
    if (r < 0) continue;
    whole.push_back(w);
    mm.push_back(m);
    at.push_back(a);
    ge.push_back(std::max(0.0, g));
  }
  return {summarize(whole), summarize(mm), summarize(at), summarize(ge)};
}

Stats split_matmul_ms(const GPTModel& model, int threads, int repeats) {
#if defined(__EMSCRIPTEN__)
  (void)model, (void)threads, (void)repeats;
  fail("split_matmul_ms: no threads in this build");
#else
  if (threads < 1 || threads > 64) fail("split_matmul_ms: threads must be in 1..64, got ", threads);
  const size_t C = model.config().n_embd;
  using Job = ModelMatmul;
  const std::vector<Job> jobs = model_matmuls(model);
  Rng rng(47);
  const std::vector<float> x = random_floats(rng, 4 * C);
  size_t stride = 0;  // outputs of job i at [i * stride, i * stride + n)
  for (const Job& j : jobs) stride = std::max(stride, j.n);
  std::vector<float> ref(jobs.size() * stride), got(jobs.size() * stride);

  // Part t of a job: a run of whole 8-row panel pairs, so every part uses the kernels' usual path.
  auto part = [&](const Job& j, int t, float* o) {
    const size_t pairs = (j.n + 7) / 8, per = (pairs + threads - 1) / threads;
    const size_t r0 = std::min(j.n, t * per * 8), r1 = std::min(j.n, (t + 1) * per * 8);
    if (r1 > r0) {
      kernels::matmul(x.data(), 1, j.k, j.w + r0 * j.k, r1 - r0, j.bias ? j.bias + r0 : nullptr,
                      o + r0);
    }
  };
  // Workers spin on a generation counter (benchmark only: no sleeping, no locks in the timing).
  std::atomic<int> generation{0}, finished{0};
  std::atomic<bool> quit{false};
  const Job* current = nullptr;
  float* current_out = nullptr;
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back([&, t] {
      int seen = 0;
      while (!quit.load(std::memory_order_acquire)) {
        const int g = generation.load(std::memory_order_acquire);
        if (g == seen) {
          std::this_thread::yield();  // polite when there are more threads than free cores
          continue;
        }
        seen = g;
        part(*current, t, current_out);
        finished.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  auto run = [&](const Job& j, float* o) {
    current = &j;
    current_out = o;
    finished.store(0, std::memory_order_release);
    generation.fetch_add(1, std::memory_order_acq_rel);
    part(j, 0, o);
    while (finished.load(std::memory_order_acquire) != threads - 1) std::this_thread::yield();
  };
  auto pass = [&](std::vector<float>& o) {
    for (size_t i = 0; i < jobs.size(); ++i) run(jobs[i], &o[i * stride]);
  };
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    kernels::matmul(x.data(), 1, j.k, j.w, j.n, j.bias, &ref[i * stride]);
  }
  std::vector<double> samples;
  for (int r = -3; r < repeats; ++r) {  // 3 warm-up repeats
    const int calls = 20;
    const double t0 = now_ms();
    for (int c = 0; c < calls; ++c) pass(got);
    if (r >= 0) samples.push_back((now_ms() - t0) / calls);
  }
  quit.store(true, std::memory_order_release);
  for (std::thread& t : pool) t.join();
  if (got != ref) fail("split_matmul_ms: the split result differs from one thread's");
  return summarize(samples);
#endif
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

Stats forward_ms(const GPTModel& model, size_t k, const std::vector<size_t>& pasts, int repeats) {
  const size_t window = static_cast<size_t>(model.config().block_size);
  for (size_t p : pasts) {
    if (k < 1 || p + k > window) fail("forward_ms: past ", p, " + k ", k, " exceed the context");
  }
  ModelSource source(model);
  const std::vector<int> a = filler_tokens(window, 0);
  std::vector<std::vector<int>> seqs[2];
  for (size_t p : pasts) {
    std::vector<int> sa(a.begin(), a.begin() + p + k), sb = sa;
    for (size_t i = p; i < p + k; ++i) sb[i] = (sa[i] + 1) % model.config().vocab_size;
    seqs[0].push_back(sa);
    seqs[1].push_back(sb);
  }
  // Per context and repeat: a prefill, then untimed calls, then the timed ones, as in the steady
  // state of a decode (measured: the first 2-3 one-token passes after a long prefill take up to
  // 2x as long as the following ones).
  const int warm = 4, calls = 4;
  auto one_repeat = [&] {
    double total = 0.0;
    for (size_t j = 0; j < pasts.size(); ++j) {
      source.next_token_probs(seqs[1][j], pasts[j] + k);  // prefill (untimed)
      for (int c = 0; c < warm + calls; ++c) {
        const double t0 = now_ms();
        source.next_token_probs(seqs[c % 2][j], k);
        if (c >= warm) total += now_ms() - t0;
      }
    }
    return total / (pasts.size() * calls);
  };
  for (int i = 0; i < 2; ++i) one_repeat();  // warm-up
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) samples.push_back(one_repeat());
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
