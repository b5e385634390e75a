#include "kernels/half.h"

#include <cstring>

namespace specdec::kernels {

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {  // inf / NaN (payload kept)
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {  // normal: rebias 15 -> 127
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {  // signed zero
    bits = sign;
  } else {  // subnormal mantissa * 2^-24: normalise (float has the range for it)
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t f32_to_f16(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  const uint32_t sign = (b >> 16) & 0x8000u, exp = (b >> 23) & 0xffu, mant = b & 0x7fffffu;
  if (exp == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  // Round `full` right by `shift` bits, to nearest even.
  auto round_shift = [](uint32_t full, int shift) {
    uint32_t half = full >> shift;
    const uint32_t rem = full & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return half;
  };
  if (e <= 0) {  // a binary16 subnormal (or zero): value / 2^-24, rounded
    if (e < -10) return static_cast<uint16_t>(sign);
    return static_cast<uint16_t>(sign | round_shift(mant | 0x800000u, 14 - e));
  }
  // A carry out of the mantissa steps the exponent up: still the correct rounding.
  return static_cast<uint16_t>(sign | round_shift((static_cast<uint32_t>(e) << 23) | mant, 13));
}

}  // namespace specdec::kernels
