// exp and log from +, *, floor and exact exponent manipulation only (Cephes single-precision
// polynomials), so that results are bit-identical on every platform. libm's expf/logf differ
// between glibc (native) and musl (Emscripten), which would make sampling differ.
// Requires -ffp-contract=off (set in CMakeLists.txt). Accuracy: ~1-2 ulp on normal inputs.
#pragma once

#include <cmath>
#include <limits>

namespace specdec {

inline float portable_exp(float x) {
  if (std::isnan(x)) return x;
  if (x > 88.3762626647949f) return std::numeric_limits<float>::infinity();
  if (x < -103.972084045410f) return 0.0f;
  // exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 split in two parts).
  float n = std::floor(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float z = r * r;
  float y = 1.9875691500E-4f;
  y = y * r + 1.3981999507E-3f;
  y = y * r + 8.3334519073E-3f;
  y = y * r + 4.1665795894E-2f;
  y = y * r + 1.6666665459E-1f;
  y = y * r + 5.0000001201E-1f;
  y = y * z + r + 1.0f;
  return std::ldexp(y, static_cast<int>(n));  // exact scaling by 2^n (handles subnormals)
}

inline float portable_log(float x) {
  if (std::isnan(x) || x < 0.0f) return std::numeric_limits<float>::quiet_NaN();
  if (x == 0.0f) return -std::numeric_limits<float>::infinity();
  if (std::isinf(x)) return x;
  int e = 0;
  float m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1): exact
  if (m < 0.707106781186547524f) {
    e -= 1;
    m = m + m - 1.0f;
  } else {
    m = m - 1.0f;
  }
  float z = m * m;
  float y = 7.0376836292E-2f;
  y = y * m - 1.1514610310E-1f;
  y = y * m + 1.1676998740E-1f;
  y = y * m - 1.2420140846E-1f;
  y = y * m + 1.4249322787E-1f;
  y = y * m - 1.6668057665E-1f;
  y = y * m + 2.0000714765E-1f;
  y = y * m - 2.4999993993E-1f;
  y = y * m + 3.3333331174E-1f;
  y = y * m * z;
  float fe = static_cast<float>(e);
  y = y + fe * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = m + y;
  return r + fe * 0.693359375f;
}

// erf from +, *, / and portable_exp only (std::erf differs between glibc and musl).
// |x| < 1: Cephes' odd polynomial erf(x) = x P(x^2) (relative error ~2e-7);
// |x| >= 1: erf(x) = 1 - erfc(|x|) with the Chebyshev fit of Numerical Recipes' erfcc
// (fractional error < 1.2e-7). Measured max abs error in float: 1.5e-7.
// The SIMD copy in kernels/ops.cc evaluates exactly these operations in this order.
inline float portable_erf(float x) {
  const float a = std::fabs(x);
  if (a < 1.0f) {
    const float z = x * x;
    float y = 7.853861353153693e-5f;
    y = y * z + -8.010193625184903e-4f;
    y = y * z + 5.188327685732524e-3f;
    y = y * z + -2.685381193529856e-2f;
    y = y * z + 1.128358514861418e-1f;
    y = y * z + -3.761262582423300e-1f;
    y = y * z + 1.128379165726710e+0f;
    return x * y;
  }
  const float t = 1.0f / (1.0f + 0.5f * a);
  float p = 0.17087277f;
  p = p * t + -0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t + -1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t + -0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  const float erfc = t * portable_exp(-a * a - 1.26551223f + t * p);
  const float r = 1.0f - erfc;
  return x < 0.0f ? -r : r;
}

}  // namespace specdec
