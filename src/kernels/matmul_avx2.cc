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

// One input row against two consecutive panels (8 output rows): 4 independent accumulators
// instead of 2, so a single row (decoding) is not bound by the latency of the adds. The two
// panels are adjacent in memory: panel 1 starts 4k floats after panel 0.
void panel2_kernel_avx2_m1(const float* x, size_t k, const float* w, const float* bias8,
                           float result[2][kPanelRows]) {
  const size_t k4 = k - k % 4;
  const float* wp[2] = {w, w + kPanelRows * k};  // the two panels
  __m256 acc[2][2];                              // [panel][rows (0, 1) | rows (2, 3)]
  for (auto& a : acc) a[0] = a[1] = _mm256_setzero_ps();
  for (size_t kb = 0; kb < k4; kb += 4) {
    const __m128 x4 = _mm_loadu_ps(x + kb);
    const __m256 xv = _mm256_insertf128_ps(_mm256_castps128_ps256(x4), x4, 1);
    for (int p = 0; p < 2; ++p) {
      acc[p][0] = _mm256_add_ps(acc[p][0], _mm256_mul_ps(xv, _mm256_loadu_ps(wp[p])));
      acc[p][1] = _mm256_add_ps(acc[p][1], _mm256_mul_ps(xv, _mm256_loadu_ps(wp[p] + 8)));
      wp[p] += 16;
    }
  }
  for (int p = 0; p < 2; ++p) {
    const __m256 lo = acc[p][0], hi = acc[p][1];
    simd::F4 s = simd::hsum4(_mm256_castps256_ps128(lo), _mm256_extractf128_ps(lo, 1),
                             _mm256_castps256_ps128(hi), _mm256_extractf128_ps(hi, 1));
    const float* wt = wp[p];  // the panel's tail: W[row 0..3][kk] for kk >= k4
    for (size_t kk = k4; kk < k; ++kk, wt += 4) {
      s = simd::add(s, simd::mul(simd::splat(x[kk]), simd::load(wt)));
    }
    if (bias8) s = simd::add(s, simd::load(bias8 + 4 * p));
    simd::store(result[p], s);
  }
}

}  // namespace

namespace {

// Rows i .. i + rows - 1 (rows <= 4) of x against one panel.
void panel_rows(const float* x, size_t rows, size_t k, const float* panel, const float* bias4,
                float result[4][kPanelRows]) {
  switch (rows) {
    case 4:
      panel_kernel_avx2<4>(x, k, panel, bias4, result);
      break;
    case 3:
      panel_kernel_avx2<3>(x, k, panel, bias4, result);
      break;
    case 2:
      panel_kernel_avx2<2>(x, k, panel, bias4, result);
      break;
    default:
      panel_kernel_avx2<1>(x, k, panel, bias4, result);
  }
}

}  // namespace

// Output rows in pairs of panels (8 rows, adjacent in memory); input rows in groups of 4, and a
// single leftover input row (M = 1, 5, 9, ...) through panel2_kernel_avx2_m1, whose 4
// accumulator chains keep it from being bound by add latency. Then the last one or two panels.
void matmul_avx2(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                 const float* bias, float* out) {
  size_t row0 = 0;
  for (; row0 + 2 * kPanelRows <= n; row0 += 2 * kPanelRows) {
    const float* panel = w_packed + row0 * k;
    const float* b = bias ? bias + row0 : nullptr;  // 8 valid rows
    for (size_t i = 0; i < m;) {
      const size_t rows = std::min<size_t>(4, m - i);
      if (rows == 1) {
        float result[2][kPanelRows];
        panel2_kernel_avx2_m1(x + i * k, k, panel, b, result);
        std::copy(result[0], result[0] + kPanelRows, out + i * n + row0);
        std::copy(result[1], result[1] + kPanelRows, out + i * n + row0 + kPanelRows);
      } else {
        for (size_t p = 0; p < 2; ++p) {
          float result[4][kPanelRows];
          panel_rows(x + i * k, rows, k, panel + p * kPanelRows * k,
                     b ? b + p * kPanelRows : nullptr, result);
          for (size_t r = 0; r < rows; ++r) {
            std::copy(result[r], result[r] + kPanelRows, out + (i + r) * n + row0 + p * kPanelRows);
          }
        }
      }
      i += rows;
    }
  }
  for (; row0 < n; row0 += kPanelRows) {
    const float* panel = w_packed + row0 * k;
    const size_t n_valid = std::min(kPanelRows, n - row0);
    float bias4[kPanelRows] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (bias) std::copy(bias + row0, bias + row0 + n_valid, bias4);
    for (size_t i = 0; i < m;) {
      const size_t rows = std::min<size_t>(4, m - i);
      float result[4][kPanelRows];
      panel_rows(x + i * k, rows, k, panel, bias ? bias4 : nullptr, result);
      for (size_t r = 0; r < rows; ++r) {
        std::copy(result[r], result[r] + n_valid, out + (i + r) * n + row0);
      }
      i += rows;
    }
  }
}

}  // namespace specdec::kernels

#endif  // __AVX2__
