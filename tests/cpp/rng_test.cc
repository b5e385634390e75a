#include "sampling/rng.h"

#include <gtest/gtest.h>

namespace specdec {
namespace {

// Reference stream of pcg32-demo.c (pcg32_srandom(42, 54)): the generator is the published one.
TEST(Rng, MatchesPcg32ReferenceStream) {
  Rng rng(42u, 54u);
  const uint32_t expected[] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u,
                               0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
  for (uint32_t e : expected) EXPECT_EQ(rng.next_u32(), e);
}

TEST(Rng, SameSeedSameStreamDifferentSeedDifferentStream) {
  Rng a(7), b(7), c(8);
  int same_c = 0;
  for (int i = 0; i < 1000; ++i) {
    uint32_t x = a.next_u32();
    EXPECT_EQ(x, b.next_u32());
    same_c += x == c.next_u32();
  }
  EXPECT_LT(same_c, 3);
}

TEST(Rng, UniformIsInUnitIntervalWithMeanOneHalf) {
  Rng rng(123);
  double sum = 0.0, lo = 1.0, hi = 0.0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  // Standard error of the mean is sqrt(1/12/n) ~ 6.5e-4: 6 sigma.
  EXPECT_NEAR(sum / n, 0.5, 4e-3);
  EXPECT_LT(lo, 1e-4);
  EXPECT_GT(hi, 1 - 1e-4);
}

}  // namespace
}  // namespace specdec
