// IEEE binary16 <-> binary32, exact and portable (no hardware conversion instruction assumed):
// the F16 tensors of a model file and the F16 block scales of 8-bit weights (matmul_q8.h).
#pragma once

#include <cstdint>

namespace specdec::kernels {

// binary16 -> binary32, exact for every one of the 65536 inputs (NaN payloads kept).
float f16_to_f32(uint16_t bits);

// binary32 -> binary16, round to nearest even (overflow to infinity, subnormals kept, NaN
// stays NaN).
uint16_t f32_to_f16(float x);

}  // namespace specdec::kernels
