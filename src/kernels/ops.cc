#include "kernels/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/portable_math.h"
#include "kernels/vec4.h"

namespace specdec::kernels {
namespace {

using namespace simd;

// ------------------------------------------------------------------ scalar reference helpers

// The canonical sum of term(i) for i < n (see ops.h).
template <typename Term>
float canonical_sum(size_t n, Term term) {
  const size_t n4 = n - n % 4;
  float lanes[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (size_t i = 0; i < n4; ++i) lanes[i % 4] += term(i);
  float s = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
  for (size_t i = n4; i < n; ++i) s += term(i);
  return s;
}

float max_reference(const float* x, size_t n) {
  float m = x[0];
  for (size_t i = 1; i < n; ++i) {
    if (x[i] > m) m = x[i];
  }
  return m;
}

// ------------------------------------------------------------------ vector math

// portable_exp, lane by lane, with the same operations in the same order.
F4 exp4(F4 x) {
  const F4 hi = splat(88.3762626647949f);
  const F4 lo = splat(-103.972084045410f);
  // Clamp first so that out-of-range lanes stay harmless; they are overwritten at the end.
  F4 xc = select(gt(x, hi), hi, x);
  xc = select(lt(xc, lo), lo, xc);
  const F4 n = floor(add(mul(xc, splat(1.44269504088896341f)), splat(0.5f)));
  F4 r = sub(xc, mul(n, splat(0.693359375f)));
  r = sub(r, mul(n, splat(-2.12194440e-4f)));
  const F4 z = mul(r, r);
  F4 y = splat(1.9875691500E-4f);
  y = add(mul(y, r), splat(1.3981999507E-3f));
  y = add(mul(y, r), splat(8.3334519073E-3f));
  y = add(mul(y, r), splat(4.1665795894E-2f));
  y = add(mul(y, r), splat(1.6666665459E-1f));
  y = add(mul(y, r), splat(5.0000001201E-1f));
  y = add(add(mul(y, z), r), splat(1.0f));
  // ldexp(y, n) for n in [-150, 128]: y * 2^n2 is exact (n2 in [-24, 1]) and the final
  // multiply by the normal power 2^n1 rounds once, exactly as ldexp does for subnormals.
  F4 n1 = select(lt(n, splat(-126.0f)), splat(-126.0f), n);
  n1 = select(gt(n1, splat(127.0f)), splat(127.0f), n1);
  const F4 n2 = sub(n, n1);
  F4 e = mul(mul(y, exp2i(n2)), exp2i(n1));
  e = select(gt(x, hi), splat(std::numeric_limits<float>::infinity()), e);
  e = select(lt(x, lo), zero(), e);
  return select(is_nan(x), x, e);
}

// portable_erf, lane by lane: both branches evaluated, the |x| < 1 one selected per lane.
F4 erf4(F4 x) {
  const F4 one = splat(1.0f);
  const F4 a = abs(x);
  const F4 z = mul(x, x);
  F4 y = splat(7.853861353153693e-5f);
  y = add(mul(y, z), splat(-8.010193625184903e-4f));
  y = add(mul(y, z), splat(5.188327685732524e-3f));
  y = add(mul(y, z), splat(-2.685381193529856e-2f));
  y = add(mul(y, z), splat(1.128358514861418e-1f));
  y = add(mul(y, z), splat(-3.761262582423300e-1f));
  y = add(mul(y, z), splat(1.128379165726710e+0f));
  const F4 small = mul(x, y);

  const F4 t = div(one, add(one, mul(splat(0.5f), a)));
  F4 p = splat(0.17087277f);
  p = add(mul(p, t), splat(-0.82215223f));
  p = add(mul(p, t), splat(1.48851587f));
  p = add(mul(p, t), splat(-1.13520398f));
  p = add(mul(p, t), splat(0.27886807f));
  p = add(mul(p, t), splat(-0.18628806f));
  p = add(mul(p, t), splat(0.09678418f));
  p = add(mul(p, t), splat(0.37409196f));
  p = add(mul(p, t), splat(1.00002368f));
  const F4 erfc = mul(t, exp4(add(sub(mul(neg(a), a), splat(1.26551223f)), mul(t, p))));
  const F4 r = sub(one, erfc);
  const F4 large = select(lt(x, zero()), neg(r), r);
  return select(lt(a, one), small, large);
}

constexpr float kSqrtHalf = 0.70710678118654752f;

F4 gelu4(F4 x) {
  return mul(mul(splat(0.5f), x), add(splat(1.0f), erf4(mul(x, splat(kSqrtHalf)))));
}

// Applies a lane-wise F4 function to x in place; the n % 4 tail goes through a padded block so
// that every element sees the same operations.
template <typename Fn>
void map_inplace(float* x, size_t n, Fn fn) {
  const size_t n4 = n - n % 4;
  for (size_t i = 0; i < n4; i += 4) store(x + i, fn(load(x + i)));
  if (n4 < n) {
    float block[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::copy(x + n4, x + n, block);
    store(block, fn(load(block)));
    std::copy(block, block + (n - n4), x + n4);
  }
}

// max_reference's value (they may differ only in the sign of a zero maximum, which the
// callers cannot see: x - (+0) and x - (-0) have the same exp).
float max4(const float* x, size_t n) {
  const size_t n4 = n - n % 4;
  if (n4 == 0) return max_reference(x, n);
  F4 mv = load(x);
  for (size_t i = 4; i < n4; i += 4) {
    const F4 v = load(x + i);
    mv = select(gt(v, mv), v, mv);
  }
  float lanes[4];
  store(lanes, mv);
  float m = max_reference(lanes, 4);
  for (size_t i = n4; i < n; ++i) {
    if (x[i] > m) m = x[i];
  }
  return m;
}

// x_i = exp(x_i - m) in place; returns their canonical sum.
float exp_shifted_sum4(float* x, size_t n, float m) {
  const F4 mv = splat(m);
  map_inplace(x, n, [mv](F4 v) { return exp4(sub(v, mv)); });
  const size_t n4 = n - n % 4;
  F4 acc = zero();
  for (size_t i = 0; i < n4; i += 4) acc = add(acc, load(x + i));
  float s = hsum(acc);
  for (size_t i = n4; i < n; ++i) s += x[i];
  return s;
}

}  // namespace

// ------------------------------------------------------------------ dot

float dot_reference(const float* a, const float* b, size_t n) {
  return canonical_sum(n, [&](size_t i) { return a[i] * b[i]; });
}

float dot(const float* a, const float* b, size_t n) {
  const size_t n4 = n - n % 4;
  F4 acc = zero();
  for (size_t i = 0; i < n4; i += 4) acc = add(acc, mul(load(a + i), load(b + i)));
  float s = hsum(acc);
  for (size_t i = n4; i < n; ++i) s += a[i] * b[i];
  return s;
}

// ------------------------------------------------------------------ exp, softmax

void exp_inplace(float* x, size_t n) { map_inplace(x, n, exp4); }

void softmax_reference(float* x, size_t n) {
  const float m = max_reference(x, n);
  for (size_t i = 0; i < n; ++i) x[i] = portable_exp(x[i] - m);
  const float s = canonical_sum(n, [&](size_t i) { return x[i]; });
  for (size_t i = 0; i < n; ++i) x[i] = x[i] / s;
}

void softmax(float* x, size_t n) {
  const float s = exp_shifted_sum4(x, n, max4(x, n));
  const F4 sv = splat(s);
  map_inplace(x, n, [sv](F4 v) { return div(v, sv); });
}

void log_softmax(float* x, size_t n) {
  const float m = max4(x, n);
  std::vector<float> e(x, x + n);  // x keeps the logits for the final subtraction
  const F4 mv = splat(m);
  const F4 log_sum = splat(portable_log(exp_shifted_sum4(e.data(), n, m)));
  map_inplace(x, n, [=](F4 v) { return sub(sub(v, mv), log_sum); });
}

// ------------------------------------------------------------------ layer norm

void layernorm_reference(const float* x, const float* weight, const float* bias, size_t n,
                         float* out, float eps) {
  const float mean = canonical_sum(n, [&](size_t i) { return x[i]; }) / static_cast<float>(n);
  const float var = canonical_sum(n,
                                  [&](size_t i) {
                                    const float d = x[i] - mean;
                                    return d * d;
                                  }) /
                    static_cast<float>(n);
  const float rstd = 1.0f / std::sqrt(var + eps);
  for (size_t i = 0; i < n; ++i) out[i] = ((x[i] - mean) * rstd) * weight[i] + bias[i];
}

void layernorm(const float* x, const float* weight, const float* bias, size_t n, float* out,
               float eps) {
  const size_t n4 = n - n % 4;
  F4 acc = zero();
  for (size_t i = 0; i < n4; i += 4) acc = add(acc, load(x + i));
  float sum = hsum(acc);
  for (size_t i = n4; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);

  const F4 mv = splat(mean);
  acc = zero();
  for (size_t i = 0; i < n4; i += 4) {
    const F4 d = sub(load(x + i), mv);
    acc = add(acc, mul(d, d));
  }
  float sq = hsum(acc);
  for (size_t i = n4; i < n; ++i) {
    const float d = x[i] - mean;
    sq += d * d;
  }
  const float rstd = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);

  const F4 rv = splat(rstd);
  for (size_t i = 0; i < n4; i += 4) {
    const F4 y = mul(mul(sub(load(x + i), mv), rv), load(weight + i));
    store(out + i, add(y, load(bias + i)));
  }
  for (size_t i = n4; i < n; ++i) out[i] = ((x[i] - mean) * rstd) * weight[i] + bias[i];
}

// ------------------------------------------------------------------ RMS norm

void rmsnorm_reference(const float* x, const float* weight, size_t n, float eps, float* out) {
  const float ss = canonical_sum(n, [&](size_t i) { return x[i] * x[i]; });
  const float rstd = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = (x[i] * rstd) * weight[i];
}

void rmsnorm(const float* x, const float* weight, size_t n, float eps, float* out) {
  const float rstd = 1.0f / std::sqrt(dot(x, x, n) / static_cast<float>(n) + eps);
  const size_t n4 = n - n % 4;
  const F4 rv = splat(rstd);
  for (size_t i = 0; i < n4; i += 4) store(out + i, mul(mul(load(x + i), rv), load(weight + i)));
  for (size_t i = n4; i < n; ++i) out[i] = (x[i] * rstd) * weight[i];
}

// ------------------------------------------------------------------ GELU, SiLU, SwiGLU, add

void gelu_reference(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = (0.5f * x[i]) * (1.0f + portable_erf(x[i] * kSqrtHalf));
}

void gelu(float* x, size_t n) noexcept { map_inplace(x, n, gelu4); }

constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluCubic = 0.044715f;

void gelu_tanh_reference(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float u = kSqrt2OverPi * (x[i] + kGeluCubic * (x[i] * x[i] * x[i]));
    x[i] = x[i] / (1.0f + portable_exp(-2.0f * u));
  }
}

void gelu_tanh(float* x, size_t n) noexcept {
  const F4 one = splat(1.0f), k = splat(kSqrt2OverPi), c = splat(kGeluCubic), m2 = splat(-2.0f);
  map_inplace(x, n, [=](F4 v) {
    const F4 u = mul(k, add(v, mul(c, mul(mul(v, v), v))));
    return div(v, add(one, exp4(mul(m2, u))));
  });
}

void silu_reference(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + portable_exp(-x[i]));
}

void silu(float* x, size_t n) {
  const F4 one = splat(1.0f);
  map_inplace(x, n, [one](F4 v) { return div(v, add(one, exp4(neg(v)))); });
}

namespace {
// out (rows, F) = act(gate) * up of gate_up (rows, 2F) = [gate | up] rows.
template <typename Silu>
void swiglu_span_with(const float* gate, const float* up, size_t n, float* out, Silu act) {
  std::copy(gate, gate + n, out);
  act(out, n);
  for (size_t j = 0; j < n; ++j) out[j] = out[j] * up[j];
}

template <typename Silu>
void swiglu_rows(const float* gate_up, size_t rows, size_t n_ff, float* out, Silu act) {
  for (size_t t = 0; t < rows; ++t) {
    const float* g = gate_up + t * 2 * n_ff;
    swiglu_span_with(g, g + n_ff, n_ff, out + t * n_ff, act);
  }
}
}  // namespace

void swiglu_span(const float* gate, const float* up, size_t n, float* out) noexcept {
  swiglu_span_with(gate, up, n, out, silu);
}

void swiglu_reference(const float* gate_up, size_t rows, size_t n_ff, float* out) {
  swiglu_rows(gate_up, rows, n_ff, out, silu_reference);
}

void swiglu(const float* gate_up, size_t rows, size_t n_ff, float* out) {
  swiglu_rows(gate_up, rows, n_ff, out, silu);
}

void add_inplace(float* x, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace specdec::kernels
