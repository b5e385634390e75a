// The physics of one pass with T threads (bench.h, "threads"): B(T), P(T), ms per pass over k
// tokens with the model's matmuls and attention split over T threads, the roofline v(k, T),
// the barrier's cost, and decoding (plain and speculative) at each thread count — every
// thread count measured in every repeat (round robin), so that a slow minute on a shared
// machine hits them all alike and ratios come from one run.
#include <algorithm>

#include "base/errors.h"
#include "bench/bench.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"

namespace specdec::bench {

namespace {

void check_threads(const kernels::ThreadPool& pool, const std::vector<int>& threads) {
  if (threads.empty()) fail("threads: no thread count given");
  for (int t : threads) {
    if (t < 1 || t > pool.max_threads()) {
      fail("threads: ", t, " is outside 1..", pool.max_threads(), " (the pool's size)");
    }
  }
}

// Restores the pool's thread count when a measurement ends (or throws). raw: the pool's serial
// probes off meanwhile (the physics of T threads); decoding keeps them, as users get it.
struct ThreadsScope {
  kernels::ThreadPool& pool;
  int saved;
  bool adaptive;
  ThreadsScope(kernels::ThreadPool& p, bool raw)
      : pool(p), saved(p.threads()), adaptive(p.adaptive()) {
    if (raw) pool.set_adaptive(false);
  }
  ~ThreadsScope() {
    pool.set_threads(saved);
    pool.set_adaptive(adaptive);
  }
};

}  // namespace

Stats fork_join_us(kernels::ThreadPool& pool, int repeats) {
  std::vector<double> samples;
  const int threads = pool.threads();
  for (int r = -1; r < repeats; ++r) {
    const int calls = 2000;
    const double t0 = now_ms();
    for (int c = 0; c < calls; ++c) pool.run(threads, [](int) {});
    if (r >= 0) samples.push_back((now_ms() - t0) * 1000.0 / calls);
  }
  return summarize(samples);
}

std::vector<ThreadPhysics> thread_physics(const GPTModel& target, const GPTModel& draft,
                                          kernels::ThreadPool& pool,
                                          const std::vector<int>& threads, size_t max_k,
                                          int repeats, double min_ms) {
  check_threads(pool, threads);
  if (repeats < 1) fail("threads: repeats must be >= 1, got ", repeats);
  if (target.thread_pool() != &pool || draft.thread_pool() != &pool) {
    fail("threads: the models must run on the measured pool");
  }
  ThreadsScope scope(pool, /*raw=*/true);
  const size_t bytes = matmul_weight_bytes(target);
  const std::vector<size_t> pasts = decode_contexts(target.config().block_size);
  PassTimer timer(target, pasts, max_k);
  PassTimer draft_timer(draft, pasts, 1);
  std::vector<ThreadPhysics> out(threads.size());
  std::vector<std::vector<std::vector<double>>> pass(threads.size()), mm(threads.size());
  std::vector<std::vector<double>> draft_ms(threads.size());
  for (size_t i = 0; i < threads.size(); ++i) {
    out[i].threads = threads[i];
    pass[i].resize(max_k + 1);
    mm[i].resize(max_k + 1);
  }
  for (int r = -1; r < repeats; ++r) {  // r = -1: warm-up
    for (size_t i = 0; i < threads.size(); ++i) {
      pool.set_threads(threads[i]);
      for (size_t k = 1; k <= max_k; ++k) {
        double matmul = 0.0;
        const double ms = timer.once(k, &matmul);
        if (r >= 0) {
          pass[i][k].push_back(ms);
          mm[i][k].push_back(matmul);
        }
      }
      const double d = draft_timer.once(1);
      if (r >= 0) draft_ms[i].push_back(d);
    }
  }
  for (size_t i = 0; i < threads.size(); ++i) {
    ThreadPhysics& t = out[i];
    pool.set_threads(threads[i]);
    // The best of 1..16 streams per thread: the best count moves with the buffer's size and the
    // thread count.
    t.read_gbs = best_read_gbs(bytes, repeats, min_ms, &pool).gbs;
    t.peak_gflops = muladd_gflops(repeats, min_ms, &pool);
    const bool int8 = target.weight_type() == Weights::kInt8;
    if (int8) t.peak_int_gops = int_dot_gops(repeats, min_ms, &pool);
    t.fork_join_us = fork_join_us(pool, repeats);
    const uint64_t runs0 = pool.stats().runs + pool.stats().shed;
    timer.once(1);
    t.regions_per_pass =  // 5 calls each
        double(pool.stats().runs + pool.stats().shed - runs0) / (pasts.size() * 5);
    t.draft_step_ms = summarize(draft_ms[i]);
    for (size_t k = 1; k <= max_k; ++k) {
      t.pass_ms.push_back(summarize(pass[i][k]));
      t.matmul_ms.push_back(summarize(mm[i][k]));
      t.roofline_ms.push_back(roofline_ms(target, k, t.read_gbs.median, t.peak_gflops.median,
                                          int8 ? t.peak_int_gops.median : 0.0));
    }
  }
  return out;
}

std::vector<ThreadDecoding> decode_by_threads(const GPTModel& target, const GPTModel& draft,
                                              kernels::ThreadPool& pool,
                                              const std::vector<int>& threads, int gamma_max,
                                              float temperature, size_t max_new_tokens,
                                              int repeats) {
  check_threads(pool, threads);
  if (gamma_max < 1 || gamma_max > 16) fail("threads: gammaMax must be in 1..16");
  if (repeats < 1) fail("threads: repeats must be >= 1, got ", repeats);
  ThreadsScope scope(pool, /*raw=*/false);
  std::vector<std::vector<int>> prompt_ids;
  for (const std::string& p : prompts()) {
    std::vector<int> ids;
    for (unsigned char ch : p) ids.push_back(ch);
    prompt_ids.push_back(ids);
  }
  const size_t n = threads.size();
  std::vector<ThreadDecoding> out(n);
  std::vector<std::vector<double>> plain(n), draft_step(n);
  std::vector<std::vector<std::vector<double>>> spec(
      n, std::vector<std::vector<double>>(gamma_max + 1));
  std::vector<std::vector<DecodeTotals>> spec_totals(n, std::vector<DecodeTotals>(gamma_max + 1));
  for (size_t i = 0; i < n; ++i) {  // warm-up
    pool.set_threads(threads[i]);
    decode(target, nullptr, {prompt_ids[0]}, 1, temperature, 7, 32);
    decode(target, &draft, {prompt_ids[0]}, 3, temperature, 7, 32);
  }
  for (int r = 0; r < repeats; ++r) {
    for (size_t i = 0; i < n; ++i) {
      pool.set_threads(threads[i]);
      const DecodeTotals p =
          decode(target, nullptr, prompt_ids, 1, temperature, 1000, max_new_tokens);
      plain[i].push_back(p.ms_per_token());
      for (int g = 1; g <= gamma_max; ++g) {
        const DecodeTotals s =
            decode(target, &draft, prompt_ids, g, temperature, 1000, max_new_tokens);
        spec[i][g].push_back(s.ms_per_token());
        spec_totals[i][g] += s;
        if (g == 1) draft_step[i].push_back(s.draft_ms / s.draft_passes);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    ThreadDecoding& d = out[i];
    d.threads = threads[i];
    d.plain_ms_per_token = summarize(plain[i]);
    d.draft_step_ms = summarize(draft_step[i]);
    d.best_gamma = 1;
    for (int g = 1; g <= gamma_max; ++g) {
      d.spec_ms_per_token.push_back(summarize(spec[i][g]));
      d.alpha.push_back(spec_totals[i][g].alpha());
      if (d.spec_ms_per_token.back().median < d.spec_ms_per_token[d.best_gamma - 1].median) {
        d.best_gamma = g;
      }
    }
  }
  return out;
}

}  // namespace specdec::bench
