// The mul + add ceiling of this core at the matmul kernel's vector width: chains of a = a + p,
// p = p * m in registers (m = 1 at run time, so values stay put and no subnormal appears). The
// chains start from distinct run-time values, so that no compiler can merge them. The 256-bit
// variant uses AVX2 intrinsics, as matmul_avx2.cc does (the only other place outside vec4.h).
#include <vector>

#include "bench/bench.h"
#include "kernels/thread_pool.h"
#include "kernels/vec4.h"

#if defined(__AVX2__) && !defined(__wasm_simd128__)
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

}  // namespace

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
