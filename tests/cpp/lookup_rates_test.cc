// Prompt lookup's rates (lookup_rates.h), learned from every iteration whoever drafted it, and
// the policy's choice between lookup, a draft model and plain steps that reads them.
#include "specdec/lookup_rates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "specdec/decoder.h"
#include "specdec/policy.h"
#include "specdec/proposer.h"
#include "toy_models.h"

namespace specdec {
namespace {

ProbMatrix rows_of(const std::vector<std::vector<float>>& r) {
  ProbMatrix m = xt::zeros<float>({r.size(), r[0].size()});
  for (size_t i = 0; i < r.size(); ++i) {
    for (size_t j = 0; j < r[i].size(); ++j) m(i, j) = r[i][j];
  }
  return m;
}

// A chain's rows give p_j(x_j) at every position reached (the burst agreed with x before it);
// a tree's only at the root, later positions count 0/1.
TEST(LookupRates, OutcomeReadsTheTargetRowsWhereTheyApply) {
  const ProbMatrix rows = rows_of({{0.1f, 0.6f, 0.3f}, {0.2f, 0.2f, 0.6f}, {0.5f, 0.25f, 0.25f}});
  LookupOutcome chain = lookup_outcome({1, 2, 0}, {1, 2, 1}, rows, true);
  EXPECT_EQ(chain.reached, 3);
  EXPECT_FLOAT_EQ(chain.accepted[0], 0.6f);
  EXPECT_FLOAT_EQ(chain.accepted[1], 0.6f);
  EXPECT_FLOAT_EQ(chain.accepted[2], 0.5f);
  LookupOutcome tree = lookup_outcome({1, 2, 0}, {1, 2, 1}, rows, false);
  EXPECT_EQ(tree.reached, 3);
  EXPECT_FLOAT_EQ(tree.accepted[0], 0.6f);
  EXPECT_EQ(tree.accepted[1], 1.0);
  EXPECT_EQ(tree.accepted[2], 0.0);
  // The burst left x at position 1: nothing beyond it was tested.
  LookupOutcome early = lookup_outcome({2, 2}, {1, 2}, rows, true);
  EXPECT_EQ(early.reached, 1);
  EXPECT_FLOAT_EQ(early.accepted[0], 0.3f);
  // A plain step (one row, one token) tests position 1 only.
  EXPECT_EQ(lookup_outcome({1, 2}, {1}, rows, true).reached, 1);
}

TEST(LookupRates, LearnsEachMatchLengthFastAndApart) {
  LookupRates r;
  EXPECT_LT(r.rate(1, 1), 0.2);  // priors: a 1-token match rarely continues
  for (int i = 0; i < 10; ++i) {
    LookupOutcome copying;
    copying.reached = 4;
    for (int j = 0; j < 4; ++j) copying.accepted[j] = 0.95;
    r.observe(12, copying);  // a long match: the text is copying
    LookupOutcome miss;
    miss.reached = 1;
    miss.accepted[0] = 0.0;
    r.observe(1, miss);
  }
  EXPECT_GT(r.rate(12, 1), 0.85);  // ten observations are enough
  EXPECT_GT(r.rate(12, 3), 0.85);
  EXPECT_LT(r.rate(1, 1), 0.05);
  EXPECT_NEAR(r.rate(3, 1), 0.4, 1e-9);  // untouched bucket: its prior
  EXPECT_GT(r.expected_tokens(12, 4), 4.0);
  EXPECT_LT(r.expected_tokens(1, 4), 1.06);
  // Old evidence fades: the same bucket turning bad is seen within ~20 observations.
  for (int i = 0; i < 20; ++i) {
    LookupOutcome miss;
    miss.reached = 1;
    r.observe(12, miss);
  }
  EXPECT_LT(r.rate(12, 1), 0.4);
}

TEST(LookupRates, MatchLengthGoesBackBeyondTheNgram) {
  PromptLookupProposer p(LookupOptions{1, 3});
  // "12345" then 9, then "12345": a 3-gram match whose agreement goes back 5 tokens.
  auto m = p.find({1, 2, 3, 4, 5, 9, 1, 2, 3, 4, 5});
  EXPECT_EQ(m.ngram, 3);
  EXPECT_EQ(m.length, 5);
  EXPECT_EQ(p.find({7, 1, 2, 3, 8, 1, 2, 3}).length, 3);
  DraftOption o = p.offer({0, 1, 2, 3, 0, 1, 2}, 8, 4);
  EXPECT_EQ(o.match, 3);
  EXPECT_EQ(p.proposal({0, 1, 2, 3, 0, 1, 2}, 2), (std::vector<int>{3, 0}));
}

PolicyOptions auto_costs() {
  PolicyOptions po;
  po.mode = GammaMode::kAuto;
  po.has_cost_model = true;
  po.cost_model.c = 0.1;
  for (int k = 1; k <= 16; ++k) po.cost_model.v.push_back(1.0 + 0.1 * (k - 1));
  return po;
}

LookupOutcome outcome(int reached, double a) {
  LookupOutcome o;
  o.reached = reached;
  for (int j = 0; j < reached; ++j) o.accepted[j] = a;
  return o;
}

// Beside a draft model: lookup only where its measured rate beats the draft's, and no lookup
// at all on a short match that does not continue, though lookup itself never drafted.
TEST(LookupRates, PolicyPicksLookupOnlyWhereItsMeasuredRatePays) {
  GammaPolicy policy(auto_costs());
  Plan d{Drafter::kDraftModel, 4, 0, 0};
  for (int i = 0; i < 40; ++i) {
    policy.record(
        Outcome(d).verified(4, 3).drafted(4, 1.0).target(5, 1.0));  // the draft: alpha ~ 0.75
    policy.record_lookup(2, outcome(1, 0.05));   // short matches: ~never continue
    policy.record_lookup(20, outcome(8, 0.98));  // long ones: copying
  }
  const DraftOption draft{Drafter::kDraftModel, 8, 0};
  EXPECT_EQ(policy.choose({draft, DraftOption{Drafter::kLookup, 8, 2, 2}}).drafter,
            Drafter::kDraftModel);
  const Plan copy = policy.choose({draft, DraftOption{Drafter::kLookup, 8, 3, 20}});
  EXPECT_EQ(copy.drafter, Drafter::kLookup);
  EXPECT_EQ(copy.match, 20);
  EXPECT_GE(copy.gamma, 6);
}

// Lookup alone: plain steps while its matches do not continue, and no revisit that its
// measured rate says cannot pay (the revisit only refreshes v(k)).
TEST(LookupRates, LookupAloneStaysPlainWhenItCannotPay) {
  GammaPolicy policy(auto_costs());
  const std::vector<DraftOption> offers{DraftOption{Drafter::kLookup, 8, 1, 1}};
  for (int i = 0; i < 40; ++i) {
    const Plan p = policy.choose(offers);
    ASSERT_EQ(p.drafter, Drafter::kNone) << "step " << i;
    policy.record(Outcome(p).target(1, 1.0));
    policy.record_lookup(1, outcome(1, 0.0));
  }
}

// After a stretch of plain steps the policy drafts once to refresh its estimates; when the
// best drafting plan is a lookup that cannot pay, it is the draft model that gets revisited.
TEST(LookupRates, RevisitsTheDraftModelNotAHopelessLookup) {
  GammaPolicy policy(auto_costs());
  Plan d{Drafter::kDraftModel, 1, 0, 0};
  for (int i = 0; i < 50; ++i)
    policy.record(Outcome(d).verified(1, 0).drafted(1, 1.0).target(2, 1.0));  // alpha ~ 0
  for (int i = 0; i < 150; ++i) policy.record_lookup(20, outcome(1, 0.0));
  const std::vector<DraftOption> offers{DraftOption{Drafter::kDraftModel, 8, 0},
                                        DraftOption{Drafter::kLookup, 8, 3, 20}};
  for (int i = 0; i < 16; ++i) {
    const Plan p = policy.choose(offers);
    ASSERT_EQ(p.drafter, Drafter::kNone) << "step " << i;
    policy.record(Outcome(p).target(1, 1.0));
  }
  EXPECT_EQ(policy.choose(offers).drafter, Drafter::kDraftModel);
}

// Passes grow slower as the cache grows (onnxruntime-web copies it in and out of every pass):
// the estimates follow the drift through a level common to every k, which per-k medians over
// the run lag; a pass's excess is taken against the latest clean passes plus that level. One
// slow pass moves the level little.
TEST(LookupRates, PassCostsFollowADrift) {
  struct Case {
    const char* what;
    double drift;   // ms per 4-token pass, 40 passes from 5 ms; every 4th after a cut
    int slow_at;    // this pass takes 20 ms (-1: none)
    double pass_4;  // expected pass_ms(4), within tol
    double tol;
    double pass_1_min, pass_1_max;  // pass_ms(1): measured 2 ms three times before the drift
  };
  const Case cases[] = {
      {"no drift", 0.0, -1, 5.0, 1e-9, 2.0, 2.0},
      // +1.56 ms over the run, as onnxruntime-web's one-token pass over 200 tokens; a k not
      // measured since moves with the level, by over half the drift (the medians' lag took it
      // all before)
      {"drift: followed, every k alike", 0.04, -1, 6.56, 0.5, 2.8, 3.56},
      {"one preempted pass: the level moves at most 0.2 ms", 0.0, 20, 5.0, 0.2 + 1e-9, 2.0, 2.2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PolicyOptions po;
    po.mode = GammaMode::kAuto;
    GammaPolicy policy(po);
    for (int i = 0; i < 3; ++i) policy.record(Outcome().target(1, 2.0));
    const Plan d{Drafter::kDraftModel, 3, 0, 0};
    double last_clean = 0.0;
    for (int i = 0; i < 40; ++i) {
      const double ms = i == c.slow_at ? 20.0 : 5.0 + c.drift * i;
      const bool cut = i % 4 == 3;
      policy.record(Outcome(d).verified(3, 3).drafted(3, 0.3).target(4, ms).cut(cut));
      if (!cut) last_clean = ms;
    }
    EXPECT_NEAR(policy.pass_ms(4), c.pass_4, c.tol);
    EXPECT_GE(policy.pass_ms(1), c.pass_1_min);
    EXPECT_LE(policy.pass_ms(1), c.pass_1_max);
    EXPECT_NEAR(policy.recent_pass_ms(4), last_clean - c.drift, c.tol);  // the latest 3 clean
    EXPECT_DOUBLE_EQ(policy.recent_pass_ms(3), policy.pass_ms(3));       // not measured: the fit
  }
}

// Measured passes: a k with a few luckily fast samples (as fast as the k before it, where the
// line every other k is on says 7% dearer) does not win the choice of depth: its median is
// shrunk towards the line.
TEST(LookupRates, ALuckyDepthDoesNotWin) {
  struct Case {
    const char* what;
    int lucky_samples;  // passes over 6 tokens at 4.2 ms (the line says 4.5)
    int expect_gamma;
  };
  const Case cases[] = {
      {"no lucky k: gamma 3", 0, 3},
      {"three lucky passes over 6 tokens: still gamma 3", 3, 3},
      {"forty of them: believed", 40, 5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PolicyOptions po;
    po.mode = GammaMode::kAuto;
    GammaPolicy policy(po);
    // T(k) = 3 + 0.3 (k - 1) ms, k = 1..5 and 7, eight passes each; a draft pass 0.1 ms;
    // acceptance 0.67 at every position: gamma 3 pays best (gamma 5: 4% less).
    for (int k = 1; k <= 7; ++k) {
      const Plan p{k == 1 ? Drafter::kNone : Drafter::kDraftModel, k - 1, 0, 0};
      for (int i = 0; k != 6 && i < 8; ++i) {
        policy.record(Outcome(p)
                          .drafted(k - 1, 0.1 * (k - 1))
                          .target(static_cast<size_t>(k), 3.0 + 0.3 * (k - 1)));
      }
    }
    const Plan d5{Drafter::kDraftModel, 5, 0, 0};
    for (int i = 0; i < c.lucky_samples; ++i)
      policy.record(Outcome(d5).drafted(5, 0.5).target(6, 4.2));
    const Plan d1{Drafter::kDraftModel, 1, 0, 0};
    for (int i = 0; i < 300; ++i) policy.record(Outcome(d1).verified(1, i % 3 != 0).timed(false));
    const Plan p = policy.choose({DraftOption{Drafter::kDraftModel, 8}});
    EXPECT_EQ(p.gamma, c.expect_gamma);
  }
}

// Measured passes: one slow 2-token pass (a preempted one) makes lookup look as if it cannot
// pay; with fewer than 3 samples at that k the revisit still goes to lookup, to measure it
// again. Three slow ones are believed.
TEST(LookupRates, OneSlowPassDoesNotPriceLookupOutForGood) {
  for (int slow : {1, 3}) {
    SCOPED_TRACE(slow);
    PolicyOptions po;
    po.mode = GammaMode::kAuto;
    GammaPolicy policy(po);
    const Plan lookup{Drafter::kLookup, 1, 1, 0, 2};
    for (int i = 0; i < 20; ++i) policy.record(Outcome().target(1, 1.0));
    for (int i = 0; i < slow; ++i) policy.record(Outcome(lookup).verified(1, 0).target(2, 5.0));
    for (int i = 0; i < 40; ++i) policy.record_lookup(2, outcome(1, 0.4));
    const std::vector<DraftOption> offers{DraftOption{Drafter::kLookup, 1, 2, 2}};
    for (int i = 0; i < 16; ++i) {
      const Plan p = policy.choose(offers);
      ASSERT_EQ(p.drafter, Drafter::kNone) << "step " << i;
      policy.record(Outcome(p).target(1, 1.0));
    }
    EXPECT_EQ(policy.choose(offers).drafter, slow == 1 ? Drafter::kLookup : Drafter::kNone);
  }
}

// Measured passes: noise that makes a 2-token pass look cheaper than a 1-token one must not
// make lookup look free.
TEST(LookupRates, MeasuredCostNeverFallsWithMoreTokens) {
  PolicyOptions po;
  po.mode = GammaMode::kAuto;
  GammaPolicy policy(po);
  const Plan p{Drafter::kLookup, 1, 1, 0, 1};
  for (int i = 0; i < 4; ++i) {
    policy.record(Outcome().target(1, 2.0));
    policy.record(Outcome(p).verified(1, 0).target(2, 1.1));
  }
  EXPECT_GE(policy.v(2), 1.0);
  for (size_t k = 2; k <= 9; ++k) EXPECT_GE(policy.v(k), policy.v(k - 1));
}

// A pass that first cut rejected tokens off the cache (after_cut) is charged to the drafter
// that left them; it stays out of its k's median once that k has 3 passes after no cut, so a
// slow 1-token pass after each rejected draft does not make drafting look free.
TEST(LookupRates, PassesAfterACutStayOutOfTheirMedian) {
  struct Case {
    const char* what;
    int clean_1;      // 1-token passes after no cut, 3 ms each
    int after_cut_1;  // 1-token passes after a cut, 6 ms each
    double expect_pass_ms_1;
  };
  const Case cases[] = {
      {"enough clean passes: their median", 4, 12, 3.0},
      {"too few clean passes: the median over all", 2, 12, 6.0},
      {"no pass after a cut", 5, 0, 3.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PolicyOptions po;
    po.mode = GammaMode::kAuto;
    GammaPolicy policy(po);
    const Plan lookup{Drafter::kLookup, 1, 1, 0, 2};
    for (int i = 0; i < c.clean_1; ++i) policy.record(Outcome().target(1, 3.0));
    for (int i = 0; i < c.after_cut_1; ++i) {
      policy.record(Outcome().target(1, 6.0).cut(true));
    }
    for (int i = 0; i < 4; ++i) policy.record(Outcome(lookup).verified(1, 0).target(2, 3.6));
    // (the median, shrunk towards the line through k = 1 and 2: exact where the line rises)
    EXPECT_NEAR(policy.pass_ms(1), c.expect_pass_ms_1, 0.3);
    EXPECT_DOUBLE_EQ(policy.v(2), std::max(1.0, 3.6 / policy.pass_ms(1)));
  }
}

// Lookup alone on measured costs: each drafter is charged its own per-iteration overhead
// outside the passes. Where lookup's iterations cost more (its search, longer records, the
// cache copies after its rejections), a modest rate no longer pays, while copying text still
// does.
TEST(LookupRates, OverheadOutsideThePassIsChargedToItsDrafter) {
  struct Case {
    const char* what;
    int match;         // the match length lookup is offered (and measured) at
    double rate;       // lookup's measured acceptance at every position
    double plain_ms;   // overhead per plain step
    double lookup_ms;  // overhead per lookup iteration
    int lookup_samples;
    Drafter expect;
    int slow = 0;  // of those, how many took slow_ms instead (the last ones)
    double slow_ms = 0.0;
  };
  const Case cases[] = {
      {"ordinary, the same overhead: lookup pays", 2, 0.3, 0.6, 0.6, 8, Drafter::kLookup},
      {"ordinary, lookup's overhead costs more than it gains", 2, 0.3, 0.6, 2.5, 8, Drafter::kNone},
      {"copying: the gain covers the overhead", 20, 0.95, 0.6, 2.5, 8, Drafter::kLookup},
      {"too few lookup samples: the median over all", 2, 0.3, 0.6, 2.5, 2, Drafter::kLookup},
      {"one preempted lookup iteration: not charged", 2, 0.3, 0.6, 0.6, 8, Drafter::kLookup, 1, 20},
      {"a tail in 3 of 8 lookup iterations: charged", 2, 0.3, 0.6, 0.6, 8, Drafter::kNone, 3, 8},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PolicyOptions po;
    po.mode = GammaMode::kAuto;
    GammaPolicy policy(po);
    // A nearly flat pass cost, as on the transformers.js route: T(k) = 3 + 0.1 (k - 1) ms,
    // every k measured (nothing left to explore).
    for (int rep = 0; rep < 4; ++rep) {
      for (int k = 1; k <= 9; ++k) {
        const Plan p{k == 1 ? Drafter::kNone : Drafter::kLookup, k - 1, 1, 0, c.match};
        policy.record(
            Outcome(p).verified(k - 1, 0).target(static_cast<size_t>(k), 3.0 + 0.1 * (k - 1)));
      }
    }
    for (int i = 0; i < 40; ++i) policy.record_lookup(c.match, outcome(8, c.rate));
    for (int i = 0; i < 8; ++i) policy.record_overhead(Drafter::kNone, c.plain_ms);
    for (int i = 0; i < c.lookup_samples; ++i) {
      policy.record_overhead(Drafter::kLookup,
                             i < c.lookup_samples - c.slow ? c.lookup_ms : c.slow_ms);
    }
    EXPECT_EQ(policy.choose({DraftOption{Drafter::kLookup, 8, 2, c.match}}).drafter, c.expect);
    EXPECT_DOUBLE_EQ(policy.overhead_ms(Drafter::kNone), c.plain_ms);
  }
}

// The decoder measures lookup on every iteration, the draft model's included.
TEST(LookupRates, DecoderFeedsEveryIteration) {
  StepFunctionSource target(testing::toy_target), draft(testing::toy_draft);
  DecoderOptions o;
  o.lookup = true;
  o.gamma = 3;
  o.max_new_tokens = 40;
  SpeculativeDecoder dec(target, &draft, {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}, o);
  Rng rng(3);
  size_t others = 0;
  while (!dec.done()) {
    PromptLookupProposer p(o.lookup_options);
    const auto m = p.find(dec.tokens());
    const double before = dec.policy().lookup_rates().observations(m.length);
    const IterationRecord rec = dec.step(rng);
    if (m.ngram == 0) continue;
    others += rec.drafter != Drafter::kLookup;
    EXPECT_GT(dec.policy().lookup_rates().observations(m.length), before);
  }
  EXPECT_GT(others, 0u);
}

}  // namespace
}  // namespace specdec
