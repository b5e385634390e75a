// Every kernel variant against its scalar reference — bit for bit, since all follow the
// canonical order of matmul.h / ops.h — and against a naive double-precision computation
// within a tolerance. Sizes sit below, at, at multiples of and above the vector widths
// (4 lanes, 4-row panels) to catch tail bugs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/portable_math.h"
#include "sampling/rng.h"

namespace specdec::kernels {
namespace {

const size_t kSizes[] = {1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 64, 100, 256, 1024};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Index of the first element whose bits differ, or -1.
long first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same_bits(a[i], b[i])) return static_cast<long>(i);
  }
  return -1;
}

// Appends each edge and its four nearest floats on either side (thresholds of exp and friends).
void add_edges(std::vector<float>& x, std::initializer_list<float> edges) {
  for (float edge : edges) {
    float below = edge, above = edge;
    for (int i = 0; i < 4; ++i) {
      below = std::nextafter(below, -INFINITY);
      above = std::nextafter(above, INFINITY);
      x.push_back(below);
      x.push_back(above);
    }
    x.push_back(edge);
  }
}

// Appends n floats of random bit patterns (every class: normal, subnormal, infinite, NaN).
void add_random_bits(std::vector<float>& x, uint64_t seed, int n) {
  Rng rng(seed);
  for (int i = 0; i < n; ++i) {
    const uint32_t bits = rng.next_u32();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    x.push_back(f);
  }
}

// ------------------------------------------------------------------ matmul

using MatmulFn = void (*)(const float*, size_t, size_t, const float*, size_t, const float*, float*);

struct MatmulVariant {
  const char* name;
  MatmulFn fn;
};

const std::vector<MatmulVariant>& matmul_variants() {
  static const std::vector<MatmulVariant> v = {
    {"matmul", matmul},
    {"matmul_vec4", matmul_vec4},
#if defined(__AVX2__)
    {"matmul_avx2", matmul_avx2},
#endif
  };
  return v;
}

// The data of a packed buffer: after the header, at the offset w_packed[0].
const float* packed_data(const std::vector<float>& packed) {
  return packed.data() + static_cast<size_t>(packed[0]);
}

TEST(Matmul, PackedLayout) {
  // W (5, 6), W[n][k] = 100 n + k: two panels, one k-block of 4 and a tail of 2 (unstriped).
  std::vector<float> w(5 * 6);
  for (size_t n = 0; n < 5; ++n) {
    for (size_t k = 0; k < 6; ++k) w[n * 6 + k] = static_cast<float>(100 * n + k);
  }
  ASSERT_FALSE(packed_striped(5, 6));
  ASSERT_EQ(packed_size(5, 6), kHeaderFloats + 48u);
  const std::vector<float> expected = {
      0,   1,   2,   3,   100, 101, 102, 103, 200, 201, 202, 203, 300, 301, 302, 303,  // block
      4,   104, 204, 304, 5,   105, 205, 305,                                          // tail
      400, 401, 402, 403, 0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,    // block
      404, 0,   0,   0,   405, 0,   0,   0};                                           // tail
  // Whatever the buffer's address, the data starts on the next 64-byte boundary after w[0].
  std::vector<float> storage(packed_size(5, 6) + 16, -1.0f);
  for (size_t shift = 0; shift < 16; ++shift) {
    float* buffer = storage.data() + shift;
    pack_weights(w.data(), 5, 6, buffer);
    const size_t offset = static_cast<size_t>(buffer[0]);
    EXPECT_GE(offset, 1u);
    EXPECT_LE(offset, kHeaderFloats);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer + offset) % 64, 0u) << "shift " << shift;
    EXPECT_EQ(std::vector<float>(buffer + offset, buffer + offset + 48), expected);
  }
}

// A striped packing: logical line i (one k-block of a panel, kLineFloats floats) in stripe
// i % kStripes at slot i / kStripes; the logical order within a line is the panel order above.
// Table-driven: at the threshold, past it with a partial last panel, K = 32 (one round per
// panel), a long K.
TEST(Matmul, StripedLayout) {
  struct Shape {
    size_t n, k;
  };
  for (const Shape& sh : {Shape{256, 256}, Shape{261, 256}, Shape{2049, 32}, Shape{9, 8192}}) {
    const size_t n = sh.n, k = sh.k;
    ASSERT_TRUE(packed_striped(n, k)) << n << "x" << k;
    const size_t logical = (n + 3) / 4 * 4 * k;
    const size_t per_stripe = logical / kStripes + kStripePadFloats;  // whole rounds + the pad
    EXPECT_EQ(packed_size(n, k), kHeaderFloats + kStripes * per_stripe);
    std::vector<float> w(n * k);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
    std::vector<float> packed(packed_size(n, k));
    pack_weights(w.data(), n, k, packed.data());
    const float* data = packed_data(packed);
    // Logical float q of panel p, k-block b, row r, lane j: W[4p + r][4b + j] (0 past row n).
    for (size_t q = 0; q < logical; q += 37) {
      const size_t p = q / (4 * k), in = q % (4 * k), b = in / 16, r = in % 16 / 4, j = in % 4;
      const size_t line = q / kLineFloats;
      const float got =
          data[(line % kStripes) * per_stripe + line / kStripes * kLineFloats + q % kLineFloats];
      const float want = 4 * p + r < n ? w[(4 * p + r) * k + 4 * b + j] : 0.0f;
      ASSERT_EQ(got, want) << n << "x" << k << " q=" << q;
      // Panel p's k-block b = 8 j + s: stripe s, slot p K / 32 + j.
      const size_t s = b % kStripes, slot = p * k / 32 + b / kStripes;
      ASSERT_EQ(data[s * per_stripe + slot * kLineFloats + in % 16], want) << "q=" << q;
    }
    for (size_t s = 0; s < kStripes; ++s) {  // the pad after each stripe holds zeros
      for (size_t i = 0; i < kStripePadFloats; ++i) {
        ASSERT_EQ(data[s * per_stripe + logical / kStripes + i], 0.0f) << "stripe " << s;
      }
    }
    std::vector<float> back(n * k);
    unpack_weights(packed.data(), n, k, back.data());
    EXPECT_EQ(back, w);
  }
  struct Unstriped {
    size_t n, k;
    const char* why;
  };
  for (const Unstriped& u :
       {Unstriped{252, 256, "under kMinStripedFloats"}, Unstriped{300, 255, "K % 4 != 0"},
        Unstriped{1000, 68, "K % 32 != 0"}, Unstriped{2048, 100, "K % 32 != 0"}}) {
    EXPECT_FALSE(packed_striped(u.n, u.k)) << u.n << "x" << u.k << ": " << u.why;
    EXPECT_EQ(packed_size(u.n, u.k), kHeaderFloats + (u.n + 3) / 4 * 4 * u.k);
  }
}

// pack_weights writes every float of the buffer (padding as zeros): a buffer full of NaNs holds
// none after packing, striped or not, with partial panels and K % 4 tails.
TEST(Kernels, PackWeightsWritesEveryFloat) {
  for (auto [n, k] :
       {std::pair<size_t, size_t>{261, 256}, {9, 8192}, {7, 5}, {300, 255}, {2049, 32}}) {
    std::vector<float> w(n * k);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 97) - 40.0f;
    std::vector<float> packed(packed_size(n, k), std::nanf(""));
    pack_weights(w.data(), n, k, packed.data());
    size_t nans = 0;
    for (float x : packed) nans += std::isnan(x);
    EXPECT_EQ(nans, 0u) << n << "x" << k;
    std::vector<float> back(n * k);
    unpack_weights(packed.data(), n, k, back.data());
    EXPECT_EQ(back, w) << n << "x" << k;
  }
}

// unpack_row returns row i of W exactly, striped or not, with a K % 4 tail, in a last partial
// panel (what a tied model's embedding lookup reads).
TEST(Kernels, UnpackRowIsTheRow) {
  struct Shape {
    size_t n, k;
  };
  for (const Shape& sh : {Shape{256, 256}, Shape{261, 256}, Shape{9, 8192}, Shape{7, 5},
                          Shape{300, 255}, Shape{1, 1}, Shape{13, 68}}) {
    const size_t n = sh.n, k = sh.k;
    std::vector<float> w(n * k);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.5f - 3.0f;
    std::vector<float> packed(packed_size(n, k));
    pack_weights(w.data(), n, k, packed.data());
    std::vector<float> row(k, -99.0f);
    for (size_t i = 0; i < n; i += (n > 20 ? 7 : 1)) {
      unpack_row(packed.data(), n, k, i, row.data());
      ASSERT_TRUE(std::equal(row.begin(), row.end(), w.begin() + i * k))
          << n << "x" << k << " row " << i;
    }
    unpack_row(packed.data(), n, k, n - 1, row.data());  // the last row, in a partial panel
    ASSERT_TRUE(std::equal(row.begin(), row.end(), w.begin() + (n - 1) * k)) << n << "x" << k;
  }
}

// All variants equal the canonical reference bit for bit, for every (M, K, N), with and
// without bias; the reference is within rounding of a double-precision product.
TEST(Matmul, VariantsMatchReference) {
  Rng rng(1);
  const size_t kOutputs[] = {1, 3, 4, 5, 7, 8, 13, 16, 24, 33};  // 8, 16, 24: whole panel pairs
  for (size_t k : kSizes) {
    for (size_t n : kOutputs) {
      const std::vector<float> w = random_floats(rng, n * k);
      const std::vector<float> bias = random_floats(rng, n);
      std::vector<float> packed(packed_size(n, k));
      pack_weights(w.data(), n, k, packed.data());
      for (size_t m = 1; m <= 9; ++m) {
        const std::vector<float> x = random_floats(rng, m * k);
        for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
          std::vector<float> expected(m * n);
          matmul_reference(x.data(), m, k, w.data(), n, b, expected.data());
          for (const MatmulVariant& v : matmul_variants()) {
            std::vector<float> out(m * n, std::nanf(""));
            v.fn(x.data(), m, k, packed.data(), n, b, out.data());
            ASSERT_EQ(first_difference(out, expected), -1)
                << v.name << " M=" << m << " K=" << k << " N=" << n << (b ? "" : " no bias");
          }
          for (size_t i = 0; i < m; ++i) {
            for (size_t j = 0; j < n; ++j) {
              double exact = b ? b[j] : 0.0, magnitude = b ? std::fabs(b[j]) : 0.0;
              for (size_t kk = 0; kk < k; ++kk) {
                exact += double(x[i * k + kk]) * w[j * k + kk];
                magnitude += std::fabs(double(x[i * k + kk]) * w[j * k + kk]);
              }
              ASSERT_NEAR(expected[i * n + j], exact, 1e-6 * magnitude + 1e-30)
                  << "M=" << m << " K=" << k << " N=" << n;
            }
          }
        }
      }
    }
  }
}

// The same on striped packings (at and past the threshold, partial last panels, one round per
// panel (K = 32), every matrix shape of the shipped models and of the large pair), and on a
// packed buffer copied to a misaligned address.
TEST(Matmul, StripedVariantsMatchReference) {
  Rng rng(10);
  struct Shape {
    size_t k, n;
  };
  for (const Shape& s :
       {Shape{256, 256}, Shape{256, 260}, Shape{96, 1000}, Shape{2048, 33}, Shape{32, 2049},
        Shape{256, 768}, Shape{1024, 256}, Shape{512, 2048}, Shape{128, 512}}) {
    ASSERT_TRUE(packed_striped(s.n, s.k)) << s.n << "x" << s.k;
    const std::vector<float> w = random_floats(rng, s.n * s.k);
    const std::vector<float> bias = random_floats(rng, s.n);
    std::vector<float> packed(packed_size(s.n, s.k));
    pack_weights(w.data(), s.n, s.k, packed.data());
    std::vector<float> moved(packed.size() + 1);  // the same bytes one float further on
    std::copy(packed.begin(), packed.end(), moved.begin() + 1);
    for (size_t m : {1, 2, 3, 4, 5, 7, 8, 9}) {
      const std::vector<float> x = random_floats(rng, m * s.k);
      std::vector<float> expected(m * s.n);
      matmul_reference(x.data(), m, s.k, w.data(), s.n, bias.data(), expected.data());
      for (const MatmulVariant& v : matmul_variants()) {
        for (const float* p : {static_cast<const float*>(packed.data()),
                               static_cast<const float*>(moved.data() + 1)}) {
          std::vector<float> out(m * s.n, std::nanf(""));
          v.fn(x.data(), m, s.k, p, s.n, bias.data(), out.data());
          ASSERT_EQ(first_difference(out, expected), -1)
              << v.name << " M=" << m << " K=" << s.k << " N=" << s.n
              << (p == packed.data() ? "" : " (moved)");
        }
      }
    }
  }
}

// Row i of an M-row product equals the one-row product of x[i], bit for bit, for every
// position i and every M (batch invariance, stated directly).
TEST(Matmul, BatchInvariance) {
  Rng rng(2);
  const size_t k = 100, n = 37;
  const std::vector<float> w = random_floats(rng, n * k);
  const std::vector<float> bias = random_floats(rng, n);
  std::vector<float> packed(packed_size(n, k));
  pack_weights(w.data(), n, k, packed.data());
  const std::vector<float> x = random_floats(rng, 16 * k);
  std::vector<float> single(16 * n);
  for (size_t i = 0; i < 16; ++i) {
    matmul(x.data() + i * k, 1, k, packed.data(), n, bias.data(), single.data() + i * n);
  }
  for (size_t m = 1; m <= 16; ++m) {
    for (size_t start = 0; start + m <= 16; ++start) {
      std::vector<float> out(m * n);
      matmul(x.data() + start * k, m, k, packed.data(), n, bias.data(), out.data());
      const std::vector<float> rows(single.begin() + start * n, single.begin() + (start + m) * n);
      ASSERT_EQ(first_difference(out, rows), -1) << "M=" << m << " start=" << start;
    }
  }
}

// The benchmark's timer counts matmul() calls while installed, and nothing otherwise.
TEST(Matmul, TimerCountsCallsWhileInstalled) {
  Rng rng(11);
  const size_t k = 64, n = 300;
  const std::vector<float> w = random_floats(rng, n * k), x = random_floats(rng, 2 * k);
  std::vector<float> packed(packed_size(n, k)), out(2 * n);
  pack_weights(w.data(), n, k, packed.data());
  MatmulTimer timer;
  set_matmul_timer(&timer);
  for (int i = 0; i < 3; ++i) matmul(x.data(), 2, k, packed.data(), n, nullptr, out.data());
  set_matmul_timer(nullptr);
  matmul(x.data(), 2, k, packed.data(), n, nullptr, out.data());
  EXPECT_EQ(timer.calls, 3u);
  EXPECT_GE(timer.ms, 0.0);
  EXPECT_TRUE(std::isfinite(timer.ms));
}

// ------------------------------------------------------------------ dot, exp, erf

TEST(Dot, MatchesReference) {
  Rng rng(3);
  for (size_t n : kSizes) {
    const std::vector<float> a = random_floats(rng, n), b = random_floats(rng, n);
    const float got = dot(a.data(), b.data(), n);
    EXPECT_TRUE(same_bits(got, dot_reference(a.data(), b.data(), n))) << "n=" << n;
    double exact = 0.0, magnitude = 0.0;
    for (size_t i = 0; i < n; ++i) {
      exact += double(a[i]) * b[i];
      magnitude += std::fabs(double(a[i]) * b[i]);
    }
    EXPECT_NEAR(got, exact, 1e-6 * magnitude) << "n=" << n;
  }
}

// The vector exp equals portable_exp bit for bit everywhere: normal and subnormal results,
// the overflow and underflow thresholds, infinities, NaN, and random bit patterns.
TEST(Exp, VectorEqualsPortableExp) {
  std::vector<float> x;
  for (float v = -110.0f; v < 92.0f; v += 0.01f) x.push_back(v);
  add_edges(x, {88.3762626647949f, -103.972084045410f, -87.33654f, -126.0f, 0.0f, -0.0f});
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  x.push_back(std::numeric_limits<float>::denorm_min());
  add_random_bits(x, 4, 100000);
  std::vector<float> got = x;
  exp_inplace(got.data(), got.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = portable_exp(x[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got[i])) << x[i];
    } else {
      ASSERT_TRUE(same_bits(got[i], want)) << "exp(" << x[i] << "): " << got[i] << " vs " << want;
    }
  }
}

TEST(Erf, PortableErfWithinTwoTenthsOfAMillionth) {
  double worst = 0.0;
  for (double v = -8.0; v <= 8.0; v += 1e-4) {
    const float x = static_cast<float>(v);
    worst = std::max(worst, std::fabs(portable_erf(x) - std::erf(double(x))));
  }
  EXPECT_LT(worst, 2e-7);
  EXPECT_EQ(portable_erf(0.0f), 0.0f);
  EXPECT_EQ(portable_erf(INFINITY), 1.0f);
  EXPECT_EQ(portable_erf(-INFINITY), -1.0f);
  EXPECT_TRUE(std::isnan(portable_erf(NAN)));
}

// ------------------------------------------------------------------ softmax, layer norm, GELU

TEST(Softmax, MatchesReference) {
  Rng rng(5);
  for (size_t n : kSizes) {
    const std::vector<float> x = random_floats(rng, n, 20.0f);
    std::vector<float> got = x, want = x;
    softmax(got.data(), n);
    softmax_reference(want.data(), n);
    ASSERT_EQ(first_difference(got, want), -1) << "n=" << n;
    double max = x[0], sum = 0.0, total = 0.0;
    for (float v : x) max = std::max(max, double(v));
    for (float v : x) sum += std::exp(v - max);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(got[i], std::exp(x[i] - max) / sum, 1e-6) << "n=" << n;
      total += got[i];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(LogSoftmax, MatchesDouble) {
  Rng rng(6);
  for (size_t n : kSizes) {
    std::vector<float> x = random_floats(rng, n, 50.0f);
    double max = x[0], sum = 0.0;
    for (float v : x) max = std::max(max, double(v));
    for (float v : x) sum += std::exp(v - max);
    std::vector<float> got = x;
    log_softmax(got.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const double want = (x[i] - max) - std::log(sum);
      EXPECT_NEAR(got[i], want, 1e-5 * std::max(1.0, std::fabs(want))) << "n=" << n;
    }
  }
}

TEST(LayerNorm, MatchesReference) {
  Rng rng(7);
  for (size_t n : kSizes) {
    const std::vector<float> x = random_floats(rng, n, 3.0f);
    const std::vector<float> w = random_floats(rng, n), b = random_floats(rng, n);
    std::vector<float> got(n), want(n);
    layernorm(x.data(), w.data(), b.data(), n, got.data());
    layernorm_reference(x.data(), w.data(), b.data(), n, want.data());
    ASSERT_EQ(first_difference(got, want), -1) << "n=" << n;
    const std::vector<double> exact = layernorm_double(x, w, b, kLayerNormEps);
    for (size_t i = 0; i < n; ++i) EXPECT_NEAR(got[i], exact[i], 2e-5) << "n=" << n;
  }
}

TEST(Gelu, MatchesReference) {
  std::vector<float> x;
  for (float v = -12.0f; v <= 12.0f; v += 0.001f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 0.99999994f * 1.4142135f, 1.4142135f, 1e30f}) {
    x.push_back(v);
    x.push_back(-v);
  }
  for (size_t n : kSizes) {  // the tail path of every length
    std::vector<float> got(x.begin(), x.begin() + n), want = got;
    gelu(got.data(), n);
    gelu_reference(want.data(), n);
    ASSERT_EQ(first_difference(got, want), -1) << "n=" << n;
  }
  std::vector<float> got = x, want = x;
  gelu(got.data(), got.size());
  gelu_reference(want.data(), want.size());
  ASSERT_EQ(first_difference(got, want), -1);
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
    EXPECT_NEAR(got[i], exact, 3e-7 * std::max(1.0, std::fabs(exact))) << x[i];
  }
}

// SiLU: bit for bit against the reference over a fine grid, the exp overflow edge (x near
// -88.38, where exp(-x) becomes inf and the result -0), signed zeros, infinities, NaN and random
// bit patterns; every tail length; within a few ulp of x / (1 + e^-x) in double.
TEST(Silu, MatchesReference) {
  std::vector<float> x;
  for (float v = -100.0f; v <= 100.0f; v += 0.003f) x.push_back(v);
  add_edges(x, {-88.3762626647949f, 103.972084045410f, 0.0f, -0.0f});
  for (float v :
       {1e-30f, -1e-30f, std::numeric_limits<float>::denorm_min(), 1e30f, -1e30f,
        std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    x.push_back(v);
    x.push_back(-v);
  }
  add_random_bits(x, 9, 100000);
  auto same_or_both_nan = [](float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || same_bits(a, b);
  };
  for (size_t n : kSizes) {  // the tail path of every length
    std::vector<float> got(x.begin(), x.begin() + n), want = got;
    silu(got.data(), n);
    silu_reference(want.data(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same_or_both_nan(got[i], want[i])) << "n=" << n;
  }
  std::vector<float> got = x, want = x;
  silu(got.data(), got.size());
  silu_reference(want.data(), want.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_TRUE(same_or_both_nan(got[i], want[i]))
        << "silu(" << x[i] << "): " << got[i] << " vs " << want[i];
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) || x[i] < -88.0f) continue;
    const double exact = x[i] / (1.0 + std::exp(-double(x[i])));
    EXPECT_NEAR(got[i], exact, 4e-7 * std::fabs(exact) + 1e-37) << x[i];
  }
  float edge[6] = {-89.0f, -0.0f, 0.0f, INFINITY, -INFINITY, NAN};
  silu_reference(edge, 6);
  EXPECT_TRUE(same_bits(edge[0], -0.0f));
  EXPECT_TRUE(same_bits(edge[1], -0.0f));
  EXPECT_TRUE(same_bits(edge[2], 0.0f));
  EXPECT_EQ(edge[3], INFINITY);
  EXPECT_TRUE(std::isnan(edge[4]));
  EXPECT_TRUE(std::isnan(edge[5]));
}

// ------------------------------------------------------------------ attention

TEST(Attention, MatchesReference) {
  Rng rng(8);
  // hs 32 and 64: whole 32-dimension chunks of the value sum; others: 4-wide and scalar tails.
  // n_keys: below, at and past the 4-key score blocks.
  for (size_t hs : {1u, 3u, 4u, 8u, 17u, 32u, 36u, 64u}) {
    for (size_t n_keys : {1u, 2u, 3u, 4u, 5u, 7u, 9u, 16u, 17u, 70u, 255u}) {
      const std::vector<float> q = random_floats(rng, hs, 2.0f);
      const std::vector<float> keys = random_floats(rng, n_keys * hs, 2.0f);
      const std::vector<float> values = random_floats(rng, n_keys * hs);
      std::vector<float> scores(n_keys), got(hs), want(hs);
      attend(q.data(), keys.data(), values.data(), n_keys, hs, scores.data(), got.data());
      attend_reference(q.data(), keys.data(), values.data(), n_keys, hs, scores.data(),
                       want.data());
      ASSERT_EQ(first_difference(got, want), -1) << "hs=" << hs << " n_keys=" << n_keys;

      std::vector<double> p(n_keys);
      double max = -INFINITY, sum = 0.0;
      for (size_t j = 0; j < n_keys; ++j) {
        double s = 0.0;
        for (size_t d = 0; d < hs; ++d) s += double(q[d]) * keys[j * hs + d];
        p[j] = s / std::sqrt(double(hs));
        max = std::max(max, p[j]);
      }
      for (double& v : p) sum += (v = std::exp(v - max));
      for (size_t d = 0; d < hs; ++d) {
        double exact = 0.0;
        for (size_t j = 0; j < n_keys; ++j) exact += p[j] / sum * values[j * hs + d];
        EXPECT_NEAR(got[d], exact, 1e-5) << "hs=" << hs << " n_keys=" << n_keys;
      }
    }
  }
}

}  // namespace
}  // namespace specdec::kernels
