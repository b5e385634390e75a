#include "specdec/distribution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/errors.h"
#include "test_util.h"

namespace specdec {
namespace {

using testing::dist;
using testing::random_distribution;

// The lesson's "Code: Verify a Draft" example.
TEST(Distribution, LessonExample) {
  Distribution p = dist({0.5f, 0.3f, 0.15f, 0.05f});
  Distribution q = dist({0.4f, 0.4f, 0.15f, 0.05f});
  EXPECT_NEAR(acceptance_rate(p, q), 0.9, 1e-7);
  EXPECT_NEAR(total_variation(p, q), 0.1, 1e-7);
  Distribution r = residual_distribution(p, q);
  EXPECT_FLOAT_EQ(r[0], 1.0f);
  EXPECT_FLOAT_EQ(r[1], 0.0f);
  EXPECT_FLOAT_EQ(r[2], 0.0f);
  EXPECT_FLOAT_EQ(r[3], 0.0f);
}

// Exercise 1: alpha = 1 - TV, for a close and a far draft.
TEST(Distribution, AcceptanceRateIsOneMinusTotalVariation) {
  Distribution p = dist({0.5f, 0.3f, 0.2f});
  for (Distribution q : {dist({0.45f, 0.35f, 0.20f}), dist({0.1f, 0.1f, 0.8f})}) {
    EXPECT_NEAR(acceptance_rate(p, q), 1.0 - total_variation(p, q), 1e-7);
  }
  EXPECT_NEAR(acceptance_rate(p, dist({0.45f, 0.35f, 0.20f})), 0.95, 1e-7);
  EXPECT_NEAR(acceptance_rate(p, dist({0.1f, 0.1f, 0.8f})), 0.4, 1e-7);
}

// The identity that makes the method exact, for many random pairs (dense, sparse, disjoint).
TEST(Distribution, MarginalIdentityRecoversTargetExactly) {
  Rng rng(2024);
  for (int trial = 0; trial < 2000; ++trial) {
    size_t n = 1 + rng.next_u32() % 300;
    double sparsity = (trial % 4) * 0.3;
    Distribution p = random_distribution(rng, n, sparsity);
    Distribution q = random_distribution(rng, n, sparsity);
    double alpha = acceptance_rate(p, q);
    Distribution r = residual_distribution(p, q);
    for (size_t i = 0; i < n; ++i) {
      double recovered = std::min(p[i], q[i]) + double(r[i]) * (1.0 - alpha);
      ASSERT_NEAR(recovered, p[i], 2e-6) << "trial " << trial << " token " << i;
    }
  }
}

TEST(Distribution, ResidualIsADistributionOverTheFullVocabulary) {
  Rng rng(5);
  const size_t n = 50000;  // no top-k truncation: every token with p > q keeps its mass
  Distribution p = random_distribution(rng, n), q = random_distribution(rng, n);
  Distribution r = residual_distribution(p, q);
  double sum = 0.0;
  size_t support = 0, expected_support = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += r[i];
    support += r[i] > 0.0f;
    expected_support += p[i] > q[i];
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
  EXPECT_EQ(support, expected_support);
}

// p == q: (p - q)+ is zero everywhere, a rejection has probability 0; the residual is p.
TEST(Distribution, ResidualOfIdenticalDistributionsIsTheTarget) {
  Distribution p = dist({0.25f, 0.5f, 0.25f});
  Distribution r = residual_distribution(p, p);
  for (size_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(r[i], p[i]);
  EXPECT_DOUBLE_EQ(acceptance_rate(p, p), 1.0);
  EXPECT_DOUBLE_EQ(total_variation(p, p), 0.0);
}

TEST(Distribution, DisjointSupportsHaveAlphaZeroAndResidualP) {
  Distribution p = dist({0.6f, 0.4f, 0.0f, 0.0f});
  Distribution q = dist({0.0f, 0.0f, 0.5f, 0.5f});
  EXPECT_DOUBLE_EQ(acceptance_rate(p, q), 0.0);
  Distribution r = residual_distribution(p, q);
  EXPECT_FLOAT_EQ(r[0], 0.6f);
  EXPECT_FLOAT_EQ(r[1], 0.4f);
}

TEST(Distribution, SampleIndexSkipsZeroMassAndInvertsTheCdf) {
  Distribution p = dist({0.0f, 0.25f, 0.0f, 0.75f, 0.0f});
  EXPECT_EQ(sample_index(p.data(), 5, 0.0), 1);
  EXPECT_EQ(sample_index(p.data(), 5, 0.2499), 1);
  EXPECT_EQ(sample_index(p.data(), 5, 0.25), 3);
  EXPECT_EQ(sample_index(p.data(), 5, 0.9999999999), 3);
  EXPECT_EQ(argmax(p.data(), 5), 3);
  Distribution tie = dist({0.5f, 0.5f});
  EXPECT_EQ(argmax(tie.data(), 2), 0);
}

struct BadPair {
  const char* name;
  std::vector<float> p, q;
  const char* message;  // a fragment the error must contain
};
void PrintTo(const BadPair& c, std::ostream* os) { *os << c.name; }

class DistributionErrors : public ::testing::TestWithParam<BadPair> {};

TEST_P(DistributionErrors, ThrowsNamingTheArgument) {
  const BadPair& c = GetParam();
  auto expect_throw = [&](auto fn) {
    try {
      fn();
      FAIL() << c.name << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << c.name << ": message was: " << e.what();
    }
  };
  expect_throw([&] { acceptance_rate(dist(c.p), dist(c.q)); });
  expect_throw([&] { total_variation(dist(c.p), dist(c.q)); });
  expect_throw([&] { residual_distribution(dist(c.p), dist(c.q)); });
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

INSTANTIATE_TEST_SUITE_P(
    Table, DistributionErrors,
    ::testing::Values(
        BadPair{"negative", {1.2f, -0.2f}, {0.5f, 0.5f}, "p: entry 1 is negative"},
        BadPair{"nan", {0.5f, 0.5f}, {kNaN, 1.0f}, "q: entry 0 is not finite"},
        BadPair{"inf", {kInf, 0.0f}, {0.5f, 0.5f}, "p: entry 0 is not finite"},
        BadPair{"unnormalised", {0.5f, 0.6f}, {0.5f, 0.5f}, "p: probabilities sum to 1.1"},
        BadPair{"zeros", {0.5f, 0.5f}, {0.0f, 0.0f}, "q: probabilities sum to 0"},
        BadPair{"sizes", {0.5f, 0.5f}, {1.0f}, "vocabulary sizes differ (2 vs 1)"},
        BadPair{"empty", {}, {}, "p: empty distribution"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace specdec
