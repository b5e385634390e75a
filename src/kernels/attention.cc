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

namespace {

using namespace simd;

// scores[j] = canonical dot(q, keys[j]) * scale for 4 keys at once: one accumulator per key,
// reduced together by hsum4, so each score sees exactly the operations of dot().
void scores4(const float* q, const float* keys, size_t hs, float scale, float* scores) {
  const size_t hs4 = hs - hs % 4;
  const float* k0 = keys;
  const float* k1 = keys + hs;
  const float* k2 = keys + 2 * hs;
  const float* k3 = keys + 3 * hs;
  F4 a0 = zero(), a1 = zero(), a2 = zero(), a3 = zero();
  for (size_t d = 0; d < hs4; d += 4) {
    const F4 qv = load(q + d);
    a0 = add(a0, mul(qv, load(k0 + d)));
    a1 = add(a1, mul(qv, load(k1 + d)));
    a2 = add(a2, mul(qv, load(k2 + d)));
    a3 = add(a3, mul(qv, load(k3 + d)));
  }
  float s[4];
  store(s, hsum4(a0, a1, a2, a3));
  for (size_t d = hs4; d < hs; ++d) {
    s[0] += q[d] * k0[d];
    s[1] += q[d] * k1[d];
    s[2] += q[d] * k2[d];
    s[3] += q[d] * k3[d];
  }
  for (int i = 0; i < 4; ++i) scores[i] = s[i] * scale;
}

// out[d0 .. d0 + 4 NV) = sum_j p_j values[j][d] over the rows [0, n_prefix) then the rows
// extra[0 .. n_extra), each lane summed in increasing j from +0 (the scalar loop's order); NV
// accumulators stay in registers while j runs, from one segment to the next, so the order is that
// of a contiguous copy.
template <int NV>
void weighted_sum(const float* p, const float* values, size_t n_prefix, const size_t* extra,
                  size_t n_extra, size_t hs, size_t d0, float* out) {
  F4 acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = zero();
  const float* row = values + d0;
  for (size_t j = 0; j < n_prefix; ++j, row += hs) {
    const F4 pj = splat(p[j]);
    for (int v = 0; v < NV; ++v) acc[v] = add(acc[v], mul(pj, load(row + 4 * v)));
  }
  for (size_t e = 0; e < n_extra; ++e) {
    const F4 pj = splat(p[n_prefix + e]);
    const float* r = values + extra[e] * hs + d0;
    for (int v = 0; v < NV; ++v) acc[v] = add(acc[v], mul(pj, load(r + 4 * v)));
  }
  for (int v = 0; v < NV; ++v) store(out + d0 + 4 * v, acc[v]);
}

}  // namespace

void attend_gather(const float* q, const float* keys, const float* values, size_t n_prefix,
                   const size_t* extra, size_t n_extra, size_t head_size, float* scores,
                   float* out) noexcept {
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  // A score depends only on its own key (scores4 computes each exactly as dot() does).
  size_t j = 0;
  for (; j + 4 <= n_prefix; j += 4) scores4(q, keys + j * head_size, head_size, scale, scores + j);
  for (; j < n_prefix; ++j) scores[j] = dot(q, keys + j * head_size, head_size) * scale;
  for (size_t e = 0; e < n_extra; ++e) {
    scores[n_prefix + e] = dot(q, keys + extra[e] * head_size, head_size) * scale;
  }
  const size_t n = n_prefix + n_extra;
  softmax(scores, n);
  // Output dimensions 32 (8 vectors) at a time, then 4 at a time, then the scalar tail.
  const size_t d4 = head_size - head_size % 4;
  size_t d = 0;
  for (; d + 32 <= d4; d += 32) {
    weighted_sum<8>(scores, values, n_prefix, extra, n_extra, head_size, d, out);
  }
  for (; d < d4; d += 4) {
    weighted_sum<1>(scores, values, n_prefix, extra, n_extra, head_size, d, out);
  }
  for (; d < head_size; ++d) {
    float acc = 0.0f;
    for (size_t jj = 0; jj < n_prefix; ++jj) acc += scores[jj] * values[jj * head_size + d];
    for (size_t e = 0; e < n_extra; ++e) {
      acc += scores[n_prefix + e] * values[extra[e] * head_size + d];
    }
    out[d] = acc;
  }
}

void attend(const float* q, const float* keys, const float* values, size_t n_keys, size_t head_size,
            float* scores, float* out) noexcept {
  attend_gather(q, keys, values, n_keys, nullptr, 0, head_size, scores, out);
}

}  // namespace specdec::kernels
