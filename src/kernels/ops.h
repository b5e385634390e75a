// Row operations of the transformer: dot, exp, softmax, log-softmax, layer norm, RMS norm,
// GELU (erf and tanh), SiLU, SwiGLU.
// Each SIMD version (vec4.h: WASM SIMD128, AVX2 builds' 128-bit path, or scalar) performs the
// same IEEE operations in the same order as its *_reference, so the two agree bit for bit.
//
// Canonical sum of n terms t_i (also used by dot and the layer-norm statistics): four partial
// sums, lane j accumulating t_i for i = j, j + 4, ... < n4 = n - n % 4 from +0; then
// (l0 + l2) + (l1 + l3); then the tail terms i >= n4 added in order. Transcendentals are
// portable_exp / portable_erf (kernels/portable_math.h), never libm's.
#pragma once

#include <cstddef>

namespace specdec::kernels {

constexpr float kLayerNormEps = 1e-5f;  // nn.LayerNorm's default

// sum_i a[i] * b[i] in the canonical order.
float dot(const float* a, const float* b, size_t n);
float dot_reference(const float* a, const float* b, size_t n);

// x[i] = portable_exp(x[i]), bit for bit (subnormal results, inf and NaN included).
void exp_inplace(float* x, size_t n);

// In place: m = max x; e_i = exp(x_i - m); x_i = e_i / (canonical sum of e). requires: n >= 1.
void softmax(float* x, size_t n);
void softmax_reference(float* x, size_t n);

// In place: x_i = (x_i - m) - log(canonical sum of exp(x_j - m)). requires: n >= 1.
// Accurate for tiny probabilities, unlike log(softmax(x)).
void log_softmax(float* x, size_t n);

// out = ((x - mean) * rstd) * weight + bias with mean = sum / n, var = sum (x - mean)^2 / n
// (biased, as PyTorch), rstd = 1 / sqrt(var + eps). requires: n >= 1.
void layernorm(const float* x, const float* weight, const float* bias, size_t n, float* out,
               float eps = kLayerNormEps);
void layernorm_reference(const float* x, const float* weight, const float* bias, size_t n,
                         float* out, float eps = kLayerNormEps);

// RMSNorm (Llama, Qwen2): out = (x * rstd) * weight, rstd = 1 / sqrt(sum x^2 / n + eps), the
// sum in the canonical order (= dot(x, x, n)). requires: n >= 1.
void rmsnorm(const float* x, const float* weight, size_t n, float eps, float* out);
void rmsnorm_reference(const float* x, const float* weight, size_t n, float eps, float* out);

// In place, exact (erf) GELU: x = (0.5 x) (1 + erf(x / sqrt 2)), as F.gelu's default.
void gelu(float* x, size_t n) noexcept;
void gelu_reference(float* x, size_t n);

// In place tanh GELU (GPT-2's gelu_new, PyTorch's approximate='tanh'):
// 0.5 x (1 + tanh u), u = sqrt(2/pi) (x + 0.044715 x^3), computed as x / (1 + exp(-2u))
// (the same function: 0.5 (1 + tanh u) = sigmoid(2u)) with portable_exp: no cancellation near
// -inf, where the result goes to -0 as exp overflows (-inf itself gives NaN, as silu).
void gelu_tanh(float* x, size_t n) noexcept;
void gelu_tanh_reference(float* x, size_t n);

// In place SiLU (swish): x = x / (1 + exp(-x)), exp = portable_exp. For x < -88.37, exp(-x)
// overflows to +inf and the result is -0 (the true value is below 3e-37 in magnitude); -inf
// gives NaN, +inf gives +inf, NaN stays NaN.
void silu(float* x, size_t n);
void silu_reference(float* x, size_t n);

// SwiGLU of rows (T, 2F) = [gate (F) | up (F)] each: out (T, F) = silu(gate) * up, silu as
// above (silu() on a copy of the gate row, then one multiply per element).
void swiglu(const float* gate_up, size_t rows, size_t n_ff, float* out);
void swiglu_reference(const float* gate_up, size_t rows, size_t n_ff, float* out);
// One row's columns of it: out[j] = silu(gate[j]) * up[j] for j < n. Columns split at multiples
// of 4 give swiglu()'s values bit for bit (kernels/parallel.h splits a row so).
void swiglu_span(const float* gate, const float* up, size_t n, float* out) noexcept;

// x[i] += y[i]. Element-wise, so any vectorisation the compiler picks is exact.
void add_inplace(float* x, const float* y, size_t n);

}  // namespace specdec::kernels
