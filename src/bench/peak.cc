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

// With a pool: every thread runs the chains at once (flops of all threads).
template <int N>
Stats chains_gflops(int repeats, double min_ms, const float* init, float one, float* sink,
                    kernels::ThreadPool* pool) {
  const long iters = 20000;
  const int threads = pool ? pool->threads() : 1;
  auto once = [&] {
    if (threads == 1) {
      sink[0] += chains<N>(iters, init, one);
      return;
    }
    pool->run(threads, [&](int t) { sink[16 * t] += chains<N>(iters, init, one); });
  };
  return rate_of(once, 2.0 * kLanes * N * static_cast<double>(iters) * threads, repeats, min_ms);
}

// The integer ceiling of the 8-bit kernels (kernels/matmul_q8.h): N chains of a = a + dot(x, w)
// on 16-bit lanes (i32x4.dot_i16x8_s in WASM, vpmaddwd natively): 8 (16) multiply-adds and as
// many adds per step and chain. The operands come from run-time values, so nothing folds.
#if defined(__wasm_simd128__)
constexpr int kIntMacs = 8;
template <int N>
[[gnu::noinline]] int32_t dot_chains(long iters, const int16_t* init) {
  const v128_t w = wasm_v128_load(init + 8);
  v128_t a[N];
  for (int i = 0; i < N; ++i) a[i] = wasm_i16x8_splat(init[i]);
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < N; ++i) a[i] = wasm_i32x4_add(a[i], wasm_i32x4_dot_i16x8(w, a[i]));
  }
  v128_t s = a[0];
  for (int i = 1; i < N; ++i) s = wasm_i32x4_add(s, a[i]);
  return wasm_i32x4_extract_lane(s, 0);
}
#elif defined(__AVX2__)
constexpr int kIntMacs = 16;
template <int N>
[[gnu::noinline]] int32_t dot_chains(long iters, const int16_t* init) {
  const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(init + 8));
  __m256i a[N];
  for (int i = 0; i < N; ++i) a[i] = _mm256_set1_epi16(init[i]);
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < N; ++i) a[i] = _mm256_add_epi32(a[i], _mm256_madd_epi16(w, a[i]));
  }
  __m256i s = a[0];
  for (int i = 1; i < N; ++i) s = _mm256_add_epi32(s, a[i]);
  return _mm256_extract_epi32(s, 0);
}
#else
constexpr int kIntMacs = 1;
template <int N>
[[gnu::noinline]] int32_t dot_chains(long iters, const int16_t* init) {
  int32_t a[N];
  for (int i = 0; i < N; ++i) a[i] = init[i];
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < N; ++i) a[i] += static_cast<int16_t>(a[i]) * init[8];
  }
  int32_t s = 0;
  for (int i = 0; i < N; ++i) s += a[i];
  return s;
}
#endif

template <int N>
Stats dot_gops(int repeats, double min_ms, const int16_t* init, int32_t* sink,
               kernels::ThreadPool* pool) {
  const long iters = 20000;
  const int threads = pool ? pool->threads() : 1;
  auto once = [&] {
    if (threads == 1) {
      sink[0] += dot_chains<N>(iters, init);
      return;
    }
    pool->run(threads, [&](int t) { sink[16 * t] += dot_chains<N>(iters, init); });
  };
  return rate_of(once, 2.0 * kIntMacs * N * static_cast<double>(iters) * threads, repeats, min_ms);
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
