// A 4-lane float vector with the few operations the kernels need, for three backends:
// WASM SIMD128 (<wasm_simd128.h>), x86 with AVX2 (SSE4.1 intrinsics on 128-bit registers;
// the matmul has its own 256-bit kernel in matmul_avx2.cc) and a plain struct otherwise.
// Every operation is an IEEE single operation per lane (no FMA, no approximate reciprocal),
// so a kernel written once over F4 gives bit-identical results on every backend. This header
// is the only place besides matmul_avx2.cc where intrinsics appear.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#elif defined(__AVX2__)
#include <immintrin.h>
#endif

// Keeps the next loop rolled. For the kernels' loop over the lines of a striped round: fully
// unrolled, clang hoists the x loads of all 8 lines (V8 then spills them) and GCC interchanges
// the loops into one serial chain of adds per accumulator; both are slower.
#if defined(__clang__)
#define SPECDEC_NO_UNROLL _Pragma("clang loop unroll(disable)")
#elif defined(__GNUC__)
#define SPECDEC_NO_UNROLL _Pragma("GCC unroll 1")
#else
#define SPECDEC_NO_UNROLL
#endif

namespace specdec::kernels::simd {

#if defined(__wasm_simd128__) || defined(__AVX2__)

// The two SIMD backends side by side: SPECDEC_F4(wasm, x86) is the first on WASM, the second
// on x86. One definition per operation, with both instructions on its line.
#if defined(__wasm_simd128__)
#define SPECDEC_F4(wasm, x86) wasm
#else
#define SPECDEC_F4(wasm, x86) x86
#endif

using F4 = SPECDEC_F4(v128_t, __m128);

inline F4 load(const float* p) { return SPECDEC_F4(wasm_v128_load, _mm_loadu_ps)(p); }
inline void store(float* p, F4 v) { SPECDEC_F4(wasm_v128_store, _mm_storeu_ps)(p, v); }
inline F4 splat(float x) { return SPECDEC_F4(wasm_f32x4_splat, _mm_set1_ps)(x); }
inline F4 add(F4 a, F4 b) { return SPECDEC_F4(wasm_f32x4_add, _mm_add_ps)(a, b); }
inline F4 sub(F4 a, F4 b) { return SPECDEC_F4(wasm_f32x4_sub, _mm_sub_ps)(a, b); }
inline F4 mul(F4 a, F4 b) { return SPECDEC_F4(wasm_f32x4_mul, _mm_mul_ps)(a, b); }
inline F4 div(F4 a, F4 b) { return SPECDEC_F4(wasm_f32x4_div, _mm_div_ps)(a, b); }
inline F4 floor(F4 a) { return SPECDEC_F4(wasm_f32x4_floor, _mm_floor_ps)(a); }
// The comparisons give all-ones lanes where true (a < b; a > b; a is NaN).
inline F4 lt(F4 a, F4 b) { return SPECDEC_F4(wasm_f32x4_lt, _mm_cmplt_ps)(a, b); }
inline F4 gt(F4 a, F4 b) { return SPECDEC_F4(wasm_f32x4_gt, _mm_cmpgt_ps)(a, b); }
inline F4 is_nan(F4 a) { return SPECDEC_F4(wasm_f32x4_ne, _mm_cmpunord_ps)(a, a); }
inline F4 bit_xor(F4 a, F4 b) { return SPECDEC_F4(wasm_v128_xor, _mm_xor_ps)(a, b); }
// mask ? a : b, lane by lane.
inline F4 select(F4 mask, F4 a, F4 b) {
  return SPECDEC_F4(wasm_v128_bitselect(a, b, mask), _mm_blendv_ps(b, a, mask));
}
// Lane 0 without a round trip through memory.
inline float first(F4 v) { return SPECDEC_F4(wasm_f32x4_extract_lane(v, 0), _mm_cvtss_f32(v)); }

#undef SPECDEC_F4

#if defined(__wasm_simd128__)

inline F4 neg(F4 a) { return wasm_f32x4_neg(a); }
inline F4 abs(F4 a) { return wasm_f32x4_abs(a); }
// 2^n for integral n in [-126, 127], built from its exponent bits (exact).
inline F4 exp2i(F4 n) {
  v128_t e = wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n), wasm_i32x4_splat(127));
  return wasm_i32x4_shl(e, 23);
}
// (l0 + l2) + (l1 + l3) in lane 0.
inline float hsum(F4 a) {
  const F4 t = add(a, wasm_i32x4_shuffle(a, a, 2, 3, 0, 1));
  return first(add(t, wasm_i32x4_shuffle(t, t, 1, 0, 3, 2)));
}
// (sum a0, sum a1, sum a2, sum a3), each in the canonical order (l0 + l2) + (l1 + l3).
inline F4 hsum4(F4 a0, F4 a1, F4 a2, F4 a3) {
  F4 u01 = add(wasm_i32x4_shuffle(a0, a1, 0, 1, 4, 5), wasm_i32x4_shuffle(a0, a1, 2, 3, 6, 7));
  F4 u23 = add(wasm_i32x4_shuffle(a2, a3, 0, 1, 4, 5), wasm_i32x4_shuffle(a2, a3, 2, 3, 6, 7));
  return add(wasm_i32x4_shuffle(u01, u23, 0, 2, 4, 6), wasm_i32x4_shuffle(u01, u23, 1, 3, 5, 7));
}

#else  // x86

inline F4 neg(F4 a) { return _mm_xor_ps(a, _mm_set1_ps(-0.0f)); }
inline F4 abs(F4 a) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), a); }
inline F4 exp2i(F4 n) {
  __m128i e = _mm_add_epi32(_mm_cvttps_epi32(n), _mm_set1_epi32(127));
  return _mm_castsi128_ps(_mm_slli_epi32(e, 23));
}
inline float hsum(F4 a) {
  const F4 t = add(a, _mm_movehl_ps(a, a));  // (l0 + l2, l1 + l3, ..)
  return first(add(t, _mm_shuffle_ps(t, t, _MM_SHUFFLE(1, 1, 1, 1))));
}
inline F4 hsum4(F4 a0, F4 a1, F4 a2, F4 a3) {
  F4 u01 = add(_mm_movelh_ps(a0, a1), _mm_movehl_ps(a1, a0));  // (a0_0+a0_2, a0_1+a0_3, a1...)
  F4 u23 = add(_mm_movelh_ps(a2, a3), _mm_movehl_ps(a3, a2));
  return add(_mm_shuffle_ps(u01, u23, _MM_SHUFFLE(2, 0, 2, 0)),
             _mm_shuffle_ps(u01, u23, _MM_SHUFFLE(3, 1, 3, 1)));
}

#endif

#else  // portable scalar backend: the same lane-wise operations, one lane at a time

struct F4 {
  float v[4];
};

template <typename Op>
inline F4 map2(F4 a, F4 b, Op op) {
  F4 r;
  for (int i = 0; i < 4; ++i) r.v[i] = op(a.v[i], b.v[i]);
  return r;
}
// Masks hold all-ones / all-zero bit patterns as in the SIMD backends.
inline float mask_bits(bool on) {
  const uint32_t bits = on ? 0xffffffffu : 0u;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline bool mask_on(float m) {
  uint32_t bits;
  std::memcpy(&bits, &m, sizeof bits);
  return bits != 0;
}

inline F4 load(const float* p) { return F4{{p[0], p[1], p[2], p[3]}}; }
inline void store(float* p, F4 v) {
  for (int i = 0; i < 4; ++i) p[i] = v.v[i];
}
inline F4 splat(float x) { return F4{{x, x, x, x}}; }
inline F4 add(F4 a, F4 b) { return map2(a, b, std::plus<float>()); }
inline F4 sub(F4 a, F4 b) { return map2(a, b, std::minus<float>()); }
inline F4 mul(F4 a, F4 b) { return map2(a, b, std::multiplies<float>()); }
inline F4 div(F4 a, F4 b) { return map2(a, b, std::divides<float>()); }
inline F4 neg(F4 a) {
  return map2(a, a, [](float x, float) { return -x; });
}
inline F4 abs(F4 a) {
  return map2(a, a, [](float x, float) { return std::fabs(x); });
}
inline F4 floor(F4 a) {
  return map2(a, a, [](float x, float) { return std::floor(x); });
}
inline F4 lt(F4 a, F4 b) {
  return map2(a, b, [](float x, float y) { return mask_bits(x < y); });
}
inline F4 gt(F4 a, F4 b) {
  return map2(a, b, [](float x, float y) { return mask_bits(x > y); });
}
inline F4 is_nan(F4 a) {
  return map2(a, a, [](float x, float) { return mask_bits(x != x); });
}
inline F4 select(F4 mask, F4 a, F4 b) {
  F4 r;
  for (int i = 0; i < 4; ++i) r.v[i] = mask_on(mask.v[i]) ? a.v[i] : b.v[i];
  return r;
}
inline F4 bit_xor(F4 a, F4 b) {
  F4 r;
  for (int i = 0; i < 4; ++i) {
    uint32_t x, y;
    std::memcpy(&x, &a.v[i], sizeof x);
    std::memcpy(&y, &b.v[i], sizeof y);
    x ^= y;
    std::memcpy(&r.v[i], &x, sizeof x);
  }
  return r;
}
inline F4 exp2i(F4 n) {
  return map2(n, n, [](float x, float) {
    const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(x) + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  });
}
inline float first(F4 v) { return v.v[0]; }
inline float hsum(F4 a) { return (a.v[0] + a.v[2]) + (a.v[1] + a.v[3]); }
inline F4 hsum4(F4 a0, F4 a1, F4 a2, F4 a3) {
  auto h = [](F4 a) { return (a.v[0] + a.v[2]) + (a.v[1] + a.v[3]); };
  return F4{{h(a0), h(a1), h(a2), h(a3)}};
}

#endif

inline F4 zero() { return splat(0.0f); }

// hsum(a): the sum of the 4 lanes in the canonical order (l0 + l2) + (l1 + l3), defined per
// backend above.

}  // namespace specdec::kernels::simd
