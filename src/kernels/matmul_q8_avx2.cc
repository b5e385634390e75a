// The AVX2 kernel of 8-bit weights (kernels/matmul_q8.h), in the canonical order.
//
// Per block of 32 weights and panel row: two vpmovsxbw (16 int8 -> 16 int16) against the row
// of x held widened in two 256-bit registers, two vpmaddwd (16 exact multiply-adds each), one
// add; the four rows' eight lanes are folded by horizontal adds into one 128-bit vector of
// row sums, converted to float (exact), scaled by sw * sx and added to the panel's accumulator
// with 128-bit float operations (the same IEEE operations as the other kernels).
#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"
#include "kernels/matmul_q8.h"

#if defined(__AVX2__)
#include <immintrin.h>

namespace specdec::kernels {

namespace {

inline __m256i row_dot(const int8_t* w, __m256i x_lo, __m256i x_hi) {
  const __m256i w_lo = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  const __m256i w_hi =
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16)));
  return _mm256_add_epi32(_mm256_madd_epi16(w_lo, x_lo), _mm256_madd_epi16(w_hi, x_hi));
}

// [sum a0, sum a1, sum a2, sum a3] over their eight lanes (integer: exact in any order).
inline __m128i fold4(__m256i a0, __m256i a1, __m256i a2, __m256i a3) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a0, a1), _mm256_hadd_epi32(a2, a3));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

}  // namespace

void matmul_q8_avx2_panels(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* q,
                           const float* s, size_t n, const float* bias, float* out, size_t p_begin,
                           size_t p_end) noexcept {
  // One input row against panel p: its four sums, in the canonical order.
  const auto row = [](const detail::Q8Reader& rd, size_t p, const int16_t* xi, const float* si,
                      const float* ps, float* sums) {
    __m128 acc = _mm_setzero_ps();
    for (size_t b = 0; b < rd.blocks; ++b) {
      const int16_t* xb = xi + b * kQ8Block;
      const __m256i x_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb));
      const __m256i x_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb + 16));
      const int8_t* w = rd.at(p, b);
      // Both lines of the piece 8 slots ahead in this stripe (8 x 8 = 64 pieces ahead).
      _mm_prefetch(reinterpret_cast<const char*>(w + 1024), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(w + 1024 + 64), _MM_HINT_T0);
      const __m128i isum = fold4(row_dot(w, x_lo, x_hi), row_dot(w + 32, x_lo, x_hi),
                                 row_dot(w + 64, x_lo, x_hi), row_dot(w + 96, x_lo, x_hi));
      const __m128 d = _mm_mul_ps(_mm_loadu_ps(ps + b * kPanelRows), _mm_set1_ps(si[b]));
      acc = _mm_add_ps(acc, _mm_mul_ps(d, _mm_cvtepi32_ps(isum)));
    }
    _mm_storeu_ps(sums, acc);
  };
  detail::for_panel_rows(x8, sx, m, k, q, s, n, bias, out, p_begin, p_end, row);
}

}  // namespace specdec::kernels

#endif  // __AVX2__
