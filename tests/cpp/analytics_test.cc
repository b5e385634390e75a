#include "specdec/analytics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/errors.h"

namespace specdec {
namespace {

struct TokensCase {
  double alpha;
  int gamma;
  double expected;
};

// Hand-computed: 1 + a + ... + a^gamma.
TEST(Analytics, ExpectedTokensHandComputed) {
  // alpha 0: the target's one token whatever gamma; alpha 1: all gamma drafts and the bonus.
  EXPECT_NEAR(expected_accepted_tokens(0.0, 1), 1.0, 1e-6);
  EXPECT_NEAR(expected_accepted_tokens(0.0, 8), 1.0, 1e-6);
  EXPECT_NEAR(expected_accepted_tokens(1.0, 4), 5.0, 1e-6);
  EXPECT_NEAR(expected_accepted_tokens(1.0, 1), 2.0, 1e-6);
  const TokensCase cases[] = {
      {0.5, 1, 1.5},
      {0.5, 2, 1.75},
      {0.5, 3, 1.875},
      {0.8, 4, 3.3616},
      {0.9, 4, 4.0951},
      {0.85, 5, 4.1523365625},
      {0.999999, 3, 3.999994000004},
      {0.3, 10, 1.4285688979},
  };
  for (const TokensCase& c : cases) {
    EXPECT_NEAR(expected_accepted_tokens(c.alpha, c.gamma), c.expected, 1e-6)
        << "alpha=" << c.alpha << " gamma=" << c.gamma;
  }
}

TEST(Analytics, ClosedFormAgreesAwayFromOne) {
  for (double a = 0.05; a < 0.99; a += 0.05) {
    for (int g = 1; g <= 16; ++g) {
      EXPECT_NEAR(expected_accepted_tokens(a, g), (1 - std::pow(a, g + 1)) / (1 - a), 1e-12);
    }
  }
}

TEST(Analytics, SpeedupIsTokensOverCost) {
  // Lesson Exercise 2 setting: alpha 0.85, c 0.15, gamma 4: 3.8149... / 1.6.
  EXPECT_NEAR(speculative_speedup(0.85, 4, 0.15), 3.70863125 / 1.6, 1e-9);
  EXPECT_NEAR(speculative_speedup(0.0, 3, 0.1), 1.0 / 1.3, 1e-12);
  EXPECT_NEAR(speculative_speedup(1.0, 4, 0.0), 5.0, 1e-12);
  EXPECT_NEAR(speculative_speedup_measured(0.8, 4, 0.1, 3.0), 3.3616 / 3.4, 1e-12);
}

// The lesson's "Try This": a cheaper draft moves the best gamma up; a weak draft barely wins.
TEST(Analytics, OptimalGammaMovesUpWhenDraftGetsCheaper) {
  int prev = 0;
  for (double c : {0.4, 0.15, 0.05, 0.01}) {
    int g = optimal_gamma(0.85, c, 32);
    EXPECT_GE(g, prev) << "c=" << c;
    prev = g;
  }
  EXPECT_GT(optimal_gamma(0.85, 0.01, 32), optimal_gamma(0.85, 0.4, 32));
  EXPECT_EQ(optimal_gamma(0.9, 0.1, 16), 10);  // argmax of the curve, checked by hand
  EXPECT_EQ(optimal_gamma(0.85, 0.15, 32), 6);
  const double weak_best = speculative_speedup(0.4, optimal_gamma(0.4, 0.1, 16), 0.1);
  EXPECT_LE(weak_best, 1.3 + 1e-12);                  // gamma = 2: 1.56 / 1.2
  EXPECT_LT(speculative_speedup(0.4, 16, 0.1), 1.0);  // large gamma makes a weak draft worse
  EXPECT_GT(speculative_speedup(0.9, 5, 0.1), 3.0);   // a good draft: well above 1x
}

TEST(Analytics, DemonstrateSpeculativeMatchesTheFormulas) {
  auto pts = demonstrate_speculative({0.5, 0.9}, 6, 0.1);
  ASSERT_EQ(pts.size(), 12u);
  for (const DemoPoint& d : pts) {
    EXPECT_DOUBLE_EQ(d.tokens_per_pass, expected_accepted_tokens(d.alpha, d.gamma));
    EXPECT_DOUBLE_EQ(d.speedup, speculative_speedup(d.alpha, d.gamma, 0.1));
  }
  EXPECT_EQ(pts[0].gamma, 1);
  EXPECT_EQ(pts[11].gamma, 6);
  EXPECT_DOUBLE_EQ(pts[11].alpha, 0.9);
}

TEST(Analytics, BadInputThrows) {
  EXPECT_THROW(expected_accepted_tokens(-0.1, 3), Error);
  EXPECT_THROW(expected_accepted_tokens(1.1, 3), Error);
  EXPECT_THROW(expected_accepted_tokens(std::nan(""), 3), Error);
  EXPECT_THROW(expected_accepted_tokens(0.5, 0), Error);
  EXPECT_THROW(speculative_speedup(0.5, 3, -1), Error);
  EXPECT_THROW(speculative_speedup_measured(0.5, 3, 0.1, 0), Error);
  EXPECT_THROW(optimal_gamma(0.5, 0.1, 0), Error);
  try {
    expected_accepted_tokens(0.5, -2);
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "gamma: must be >= 1, got -2");
  }
}

}  // namespace
}  // namespace specdec
