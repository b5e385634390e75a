// The mul + add ceiling of this core at the matmul kernel's vector width: chains of a = a + p,
// p = p * m in registers (m = 1 at run time, so values stay put and no subnormal appears). The
// chains start from distinct run-time values, so that no compiler can merge them. The 256-bit
// variant uses AVX2 intrinsics, as matmul_avx2.cc does (the only other place outside vec4.h).
#include <vector>

#include "bench/bench.h"
#include "kernels/thread_pool.h"
#include "kernels/vec4.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#elif defined(__AVX2__)
#include <immintrin.h>
#endif

namespace specdec::bench {
namespace {

#if defined(__AVX2__) && !defined(__wasm_simd128__)
constexpr int kLanes = 8;
using V = __m256;
inline V splat(float x) { return _mm256_set1_ps(x); }
inline V add(V a, V b) { return _mm256_add_ps(a, b); }
inline V mul(V a, V b) { return _mm256_mul_ps(a, b); }
inline float first(V v) { return _mm_cvtss_f32(_mm256_castps256_ps128(v)); }
#else
constexpr int kLanes = 4;
using V = kernels::simd::F4;
using kernels::simd::add;
using kernels::simd::first;
using kernels::simd::mul;
using kernels::simd::splat;
#endif

// N chains, `iters` steps: N multiplies and N adds per step.
template <int N>
[[gnu::noinline]] float chains(long iters, const float* init, float m) {
  const V mv = splat(m);
  V p[N], a[N];
  for (int i = 0; i < N; ++i) {
    p[i] = splat(init[i]);
    a[i] = splat(init[N + i]);
  }
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < N; ++i) {
      p[i] = mul(p[i], mv);
      a[i] = add(a[i], p[i]);
    }
  }
  V s = a[0];
  for (int i = 1; i < N; ++i) s = add(s, a[i]);
  return first(s);
}

// The integer ceiling of the 8-bit kernels (kernels/matmul_q8.h): N chains of a = a + dot(x, w)
// on 16-bit lanes (i32x4.dot_i16x8_s in WASM, vpmaddwd natively): 8 (16) multiply-adds and as
// many adds per step and chain. The operands come from run-time values, so nothing folds.
#if defined(__wasm_simd128__)
constexpr int kIntMacs = 8;
using IV = v128_t;
inline IV iload(const int16_t* p) { return wasm_v128_load(p); }
inline IV isplat(int16_t x) { return wasm_i16x8_splat(x); }
inline IV iadd(IV a, IV b) { return wasm_i32x4_add(a, b); }
inline IV idot(IV w, IV a) { return wasm_i32x4_dot_i16x8(w, a); }
inline int32_t ifirst(IV v) { return wasm_i32x4_extract_lane(v, 0); }
#elif defined(__AVX2__)
constexpr int kIntMacs = 16;
using IV = __m256i;
inline IV iload(const int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const IV*>(p)); }
inline IV isplat(int16_t x) { return _mm256_set1_epi16(x); }
inline IV iadd(IV a, IV b) { return _mm256_add_epi32(a, b); }
inline IV idot(IV w, IV a) { return _mm256_madd_epi16(w, a); }
inline int32_t ifirst(IV v) { return _mm256_extract_epi32(v, 0); }
#else
constexpr int kIntMacs = 1;
using IV = int32_t;
inline IV iload(const int16_t* p) { return *p; }
inline IV isplat(int16_t x) { return x; }
inline IV iadd(IV a, IV b) { return a + b; }
inline IV idot(IV w, IV a) { return static_cast<int16_t>(a) * w; }
inline int32_t ifirst(IV v) { return v; }
#endif

// N chains, `iters` steps: kIntMacs multiply-adds and as many adds per step and chain.
template <int N>
[[gnu::noinline]] int32_t dot_chains(long iters, const int16_t* init) {
  const IV w = iload(init + 8);
  IV a[N];
  for (int i = 0; i < N; ++i) a[i] = isplat(init[i]);
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < N; ++i) a[i] = iadd(a[i], idot(w, a[i]));
  }
  IV s = a[0];
  for (int i = 1; i < N; ++i) s = iadd(s, a[i]);
  return ifirst(s);
}

// The rate of chain() (`ops` operations per call on one thread); with a pool: every thread
// runs it at once, each into its own sink slot (operations of all threads).
template <typename Sink, typename Chain>
Stats all_threads_rate(int repeats, double min_ms, double ops, Sink* sink,
                       kernels::ThreadPool* pool, Chain chain) {
  const int threads = pool ? pool->threads() : 1;
  auto once = [&] {
    if (threads == 1) {
      sink[0] += chain();
      return;
    }
    pool->run(threads, [&](int t) { sink[16 * t] += chain(); });
  };
  return rate_of(once, ops * threads, repeats, min_ms);
}

constexpr long kIters = 20000;

template <int N>
Stats chains_gflops(int repeats, double min_ms, const float* init, float one, float* sink,
                    kernels::ThreadPool* pool) {
  return all_threads_rate(repeats, min_ms, 2.0 * kLanes * N * static_cast<double>(kIters), sink,
                          pool, [&] { return chains<N>(kIters, init, one); });
}

template <int N>
Stats dot_gops(int repeats, double min_ms, const int16_t* init, int32_t* sink,
               kernels::ThreadPool* pool) {
  return all_threads_rate(repeats, min_ms, 2.0 * kIntMacs * N * static_cast<double>(kIters), sink,
                          pool, [&] { return dot_chains<N>(kIters, init); });
}

}  // namespace

Stats int_dot_gops(int repeats, double min_ms, kernels::ThreadPool* pool) {
  std::vector<int16_t> init(24);
  volatile int16_t zero = 0;  // w: zeros at run time (the chains stay put), unknown to the compiler
  for (size_t i = 0; i < init.size(); ++i) init[i] = static_cast<int16_t>(i < 8 ? i + 1 : zero);
  std::vector<int32_t> sink(16 * kernels::ThreadPool::kMaxThreads, 0);
  Stats best;
  for (const Stats& s : {dot_gops<4>(repeats, min_ms, init.data(), sink.data(), pool),
                         dot_gops<6>(repeats, min_ms, init.data(), sink.data(), pool),
                         dot_gops<8>(repeats, min_ms, init.data(), sink.data(), pool)}) {
    if (s.median > best.median) best = s;
  }
  for (int32_t v : sink) {
    if (v == 123456789) best.runs = -1;  // keeps the sums observable
  }
  return best;
}

Stats muladd_gflops(int repeats, double min_ms, kernels::ThreadPool* pool) {
  std::vector<float> init(16);
  for (size_t i = 0; i < init.size(); ++i) init[i] = 1e-3f * static_cast<float>(i + 1);
  volatile float one_v = 1.0f;  // m: 1 at run time, unknown to the compiler
  const float one = one_v;
  std::vector<float> sink(16 * kernels::ThreadPool::kMaxThreads, 0.0f);
  Stats best;
  for (const Stats& s : {chains_gflops<4>(repeats, min_ms, init.data(), one, sink.data(), pool),
                         chains_gflops<6>(repeats, min_ms, init.data(), one, sink.data(), pool),
                         chains_gflops<8>(repeats, min_ms, init.data(), one, sink.data(), pool)}) {
    if (s.median > best.median) best = s;
  }
  for (float v : sink) {
    if (v < 0.0f) best.runs = -1;  // keeps the sums observable (never true)
  }
  return best;
}

}  // namespace specdec::bench
