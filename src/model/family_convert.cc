// The conversion of checkpoint tensors (model/family_plan.h) to floats or 8-bit blocks: the
// loops a load spends its time in, apart from the plan and its checks (family_plan.cc), so that
// the WebAssembly build compiles the plan for size and these for speed (cmake/wasm.cmake).
#include <cmath>
#include <cstring>

#include "base/errors.h"
#include "kernels/bf16.h"
#include "kernels/half.h"
#include "kernels/matmul_q8.h"
#include "model/family_plan.h"

namespace specdec::family {

using kernels::kQ8Block;

// Q8_0 / Q4_0 blocks as our 8-bit blocks, without requantizing: scales[b] = the block's F16 d
// widened, q = its int8 quants (Q4_0: nibble - 8; low nibbles are quants 0..15, high 16..31).
void blocks_to_q8(const std::string& name, const CheckpointTensor& t, int8_t* q, float* scales,
                  Buffer<uint8_t>& scratch, size_t first_block) {
  const bool q8 = t.type == TensorType::kQ8_0;
  const size_t block_bytes = q8 ? 34 : 18, n_blocks = t.bytes / block_bytes;
  const uint8_t* data = tensor_bytes(t, scratch);
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = data + b * block_bytes;
    uint16_t h = 0;
    std::memcpy(&h, blk, 2);
    scales[b] = kernels::f16_to_f32(h);
    if (!std::isfinite(scales[b])) {
      fail("model file: tensor '", name, "' block ", first_block + b, " has the scale ", scales[b],
           " (must be finite)");
    }
    int8_t* out = q + b * kQ8Block;
    if (q8) {
      std::memcpy(out, blk + 2, kQ8Block);
      continue;
    }
    for (size_t j = 0; j < kQ8Block / 2; ++j) {
      out[j] = static_cast<int8_t>((blk[2 + j] & 15) - 8);
      out[j + kQ8Block / 2] = static_cast<int8_t>((blk[2 + j] >> 4) - 8);
    }
  }
}

size_t tensor_numel(const CheckpointTensor& t) {
  if (t.type == TensorType::kF32) return t.bytes / 4;
  if (is_quantized(t.type)) return t.bytes / (t.type == TensorType::kQ8_0 ? 34 : 18) * kQ8Block;
  return t.bytes / 2;
}

// The tensor as float: F16 / BF16 widened, Q8_0 / Q4_0 blocks dequantized (d * q: exact in
// float); non-finite values refused, naming the tensor and index.
void to_floats_into(const std::string& name, const CheckpointTensor& t, float* out,
                    Buffer<uint8_t>& scratch, size_t first_value) {
  const size_t numel = tensor_numel(t);
  if (t.type == TensorType::kF32) {
    // Straight into the floats (a streamed tensor is fetched there: no second copy).
    if (t.data) {
      std::memcpy(out, t.data, t.bytes);
    } else if (t.fetch) {
      t.fetch(reinterpret_cast<uint8_t*>(out));
    }
  } else if (is_quantized(t.type)) {
    // Dequantized a block at a time, through the same conversion the 8-bit path uses.
    Buffer<int8_t> q(numel);
    Buffer<float> scales(numel / kQ8Block);
    blocks_to_q8(name, t, q.data(), scales.data(), scratch, first_value / kQ8Block);
    for (size_t i = 0; i < numel; ++i) out[i] = scales[i / kQ8Block] * static_cast<float>(q[i]);
  } else {
    const uint8_t* d = tensor_bytes(t, scratch);
    const bool bf16 = t.type == TensorType::kBF16;
    for (size_t i = 0; i < numel; ++i) {
      uint16_t h = 0;
      std::memcpy(&h, d + 2 * i, 2);
      out[i] = bf16 ? kernels::bf16_to_f32(h) : kernels::f16_to_f32(h);
    }
  }
  for (size_t i = 0; i < numel; ++i) {
    if (!std::isfinite(out[i])) {
      fail("model file: tensor '", name, "' holds a non-finite value (", out[i], ") at index ",
           first_value + i);
    }
  }
}

std::vector<float> to_floats(const std::string& name, const CheckpointTensor& t,
                             size_t first_value) {
  std::vector<float> out(tensor_numel(t));
  Buffer<uint8_t> scratch;
  to_floats_into(name, t, out.data(), scratch, first_value);
  return out;
}

}  // namespace specdec::family
