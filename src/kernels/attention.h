// Causal self-attention for one query row and one head (the attention inner loop of a GPT).
#pragma once

#include <cstddef>

namespace specdec::kernels {

// score_j = dot(q, keys[j]) * (1 / sqrt(head_size)) for j < n_keys; p = softmax(score);
// out = sum_j p_j values[j], accumulated in increasing j from +0.
// q: (head_size,); keys, values: (n_keys, head_size) row-major; scores: scratch of n_keys
// floats; out: (head_size,). requires: n_keys >= 1.
// A query row is computed on its own, with the canonical dot and softmax of ops.h, so its
// result does not depend on how many rows a forward pass holds (batch invariance).
void attend(const float* q, const float* keys, const float* values, size_t n_keys, size_t head_size,
            float* scores, float* out) noexcept;
void attend_reference(const float* q, const float* keys, const float* values, size_t n_keys,
                      size_t head_size, float* scores, float* out);

// Tree attention: the query sees the first n_prefix rows of keys/values (the committed
// sequence) and then the rows listed in extra[0 .. n_extra) (its ancestors in a draft tree and
// itself, in depth order). Bit for bit the result of attend() on a contiguous copy of those
// rows in that order, so a tree node's output equals that of the same path run as a plain
// sequence. scores: scratch of n_prefix + n_extra floats. requires: n_prefix + n_extra >= 1.
void attend_gather(const float* q, const float* keys, const float* values, size_t n_prefix,
                   const size_t* extra, size_t n_extra, size_t head_size, float* scores,
                   float* out) noexcept;

}  // namespace specdec::kernels
