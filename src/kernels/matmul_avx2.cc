// The native matmul kernel: 256-bit AVX2 mul + add (deliberately no FMA: it would round
// differently from WASM). Same packed layout and canonical order as matmul_vec4: a 256-bit
// accumulator holds the 4 partial sums of two panel rows side by side, against an x block of 4
// broadcast to both halves, so each lane sees exactly the products the 128-bit kernel adds.
#include "kernels/matmul.h"

#if defined(__AVX2__)

#include <immintrin.h>

#include <algorithm>

#include "kernels/vec4.h"

namespace specdec::kernels {
namespace {

// MR input rows (stride k) against one panel; 2 MR accumulators + 2 weight blocks + 1 x block
// live (11 of 16 ymm registers for MR = 4).
template <int MR>
void panel_kernel_avx2(const float* x, size_t k, const float* w, const float* bias4,
                       float result[][kPanelRows]) {
  const size_t k4 = k - k % 4;
  __m256 acc01[MR], acc23[MR];  // lanes: (row 0 l0..l3 | row 1 l0..l3), (row 2 | row 3)
  for (int i = 0; i < MR; ++i) acc01[i] = acc23[i] = _mm256_setzero_ps();
  for (size_t kb = 0; kb < k4; kb += 4, w += 16) {
    const __m256 w01 = _mm256_loadu_ps(w);
    const __m256 w23 = _mm256_loadu_ps(w + 8);
    for (int i = 0; i < MR; ++i) {
      const __m128 x4 = _mm_loadu_ps(x + i * k + kb);
      const __m256 xv = _mm256_insertf128_ps(_mm256_castps128_ps256(x4), x4, 1);
      acc01[i] = _mm256_add_ps(acc01[i], _mm256_mul_ps(xv, w01));
      acc23[i] = _mm256_add_ps(acc23[i], _mm256_mul_ps(xv, w23));
    }
  }
  for (int i = 0; i < MR; ++i) {
    simd::F4 s = simd::hsum4(_mm256_castps256_ps128(acc01[i]), _mm256_extractf128_ps(acc01[i], 1),
                             _mm256_castps256_ps128(acc23[i]), _mm256_extractf128_ps(acc23[i], 1));
    const float* wt = w;
    for (size_t kk = k4; kk < k; ++kk, wt += 4) {
      s = simd::add(s, simd::mul(simd::splat(x[i * k + kk]), simd::load(wt)));
    }
    if (bias4) s = simd::add(s, simd::load(bias4));
    simd::store(result[i], s);
  }
}

}  // namespace

void matmul_avx2(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                 const float* bias, float* out) {
  for (size_t row0 = 0; row0 < n; row0 += kPanelRows) {
    const float* panel = w_packed + row0 * k;
    const size_t n_valid = std::min(kPanelRows, n - row0);
    float bias4[kPanelRows] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (bias) std::copy(bias + row0, bias + row0 + n_valid, bias4);
    const float* b = bias ? bias4 : nullptr;
    float result[4][kPanelRows];
    for (size_t i = 0; i < m;) {
      const size_t rows = std::min<size_t>(4, m - i);
      switch (rows) {
        case 4:
          panel_kernel_avx2<4>(x + i * k, k, panel, b, result);
          break;
        case 3:
          panel_kernel_avx2<3>(x + i * k, k, panel, b, result);
          break;
        case 2:
          panel_kernel_avx2<2>(x + i * k, k, panel, b, result);
          break;
        default:
          panel_kernel_avx2<1>(x + i * k, k, panel, b, result);
      }
      for (size_t r = 0; r < rows; ++r) {
        std::copy(result[r], result[r] + n_valid, out + (i + r) * n + row0);
      }
      i += rows;
    }
  }
}

}  // namespace specdec::kernels

#endif  // __AVX2__
