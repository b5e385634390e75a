// The native matmul kernel: 256-bit AVX2 mul + add (deliberately no FMA: it would round
// differently from WASM). Same packed layout and canonical order as matmul_vec4: a 256-bit
// accumulator holds the 4 partial sums of two panel rows side by side, against an x block of 4
// broadcast to both halves, so each lane sees exactly the products the 128-bit kernel adds.
#include "kernels/matmul.h"

#if defined(__AVX2__)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/vec4.h"

namespace specdec::kernels {
namespace {

constexpr size_t kPrefetchPieces = 2;

// The rows of x with each k-block doubled for the 256-bit accumulators: xb[(b m + i) 8 ..] =
// x[i][4b .. 4b + 3] twice. Built once per call, so that the inner loops load a ready operand
// instead of broadcasting one (a broadcast from memory costs an extra shuffle uop per row and
// k-block on AMD Zen 2: measured 42 vs 57 GFLOP/s for 6 rows in L1).
const float* doubled_rows(const float* x, size_t m, size_t k) {
  thread_local std::vector<float> buffer;
  const size_t blocks = k / 4;
  if (buffer.size() < blocks * m * 8 + 8) buffer.resize(blocks * m * 8 + 8);
  float* const xb = buffer.data() + (32 - reinterpret_cast<uintptr_t>(buffer.data()) % 32) % 32 / 4;
  float* d = xb;
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t i = 0; i < m; ++i, d += 8) {
      const __m128 x4 = _mm_loadu_ps(x + i * k + 4 * b);
      _mm256_storeu_ps(d, _mm256_insertf128_ps(_mm256_castps128_ps256(x4), x4, 1));
    }
  }
  return xb;
}

// MR input rows (stride k; xb: their doubled k-blocks, a stride of 8 m floats per k-block)
// against panel p, read in logical order: result[i] = the panel's 4 outputs of row i before the
// bias. Live registers: 2 MR accumulators + 2 weight blocks (15 of 16 ymm for MR = 6).
template <int MR>
void sweep_avx2(const float* x, const float* xb, size_t m, size_t k, const detail::PackedReader& rd,
                size_t p, simd::F4 result[MR]) {
  const size_t k4 = k - k % 4;
  __m256 acc01[MR], acc23[MR];  // lanes: (row 0 l0..l3 | row 1 l0..l3), (row 2 | row 3)
  for (int i = 0; i < MR; ++i) acc01[i] = acc23[i] = _mm256_setzero_ps();
  size_t q = p * kPanelRows * k;
  const size_t end = q + kPanelRows * k4;
  const size_t xstep = 8 * m;
  const float* xk = xb;  // xb + 8 m kb / 4
  while (q < end) {
    const size_t len = std::min(end - q, rd.run(q));
    const float* w = rd.at(q);
    if (rd.stripe != 0) {
      // The piece kPrefetchPieces ahead in logical order (another stripe), one line at a time:
      // software prefetches keep more lines in flight than the hardware's per-stream ones
      // (measured 20-30% faster for 3-6 rows from memory). Near the end: the last piece.
      const float* ahead = rd.at(std::min(q + kPrefetchPieces * kPieceFloats, rd.last_piece));
      for (size_t j = 0; j < kPieceFloats; j += 16) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + j), _MM_HINT_T0);
      }
    }
    const float* const w_end = w + len;
    for (; w < w_end; w += 16, xk += xstep) {
      const __m256 w01 = _mm256_loadu_ps(w);
      const __m256 w23 = _mm256_loadu_ps(w + 8);
      for (int i = 0; i < MR; ++i) {
        const __m256 xv = _mm256_loadu_ps(xk + 8 * i);
        acc01[i] = _mm256_add_ps(acc01[i], _mm256_mul_ps(xv, w01));
        acc23[i] = _mm256_add_ps(acc23[i], _mm256_mul_ps(xv, w23));
      }
    }
    q += len;
  }
  for (int i = 0; i < MR; ++i) {
    simd::F4 s = simd::hsum4(_mm256_castps256_ps128(acc01[i]), _mm256_extractf128_ps(acc01[i], 1),
                             _mm256_castps256_ps128(acc23[i]), _mm256_extractf128_ps(acc23[i], 1));
    if (k4 < k) {  // unstriped: the tail follows the k-blocks
      const float* wt = rd.at(end);
      for (size_t kk = k4; kk < k; ++kk, wt += 4) {
        s = simd::add(s, simd::mul(simd::splat(x[i * k + kk]), simd::load(wt)));
      }
    }
    result[i] = s;
  }
}

// One input row against the two adjacent panels p, p + 1 of an unstriped W (in cache): 4
// accumulator chains instead of 2, so the adds' latency does not limit it.
void sweep_pair_m1_avx2(const float* x, const float* xb, size_t k, const float* panel,
                        simd::F4 result[2]) {
  const size_t k4 = k - k % 4;
  const float* wp[2] = {panel, panel + kPanelRows * k};
  __m256 acc[2][2];  // [panel][rows (0, 1) | rows (2, 3)]
  for (auto& a : acc) a[0] = a[1] = _mm256_setzero_ps();
  for (size_t kb = 0; kb < k4; kb += 4) {
    const __m256 xv = _mm256_loadu_ps(xb + 2 * kb);
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
    result[p] = s;
  }
}

// Rows x .. x + rows - 1 (rows <= 6; xb: their doubled blocks, m rows per k-block) against
// panel p.
void sweep_rows(const float* x, const float* xb, size_t rows, size_t m, size_t k,
                const detail::PackedReader& rd, size_t p, simd::F4 result[6]) {
  switch (rows) {
    case 6:
      return sweep_avx2<6>(x, xb, m, k, rd, p, result);
    case 5:
      return sweep_avx2<5>(x, xb, m, k, rd, p, result);
    case 4:
      return sweep_avx2<4>(x, xb, m, k, rd, p, result);
    case 3:
      return sweep_avx2<3>(x, xb, m, k, rd, p, result);
    case 2:
      return sweep_avx2<2>(x, xb, m, k, rd, p, result);
    default:
      return sweep_avx2<1>(x, xb, m, k, rd, p, result);
  }
}

// Adds the bias and stores lanes 0 .. count - 1 to out.
void finish(simd::F4 s, const float* bias, size_t count, float* out) {
  float v[4];
  if (bias) {
    float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::copy(bias, bias + count, b);
    s = simd::add(s, simd::load(b));
  }
  simd::store(v, s);
  std::copy(v, v + count, out);
}

}  // namespace

// Panel by panel, in logical order; for each panel the input rows in sweeps of up to 6 (7 and 8
// rows: 4 + 3 and 4 + 4). An unstriped W (in cache) with M = 1 goes two panels at a time.
void matmul_avx2(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                 const float* bias, float* out) {
  const detail::PackedReader rd(w_packed, n, k);
  const float* xb = doubled_rows(x, m, k);
  const size_t panels = (n + kPanelRows - 1) / kPanelRows;
  size_t p = 0;
  if (m == 1 && rd.stripe == 0) {
    for (; p + 2 <= panels && (p + 2) * kPanelRows <= n; p += 2) {
      simd::F4 s[2];
      sweep_pair_m1_avx2(x, xb, k, rd.base + p * kPanelRows * k, s);
      for (int h = 0; h < 2; ++h) {
        const size_t row0 = (p + h) * kPanelRows;
        finish(s[h], bias ? bias + row0 : nullptr, kPanelRows, out + row0);
      }
    }
  }
  for (; p < panels; ++p) {
    const size_t row0 = p * kPanelRows;
    const size_t n_valid = std::min(kPanelRows, n - row0);
    const float* b = bias ? bias + row0 : nullptr;
    for (size_t i = 0; i < m;) {
      const size_t left = m - i;
      const size_t rows = left <= 6 ? left : left <= 12 ? (left + 1) / 2 : 6;
      simd::F4 s[6];
      sweep_rows(x + i * k, xb + 8 * i, rows, m, k, rd, p, s);
      for (size_t j = 0; j < rows; ++j) finish(s[j], b, n_valid, out + (i + j) * n + row0);
      i += rows;
    }
  }
}

}  // namespace specdec::kernels

#endif  // __AVX2__
