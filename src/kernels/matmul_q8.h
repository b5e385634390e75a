// 8-bit weights: out[m][n] = bias[n] + x[m] . W[n] with W stored as blocks of 32 int8 values
// along the input dimension, one float scale per block, and x quantized the same way on the fly
// (W8A8, as llama.cpp's Q8_0 dot product: integer multiply-adds inside a block, one float
// multiply-add per block).
//
// Format. W (n, k), k a multiple of kQ8Block = 32. Row n, block b holds w8[n][32b .. 32b + 31]
// in [-127, 127] and a scale sw[n][b], finite and > 0; the weight it stands for is
// sw[n][b] * w8[n][32b + j]. Quantizing a float row (quantize_weights_q8, the one quantizer;
// models/tools/quantize.py does the same in NumPy):
//   amax = max |w| over the block; d = float(half(amax / 127)) (IEEE binary16, round to
//   nearest even: the scale is stored as F16 on disk); if d == 0 (an all-zero or tiny block):
//   d = 1 and every w8 = 0; else w8 = clamp(round_half_even(w / d), -127, 127).
//
// Activations. Each row of x is quantized per block (quantize_rows_q8):
//   amax = max |x| over the block (NaN ignored); sx = amax / 127; if amax == 0: sx = 0 and
//   every x8 = 0; else x8 = clamp(round_half_even(x * (127 / amax)), -127, 127) (a NaN
//   product gives 0). x8 is kept widened to int16 (the kernels' operand width).
//
// Canonical order. Every implementation computes each output with the same operations:
//   isum_b = sum_j x8[m][32b + j] * w8[n][32b + j]   (exact in int32: |isum| <= 516,128 < 2^24)
//   acc = 0; for b = 0 .. k/32 - 1 in order: acc = acc + (sw[n][b] * sx[m][b]) * float(isum_b)
//   out[m][n] = acc + bias[n] (skipped when bias is null).
// The integer sums are exact whatever their order, and float(isum_b) is exact, so every output
// is bit-identical on every backend (AVX2, WASM SIMD128, scalar), for any M, any row position
// and any split over threads, and equal to matmul_q8_reference().
//
// Packed layout (made once at load time). Rows in panels of kPanelRows = 4 (rows past n: zeros,
// scale 0). Quants: a 64-byte header whose byte 0 holds the offset (1..64) of the 64-byte
// aligned data from the buffer's start, then for each panel p, for each block b: the 32 int8 of
// rows 4p, 4p + 1, 4p + 2, 4p + 3 (128 bytes, two cache lines). Scales: for each panel p, for
// each block b: the 4 rows' scales (floats). A kernel reads both sequences once, front to back.
//
// Striping. As for float weights (matmul.h), one core streams memory faster from several
// sequences in turn than from one: a large matrix (k / 32 a multiple of kQ8Stripes and at least
// kQ8MinStripedBytes of quants) stores its (panel, block) pieces of 128 bytes in kQ8Stripes
// stripes, piece i = p * k / 32 + b in stripe i % 8 at slot i / 8, stripes kQ8StripePad bytes
// apart; walking a panel's blocks in order then reads the 8 stripes in turn. Small matrices
// (they stay in cache) are stored in the plain order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"  // kPanelRows

namespace specdec::kernels {

constexpr size_t kQ8Block = 32;
constexpr size_t kQ8HeaderBytes = 64;
constexpr size_t kQ8PieceBytes = 128;  // one block of a panel: 4 rows x 32 int8
constexpr size_t kQ8Stripes = 8;
constexpr size_t kQ8MinStripedBytes = 256 * 1024;
constexpr size_t kQ8StripePad = 128;

// Whether W (n, k) packed is striped (see Striping).
bool q8_striped(size_t n, size_t k);

namespace detail {
// Where the (panel, block) pieces of packed quants live (shared by the kernels).
struct Q8Reader {
  const int8_t* data;  // q + q[0]
  size_t stripe;       // bytes per stripe; 0 when unstriped
  size_t blocks;       // k / 32
  Q8Reader(const int8_t* q, size_t n, size_t k);
  const int8_t* at(size_t p, size_t b) const {
    const size_t i = p * blocks + b;
    return stripe ? data + (i % kQ8Stripes) * stripe + (i / kQ8Stripes) * kQ8PieceBytes
                  : data + i * kQ8PieceBytes;
  }
};

// The loops every kernel shares (same contract as matmul_q8_panels): for each panel p and input
// row i, row(rd, p, xi, si, ps, acc) puts in acc[0..3] the panel's four sums of row i in the
// canonical order (xi: the row's k quants, si: its k / 32 scales, ps: the panel's scales, 4 per
// block); then out[i][4p + r] = acc[r] + bias[4p + r] for the panel's rows that exist.
template <typename Row>
inline void for_panel_rows(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* q,
                           const float* s, size_t n, const float* bias, float* out, size_t p_begin,
                           size_t p_end, Row row) {
  const Q8Reader rd(q, n, k);
  for (size_t p = p_begin; p < p_end; ++p) {
    const float* ps = s + p * rd.blocks * kPanelRows;
    for (size_t i = 0; i < m; ++i) {
      float acc[kPanelRows];
      row(rd, p, x8 + i * k, sx + i * rd.blocks, ps, acc);
      for (size_t r = 0; r < kPanelRows; ++r) {
        const size_t col = p * kPanelRows + r;
        if (col < n) out[i * n + col] = bias ? acc[r] + bias[col] : acc[r];
      }
    }
  }
}
}  // namespace detail

// Bytes of W (n, k) packed quants (header included) and floats of its packed scales.
size_t q8_packed_bytes(size_t n, size_t k);
size_t q8_packed_scales(size_t n, size_t k);

// The quantizer above, for W (n, k) row-major float: w8 (n, k) row-major, scales (n, k / 32)
// row-major. k % 32 == 0.
void quantize_weights_q8(const float* w, size_t n, size_t k, int8_t* w8, float* scales);

// Packs w8 (n, k) and scales (n, k / 32), both row-major, into q (q8_packed_bytes) and
// s (q8_packed_scales). The data's alignment depends on q's address. Every byte of q and s is
// written (pads and rows past n as zeros): they may be uninitialised.
void pack_weights_q8(const int8_t* w8, const float* scales, size_t n, size_t k, int8_t* q,
                     float* s);
// The same a block of rows at a time (as pack_weights_begin / pack_weights_rows): the header and
// pads once, then rows [first, first + count) from w8_rows (count, k) and scale_rows
// (count, k / 32) — first a multiple of kPanelRows, and count too unless the block ends at n
// (specdec::Error otherwise); every row once.
void pack_weights_q8_begin(size_t n, size_t k, int8_t* q);
void pack_weights_q8_rows(const int8_t* w8_rows, const float* scale_rows, size_t first,
                          size_t count, size_t n, size_t k, int8_t* q, float* s);

// Row n's weights, dequantized (k floats): sw * w8, exact.
void unpack_row_q8(const int8_t* q, const float* s, size_t n, size_t k, size_t row, float* out);

// x (m, k) float -> x8 (m, k) int16 and sx (m, k / 32), as described above.
void quantize_rows_q8(const float* x, size_t m, size_t k, int16_t* x8, float* sx);

// out (m, n) = x W^T + bias from the quantized rows of x. Uses the best kernel compiled in.
void matmul_q8(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* q,
               const float* s, size_t n, const float* bias, float* out);
// Panels [p_begin, p_end) only (columns 4 p_begin .. 4 p_end - 1, clipped to n).
void matmul_q8_panels(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* q,
                      const float* s, size_t n, const float* bias, float* out, size_t p_begin,
                      size_t p_end) noexcept;

// The portable kernel (plain C++; what scalar builds run), compiled everywhere for tests.
void matmul_q8_scalar_panels(const int16_t* x8, const float* sx, size_t m, size_t k,
                             const int8_t* q, const float* s, size_t n, const float* bias,
                             float* out, size_t p_begin, size_t p_end) noexcept;

// The reference: canonical order over unpacked w8 (n, k) and scales (n, k / 32).
void matmul_q8_reference(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* w8,
                         const float* scales, size_t n, const float* bias, float* out);

}  // namespace specdec::kernels
