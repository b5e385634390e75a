// What the kernel tests share (kernels_test.cc, family_kernels_test.cc): random inputs and the
// double-precision computations the kernels are held to.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "sampling/rng.h"

namespace specdec::kernels {

// n floats uniform in [-scale, scale).
inline std::vector<float> random_floats(Rng& rng, size_t n, float scale = 1.0f) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>((2.0 * rng.uniform() - 1.0) * scale);
  return v;
}

// LayerNorm in double precision: (x - mean) / sqrt(var + eps) * w + b, element by element.
inline std::vector<double> layernorm_double(const std::vector<float>& x,
                                            const std::vector<float>& w,
                                            const std::vector<float>& b, float eps) {
  const size_t n = x.size();
  double mean = 0.0, var = 0.0;
  for (float v : x) mean += v;
  mean /= n;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= n;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  return out;
}

}  // namespace specdec::kernels
