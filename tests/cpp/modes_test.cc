// The decoder's modes beside the fixed-gamma chain: prompt lookup, gamma 'auto' and
// 'heuristic', draft trees (with and without replacement), and their combinations. Each keeps
// the output law exactly the target's (chi-square on the joint of the first three tokens, as in
// decoder_test.cc) and greedy output equal to greedy plain decoding.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "base/errors.h"
#include "specdec/analytics.h"
#include "specdec/decoder.h"
#include "specdec/policy.h"
#include "specdec/proposer.h"
#include "test_util.h"
#include "toy_models.h"

namespace specdec {
namespace {

using testing::error_of;

using testing::chi_square;
using testing::exact_joint;
using testing::kFalseAlarm;
using testing::toy_draft;
using testing::toy_target;

// Runs a decoder to the end (toy step functions; draft optional).
DecodeResult run(const std::vector<int>& prompt, DecoderOptions opt, bool with_draft, Rng& rng) {
  StepFunctionSource target(toy_target), draft(toy_draft);
  SpeculativeDecoder dec(target, with_draft ? &draft : nullptr, prompt, opt);
  return decode_to_end(dec, rng);
}

// ------------------------------------------------------------------ prompt lookup

TEST(Lookup, FindsTheMostRecentLongestMatch) {
  struct Case {
    const char* text;
    int min_n, max_n;
    int ngram;     // 0: no match
    size_t start;  // of the continuation
    size_t available;
  };
  for (const Case& c :
       std::vector<Case>{{"abcXabc", 1, 3, 3, 3, 4},   // "abc" at 0, followed by "Xabc"
                         {"abcXbc", 1, 3, 2, 3, 3},    // only "bc" matches
                         {"xyzab", 1, 3, 0, 0, 0},     // nothing repeats
                         {"abYabZab", 1, 2, 2, 5, 3},  // the most recent "ab" (at 3), not the first
                         {"aaaa", 1, 3, 3, 3, 1},      // overlapping occurrence
                         {"abcXbc", 3, 3, 0, 0, 0},    // min 3: no 3-gram repeats
                         {"ab", 1, 3, 0, 0, 0},        // too short to repeat
                         {"qrsq", 1, 1, 1, 1, 3}}) {   // 1-gram "q"
    LookupOptions o{c.min_n, c.max_n};
    PromptLookupProposer p(o);
    std::vector<int> tokens(c.text, c.text + std::string(c.text).size());
    auto m = p.find(tokens);
    EXPECT_EQ(m.ngram, c.ngram) << c.text;
    if (c.ngram) {
      EXPECT_EQ(m.start, c.start) << c.text;
      EXPECT_EQ(m.available, c.available) << c.text;
    }
  }
}

// ------------------------------------------------------------------ exactness of every mode

struct ModeCase {
  const char* name;
  std::function<void(DecoderOptions&)> set;
  bool with_draft;
};
void PrintTo(const ModeCase& c, std::ostream* os) { *os << c.name; }

class ModeExactness : public ::testing::TestWithParam<ModeCase> {};

TEST_P(ModeExactness, JointOfFirstThreeTokensMatchesPlainSampling) {
  const ModeCase& c = GetParam();
  const std::vector<int> prompt = {2, 0, 1, 3, 2, 0};  // repeats: lookup finds matches
  for (SamplingParams sp : {SamplingParams{}, SamplingParams{0.7f, 3, 1.0f}}) {
    const std::vector<double> probs = testing::dense_joint(exact_joint(prompt, sp));
    DecoderOptions opt;
    opt.sampling = sp;
    opt.max_new_tokens = 3;
    c.set(opt);
    std::vector<uint64_t> counts(64, 0);
    Rng rng(77);
    size_t drafted = 0;
    for (int r = 0; r < 60000; ++r) {
      DecodeResult d = run(prompt, opt, c.with_draft, rng);
      ++counts[d.tokens[0] * 16 + d.tokens[1] * 4 + d.tokens[2]];
      drafted += d.stats.drafted;
    }
    EXPECT_GT(drafted, 60000u) << "the mode drafted";
    auto chi = chi_square(counts, probs);
    EXPECT_EQ(chi.impossible, "");
    EXPECT_GT(chi.p_value, kFalseAlarm) << "chi2=" << chi.stat << " T=" << sp.temperature;
  }
}

CostModel linear_cost(double c, double slope) {
  CostModel m;
  m.c = c;
  for (int k = 1; k <= 12; ++k) m.v.push_back(1.0 + slope * (k - 1));
  return m;
}

// gamma 'auto' with given costs: c per draft pass, v(k) = 1 + slope (k - 1).
PolicyOptions auto_with_costs(double c, double slope, int gamma_max = 8) {
  PolicyOptions po;
  po.mode = GammaMode::kAuto;
  po.gamma_max = gamma_max;
  po.has_cost_model = true;
  po.cost_model = linear_cost(c, slope);
  return po;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ModeExactness,
    ::testing::Values(
        ModeCase{"lookup_alone", [](DecoderOptions& o) { o.lookup = true; }, false},
        ModeCase{"lookup_and_draft",
                 [](DecoderOptions& o) {
                   o.lookup = true;
                   o.has_cost_model = true;
                   o.cost_model = linear_cost(0.3, 0.1);
                 },
                 true},
        ModeCase{"auto_cost_model",
                 [](DecoderOptions& o) {
                   o.gamma_mode = GammaMode::kAuto;
                   o.has_cost_model = true;
                   o.cost_model = linear_cost(0.05, 0.05);
                 },
                 true},
        ModeCase{"auto_measured", [](DecoderOptions& o) { o.gamma_mode = GammaMode::kAuto; }, true},
        ModeCase{"heuristic", [](DecoderOptions& o) { o.gamma_mode = GammaMode::kHeuristic; },
                 true},
        ModeCase{"tree_3_2_distinct",
                 [](DecoderOptions& o) {
                   o.tree_branches = {3, 2};
                 },
                 true},
        ModeCase{"tree_2_2_2_iid",
                 [](DecoderOptions& o) {
                   o.tree_branches = {2, 2, 2};
                   o.tree_without_replacement = false;
                 },
                 true},
        ModeCase{"tree_and_lookup",
                 [](DecoderOptions& o) {
                   o.tree_branches = {2, 1};
                   o.lookup = true;
                 },
                 true}),
    [](const auto& info) { return info.param.name; });

TEST(Modes, GreedyEveryModeEqualsGreedyPlain) {
  SamplingParams greedy{0.0f, 0, 1.0f};
  DecoderOptions plain;
  plain.plain = true;
  plain.sampling = greedy;
  plain.max_new_tokens = 150;
  Rng r0(0);
  const std::vector<int> prompt = {3, 1, 2, 3, 1};
  const DecodeResult ref = run(prompt, plain, false, r0);
  std::vector<std::function<void(DecoderOptions&)>> modes = {
      [](DecoderOptions& o) { o.lookup = true; },
      [](DecoderOptions& o) {
        o.lookup = true, o.lookup_options = {2, 4};
      },
      // (measured, the toy draft costs what the toy target costs, and greedy toys agree
      // rarely: auto would rightly stop drafting; given nearly free drafts, it drafts)
      [](DecoderOptions& o) {
        o.gamma_mode = GammaMode::kAuto, o.has_cost_model = true;
        o.cost_model = linear_cost(0.01, 0.0);
      },
      [](DecoderOptions& o) { o.gamma_mode = GammaMode::kHeuristic; },
      [](DecoderOptions& o) {
        o.tree_branches = {3, 2, 1, 1};
      },
      [](DecoderOptions& o) { o.tree_branches = {2}, o.lookup = true; }};
  for (size_t i = 0; i < modes.size(); ++i) {
    DecoderOptions o = plain;
    o.plain = false;
    modes[i](o);
    const bool draft = !(o.lookup && o.tree_branches.empty() && i < 2);
    Rng rng(9);
    DecodeResult r = run(prompt, o, draft, rng);
    EXPECT_EQ(r.tokens, ref.tokens) << "mode " << i;
    EXPECT_LT(r.stats.target_passes, ref.stats.target_passes) << "mode " << i;
  }
}

// A chain is the tree [1, 1, ...]: same tokens, uniforms and counters as gamma = depth.
TEST(Modes, ChainTreeIsTheChain) {
  for (int depth : {1, 3, 5}) {
    DecoderOptions chain, tree;
    chain.gamma = depth;
    chain.max_new_tokens = tree.max_new_tokens = 80;
    tree.tree_branches.assign(depth, 1);
    Rng a(depth), b(depth);
    DecodeResult x = run({1, 2}, chain, true, a), y = run({1, 2}, tree, true, b);
    EXPECT_EQ(x.tokens, y.tokens);
    EXPECT_EQ(x.stats.target_passes, y.stats.target_passes);
    EXPECT_EQ(x.stats.accepted, y.stats.accepted);
    EXPECT_EQ(a.state(), b.state());
  }
}

// A tree gets several tries per depth: more tokens per target pass than the chain of its depth.
TEST(Modes, TreeBeatsChainOfTheSameDepth) {
  DecoderOptions chain, tree;
  chain.gamma = 3;
  tree.tree_branches = {3, 2, 1};
  chain.max_new_tokens = tree.max_new_tokens = 3000;
  Rng a(1), b(1);
  DecodeResult x = run({0}, chain, true, a), y = run({0}, tree, true, b);
  EXPECT_GT(y.stats.tokens_per_pass(), 1.1 * x.stats.tokens_per_pass());
}

TEST(Modes, RecordsSayWhoDraftedAndHowDeep) {
  DecoderOptions o;
  o.gamma_mode = GammaMode::kHeuristic;
  o.gamma_max = 6;
  o.lookup = true;
  o.max_new_tokens = 300;
  StepFunctionSource target(toy_target), draft(toy_draft);
  SpeculativeDecoder dec(target, &draft, {1, 2, 3, 1, 2}, o);
  Rng rng(4);
  size_t iterations = 0;
  while (!dec.done()) {
    IterationRecord rec = dec.step(rng);
    ++iterations;
    EXPECT_LE(rec.gamma, 6);
    const ChainView view = chain_view(rec);
    EXPECT_EQ(view.proposed.size(), static_cast<size_t>(rec.gamma));
    EXPECT_EQ(rec.drafter == Drafter::kLookup, rec.lookup_ngram > 0);
    if (rec.drafter == Drafter::kLookup) {
      for (size_t i = 0; i < view.proposed.size(); ++i) {  // one-hot q
        EXPECT_EQ(view.draft_probs(i, view.proposed[i]), 1.0f);
      }
    }
  }
  const DecoderStats& s = dec.stats();
  size_t hist = 0, drafters = 0;
  for (size_t h : s.gamma_histogram) hist += h;
  for (size_t d : s.by_drafter) drafters += d;
  EXPECT_EQ(hist, iterations);
  EXPECT_EQ(drafters, iterations);
  EXPECT_EQ(s.gamma_histogram.size(), 7u);
}

// The lookup drafts from the first iteration on, before the target's vocabulary is known.
TEST(Modes, LookupDraftsFromTheFirstIteration) {
  DecoderOptions o;
  o.lookup = true;
  o.max_new_tokens = 5;
  StepFunctionSource target(toy_target);
  SpeculativeDecoder dec(target, nullptr, {0, 1, 2, 3, 0, 1, 2}, o);
  Rng rng(1);
  IterationRecord rec = dec.step(rng);
  EXPECT_EQ(rec.drafter, Drafter::kLookup);
  EXPECT_EQ(rec.lookup_ngram, 3);
  const ChainView view = chain_view(rec);
  EXPECT_EQ(view.proposed, (std::vector<int>{3, 0, 1, 2}));
  for (size_t i = 0; i < view.proposed.size(); ++i)
    EXPECT_EQ(view.draft_probs(i, view.proposed[i]), 1.0f);
}

// ------------------------------------------------------------------ the policy

TEST(Policy, AutoPicksTheBestGammaOfTheCostModel) {
  for (double c : {0.02, 0.1, 0.3}) {
    for (double slope : {0.0, 0.1, 0.4}) {
      GammaPolicy policy(auto_with_costs(c, slope, 10));
      // 3000 chains of 10 with independent acceptance at 0.8 at every position.
      Rng rng(7);
      Plan p{Drafter::kDraftModel, 10, 0, 0};
      for (int i = 0; i < 3000; ++i) {
        int accepted = 0;
        while (accepted < 10 && rng.uniform() < 0.8) ++accepted;
        policy.record(Outcome(p)
                          .verified(std::min(accepted + 1, 10), accepted)
                          .drafted(10, 1.0)
                          .target(11, 1.0));
      }
      EXPECT_NEAR(policy.alpha(Drafter::kDraftModel), 0.8, 0.01);
      auto speedup = [&](int g) {
        return speculative_speedup_measured(0.8, g, c, 1.0 + slope * g);
      };
      int best = 1;
      for (int g = 2; g <= 10; ++g) {
        if (speedup(g) > speedup(best)) best = g;
      }
      Plan chosen = policy.choose({DraftOption{Drafter::kDraftModel, 10, 0}});
      EXPECT_EQ(chosen.drafter, Drafter::kDraftModel);
      // The chosen depth is the optimum, or within 1% of its speedup (estimates carry noise).
      EXPECT_GT(speedup(chosen.gamma), 0.99 * speedup(best))
          << "c " << c << " slope " << slope << " chose " << chosen.gamma << " best " << best;
    }
  }
}

// Acceptance that depends on the position (easy stretches stay easy): the per-position
// estimates see that longer drafts pay, which an independent-acceptance model would miss.
TEST(Policy, PerPositionAcceptanceIsLearned) {
  GammaPolicy policy(auto_with_costs(0.1, 0.15));
  // Half the iterations everything is accepted, half the first token is rejected: overall
  // alpha = 8/9, but E(gamma) = 1 + gamma / 2.
  Plan p{Drafter::kDraftModel, 8, 0, 0};
  for (int i = 0; i < 400; ++i) {
    if (i % 2) {
      policy.record(Outcome(p).verified(8, 8).drafted(8, 1.0).target(9, 1.0));
    } else {
      policy.record(Outcome(p).verified(1, 0).drafted(8, 1.0).target(9, 1.0));
    }
  }
  EXPECT_NEAR(policy.expected_tokens(Drafter::kDraftModel, 0, 4), 3.0, 0.05);
  EXPECT_NEAR(policy.expected_tokens(Drafter::kDraftModel, 0, 8), 5.0, 0.05);
}

TEST(Policy, AutoFallsBackToPlainStepsWhenDraftingDoesNotPay) {
  GammaPolicy policy(auto_with_costs(0.5, 0.5));
  Plan p{Drafter::kDraftModel, 2, 0, 0};
  for (int i = 0; i < 50; ++i)
    policy.record(Outcome(p).verified(1, 0).drafted(2, 1.0).target(3, 1.0));  // alpha ~ 0
  EXPECT_EQ(policy.choose({DraftOption{Drafter::kDraftModel, 8, 0}}).drafter, Drafter::kNone);
}

// Plain steps teach nothing about drafting: after 16 in a row auto drafts once (the best
// drafter and depth it knows), so that estimates from a few bad early iterations are revisited.
TEST(Policy, AutoRevisitsDraftingAfterAStretchOfPlainSteps) {
  GammaPolicy policy(auto_with_costs(0.5, 0.5));
  const std::vector<DraftOption> offers{DraftOption{Drafter::kDraftModel, 8, 0}};
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 16; ++i) {
      Plan p = policy.choose(offers);
      ASSERT_EQ(p.drafter, Drafter::kNone) << "round " << round << ", step " << i;
      policy.record(Outcome(p).target(1, 1.0));
    }
    Plan p = policy.choose(offers);
    EXPECT_EQ(p.drafter, Drafter::kDraftModel);
    EXPECT_GE(p.gamma, 1);
    policy.record(
        Outcome(p).verified(1, 0).drafted(1, 0.5).target(static_cast<size_t>(p.gamma) + 1, 1.0));
  }
}

// Work paid once per iteration (sampling, verification, records) favours drafting: with enough
// of it, even a weak draft beats plain steps.
TEST(Policy, PerIterationOverheadFavoursDrafting) {
  PolicyOptions po;
  po.mode = GammaMode::kAuto;
  GammaPolicy policy(po);
  Plan p{Drafter::kDraftModel, 1, 0, 0};
  for (int i = 0; i < 30; ++i) {  // alpha 0.3; T(1) = 1, T(2) = 1.3 ms; a draft pass 0.1 ms
    policy.record(Outcome(p).verified(1, i % 10 < 3 ? 1 : 0).drafted(1, 0.1).target(2, 1.3));
    policy.record(Outcome().target(1, 1.0));
  }
  EXPECT_EQ(policy.choose({DraftOption{Drafter::kDraftModel, 4, 0}}).drafter, Drafter::kNone);
  for (int i = 0; i < 10; ++i) policy.record_overhead(1.0);
  EXPECT_DOUBLE_EQ(policy.overhead_ms(), 1.0);
  EXPECT_EQ(policy.choose({DraftOption{Drafter::kDraftModel, 4, 0}}).drafter, Drafter::kDraftModel);
}

TEST(Policy, HeuristicIsHuggingFacesSchedule) {
  PolicyOptions po;
  po.mode = GammaMode::kHeuristic;
  po.gamma_max = 9;
  GammaPolicy policy(po);
  EXPECT_EQ(policy.heuristic_gamma(), 5);
  auto step = [&](int accepted) {
    Plan p = policy.choose({DraftOption{Drafter::kDraftModel, 32, 0}});
    policy.record(Outcome(p)
                      .verified(std::min(p.gamma, accepted + 1), accepted)
                      .drafted(p.gamma, 1)
                      .target(1, 1));
    return policy.heuristic_gamma();
  };
  EXPECT_EQ(step(5), 7);  // all 5 accepted: +2
  EXPECT_EQ(step(7), 9);
  EXPECT_EQ(step(9), 9);  // capped at gamma_max
  EXPECT_EQ(step(2), 8);  // a rejection: -1
  for (int i = 0; i < 10; ++i) step(0);
  EXPECT_EQ(policy.heuristic_gamma(), 1);  // never below 1
}

TEST(Policy, MeasuredCostsAreLearned) {
  PolicyOptions po;
  po.mode = GammaMode::kAuto;
  GammaPolicy policy(po);
  // T(k) = 1 + 0.2 k ms; draft passes 0.06 ms.
  Plan p{Drafter::kDraftModel, 3, 0, 0};
  for (int i = 0; i < 20; ++i) {
    for (size_t k : {1, 2, 4, 6})
      policy.record(Outcome(p).verified(1, 1).drafted(1, 0.06).target(k, 1.0 + 0.2 * k));
  }
  EXPECT_NEAR(policy.v(1), 1.0, 1e-9);
  EXPECT_NEAR(policy.v(4), 1.8 / 1.2, 1e-9);
  EXPECT_NEAR(policy.v(8), 2.6 / 1.2, 1e-9);  // extrapolated along the fitted line
  EXPECT_NEAR(policy.c(Drafter::kDraftModel), 0.05, 1e-9);
  EXPECT_EQ(policy.c(Drafter::kLookup), 0.0);
}

// ------------------------------------------------------------------ bad input

TEST(Modes, BadInputThrowsClearErrors) {
  StepFunctionSource t(toy_target), d(toy_draft);
  auto make = [&](std::function<void(DecoderOptions&)> set, bool draft) {
    DecoderOptions o;
    set(o);
    SpeculativeDecoder dec(t, draft ? &d : nullptr, {1}, o);
  };
  struct Case {
    std::function<void(DecoderOptions&)> set;
    bool draft;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {[](DecoderOptions& o) { o.plain = true, o.lookup = true; }, false,
            "promptLookup: prompt lookup drafts; it does not combine with plain decoding"},
           {[](DecoderOptions& o) {
              o.lookup = true, o.lookup_options = {3, 2};
            },
            false, "promptLookup.minNgram: 3 exceeds maxNgram 2"},
           {[](DecoderOptions& o) {
              o.lookup = true, o.lookup_options = {0, 2};
            },
            false, "promptLookup.minNgram: must be in 1..32, got 0"},
           {[](DecoderOptions& o) { o.gamma_mode = GammaMode::kAuto, o.gamma_max = 0; }, true,
            "gammaMax: must be in 1..32, got 0"},
           {[](DecoderOptions& o) { o.gamma_mode = GammaMode::kAuto, o.tree_branches = {2}; }, true,
            "gamma: 'auto' and 'heuristic' choose a chain's length; a tree's depth is fixed by "
            "tree.branches"},
           {[](DecoderOptions& o) {
              o.tree_branches = {2, 2}, o.lookup = true;
            },
            false, "tree: needs a draft model or heads (lookup drafts chains)"},
           {[](DecoderOptions& o) { o.tree_branches = {9}; }, true,
            "tree.branches[0]: children per node must be in 1..8, got 9"},
           {[](DecoderOptions& o) { o.plain = true, o.tree_branches = {2}; }, false,
            "tree: a tree needs a drafter, not plain decoding"},
           {[](DecoderOptions& o) {
              o.gamma_mode = GammaMode::kAuto, o.has_cost_model = true, o.cost_model.v = {1, -2};
            },
            true, "costModel.verifyCost[1]: must be finite and > 0, got -2"},
           {[](DecoderOptions& o) { o.has_cost_model = true; }, true,
            "costModel.verifyCost: must list v(1), v(2), ... (at least one entry)"}}) {
    EXPECT_EQ(error_of([&] { make(c.set, c.draft); }), c.message);
  }
}

}  // namespace
}  // namespace specdec
