// The WASM SIMD128 kernel of 8-bit weights (kernels/matmul_q8.h), in the canonical order.
//
// Per block of 32 weights and panel row: four v128.load8x8_s (8 int8 -> 8 int16 each) against
// the row of x held widened in four registers, four i32x4.dot_i16x8_s (8 exact multiply-adds
// each), three adds; the four rows' lane sums are folded into one i32x4 (rows 0..3), converted
// to float (exact), scaled by sw * sx and added to the panel's accumulator. A row of x sweeps
// the whole panel; the next row re-reads it from L1 (a panel is 4k bytes: 8 KiB at k = 2048).
#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"
#include "kernels/matmul_q8.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

namespace specdec::kernels {

namespace {

// [sum a0, sum a1, sum a2, sum a3] (integer: any order is exact).
inline v128_t fold4(v128_t a0, v128_t a1, v128_t a2, v128_t a3) {
  const v128_t s01 = wasm_i32x4_add(wasm_i32x4_shuffle(a0, a1, 0, 4, 1, 5),
                                    wasm_i32x4_shuffle(a0, a1, 2, 6, 3, 7));
  const v128_t s23 = wasm_i32x4_add(wasm_i32x4_shuffle(a2, a3, 0, 4, 1, 5),
                                    wasm_i32x4_shuffle(a2, a3, 2, 6, 3, 7));
  return wasm_i32x4_add(wasm_i32x4_shuffle(s01, s23, 0, 1, 4, 5),
                        wasm_i32x4_shuffle(s01, s23, 2, 3, 6, 7));
}

// One panel row's block: 32 weights at w against x0..x3 (32 int16).
inline v128_t row_dot(const int8_t* w, v128_t x0, v128_t x1, v128_t x2, v128_t x3) {
  const v128_t d0 = wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(w), x0);
  const v128_t d1 = wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(w + 8), x1);
  const v128_t d2 = wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(w + 16), x2);
  const v128_t d3 = wasm_i32x4_dot_i16x8(wasm_i16x8_load8x8(w + 24), x3);
  return wasm_i32x4_add(wasm_i32x4_add(d0, d1), wasm_i32x4_add(d2, d3));
}

}  // namespace

void matmul_q8_wasm_panels(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* q,
                           const float* s, size_t n, const float* bias, float* out, size_t p_begin,
                           size_t p_end) noexcept {
  // One input row against panel p: its four sums, in the canonical order.
  const auto row = [](const detail::Q8Reader& rd, size_t p, const int16_t* xi, const float* si,
                      const float* ps, float* sums) {
    v128_t acc = wasm_f32x4_splat(0.0f);
    for (size_t b = 0; b < rd.blocks; ++b) {
      const int16_t* xb = xi + b * kQ8Block;
      const v128_t x0 = wasm_v128_load(xb), x1 = wasm_v128_load(xb + 8),
                   x2 = wasm_v128_load(xb + 16), x3 = wasm_v128_load(xb + 24);
      const int8_t* w = rd.at(p, b);
      const v128_t a0 = row_dot(w, x0, x1, x2, x3);
      const v128_t a1 = row_dot(w + 32, x0, x1, x2, x3);
      const v128_t a2 = row_dot(w + 64, x0, x1, x2, x3);
      const v128_t a3 = row_dot(w + 96, x0, x1, x2, x3);
      const v128_t isum = wasm_f32x4_convert_i32x4(fold4(a0, a1, a2, a3));
      const v128_t d = wasm_f32x4_mul(wasm_v128_load(ps + b * kPanelRows), wasm_f32x4_splat(si[b]));
      acc = wasm_f32x4_add(acc, wasm_f32x4_mul(d, isum));
    }
    wasm_v128_store(sums, acc);
  };
  detail::for_panel_rows(x8, sx, m, k, q, s, n, bias, out, p_begin, p_end, row);
}

}  // namespace specdec::kernels

#endif  // __wasm_simd128__
