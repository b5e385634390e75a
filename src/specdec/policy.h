// How much to draft, and with what, before each iteration: the gamma policy (fixed, auto,
// heuristic) and the choice between drafters (draft model or heads, prompt lookup, or a plain
// step). A small object the decoder asks before each iteration and tells what happened after
// it; it sees nothing else, so every choice depends only on the past, which is why no policy can
// break exactness (the output law is the target's whatever the gamma or drafter of an
// iteration).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "specdec/drafter.h"
#include "specdec/ledger.h"
#include "specdec/limits.h"
#include "specdec/lookup_rates.h"

namespace specdec {

enum class GammaMode { kFixed, kAuto, kHeuristic };

struct IterationRecord;  // record.h
struct ProposalInfo;     // proposer.h

// What a drafter that costs nothing to ask (prompt lookup) would have proposed this iteration,
// whoever drafted it: the iteration's tokens measure it (lookup_rates.h).
struct Preview {
  std::vector<int> tokens;  // x_1..x_m (empty: none)
  int match = 0;            // the match length it was offered at
};

// Costs given instead of measured, in units of one one-token target pass, so that a run with
// gamma 'auto' (or two drafters) replays exactly from its seed (tests, reproducible demos).
struct CostModel {
  double c = 0.0;         // one draft pass (draft model or heads); prompt lookup costs 0
  std::vector<double> v;  // v[k - 1]: a target pass over k tokens (v[0] = 1); past the end,
                          // extrapolated linearly from the last two entries
};
// Throws specdec::Error unless c >= 0, v is non-empty, every v[k] > 0 and finite.
void check_cost_model(const CostModel& m);

struct PolicyOptions {
  GammaMode mode = GammaMode::kFixed;
  int gamma = kDefaultGamma;         // kFixed: the depth of every draft
  int gamma_max = kDefaultGammaMax;  // kAuto, kHeuristic: 1..gamma_max
  bool has_cost_model = false;
  CostModel cost_model;
};

// One drafter the policy may choose this iteration.
struct DraftOption {
  Drafter drafter = Drafter::kNone;
  int max_depth = 0;  // the most it can draft now (context room, heads, lookup continuation)
  int ngram = 0;      // prompt lookup: length of the matched n-gram
  int match = 0;      // prompt lookup: tokens that agree before the continuation (>= ngram)
};

struct Plan {
  Drafter drafter = Drafter::kNone;
  int gamma = 0;  // draft depth; 0 = plain step
  int ngram = 0;
  double score = 1.0;  // expected tokens per one-token-pass time
  int match = 0;       // prompt lookup: the match length its rates were read at
};

// What one iteration did, as GammaPolicy::record() takes it: the plan followed, the nodes tested
// and accepted (chain: positions 1..examined were tested and 1..accepted accepted; a tree counts
// only in the totals), the draft passes and their time, the target pass over target_tokens
// positions and its time. measured: false for the first iteration (its passes include the
// prompt). after_cut: the pass came after an iteration that left rejected tokens in the target's
// cache; such a pass stays out of its k's median once that k has kMinClean clean ones (its excess
// is charged as overhead: src/README.md). Built as
// Outcome(plan).verified(3, 2).drafted(3, 0.9).target(4, 1.2).
struct Outcome {
  explicit Outcome(const Plan& p = Plan{}) : plan(p) {}
  Outcome& verified(int tested, int passed, bool is_chain = true) {
    examined = tested, accepted = passed, chain = is_chain;
    return *this;
  }
  Outcome& drafted(size_t passes, double ms) {
    draft_passes = passes, draft_ms = ms;
    return *this;
  }
  Outcome& target(size_t tokens, double ms) {
    target_tokens = tokens, target_ms = ms;
    return *this;
  }
  Outcome& timed(bool is_measured) {
    measured = is_measured;
    return *this;
  }
  Outcome& cut(bool came_after_cut) {
    after_cut = came_after_cut;
    return *this;
  }

  Plan plan;
  int examined = 0, accepted = 0;
  bool chain = true;
  size_t draft_passes = 0;
  double draft_ms = 0.0;
  size_t target_tokens = 0;
  double target_ms = 0.0;
  bool measured = true;
  bool after_cut = false;
};

class GammaPolicy {
 public:
  explicit GammaPolicy(const PolicyOptions& options);

  // Picks the drafter and depth for the next iteration from `options` (a plain step is always
  // possible). With one drafter and a fixed gamma this is that drafter at min(gamma, room).
  Plan choose(const std::vector<DraftOption>& options) const;

  // The decoder's calls, one of each per iteration: begin_iteration() before it plans,
  // observe() once the iteration is verified and appended (drafted: the drafter's passes and
  // their time; preview: prompt lookup's proposal, whoever drafted). observe() feeds record(),
  // record_lookup() and, through the ledger, record_overhead().
  void begin_iteration() { ledger_.begin(); }
  void observe(const IterationRecord& rec, const ProposalInfo& drafted, const Preview& preview);
  // Time the caller spent on the last iteration outside the decoder (SpeculativeDecoder::
  // note_overhead).
  void note_overhead(double ms) { ledger_.note_caller(ms); }

  // What happened in one iteration (Outcome, above).
  void record(const Outcome& o);
  // What the iteration says about prompt lookup's proposal of this iteration (offered after a
  // match of `match` tokens), whoever drafted it (lookup_rates.h): lookup is measured on every
  // iteration, its own and the others', at no cost.
  void record_lookup(int match, const LookupOutcome& outcome) { lookup_.observe(match, outcome); }

  // Time an iteration spends outside the draft and target passes, per drafter (kNone: plain
  // steps): a drafter is charged the trimmed mean of its recent samples, never below 0, or the
  // median over all drafters until it has kMinOverheadSamples (src/README.md says why).
  void record_overhead(Drafter d, double ms);
  // A sample that belongs to no drafter in particular (counts towards the median over all).
  void record_overhead(double ms);
  double overhead_ms() const { return overhead_ms_; }  // the median over all drafters
  double overhead_ms(Drafter d) const;                 // what an iteration of d is charged
  size_t overhead_samples(Drafter d) const {           // d's own, the most recent
    return drafter_overhead_samples_[static_cast<int>(d)].size();
  }

  // Estimates behind choose(), for the page and the tests.
  // accepted / examined with a prior; prompt lookup: position 1's rate after a match of
  // `match` tokens.
  double alpha(Drafter d, int match = 0) const;
  // Expected tokens per iteration from drafting depth gamma: 1 + sum_j prod_{i <= j} a_i, with
  // a_i the acceptance rate at position i given the earlier ones were accepted (per position
  // for a draft model or heads, shrunk towards alpha(); prompt lookup: LookupRates at `match`).
  double expected_tokens(Drafter d, int match, int gamma) const;
  const LookupRates& lookup_rates() const { return lookup_; }
  double v(size_t k) const;  // target pass over k tokens / one-token pass
  double pass_ms(size_t k) const { return target_ms(k); }  // the estimate of a k-token pass
  // The median of the last kMinClean passes over k tokens that came after no cut, plus the
  // level since (pass_ms(k) until there are that many): what a pass's excess is taken against.
  // Not the fitted estimate, which lags the drift of a pass's cost (src/README.md).
  double recent_pass_ms(size_t k) const;
  double c(Drafter d) const;  // one draft pass / one-token pass
  int heuristic_gamma() const { return heuristic_gamma_; }

 private:
  double score(Drafter d, int match, int gamma) const;
  // A revisit (below) of prompt lookup only when it would pay at half the estimated extra cost
  // of the longer pass and of lookup's own overhead: lookup's rates are measured on every
  // iteration anyway, and only the costs can be stale (a pass over k tokens measured fewer than
  // kExploreSamples times counts as a one-token pass here, so that it gets measured again).
  bool worth_revisiting(const Plan& p) const;
  double target_ms(size_t k) const;  // estimated (from est_)
  double draft_ms(Drafter d) const;  // one draft pass, estimated
  double fit_ms(size_t k) const;     // the estimate from the per-k medians and the line
  void fit_line();                   // the line through the per-k medians (slope_, intercept_)
  void refit();                      // fit_line, then est_ (after each sample)

  PolicyOptions options_;
  // acceptance counts: [drafter]
  std::array<double, kDrafterCount> accepted_{}, examined_{};
  // per position of a chain (1..kMaxDepth): iterations that tested it, and accepted it
  static constexpr int kMaxDepth = 32;
  std::array<std::array<double, kMaxDepth + 1>, kDrafterCount> reached_at_{}, accepted_at_{};
  LookupRates lookup_;  // prompt lookup's acceptance per match length and position
  // target passes: samples per k (ms), k = 1..kMaxK
  static constexpr size_t kMaxK = 80;
  static constexpr size_t kMaxSamples = 64;  // per k, the most recent
  std::vector<std::vector<double>> target_samples_;
  std::vector<std::vector<double>> clean_samples_;  // of those, the passes after no cut
  static constexpr size_t kMinClean = 3;
  // (kMaxK + 1,) per k the median of clean_samples_[k] when it has kMinClean, else of
  // target_samples_[k] (both net of the level); kept current
  std::vector<double> median_;
  std::vector<double> est_;  // (kMaxK + 1,) target_ms(k) less the level, refitted per sample
  // The passes' common level (ms), added to every k's estimate, so that the drift of a pass's
  // cost over a run is not charged to the drafters (src/README.md); samples are kept net of it.
  double level_ = 0.0;
  bool has_line_ = false;  // a line through the medians (some k measured)
  double slope_ = 0.0, intercept_ = 0.0;
  std::array<double, kDrafterCount> draft_ms_{}, draft_passes_{};
  static constexpr size_t kMaxOverheadSamples = 32;  // the most recent, per drafter and overall
  static constexpr size_t kMinOverheadSamples = 4;   // a drafter's own mean from this many
  std::vector<double> overhead_samples_;             // any drafter
  double overhead_ms_ = 0.0;                         // their median
  std::array<std::vector<double>, kDrafterCount> drafter_overhead_samples_;
  std::array<double, kDrafterCount> drafter_overhead_ms_{};  // their means
  int heuristic_gamma_ = 5;
  size_t iterations_ = 0;
  CostLedger ledger_;  // the overhead's attribution (ledger.h)
  int plain_run_ = 0;  // plain steps in a row, the last ones recorded
};

}  // namespace specdec
