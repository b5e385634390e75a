// Measurements shared by the native `specdec bench` command and the WASM benchmark module
// (src/bindings/bench_bindings.cc, built only for bench/run.mjs), so that both time exactly the
// same code from inside the engine (no JS call overhead in the kernel figures). Every figure is
// a median of repeated runs, reported with its min and max. Nothing here is used by the library
// itself; the shipped module links only read_gbs and kernel_self_check
// (src/bindings/diagnostics_bindings.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/thread_pool.h"
#include "model/gpt_config.h"
#include "model/gpt_model.h"
#include "sampling/rng.h"

namespace specdec::bench {

// The fixed prompt set of every decoding benchmark (Shakespeare-like, as the models were
// trained on).
const std::vector<std::string>& prompts();

// Milliseconds from a monotonic clock (performance.now() under Emscripten).
double now_ms();

// n floats uniform in [-0.05, 0.05) from rng: the benchmarks' random weights and inputs.
std::vector<float> random_floats(Rng& rng, size_t n);

struct Stats {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
  int runs = 0;
};
Stats summarize(std::vector<double> samples);

// Runs `once` (which does `work` units of something: flops, bytes) for at least min_ms per
// repeat after an untimed warm-up (V8 tiers up, caches fill); returns work per nanosecond
// (GFLOP/s, GB/s) per repeat.
template <typename Fn>
Stats rate_of(Fn once, double work, int repeats, double min_ms) {
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
    samples.push_back(work * calls / ((t - t0) * 1e6));
  }
  return summarize(samples);
}

// ------------------------------------------------------------------ kernels (self_check.cc)

// Every SIMD kernel against its scalar reference, bit for bit, on random inputs at sizes around
// the vector and panel widths (matmul for M = 1..9 on unstriped and striped packings, attention,
// dot, softmax, layer norm, GELU, SiLU), in whatever build this is compiled into. Returns "" or
// a description of the first mismatch. (tests/cpp/kernels_test.cc checks the native build;
// tests/js/kernels.test.mjs runs this in the shipped WASM module.)
std::string kernel_self_check();

// GFLOP/s (2 m k n flops per call) of kernels::matmul with m rows against W (n, k). `copies`
// distinct weight matrices are cycled through, so the weights stream from copies * n * k * 4
// bytes (1 = cache-resident when small). Each repeat runs calls for at least min_ms.
Stats matmul_gflops(size_t m, size_t k, size_t n, size_t copies, int repeats, double min_ms);

// GFLOP/s of the linear layers of one forward pass of a model shaped `cfg`, in forward order,
// each layer with its own random weights (19.1 MB for the 6 x 256 target): GEMV (m = 1) and
// GEMM "at model scale", with the weights streaming from memory as in real decoding.
Stats model_matmul_gflops(const GPTConfig& cfg, size_t m, int repeats, double min_ms);

// ------------------------------------------------------------------ roofline

// GB/s at which one core reads a buffer of `bytes` (bandwidth.cc): the buffer is cut into
// `streams` equal regions read side by side, one 64-byte line from each in turn (the order in
// which the kernels read a striped weight matrix, kernels/matmul.h; streams = 1: front to back).
// For a buffer larger than the caches next to the core this bounds any single-threaded one-token
// matmul over it. requires: streams 1..64.
// With a pool: all pool->threads() threads read at once, each its own contiguous part of the
// buffer in the same order (as a matmul split over the pool reads its weights): B(T).
Stats read_gbs(size_t bytes, int repeats, double min_ms, int streams = 1,
               kernels::ThreadPool* pool = nullptr);

// read_gbs with 1, 2, 4, 8 and 16 streams; the best median and its stream count.
struct ReadBandwidth {
  Stats gbs;
  int streams = 1;
  std::vector<Stats> by_streams;  // 1, 2, 4, 8, 16
};
ReadBandwidth best_read_gbs(size_t bytes, int repeats, double min_ms,
                            kernels::ThreadPool* pool = nullptr);

// GFLOP/s of multiplies and adds alone (peak.cc): independent chains of mul + add in registers,
// at the vector width of the matmul kernel of this build (256-bit AVX2 natively, 128-bit
// SIMD128 in WASM), the best of 4, 6 and 8 chains. No memory traffic: the arithmetic ceiling of
// a matmul (flops = 2 per multiply-add). With a pool: all its threads at once, P(T).
Stats muladd_gflops(int repeats, double min_ms, kernels::ThreadPool* pool = nullptr);
// GOP/s of the 8-bit kernels' integer multiply-adds alone (peak.cc): chains of a + dot(x, w) on
// 16-bit lanes (i32x4.dot_i16x8_s / vpmaddwd), 2 operations per multiply-add, P_int(T).
Stats int_dot_gops(int repeats, double min_ms, kernels::ThreadPool* pool = nullptr);
constexpr int kMatmulVectorBits =
#if defined(__AVX2__) && !defined(__wasm_simd128__)
    256;
#else
    128;
#endif

// Bytes of weights the matmuls of one forward pass of `model` read (every linear layer and the
// LM head, f32, without the striping's padding), and their flops per token (2 per weight).
size_t matmul_weight_bytes(const GPTModel& model);
double matmul_flops_per_token(const GPTModel& model);

// Of those, the integer operations of 8-bit Linear weights (2 per weight; 0 for a float model).
double matmul_int_ops_per_token(const GPTModel& model);

// The roofline of a pass over k tokens: max(weight bytes / read bandwidth, k x (float flops per
// token / mul+add peak + integer ops per token / integer peak)), in ms. An 8-bit model's bytes
// are its quants and scales; peak_int_gops matters only for one (0: counted as float).
double roofline_ms(const GPTModel& model, size_t k, double read_gbs, double peak_gflops,
                   double peak_int_gops = 0.0);

// ------------------------------------------------------------------ model passes

// Times one ModelSource::next_token_probs call that forwards k new tokens after each of a set of
// cached-token counts (what the decoder's verify call costs). Each context has its own source,
// filled once; every call rolls the cache back to the context and alternates between two
// continuations, so the k tokens are really recomputed, as in the steady state of a decode.
class PassTimer {
 public:
  // requires: 1 <= max_k, every past + max_k <= block_size. Throws specdec::Error otherwise.
  PassTimer(const GPTModel& model, const std::vector<size_t>& pasts, size_t max_k);
  PassTimer(PassTimer&&) noexcept;
  ~PassTimer();
  // Mean ms of one pass over k (1 .. max_k) new tokens, over the contexts (2 untimed and 3 timed
  // calls per context). With matmul_ms: 2 more calls per context with kernels::matmul's timer
  // installed give the mean ms per pass spent inside matmul() (apart from the timed calls, so
  // that the timer's clock reads do not count in the pass).
  double once(size_t k, double* matmul_ms = nullptr);

 private:
  struct Impl;
  Impl* impl_;
};

// Median over repeats of PassTimer::once(k) (after one untimed repeat).
Stats forward_ms(const GPTModel& model, size_t k, const std::vector<size_t>& pasts, int repeats);

// Cached-token counts that cover a decode of the benchmark prompts through a context window of
// block_size tokens evenly (8 points from 8 to ~7/8 of the window).
std::vector<size_t> decode_contexts(size_t block_size);

// Where the time of one pass over k new tokens goes, for each k of `ks`: `pass` is
// PassTimer::once(k), `matmul_in_pass` the time inside matmul() during such passes; then the
// kernels of GPTModel::forward timed on their own with the model's shapes — matmul on the
// model's own packed weights (streaming from memory as in decoding), attention over a KV cache
// of the model's shape at each of `pasts` cached tokens (each layer's matmuls run untimed after
// its attention, so that the keys and values are as far away in the memory hierarchy as in a
// real pass), GELU on the MLP's hidden layer. Every k
// is measured in every repeat (round robin), so a change of machine state cannot bias one k.
// The rest: pass minus the matmuls (as timed inside the pass), attention and GELU: layer norms,
// residual adds, KV copies, softmax of the output rows, allocations, call overhead.
struct PassBreakdown {
  size_t k = 0;
  Stats pass, matmul, matmul_in_pass, attention, gelu;
  double rest_ms() const {
    return pass.median - matmul_in_pass.median - attention.median - gelu.median;
  }
};
std::vector<PassBreakdown> pass_breakdown(const GPTModel& model, const std::vector<size_t>& ks,
                                          const std::vector<size_t>& pasts, int repeats);

// ------------------------------------------------------------------ threads (threads.cc)

// Microseconds of one empty fork-join of all pool.threads() threads (the barrier's cost).
Stats fork_join_us(kernels::ThreadPool& pool, int repeats);

// One pass of `target` with its work split over T threads (the models must run on `pool`).
struct ThreadPhysics {
  int threads = 1;
  Stats read_gbs;  // B(T): all T threads reading the target's weight bytes (best of 1..16 streams
                   // each)
  Stats peak_gflops;    // P(T): mul+add of all T threads
  Stats peak_int_gops;  // P_int(T): the 8-bit kernels' integer multiply-adds (8-bit targets)
  std::vector<Stats> pass_ms, matmul_ms;  // k = 1 .. max_k: a pass, and its time in matmuls
  std::vector<double> roofline_ms;        // max(W / B(T), k F / P(T)) (8-bit: roofline_ms())
  Stats fork_join_us;                     // one empty parallel region
  double regions_per_pass = 0.0;          // parallel regions a one-token pass opens
  Stats draft_step_ms;                    // the draft's one-token pass on the same pool
};
std::vector<ThreadPhysics> thread_physics(const GPTModel& target, const GPTModel& draft,
                                          kernels::ThreadPool& pool,
                                          const std::vector<int>& threads, size_t max_k,
                                          int repeats, double min_ms);

// Decoding the benchmark prompts at each thread count, round robin: plain, and speculative
// with gamma = 1 .. gamma_max (seeded; the same tokens at every thread count).
struct ThreadDecoding {
  int threads = 1;
  Stats plain_ms_per_token;
  std::vector<Stats> spec_ms_per_token;  // gamma = 1 .. gamma_max
  std::vector<double> alpha;             // gamma = 1 .. gamma_max
  int best_gamma = 1;
  Stats draft_step_ms;  // the draft's pass inside the decoder (gamma = 1 runs)
};
std::vector<ThreadDecoding> decode_by_threads(const GPTModel& target, const GPTModel& draft,
                                              kernels::ThreadPool& pool,
                                              const std::vector<int>& threads, int gamma_max,
                                              float temperature, size_t max_new_tokens,
                                              int repeats);

// ------------------------------------------------------------------ decoding

struct DecodeTotals {
  size_t generated = 0;
  size_t target_passes = 0;
  size_t draft_passes = 0;
  size_t drafted = 0;
  size_t examined = 0;
  size_t accepted = 0;
  double ms = 0.0;  // wall time of the decode loops (model loading and cache allocation excluded)
  double target_ms = 0.0;  // inside target calls
  double draft_ms = 0.0;   // inside draft calls
  double alpha() const { return examined ? double(accepted) / examined : 0.0; }
  double tokens_per_pass() const { return target_passes ? double(generated) / target_passes : 0.0; }
  double ms_per_token() const { return generated ? ms / generated : 0.0; }

  DecodeTotals& operator+=(const DecodeTotals& o) {
    generated += o.generated;
    target_passes += o.target_passes;
    draft_passes += o.draft_passes;
    drafted += o.drafted;
    examined += o.examined;
    accepted += o.accepted;
    ms += o.ms;
    target_ms += o.target_ms;
    draft_ms += o.draft_ms;
    return *this;
  }
};

// Decodes every prompt (token ids) with the engine's SpeculativeDecoder over ModelSources:
// plain when draft is null, else speculative with gamma. Seed of prompt i: seed + i.
DecodeTotals decode(const GPTModel& target, const GPTModel* draft,
                    const std::vector<std::vector<int>>& prompts, int gamma, float temperature,
                    uint64_t seed, size_t max_new_tokens);

}  // namespace specdec::bench
