#include "specdec/verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <xtensor/xview.hpp>

#include "base/errors.h"
#include "test_util.h"

namespace specdec {
namespace {

using testing::chi_square;
using testing::dist;
using testing::kFalseAlarm;
using testing::random_distribution;
using testing::stack;

// The lesson's block of gamma = 2: token 0 (p >= q) is always accepted; token 1 is accepted with
// probability 0.3 / 0.4, and on rejection the residual is all on token 0.
TEST(Verify, LessonExample) {
  Distribution p = dist({0.5f, 0.3f, 0.15f, 0.05f});
  Distribution q = dist({0.4f, 0.4f, 0.15f, 0.05f});
  int rejected = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Rng rng(seed);
    VerifyResult r = speculative_verify(stack({p, p, p}), stack({q, q}), {0, 1}, rng);
    ASSERT_EQ(r.emitted.size(), size_t(r.n_accepted) + 1);
    EXPECT_DOUBLE_EQ(r.positions[0].accept_prob, 1.0);
    EXPECT_TRUE(r.positions[0].accepted);
    EXPECT_NEAR(r.positions[1].accept_prob, 0.75, 1e-7);
    EXPECT_EQ(r.positions[1].accepted, r.positions[1].u < 0.75);
    EXPECT_EQ(r.emitted[0], 0);
    if (r.n_accepted == 1) {
      ++rejected;
      EXPECT_EQ(r.emitted, (std::vector<int>{0, 0}));
      EXPECT_FALSE(r.bonus);
      EXPECT_FLOAT_EQ(r.residual[0], 1.0f);
    } else {
      EXPECT_TRUE(r.bonus);
      EXPECT_EQ(r.residual.size(), 0u);
    }
  }
  EXPECT_GT(rejected, 25);  // about a quarter of 200
  EXPECT_LT(rejected, 80);
}

TEST(Verify, SelfDraftAcceptsAll) {
  Rng data(11);
  for (int gamma = 1; gamma <= 8; ++gamma) {
    std::vector<Distribution> rows;
    for (int i = 0; i <= gamma; ++i) rows.push_back(random_distribution(data, 64));
    ProbMatrix target = stack(rows);
    rows.pop_back();
    ProbMatrix draft = stack(rows);
    for (int rep = 0; rep < 50; ++rep) {
      std::vector<int> tokens;
      for (int i = 0; i < gamma; ++i) {
        tokens.push_back(sample_index(&draft(i, 0), 64, data.uniform()));
      }
      VerifyResult r = speculative_verify(target, draft, tokens, data);
      ASSERT_EQ(r.n_accepted, gamma);
      ASSERT_TRUE(r.bonus);
      ASSERT_EQ(r.emitted.size(), size_t(gamma) + 1);
    }
  }
}

TEST(Verify, SameSeedSameResult) {
  Rng data(3);
  ProbMatrix t = stack({random_distribution(data, 10), random_distribution(data, 10),
                        random_distribution(data, 10)});
  ProbMatrix d = stack({random_distribution(data, 10), random_distribution(data, 10)});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Rng a(seed), b(seed);
    VerifyResult ra = speculative_verify(t, d, {3, 4}, a), rb = speculative_verify(t, d, {3, 4}, b);
    EXPECT_EQ(ra.emitted, rb.emitted);
    EXPECT_EQ(ra.positions.size(), rb.positions.size());
    EXPECT_EQ(ra.positions[0].u, rb.positions[0].u);
  }
}

struct ExactCase {
  const char* name;
  std::vector<float> p, q;  // first position; later positions are random
  int gamma;
};
void PrintTo(const ExactCase& c, std::ostream* os) { *os << c.name; }

// Statistical exactness: draft x ~ q, verify, and the first emitted token must follow p.
// 200,000 draws per case; fails only when a chi-square p-value < 1e-6 (fixed seeds: the test is
// deterministic).
class VerifyExactness : public ::testing::TestWithParam<ExactCase> {};

TEST_P(VerifyExactness, FirstEmittedTokenFollowsTarget) {
  const ExactCase& c = GetParam();
  const size_t vocab = c.p.size();
  Rng data(77);
  std::vector<Distribution> trows{dist(c.p)}, drows{dist(c.q)};
  for (int i = 1; i <= c.gamma; ++i) {
    trows.push_back(random_distribution(data, vocab));
    if (i < c.gamma) drows.push_back(random_distribution(data, vocab));
  }
  ProbMatrix target = stack(trows), draft = stack(drows);
  Rng rng(1000 + c.gamma);
  std::vector<uint64_t> counts(vocab, 0);
  const int n = 200000;
  std::vector<int> tokens(c.gamma);
  for (int s = 0; s < n; ++s) {
    for (int i = 0; i < c.gamma; ++i) tokens[i] = sample_index(&draft(i, 0), vocab, rng.uniform());
    VerifyResult r = speculative_verify(target, draft, tokens, rng);
    ++counts[r.emitted[0]];
  }
  std::vector<double> expected(c.p.begin(), c.p.end());
  auto chi = chi_square(counts, expected);
  EXPECT_EQ(chi.impossible, "") << "tokens with p = 0 were emitted";
  EXPECT_GT(chi.p_value, kFalseAlarm) << "chi2=" << chi.stat << " dof=" << chi.dof;
}

INSTANTIATE_TEST_SUITE_P(
    Table, VerifyExactness,
    ::testing::Values(
        ExactCase{"dense",
                  {0.1f, 0.2f, 0.3f, 0.15f, 0.05f, 0.2f},
                  {0.3f, 0.1f, 0.1f, 0.2f, 0.2f, 0.1f},
                  1},
        ExactCase{"dense_gamma4",
                  {0.1f, 0.2f, 0.3f, 0.15f, 0.05f, 0.2f},
                  {0.3f, 0.1f, 0.1f, 0.2f, 0.2f, 0.1f},
                  4},
        ExactCase{"lesson", {0.5f, 0.3f, 0.15f, 0.05f}, {0.4f, 0.4f, 0.15f, 0.05f}, 2},
        ExactCase{"disjoint_supports", {0.6f, 0.4f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.5f, 0.5f}, 3},
        ExactCase{
            "q_much_larger_on_one", {0.01f, 0.33f, 0.33f, 0.33f}, {0.97f, 0.01f, 0.01f, 0.01f}, 2},
        ExactCase{"q_one_hot", {0.25f, 0.25f, 0.25f, 0.25f}, {0.0f, 1.0f, 0.0f, 0.0f}, 1},
        ExactCase{"p_one_hot", {0.0f, 0.0f, 1.0f, 0.0f}, {0.25f, 0.25f, 0.25f, 0.25f}, 1},
        ExactCase{"p_equals_q", {0.2f, 0.3f, 0.5f}, {0.2f, 0.3f, 0.5f}, 3},
        ExactCase{"tiny_p_mass", {0.001f, 0.999f}, {0.999f, 0.001f}, 1}),
    [](const auto& info) { return info.param.name; });

TEST(Verify, RandomPairsExactness) {
  Rng data(99);
  for (int trial = 0; trial < 6; ++trial) {
    const size_t vocab = 3 + trial * 2;
    Distribution p = random_distribution(data, vocab, trial % 2 ? 0.3 : 0.0);
    Distribution q = random_distribution(data, vocab, trial % 2 ? 0.3 : 0.0);
    ProbMatrix target = stack({p, random_distribution(data, vocab)}), draft = stack({q});
    std::vector<uint64_t> counts(vocab, 0);
    for (int s = 0; s < 100000; ++s) {
      int x = sample_index(q.data(), vocab, data.uniform());
      ++counts[speculative_verify(target, draft, {x}, data).emitted[0]];
    }
    auto chi = chi_square(counts, std::vector<double>(p.begin(), p.end()));
    EXPECT_EQ(chi.impossible, "");
    EXPECT_GT(chi.p_value, kFalseAlarm) << "trial " << trial << " chi2=" << chi.stat;
  }
}

TEST(Verify, GreedyAcceptsWhileDraftIsTargetArgmax) {
  ProbMatrix t = stack({dist({0.1f, 0.7f, 0.2f}), dist({0.5f, 0.2f, 0.3f}),
                        dist({0.2f, 0.2f, 0.6f}), dist({0.3f, 0.3f, 0.4f})});
  struct Case {
    std::vector<int> draft;
    int n_accepted;
    std::vector<int> emitted;
  };
  const Case cases[] = {
      {{1, 0, 2}, 3, {1, 0, 2, 2}},  // all accepted: bonus = argmax of the last row
      {{1, 0, 1}, 2, {1, 0, 2}},     // rejected at 2: correction = argmax of row 2
      {{0, 0, 2}, 0, {1}},           // rejected at once
      {{1, 2, 2}, 1, {1, 0}},
  };
  for (const Case& c : cases) {
    ProbMatrix rows = xt::view(t, xt::range(0, c.draft.size() + 1), xt::all());
    VerifyResult r = greedy_verify(rows, c.draft);
    EXPECT_EQ(r.n_accepted, c.n_accepted);
    EXPECT_EQ(r.emitted, c.emitted);
    EXPECT_EQ(r.bonus, c.n_accepted == int(c.draft.size()));
    EXPECT_TRUE(std::isnan(r.positions[0].u));
  }
}

struct BadVerify {
  const char* name;
  size_t target_rows, draft_rows, draft_vocab;
  std::vector<int> tokens;
  const char* message;
};
void PrintTo(const BadVerify& c, std::ostream* os) { *os << c.name; }

class VerifyErrors : public ::testing::TestWithParam<BadVerify> {};

TEST_P(VerifyErrors, ThrowsNamingTheArgument) {
  const BadVerify& c = GetParam();
  Rng data(1);
  std::vector<Distribution> t, d;
  for (size_t i = 0; i < c.target_rows; ++i) t.push_back(random_distribution(data, 5));
  for (size_t i = 0; i < c.draft_rows; ++i) d.push_back(random_distribution(data, c.draft_vocab));
  ProbMatrix target = stack(t),
             draft = c.draft_rows ? stack(d) : ProbMatrix(xt::zeros<float>({size_t(0), size_t(5)}));
  try {
    speculative_verify(target, draft, c.tokens, data);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, VerifyErrors,
    ::testing::Values(
        BadVerify{"gamma_zero", 1, 0, 5, {}, "gamma must be >= 1, got 0"},
        BadVerify{
            "target_rows", 2, 2, 5, {0, 1}, "targetProbs: expected 3 rows (gamma + 1), got 2"},
        BadVerify{"draft_rows", 3, 1, 5, {0, 1}, "draftProbs: expected 2 rows (gamma), got 1"},
        BadVerify{
            "vocab", 3, 2, 4, {0, 1}, "draftProbs: vocabulary size 4 differs from targetProbs' 5"},
        BadVerify{"token_negative", 3, 2, 5, {0, -1}, "draftTokens[1]: token id -1 outside [0, 5)"},
        BadVerify{"token_too_big", 3, 2, 5, {5, 0}, "draftTokens[0]: token id 5 outside [0, 5)"}),
    [](const auto& info) { return info.param.name; });

TEST(Verify, RejectsInvalidRowsAndImpossibleDraftTokens) {
  Rng rng(1);
  Distribution ok = dist({0.5f, 0.5f});
  auto message = [&](ProbMatrix t, ProbMatrix d, std::vector<int> x) -> std::string {
    try {
      speculative_verify(t, d, x, rng);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message(stack({ok, dist({0.5f, std::nanf("")})}), stack({ok}), {0}),
            "targetProbs[1]: entry 1 is not finite (nan)");
  EXPECT_EQ(message(stack({ok, ok}), stack({dist({0.9f, 0.3f})}), {0}),
            "draftProbs[0]: probabilities sum to 1.2, not 1 (tolerance 0.001)");
  EXPECT_EQ(message(stack({ok, ok}), stack({dist({-0.5f, 1.5f})}), {1}),
            "draftProbs[0]: entry 0 is negative (-0.5)");
  EXPECT_EQ(
      message(stack({ok, ok}), stack({dist({0.0f, 1.0f})}), {0}),
      "draftTokens[0]: token 0 has draft probability 0 (the draft could not have proposed it)");
}

}  // namespace
}  // namespace specdec
