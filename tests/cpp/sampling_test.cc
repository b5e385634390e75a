#include "sampling/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/errors.h"
#include "kernels/portable_math.h"

namespace specdec {
namespace {

struct FilterCase {
  const char* name;
  std::vector<float> in;
  SamplingParams params;
  std::vector<float> out;
};
void PrintTo(const FilterCase& c, std::ostream* os) { *os << c.name; }

class SamplingFilters : public ::testing::TestWithParam<FilterCase> {};

TEST_P(SamplingFilters, Table) {
  const FilterCase& c = GetParam();
  std::vector<float> v = c.in;
  apply_sampling(v.data(), v.size(), c.params);
  ASSERT_EQ(v.size(), c.out.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], c.out[i], 1e-6) << "token " << i;
}

INSTANTIATE_TEST_SUITE_P(
    Table, SamplingFilters,
    ::testing::Values(
        FilterCase{"greedy", {0.2f, 0.5f, 0.3f}, {0.0f, 0, 1.0f}, {0, 1, 0}},
        FilterCase{"greedy_tie_lowest_id", {0.4f, 0.2f, 0.4f}, {0.0f, 0, 1.0f}, {1, 0, 0}},
        FilterCase{"greedy_ignores_topk", {0.4f, 0.6f}, {0.0f, 1, 0.5f}, {0, 1}},
        FilterCase{"temperature_2_is_sqrt", {0.8f, 0.2f}, {2.0f, 0, 1.0f}, {2.0f / 3, 1.0f / 3}},
        FilterCase{"temperature_half_is_square",
                   {0.6f, 0.4f},
                   {0.5f, 0, 1.0f},
                   {0.36f / 0.52f, 0.16f / 0.52f}},
        // Found by fuzzing: 1/T overflowed to inf and 0 * inf gave NaN.
        FilterCase{"tiny_temperature_is_greedy_like", {0.3f, 0.7f}, {1e-39f, 0, 1.0f}, {0, 1}},
        FilterCase{"huge_temperature_is_uniform", {0.2f, 0.8f}, {1e30f, 0, 1.0f}, {0.5f, 0.5f}},
        FilterCase{"temperature_keeps_zeros", {0.0f, 0.5f, 0.5f}, {0.3f, 0, 1.0f}, {0, 0.5f, 0.5f}},
        FilterCase{"top_k_1", {0.2f, 0.5f, 0.3f}, {1.0f, 1, 1.0f}, {0, 1, 0}},
        FilterCase{"top_k_2", {0.2f, 0.5f, 0.3f}, {1.0f, 2, 1.0f}, {0, 0.625f, 0.375f}},
        FilterCase{"top_k_tie_lower_id",
                   {0.3f, 0.2f, 0.3f, 0.2f},
                   {1.0f, 3, 1.0f},
                   {0.375f, 0.25f, 0.375f, 0}},
        FilterCase{"top_k_at_least_vocab", {0.2f, 0.5f, 0.3f}, {1.0f, 3, 1.0f}, {0.2f, 0.5f, 0.3f}},
        FilterCase{"top_p_exact_boundary",
                   {0.5f, 0.3f, 0.15f, 0.05f},
                   {1.0f, 0, 0.8f},
                   {0.625f, 0.375f, 0, 0}},
        FilterCase{"top_p_just_above",
                   {0.5f, 0.3f, 0.15f, 0.05f},
                   {1.0f, 0, 0.81f},
                   {0.5f / 0.95f, 0.3f / 0.95f, 0.15f / 0.95f, 0}},
        FilterCase{"top_p_tiny_keeps_one", {0.3f, 0.7f}, {1.0f, 0, 1e-6f}, {0, 1}},
        FilterCase{"top_k_then_top_p",
                   {0.1f, 0.4f, 0.3f, 0.2f},
                   {1.0f, 3, 0.5f},
                   {0, 4.0f / 7, 3.0f / 7, 0}},
        FilterCase{
            "temperature_then_top_k", {0.5f, 0.25f, 0.25f}, {0.5f, 2, 1.0f}, {0.8f, 0.2f, 0}}),
    [](const auto& info) { return info.param.name; });

TEST(Sampling, DefaultsLeaveTheRowBitForBitUnchanged) {
  std::vector<float> v = {0.1f, 0.2f, 0.30000001f, 0.39999999f}, w = v;
  apply_sampling(v.data(), v.size(), SamplingParams{});
  EXPECT_EQ(std::memcmp(v.data(), w.data(), v.size() * sizeof(float)), 0);
}

TEST(Sampling, BadParamsThrow) {
  const SamplingParams bad[] = {{-0.5f, 0, 1.0f}, {std::nanf(""), 0, 1.0f}, {INFINITY, 0, 1.0f},
                                {1.0f, -1, 1.0f}, {1.0f, 0, 0.0f},          {1.0f, 0, 1.5f}};
  for (const SamplingParams& p : bad) EXPECT_THROW(check_sampling_params(p), Error);
  EXPECT_NO_THROW(check_sampling_params({0.0f, 5, 0.9f}));
}

// Issue 57: the message prints the value refused with the digits it takes to tell it from the
// range's bound (topP: 1.0000001 was refused "must be in (0, 1], got 1").
TEST(Sampling, BadParamsAreNamedWithEnoughDigits) {
  struct Case {
    SamplingParams params;
    const char* message;
  };
  const float above_one = std::nextafter(1.0f, 2.0f);  // 1.0000001 in JS, as a float
  const Case kCases[] = {
      {{1.0f, 0, above_one}, "topP: must be in (0, 1] (1 = off), got 1.0000001"},
      {{1.0f, 0, 1.5f}, "topP: must be in (0, 1] (1 = off), got 1.5"},
      {{1.0f, 0, -1e-30f}, "topP: must be in (0, 1] (1 = off), got -1e-30"},
      {{1.0f, 0, 0.0f}, "topP: must be in (0, 1] (1 = off), got 0"},
      {{1.0f, 0, std::nanf("")}, "topP: must be in (0, 1] (1 = off), got nan"},
      {{-1.0000001f, 0, 1.0f}, "temperature: must be a finite number >= 0, got -1.0000001"},
      {{-1e-7f, 0, 1.0f}, "temperature: must be a finite number >= 0, got -1e-07"},
      {{1.0f, -3, 1.0f}, "topK: must be >= 0 (0 = off), got -3"},
  };
  for (const Case& c : kCases) {
    try {
      check_sampling_params(c.params);
      ADD_FAILURE() << "accepted: " << c.message;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), c.message);
    }
  }
}

// The portable exp/log must be accurate (they replace libm for cross-platform determinism).
TEST(PortableMath, AgreesWithLibmToAFewUlp) {
  for (float x = -100.0f; x < 88.0f; x += 0.0371f) {
    float e = portable_exp(x), ref = std::exp(x);
    ASSERT_NEAR(e, ref, std::fabs(ref) * 3e-7f + 1e-38f) << "exp(" << x << ")";
  }
  for (float x = 1e-30f; x < 1e30f; x *= 1.37f) {
    float l = portable_log(x), ref = std::log(x);
    ASSERT_NEAR(l, ref, std::fabs(ref) * 3e-7f + 1e-7f) << "log(" << x << ")";
  }
  EXPECT_EQ(portable_exp(0.0f), 1.0f);
  EXPECT_EQ(portable_log(1.0f), 0.0f);
  EXPECT_EQ(portable_exp(-200.0f), 0.0f);
  EXPECT_TRUE(std::isinf(portable_exp(100.0f)));
  EXPECT_TRUE(std::isinf(portable_log(0.0f)));
  EXPECT_TRUE(std::isnan(portable_log(-1.0f)));
}

}  // namespace
}  // namespace specdec
