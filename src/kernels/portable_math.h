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

// Double precision exp, log, sin and cos from +, -, *, /, floor and exact exponent manipulation
// only, for tables computed once at load (the rotary embedding's angles, kernels/rope.h): the
// same bits on every platform, unlike libm's. Error ~1e-16 relative on the ranges used (the
// angles of rotary positions, |a| < 2^20, for sin/cos), far below the float rounding after.
inline double portable_exp_d(double x) {
  if (std::isnan(x)) return x;
  if (x > 709.0) return std::numeric_limits<double>::infinity();
  if (x < -745.0) return 0.0;
  // exp(x) = 2^n exp(r), r = x - n ln 2 (ln 2 in two parts, as fdlibm), |r| <= 0.35: Taylor to
  // degree 14 in Horner form (the next term < 1e-18).
  const double n = std::floor(x * 1.44269504088896338700 + 0.5);
  const double r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
  double y = 1.0;
  for (int k = 14; k >= 1; --k) y = 1.0 + y * r / k;
  return std::ldexp(y, static_cast<int>(n));
}

// requires: x > 0 and finite.
inline double portable_log_d(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // x = m 2^e, m in [0.5, 1): exact
  if (m < 0.70710678118654752440) {
    m = m + m;
    e -= 1;
  }
  // log m = 2 atanh s, s = (m - 1) / (m + 1), |s| <= 0.172: the odd series to s^25.
  const double s = (m - 1.0) / (m + 1.0), z = s * s;
  double y = 1.0 / 25.0;
  for (int k = 23; k >= 1; k -= 2) y = 1.0 / k + z * y;
  return 2.0 * s * y + e * 6.93147180369123816490e-01 + e * 1.90821492927058770002e-10;
}

// sin and cos of a (|a| < 2^20): a = k pi/2 + r with pi/2 in three parts (fdlibm's Cody-Waite
// split: k times each of the first two is exact), |r| <= pi/4, Taylor series to r^21 / r^20.
inline void portable_sincos_d(double a, double* sin_out, double* cos_out) {
  const double k = std::floor(a * 6.36619772367581382433e-01 + 0.5);
  const double r = ((a - k * 1.57079632673412561417e+00) - k * 6.07710050630396597660e-11) -
                   k * 2.02226624879595063154e-21;
  const double z = r * r;
  double s = 1.0, c = 1.0;
  for (int j = 10; j >= 1; --j) {
    s = 1.0 - z * s / ((2 * j) * (2 * j + 1));
    c = 1.0 - z * c / ((2 * j - 1) * (2 * j));
  }
  s = r * s;
  const long q = static_cast<long>(k - 4.0 * std::floor(k / 4.0));  // k mod 4, in 0..3
  const double sv[4] = {s, c, -s, -c}, cv[4] = {c, -s, -c, s};
  *sin_out = sv[q];
  *cos_out = cv[q];
}

}  // namespace specdec
