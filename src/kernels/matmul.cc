#include "kernels/matmul.h"

#include <algorithm>

#include "kernels/vec4.h"

namespace specdec::kernels {

size_t packed_size(size_t n, size_t k) {
  return (n + kPanelRows - 1) / kPanelRows * kPanelRows * k;
}

void pack_weights(const float* w, size_t n, size_t k, float* w_packed) {
  const size_t k4 = k - k % 4;
  float* dst = w_packed;
  for (size_t row0 = 0; row0 < n; row0 += kPanelRows) {
    auto at = [&](size_t r, size_t kk) { return row0 + r < n ? w[(row0 + r) * k + kk] : 0.0f; };
    for (size_t kb = 0; kb < k4; kb += 4) {
      for (size_t r = 0; r < kPanelRows; ++r) {
        for (size_t j = 0; j < 4; ++j) *dst++ = at(r, kb + j);
      }
    }
    for (size_t kk = k4; kk < k; ++kk) {
      for (size_t r = 0; r < kPanelRows; ++r) *dst++ = at(r, kk);
    }
  }
}

void matmul_reference(const float* x, size_t m, size_t k, const float* w, size_t n,
                      const float* bias, float* out) {
  const size_t k4 = k - k % 4;
  for (size_t i = 0; i < m; ++i) {
    const float* xi = x + i * k;
    for (size_t j = 0; j < n; ++j) {
      const float* wj = w + j * k;
      float lanes[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (size_t kk = 0; kk < k4; ++kk) lanes[kk % 4] += xi[kk] * wj[kk];
      float s = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
      for (size_t kk = k4; kk < k; ++kk) s += xi[kk] * wj[kk];
      if (bias) s += bias[j];
      out[i * n + j] = s;
    }
  }
}

namespace {

using namespace simd;

// MR input rows (stride k) against one panel: result[i][r] = out[row i][panel row r].
// Each loaded weight vector serves all MR rows; live registers: 4 MR accumulators + MR x
// blocks + 1 weight block (11 for MR = 2, under V8's ~12 before it spills).
template <int MR>
void panel_kernel(const float* x, size_t k, const float* w, const float* bias4,
                  float result[][kPanelRows]) {
  const size_t k4 = k - k % 4;
  F4 acc[MR][4];
  for (int i = 0; i < MR; ++i) {
    for (int r = 0; r < 4; ++r) acc[i][r] = zero();
  }
  for (size_t kb = 0; kb < k4; kb += 4, w += 16) {
    F4 xv[MR];
    for (int i = 0; i < MR; ++i) xv[i] = load(x + i * k + kb);
    for (int r = 0; r < 4; ++r) {
      const F4 wv = load(w + 4 * r);
      for (int i = 0; i < MR; ++i) acc[i][r] = add(acc[i][r], mul(xv[i], wv));
    }
  }
  F4 s[MR];
  for (int i = 0; i < MR; ++i) s[i] = hsum4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
  for (size_t kk = k4; kk < k; ++kk, w += 4) {
    const F4 wv = load(w);  // W[row 0..3][kk]: one step of the tail for all 4 outputs at once
    for (int i = 0; i < MR; ++i) s[i] = add(s[i], mul(splat(x[i * k + kk]), wv));
  }
  for (int i = 0; i < MR; ++i) {
    if (bias4) s[i] = add(s[i], load(bias4));
    store(result[i], s[i]);
  }
}

// One input row against two consecutive panels (8 output rows, adjacent in memory: panel 1
// starts 4k floats after panel 0): 8 accumulators + the x block + 1 weight block live, and each
// x block serves 8 outputs. Decoding (M = 1) spends most of its time here.
void panel2_kernel_m1(const float* x, size_t k, const float* w, const float* bias8,
                      float result[2][kPanelRows]) {
  const size_t k4 = k - k % 4;
  const float* w1 = w + kPanelRows * k;
  F4 a[2][4];
  for (auto& p : a) {
    for (F4& r : p) r = zero();
  }
  for (size_t kb = 0; kb < k4; kb += 4, w += 16, w1 += 16) {
    const F4 xv = load(x + kb);
    for (int r = 0; r < 4; ++r) a[0][r] = add(a[0][r], mul(xv, load(w + 4 * r)));
    for (int r = 0; r < 4; ++r) a[1][r] = add(a[1][r], mul(xv, load(w1 + 4 * r)));
  }
  const float* tails[2] = {w, w1};
  for (int p = 0; p < 2; ++p) {
    F4 s = hsum4(a[p][0], a[p][1], a[p][2], a[p][3]);
    const float* wt = tails[p];
    for (size_t kk = k4; kk < k; ++kk, wt += 4) s = add(s, mul(splat(x[kk]), load(wt)));
    if (bias8) s = add(s, load(bias8 + 4 * p));
    store(result[p], s);
  }
}

}  // namespace

// Output rows in pairs of panels while 8 remain; input rows in pairs (panel_kernel<2> on each
// panel) and a single leftover row (M = 1, 3, 5, ...) through panel2_kernel_m1. Then the last
// one or two panels one at a time.
void matmul_vec4(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                 const float* bias, float* out) {
  size_t first_single = 0;  // first output row left for the one-panel loop below
  for (size_t row0 = 0; row0 + 2 * kPanelRows <= n; row0 += 2 * kPanelRows) {
    const float* panel = w_packed + row0 * k;
    const float* b = bias ? bias + row0 : nullptr;  // 8 valid rows
    for (size_t i = 0; i < m;) {
      float result[2][kPanelRows];
      if (m - i >= 2) {
        for (size_t p = 0; p < 2; ++p) {
          panel_kernel<2>(x + i * k, k, panel + p * kPanelRows * k,
                          b ? b + p * kPanelRows : nullptr, result);
          for (size_t r = 0; r < 2; ++r) {
            std::copy(result[r], result[r] + kPanelRows, out + (i + r) * n + row0 + p * kPanelRows);
          }
        }
        i += 2;
      } else {
        panel2_kernel_m1(x + i * k, k, panel, b, result);
        std::copy(result[0], result[0] + kPanelRows, out + i * n + row0);
        std::copy(result[1], result[1] + kPanelRows, out + i * n + row0 + kPanelRows);
        i += 1;
      }
    }
    first_single = row0 + 2 * kPanelRows;
  }
  for (size_t row0 = first_single; row0 < n; row0 += kPanelRows) {
    const float* panel = w_packed + row0 * k;
    const size_t n_valid = std::min(kPanelRows, n - row0);
    float bias4[kPanelRows] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (bias) std::copy(bias + row0, bias + row0 + n_valid, bias4);
    float result[2][kPanelRows];
    for (size_t i = 0; i < m;) {
      const size_t rows = std::min<size_t>(2, m - i);
      if (rows == 2) {
        panel_kernel<2>(x + i * k, k, panel, bias ? bias4 : nullptr, result);
      } else {
        panel_kernel<1>(x + i * k, k, panel, bias ? bias4 : nullptr, result);
      }
      for (size_t r = 0; r < rows; ++r) {
        std::copy(result[r], result[r] + n_valid, out + (i + r) * n + row0);
      }
      i += rows;
    }
  }
}

void matmul(const float* x, size_t m, size_t k, const float* w_packed, size_t n, const float* bias,
            float* out) {
#if defined(__AVX2__)
  matmul_avx2(x, m, k, w_packed, n, bias, out);
#else
  matmul_vec4(x, m, k, w_packed, n, bias, out);
#endif
}

}  // namespace specdec::kernels
