#include "kernels/rope.h"

#include "kernels/portable_math.h"

namespace specdec::kernels {

std::vector<double> rope_inv_freq(double theta, size_t head_dim, const RopeScaling* scaling) {
  const size_t half = head_dim / 2;
  const double log_theta = portable_log_d(theta);
  std::vector<double> inv(half);
  for (size_t j = 0; j < half; ++j) {
    inv[j] =
        portable_exp_d(-log_theta * static_cast<double>(2 * j) / static_cast<double>(head_dim));
  }
  if (!scaling || scaling->factor == 0.0) return inv;
  const double kTwoPi = 6.28318530717958647692;
  const double orig = scaling->original_max_positions, factor = scaling->factor;
  const double low_wavelen = orig / scaling->low_freq_factor;
  const double high_wavelen = orig / scaling->high_freq_factor;
  for (double& f : inv) {
    const double wavelen = kTwoPi / f;
    if (wavelen < high_wavelen) continue;  // high frequencies: kept
    if (wavelen > low_wavelen) {           // low frequencies: slowed by factor
      f = f / factor;
      continue;
    }
    const double s = (orig / wavelen - scaling->low_freq_factor) /
                     (scaling->high_freq_factor - scaling->low_freq_factor);
    f = (1.0 - s) * f / factor + s * f;
  }
  return inv;
}

void rope_table(const std::vector<double>& inv_freq, size_t n_positions, float* cos_table,
                float* sin_table) {
  const size_t half = inv_freq.size();
  for (size_t p = 0; p < n_positions; ++p) {
    for (size_t j = 0; j < half; ++j) {
      double s = 0.0, c = 0.0;
      portable_sincos_d(static_cast<double>(p) * inv_freq[j], &s, &c);
      cos_table[p * half + j] = static_cast<float>(c);
      sin_table[p * half + j] = static_cast<float>(s);
    }
  }
}

void rope_half(float* x, size_t n_heads, size_t head_dim, const float* cos_row,
               const float* sin_row) {
  const size_t half = head_dim / 2;
  for (size_t h = 0; h < n_heads; ++h) {
    float* lo = x + h * head_dim;
    float* hi = lo + half;
    for (size_t j = 0; j < half; ++j) {
      const float a = lo[j], b = hi[j];
      lo[j] = a * cos_row[j] - b * sin_row[j];
      hi[j] = b * cos_row[j] + a * sin_row[j];
    }
  }
}

}  // namespace specdec::kernels
