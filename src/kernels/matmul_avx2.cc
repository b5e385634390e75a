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

// Rounds (8 lines, one per stripe) prefetched ahead of the one being read (2 to 8 do as well).
constexpr size_t kPrefetchRounds = 4;

// The rows of x with each k-block doubled for the 256-bit accumulators: xb[(b m + i) 8 ..] =
// x[i][4b .. 4b + 3] twice. Built once per call, so that the inner loops load a ready operand
// instead of broadcasting one (a broadcast from memory costs an extra shuffle uop per row and
// k-block).
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

// One k-block (w: 16 floats) of MR rows (xk: their doubled blocks, 8 floats each).
template <int MR>
inline void add_block_avx2(const float* xk, const float* w, __m256 (&acc01)[6],
                           __m256 (&acc23)[6]) {
  const __m256 w01 = _mm256_loadu_ps(w);
  const __m256 w23 = _mm256_loadu_ps(w + 8);
  for (int i = 0; i < MR; ++i) {
    const __m256 xv = _mm256_loadu_ps(xk + 8 * i);
    acc01[i] = _mm256_add_ps(acc01[i], _mm256_mul_ps(xv, w01));
    acc23[i] = _mm256_add_ps(acc23[i], _mm256_mul_ps(xv, w23));
  }
}

// Rounds [j0, j1) of panel pl (PackedReader::Panel) for MR rows (xk: doubled blocks at k-block
// kStripes j0, xstep floats per k-block). A striped panel prefetches the round kPrefetchRounds
// ahead in every stripe (it continues into the next panel; past the end of the matrix the
// prefetches fall on other memory, which x86 allows): software prefetches keep more lines in
// flight than the hardware's per-stream ones.
template <int MR>
inline void add_rounds_avx2(const detail::PackedReader::Panel& pl, bool striped, size_t j0,
                            size_t j1, const float* xk, size_t xstep, __m256 (&acc01)[6],
                            __m256 (&acc23)[6]) {
  const float* w = pl.first + j0 * pl.round;
  for (size_t j = j0; j < j1; ++j, w += pl.round) {
    if (striped) {
      const char* ahead = reinterpret_cast<const char*>(w + kPrefetchRounds * pl.round);
      for (size_t s = 0; s < kStripes; ++s) {
        _mm_prefetch(ahead + s * pl.step * sizeof(float), _MM_HINT_T0);
      }
    }
    const float* ws = w;
    SPECDEC_NO_UNROLL
    for (size_t s = 0; s < kStripes; ++s, ws += pl.step, xk += xstep) {
      add_block_avx2<MR>(xk, ws, acc01, acc23);
    }
  }
}

// Sums of MR rows' accumulators, with the K % 4 tail (unstriped) after the k-blocks.
template <int MR>
inline void sums_avx2(const float* x, size_t k, const detail::PackedReader::Panel& pl,
                      const __m256 (&acc01)[6], const __m256 (&acc23)[6], simd::F4* result) {
  const size_t k4 = k - k % 4;
  for (int i = 0; i < MR; ++i) {
    simd::F4 s = simd::hsum4(_mm256_castps256_ps128(acc01[i]), _mm256_extractf128_ps(acc01[i], 1),
                             _mm256_castps256_ps128(acc23[i]), _mm256_extractf128_ps(acc23[i], 1));
    if (k4 < k) {  // unstriped: the tail follows the k-blocks
      const float* wt = pl.after + kLineFloats * pl.rest;
      for (size_t kk = k4; kk < k; ++kk, wt += 4) {
        s = simd::add(s, simd::mul(simd::splat(x[i * k + kk]), simd::load(wt)));
      }
    }
    result[i] = s;
  }
}

// MR input rows (stride k; xb: their doubled k-blocks, a stride of 8 m floats per k-block)
// against panel p, read in logical order: result[i] = the panel's 4 outputs of row i before the
// bias. Live registers: 2 MR accumulators + 2 weight blocks (14 of 16 ymm for MR = 6).
template <int MR>
void sweep_avx2(const float* x, const float* xb, size_t m, size_t k, const detail::PackedReader& rd,
                size_t p, simd::F4 result[MR]) {
  const detail::PackedReader::Panel pl = rd.panel(p);
  __m256 acc01[6], acc23[6];  // lanes: (row 0 l0..l3 | row 1 l0..l3), (row 2 | row 3)
  for (int i = 0; i < MR; ++i) acc01[i] = acc23[i] = _mm256_setzero_ps();
  const size_t xstep = 8 * m;
  add_rounds_avx2<MR>(pl, rd.stripe != 0, 0, pl.rounds, xb, xstep, acc01, acc23);
  const float* xk = xb + xstep * kStripes * pl.rounds;
  const float* w = pl.after;
  for (size_t b = 0; b < pl.rest; ++b, w += kLineFloats, xk += xstep) {
    add_block_avx2<MR>(xk, w, acc01, acc23);
  }
  sums_avx2<MR>(x, k, pl, acc01, acc23, result);
}

// Accumulators of up to 6 input rows against a panel (2 ymm per row), kept between chunks.
struct AccRows {
  __m256 a01[6], a23[6];
};

// Rounds [j0, j1) (and then, when `rest`, the blocks after the last round) of `rows` rows into
// acc.
template <int MR>
void add_chunk_avx2(const detail::PackedReader::Panel& pl, bool striped, size_t j0, size_t j1,
                    bool rest, const float* xk, size_t xstep, AccRows& acc) {
  __m256 a01[6], a23[6];
  for (int i = 0; i < MR; ++i) {
    a01[i] = acc.a01[i];
    a23[i] = acc.a23[i];
  }
  add_rounds_avx2<MR>(pl, striped, j0, j1, xk, xstep, a01, a23);
  if (rest) {
    const float* w = pl.after;
    xk += xstep * kStripes * (j1 - j0);
    for (size_t b = 0; b < pl.rest; ++b, w += kLineFloats, xk += xstep) {
      add_block_avx2<MR>(xk, w, a01, a23);
    }
  }
  for (int i = 0; i < MR; ++i) {
    acc.a01[i] = a01[i];
    acc.a23[i] = a23[i];
  }
}

void add_chunk_rows(size_t rows, const detail::PackedReader::Panel& pl, bool striped, size_t j0,
                    size_t j1, bool rest, const float* xk, size_t xstep, AccRows& acc) {
  switch (rows) {
    case 6:
      return add_chunk_avx2<6>(pl, striped, j0, j1, rest, xk, xstep, acc);
    case 5:
      return add_chunk_avx2<5>(pl, striped, j0, j1, rest, xk, xstep, acc);
    case 4:
      return add_chunk_avx2<4>(pl, striped, j0, j1, rest, xk, xstep, acc);
    case 3:
      return add_chunk_avx2<3>(pl, striped, j0, j1, rest, xk, xstep, acc);
    case 2:
      return add_chunk_avx2<2>(pl, striped, j0, j1, rest, xk, xstep, acc);
    default:
      return add_chunk_avx2<1>(pl, striped, j0, j1, rest, xk, xstep, acc);
  }
}

// More than 6 rows against panel p: groups of at most 6 (sizes differing by at most 1), which
// take turns on each chunk of the panel (2 rounds: 16 k-blocks) while it is in L1, so that the
// weights stream from memory at the pace of the whole pass's arithmetic (as in matmul_vec4);
// the accumulators wait in `scratch` between chunks. result[i]: row i's 4 outputs.
void sweep_groups_avx2(const float* x, const float* xb, size_t m, size_t k,
                       const detail::PackedReader& rd, size_t p, std::vector<AccRows>& scratch,
                       simd::F4* result) {
  const detail::PackedReader::Panel pl = rd.panel(p);
  const bool striped = rd.stripe != 0;
  const size_t groups = (m + 5) / 6, base = m / groups, extra = m % groups;
  if (scratch.size() < groups) scratch.resize(groups);
  for (size_t g = 0; g < groups; ++g) {
    for (int i = 0; i < 6; ++i) scratch[g].a01[i] = scratch[g].a23[i] = _mm256_setzero_ps();
  }
  const size_t xstep = 8 * m;
  constexpr size_t kChunkRounds = 2;
  for (size_t j = 0; j < pl.rounds || (j == 0 && pl.rest > 0); j += kChunkRounds) {
    const size_t j1 = std::min(j + kChunkRounds, pl.rounds);
    const bool rest = j1 == pl.rounds && pl.rest > 0;
    for (size_t g = 0, row = 0; g < groups; ++g) {
      const size_t rows = base + (g < extra ? 1 : 0);
      // The first group prefetches for all.
      add_chunk_rows(rows, pl, striped && g == 0, j, j1, rest, xb + xstep * kStripes * j + 8 * row,
                     xstep, scratch[g]);
      row += rows;
    }
  }
  for (size_t g = 0, row = 0; g < groups; ++g) {
    const size_t rows = base + (g < extra ? 1 : 0);
    __m256 a01[6], a23[6];
    for (size_t i = 0; i < rows; ++i) {
      a01[i] = scratch[g].a01[i];
      a23[i] = scratch[g].a23[i];
    }
    // sums_avx2 needs the row count at compile time: one instance per count.
    using Sums = void (*)(const float*, size_t, const detail::PackedReader::Panel&,
                          const __m256(&)[6], const __m256(&)[6], simd::F4*);
    static constexpr Sums kSums[] = {nullptr,      sums_avx2<1>, sums_avx2<2>, sums_avx2<3>,
                                     sums_avx2<4>, sums_avx2<5>, sums_avx2<6>};
    kSums[rows](x + row * k, k, pl, a01, a23, result + row);
    row += rows;
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

// Adds the bias (4 entries, or null) and stores lanes 0 .. count - 1 to out.
inline void finish(simd::F4 s, const float* bias, size_t count, float* out) {
  if (count == kPanelRows) {  // every panel but perhaps the last
    if (bias) s = simd::add(s, simd::load(bias));
    simd::store(out, s);
    return;
  }
  float b[4] = {0.0f, 0.0f, 0.0f, 0.0f}, v[4];
  for (size_t r = 0; r < count; ++r) b[r] = bias ? bias[r] : 0.0f;
  if (bias) s = simd::add(s, simd::load(b));
  simd::store(v, s);
  for (size_t r = 0; r < count; ++r) out[r] = v[r];
}

}  // namespace

// Panel by panel, in logical order; up to 6 input rows in one sweep of the panel, more in groups
// that take turns on each chunk (sweep_groups_avx2). An unstriped W (in cache) with M = 1 goes
// two panels at a time.
void matmul_avx2_panels(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                        const float* bias, float* out, size_t p_begin, size_t p_end) noexcept {
  const detail::PackedReader rd(w_packed, n, k);
  const float* xb = doubled_rows(x, m, k);
  const size_t panels = std::min(p_end, (n + kPanelRows - 1) / kPanelRows);
  size_t p = p_begin;
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
  thread_local std::vector<AccRows> scratch;
  struct Sums {  // one panel's outputs of every row (a struct: vector<__m128> drops alignment)
    simd::F4 s;
  };
  thread_local std::vector<Sums> sums;
  if (sums.size() < m) sums.resize(m);
  simd::F4* const sum = &sums[0].s;
  for (; p < panels; ++p) {
    const size_t row0 = p * kPanelRows;
    if (m <= 6) {
      sweep_rows(x, xb, m, m, k, rd, p, sum);
    } else {
      sweep_groups_avx2(x, xb, m, k, rd, p, scratch, sum);
    }
    const size_t n_valid = std::min(kPanelRows, n - row0);
    for (size_t i = 0; i < m; ++i) {
      finish(sums[i].s, bias ? bias + row0 : nullptr, n_valid, out + i * n + row0);
    }
  }
}

void matmul_avx2(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                 const float* bias, float* out) {
  matmul_avx2_panels(x, m, k, w_packed, n, bias, out, 0, (n + kPanelRows - 1) / kPanelRows);
}

}  // namespace specdec::kernels

#endif  // __AVX2__
