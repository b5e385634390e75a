#include "kernels/attention.h"

#include <cmath>

#include "kernels/ops.h"
#include "kernels/vec4.h"

namespace specdec::kernels {

void attend_reference(const float* q, const float* keys, const float* values, size_t n_keys,
                      size_t head_size, float* scores, float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  for (size_t j = 0; j < n_keys; ++j)
    scores[j] = dot_reference(q, keys + j * head_size, head_size) * scale;
  softmax_reference(scores, n_keys);
  for (size_t d = 0; d < head_size; ++d) {
    float acc = 0.0f;
    for (size_t j = 0; j < n_keys; ++j) acc += scores[j] * values[j * head_size + d];
    out[d] = acc;
  }
}

void attend(const float* q, const float* keys, const float* values, size_t n_keys, size_t head_size,
            float* scores, float* out) {
  using namespace simd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  for (size_t j = 0; j < n_keys; ++j) scores[j] = dot(q, keys + j * head_size, head_size) * scale;
  softmax(scores, n_keys);
  // Four output dimensions per vector; each lane is its own sequential sum over j, so the
  // result equals the scalar loop bit for bit.
  const size_t d4 = head_size - head_size % 4;
  for (size_t d = 0; d < d4; d += 4) {
    F4 acc = zero();
    for (size_t j = 0; j < n_keys; ++j) {
      acc = add(acc, mul(splat(scores[j]), load(values + j * head_size + d)));
    }
    store(out + d, acc);
  }
  for (size_t d = d4; d < head_size; ++d) {
    float acc = 0.0f;
    for (size_t j = 0; j < n_keys; ++j) acc += scores[j] * values[j * head_size + d];
    out[d] = acc;
  }
}

}  // namespace specdec::kernels
