// out[m][n] = bias[n] + sum_k x[m][k] * W[n][k]: nn.Linear with W of shape (N, K) row-major,
// for one row (M = 1, decoding) or a few (M = 2..16, verification and prefill).
//
// Canonical order. Every implementation computes each output with the same operations:
//   K4 = K - K % 4; four partial sums from +0, lane j accumulating x[k] * W[n][k] for
//   k = j, j + 4, ... < K4 in increasing k; then s = (l0 + l2) + (l1 + l3); then
//   s += x[k] * W[n][k] for the tail k = K4 .. K - 1 in order; then s += bias[n] (skipped
//   when bias is null).
// So out[m][n] is bit-identical whatever M is and whichever row it sits in (batch invariance),
// on every backend (AVX2, WASM SIMD128, scalar), and equal to matmul_reference().
//
// Packed layout. W is repacked once at load time into panels of kPanelRows = 4 output rows so
// that the kernel reads one contiguous stream. Panel p (rows 4p .. 4p + 3, rows past N zero)
// holds 4K floats:
//   for each k-block b < K4 / 4:  W[4p][4b..4b+3], W[4p+1][4b..4b+3], W[4p+2][..], W[4p+3][..]
//   then for each tail k >= K4:   W[4p][k], W[4p+1][k], W[4p+2][k], W[4p+3][k]
// A 128-bit kernel keeps one accumulator per panel row (4 registers per input row); the AVX2
// kernel holds rows (0, 1) and (2, 3) in two 256-bit accumulators against a broadcast x block.
// A single input row (decoding, or the odd row of an odd M) runs against two adjacent panels at
// once, so that it has 8 (128-bit) or 4 (256-bit) independent accumulators instead of 4 or 2.
// Only the schedule differs: every output is still computed in the canonical order.
#pragma once

#include <cstddef>

namespace specdec::kernels {

constexpr size_t kPanelRows = 4;

// Floats needed for W (n, k) packed: ceil(n / 4) * 4 * k.
size_t packed_size(size_t n, size_t k);

// Packs W (n, k) row-major into w_packed (packed_size(n, k) floats).
void pack_weights(const float* w, size_t n, size_t k, float* w_packed);

// x: (m, k) row-major; w_packed: W (n, k) packed; bias: (n,) or null; out: (m, n) row-major.
// Uses the best kernel compiled in (AVX2 natively, SIMD128 in WASM, scalar otherwise).
void matmul(const float* x, size_t m, size_t k, const float* w_packed, size_t n, const float* bias,
            float* out);

// The 128-bit kernel behind matmul() in WASM and scalar builds (vec4.h backends). Compiled
// everywhere so that native tests exercise the code WASM runs.
void matmul_vec4(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                 const float* bias, float* out);

#if defined(__AVX2__)
// The 256-bit kernel behind matmul() in native builds (matmul_avx2.cc).
void matmul_avx2(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                 const float* bias, float* out);
#endif

// Scalar reference in the canonical order over the unpacked W (n, k), one output at a time.
void matmul_reference(const float* x, size_t m, size_t k, const float* w, size_t n,
                      const float* bias, float* out);

}  // namespace specdec::kernels
