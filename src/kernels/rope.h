// Rotary position embeddings (RoPE) in Hugging Face's half-rotation layout (rotate_half, as
// modeling_llama / modeling_qwen2): within a head of d values, value j < d/2 pairs with value
// j + d/2 and the pair turns by the angle p * inv_freq[j] of the token's position p:
//   x'_j       = x_j cos - x_{j+d/2} sin
//   x'_{j+d/2} = x_{j+d/2} cos + x_j sin
// (llama.cpp's "NORM" pairs (2j, 2j+1) instead; its converter permutes Q and K rows to match:
// a GGUF frontend undoes that, model/checkpoint.h.) The angles come from a table computed once
// in double with kernels/portable_math.h (no libm), rounded once to float: the same bits on
// every platform.
#pragma once

#include <cstddef>
#include <vector>

namespace specdec::kernels {

// Llama 3's rope_scaling (rope_type "llama3"): long wavelengths slowed by `factor`, short ones
// kept, a smooth blend between. factor == 0: none.
struct RopeScaling {
  double factor = 0.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_positions = 8192.0;
};

// inv_freq[j] = theta^(-2j / head_dim) for j < head_dim / 2, then Llama 3's scaling if given
// (transformers' _compute_llama3_parameters). requires: head_dim even, theta > 0.
std::vector<double> rope_inv_freq(double theta, size_t head_dim,
                                  const RopeScaling* scaling = nullptr);

// cos_table, sin_table (n_positions, head_dim / 2) row-major: float of cos / sin of
// p * inv_freq[j], each computed in double.
void rope_table(const std::vector<double>& inv_freq, size_t n_positions, float* cos_table,
                float* sin_table);

// Rotates n_heads heads of head_dim values (x: (n_heads, head_dim), in place) by one position's
// table rows cos_row, sin_row (head_dim / 2,).
void rope_half(float* x, size_t n_heads, size_t head_dim, const float* cos_row,
               const float* sin_row);

}  // namespace specdec::kernels
