// The kernels the Llama / Qwen2 / GPT-2 families add (kernels/ops.h, kernels/rope.h,
// kernels/bf16.h, portable_math.h's double functions): each SIMD version bit for bit against
// its scalar reference at every tail length, and both against a double-precision computation
// with libm within a stated tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/bf16.h"
#include "kernels/ops.h"
#include "kernels/portable_math.h"
#include "kernels/rope.h"
#include "sampling/rng.h"

namespace specdec::kernels {
namespace {

const size_t kSizes[] = {1, 3, 4, 5, 8, 9, 16, 17, 31, 64, 100, 576};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(RmsNorm, MatchesReferenceAndDouble) {
  Rng rng(11);
  for (float eps : {1e-5f, 1e-6f, 0.5f}) {
    for (size_t n : kSizes) {
      const std::vector<float> x = random_floats(rng, n, 3.0f), w = random_floats(rng, n, 1.0f);
      std::vector<float> got(n), want(n);
      rmsnorm(x.data(), w.data(), n, eps, got.data());
      rmsnorm_reference(x.data(), w.data(), n, eps, want.data());
      ASSERT_TRUE(same_bits(got, want)) << "n=" << n << " eps=" << eps;
      double ss = 0.0;
      for (float v : x) ss += double(v) * v;
      const double rstd = 1.0 / std::sqrt(ss / n + eps);
      for (size_t i = 0; i < n; ++i) EXPECT_NEAR(got[i], x[i] * rstd * w[i], 2e-6 * 3 * rstd);
    }
  }
}

TEST(LayerNorm, EpsIsAParameter) {
  Rng rng(12);
  for (float eps : {1e-5f, 1e-3f, 1.0f}) {
    for (size_t n : kSizes) {
      const std::vector<float> x = random_floats(rng, n, 2.0f), w = random_floats(rng, n, 1.0f),
                               b = random_floats(rng, n, 1.0f);
      std::vector<float> got(n), want(n);
      layernorm(x.data(), w.data(), b.data(), n, got.data(), eps);
      layernorm_reference(x.data(), w.data(), b.data(), n, want.data(), eps);
      ASSERT_TRUE(same_bits(got, want)) << "n=" << n;
      const std::vector<double> exact = layernorm_double(x, w, b, eps);
      for (size_t i = 0; i < n; ++i) EXPECT_NEAR(got[i], exact[i], 2e-5);
    }
  }
}

TEST(GeluTanh, MatchesReferenceAndTanhFormula) {
  std::vector<float> x;
  for (float v = -30.0f; v <= 30.0f; v += 0.0007f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e30f, -1e30f, INFINITY, -INFINITY}) x.push_back(v);
  for (size_t n : kSizes) {
    std::vector<float> got(x.begin(), x.begin() + n), want = got;
    gelu_tanh(got.data(), n);
    gelu_tanh_reference(want.data(), n);
    ASSERT_TRUE(same_bits(got, want)) << "n=" << n;
  }
  std::vector<float> got = x, want = x;
  gelu_tanh(got.data(), got.size());
  gelu_tanh_reference(want.data(), want.size());
  ASSERT_TRUE(same_bits(got, want));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    if (!std::isfinite(v) || std::fabs(v) > 1e10) continue;
    const double exact =
        0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(got[i], exact, 4e-7 * std::max(1.0, std::fabs(exact))) << v;
  }
  EXPECT_EQ(got[x.size() - 2], INFINITY);      // +inf stays +inf
  EXPECT_TRUE(std::isnan(got[x.size() - 1]));  // -inf / inf, as silu
  EXPECT_EQ(got[x.size() - 3], 0.0f);          // -1e30 -> -0
}

TEST(SwiGlu, MatchesReferenceAndDouble) {
  Rng rng(13);
  for (size_t rows : {1, 3}) {
    for (size_t n : kSizes) {
      const std::vector<float> gu = random_floats(rng, rows * 2 * n, 6.0f);
      std::vector<float> got(rows * n), want(rows * n);
      swiglu(gu.data(), rows, n, got.data());
      swiglu_reference(gu.data(), rows, n, want.data());
      ASSERT_TRUE(same_bits(got, want)) << "n=" << n;
      for (size_t t = 0; t < rows; ++t) {
        for (size_t j = 0; j < n; ++j) {
          const double g = gu[t * 2 * n + j], u = gu[t * 2 * n + n + j];
          const double exact = g / (1.0 + std::exp(-g)) * u;
          EXPECT_NEAR(got[t * n + j], exact, 1e-6 * std::max(1.0, std::fabs(exact)));
        }
      }
    }
  }
}

TEST(PortableMathDouble, WithinAFewUlpOfLibm) {
  struct Case {
    const char* name;
    double lo, hi, step, tol;
  };
  const Case cases[] = {{"exp", -700, 700, 0.0173, 1e-15},
                        {"log", 1.0001e-6, 1e7, 0, 1e-15},
                        {"sincos", -3e5, 3e5, 0.917, 1e-15}};
  for (const Case& c : cases) {
    double worst = 0.0;
    for (double x = c.lo; x<c.hi; x = c.step> 0 ? x + c.step : x * 1.013) {
      if (c.name[0] == 'e') {
        worst = std::max(worst, std::fabs(portable_exp_d(x) - std::exp(x)) / std::exp(x));
      } else if (c.name[0] == 'l') {
        worst =
            std::max(worst, std::fabs(portable_log_d(x) - std::log(x)) / std::fabs(std::log(x)));
      } else {
        double s = 0, co = 0;
        portable_sincos_d(x, &s, &co);
        worst = std::max({worst, std::fabs(s - std::sin(x)), std::fabs(co - std::cos(x))});
      }
    }
    EXPECT_LT(worst, c.tol) << c.name;
  }
}

TEST(Rope, TableAndRotationMatchDouble) {
  struct Case {
    double theta;
    size_t head_dim, positions;
  };
  const Case cases[] = {{1e4, 8, 40}, {1e5, 64, 300}, {1e6, 16, 5000}};
  Rng rng(14);
  for (const Case& c : cases) {
    const std::vector<double> inv = rope_inv_freq(c.theta, c.head_dim);
    ASSERT_EQ(inv.size(), c.head_dim / 2);
    for (size_t j = 0; j < inv.size(); ++j) {
      EXPECT_NEAR(inv[j], std::pow(c.theta, -2.0 * j / c.head_dim), 1e-15);
    }
    const size_t half = c.head_dim / 2;
    std::vector<float> cs(c.positions * half), sn(c.positions * half);
    rope_table(inv, c.positions, cs.data(), sn.data());
    const size_t p = c.positions - 1;
    for (size_t j = 0; j < half; ++j) {
      EXPECT_EQ(cs[p * half + j], static_cast<float>(std::cos(p * inv[j])));
      EXPECT_EQ(sn[p * half + j], static_cast<float>(std::sin(p * inv[j])));
    }
    // Two heads rotated at position p: rotate_half in double.
    std::vector<float> x = random_floats(rng, 2 * c.head_dim, 2.0f), y = x;
    rope_half(y.data(), 2, c.head_dim, &cs[p * half], &sn[p * half]);
    for (size_t h = 0; h < 2; ++h) {
      for (size_t j = 0; j < c.head_dim; ++j) {
        const size_t i = h * c.head_dim + j, jj = j % half;
        const double a = p * inv[jj];
        const double rot = j < half ? -double(x[i + half]) : double(x[i - half]);
        EXPECT_NEAR(y[i], x[i] * std::cos(a) + rot * std::sin(a), 1e-6);
      }
    }
  }
}

// Llama 3.2's rope_scaling {factor 32, low 1, high 4, original 8192} against the formula.
TEST(Rope, Llama3ScalingBands) {
  RopeScaling s;
  s.factor = 32.0;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_positions = 8192.0;
  const std::vector<double> plain = rope_inv_freq(5e5, 64), scaled = rope_inv_freq(5e5, 64, &s);
  int kept = 0, slowed = 0, blended = 0;
  for (size_t j = 0; j < plain.size(); ++j) {
    const double wavelen = 2 * M_PI / plain[j];
    if (wavelen < 8192.0 / 4) {
      EXPECT_EQ(scaled[j], plain[j]);
      ++kept;
    } else if (wavelen > 8192.0) {
      EXPECT_DOUBLE_EQ(scaled[j], plain[j] / 32);
      ++slowed;
    } else {
      const double sm = (8192.0 / wavelen - 1.0) / 3.0;
      EXPECT_DOUBLE_EQ(scaled[j], (1 - sm) * plain[j] / 32 + sm * plain[j]);
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(slowed, 0);
  EXPECT_GT(blended, 0);
}

TEST(Bf16, WidensExactly) {
  struct Case {
    uint16_t bits;
    float want;
  };
  const Case cases[] = {{0x3f80, 1.0f},           {0xbf80, -1.0f},    {0x0000, 0.0f},
                        {0x4049, 3.140625f},      {0x7f80, INFINITY}, {0xff80, -INFINITY},
                        {0x0001, 9.18354962e-41f}};
  for (const Case& c : cases) EXPECT_EQ(bf16_to_f32(c.bits), c.want) << c.bits;
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7fc0)));
  for (uint32_t b = 0; b < 0x10000; b += 257) {  // round trip through the float's top half
    const float f = bf16_to_f32(static_cast<uint16_t>(b));
    uint32_t u;
    std::memcpy(&u, &f, 4);
    EXPECT_EQ(u, b << 16);
  }
}

}  // namespace
}  // namespace specdec::kernels
