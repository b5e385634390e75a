// 8-bit weights on disk: a float model file turned into its quantized form (the layout
// model/specdec_file.h documents; the arithmetic in kernels/matmul_q8.h). Loading the result gives
// the same model, bit for bit, as loading the float file with Weights::kInt8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace specdec {

// The quantized safetensors file of a float (F32 or F16) model file: every block Linear weight
// X.weight (n, k) becomes X.weight.q8 (I8) and X.weight.scale (F16, one per 32 weights); every
// other tensor is copied as stored; __metadata__ gains "weights": "int8". Validates the input
// as GPTModel::from_safetensors does and throws specdec::Error "model file: ..." (a file that
// is already quantized is refused).
std::vector<uint8_t> quantize_model_file(const uint8_t* bytes, size_t size);

}  // namespace specdec
