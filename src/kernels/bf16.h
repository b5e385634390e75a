// bfloat16 -> binary32: a bf16 is the top 16 bits of a float, so widening is exact (NaN
// payloads, infinities and subnormals kept). Hugging Face checkpoints often store BF16.
#pragma once

#include <cstdint>
#include <cstring>

namespace specdec::kernels {

inline float bf16_to_f32(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace specdec::kernels
