#include "specdec/policy.h"

#include <algorithm>
#include <cmath>

#include "base/errors.h"
#include "specdec/proposer.h"
#include "specdec/record.h"

namespace specdec {
namespace {

// Priors, used until the run has measured better (each counts as 8 observations).
constexpr double kPriorAlphaModel = 0.7;  // a trained draft model or heads (lookup: lookup_rates)
constexpr double kPriorStrength = 8.0;
constexpr double kShrinkStrength = 8.0;   // per position towards the overall rate
constexpr double kPriorSlope = 0.25;      // v(k) = 1 + 0.25 (k - 1) before two k are measured
constexpr double kPriorDraftCost = 0.1;   // c of a draft model pass
constexpr double kPriorHeadsCost = 0.02;  // c of the heads (a few small matmuls)
constexpr size_t kExploreSamples = 3;     // auto: passes to measure at a second k
constexpr int kRevisitAfter = 16;         // auto: plain steps in a row before drafting once again
constexpr size_t kShrinkSamples = 8;      // a k's median counts as much as the line after 8
constexpr double kLevelRate = 0.2;        // the level's step towards a pass's difference
constexpr double kLevelClamp = 0.2;       // ... of at most this fraction of the pass

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void check_cost_model(const CostModel& m) {
  if (!std::isfinite(m.c) || m.c < 0.0) fail("costModel.c: must be finite and >= 0, got ", m.c);
  if (m.v.empty()) fail("costModel.verifyCost: must list v(1), v(2), ... (at least one entry)");
  for (size_t i = 0; i < m.v.size(); ++i) {
    if (!std::isfinite(m.v[i]) || m.v[i] <= 0.0) {
      fail("costModel.verifyCost[", i, "]: must be finite and > 0, got ", m.v[i]);
    }
  }
}

GammaPolicy::GammaPolicy(const PolicyOptions& options)
    : options_(options),
      target_samples_(kMaxK + 1),
      clean_samples_(kMaxK + 1),
      median_(kMaxK + 1),
      est_(kMaxK + 1) {
  if (options_.has_cost_model) check_cost_model(options_.cost_model);
  refit();
  heuristic_gamma_ = std::min(5, options_.gamma_max);
}

double GammaPolicy::alpha(Drafter d, int match) const {
  if (d == Drafter::kLookup) return lookup_.rate(std::max(match, 1), 1);
  const int i = static_cast<int>(d);
  return (accepted_[i] + kPriorStrength * kPriorAlphaModel) / (examined_[i] + kPriorStrength);
}

double GammaPolicy::expected_tokens(Drafter d, int match, int gamma) const {
  // Prompt lookup: its rates per match length and position, measured on every iteration.
  if (d == Drafter::kLookup) return lookup_.expected_tokens(std::max(match, 1), gamma);
  const double overall = std::clamp(alpha(d), 0.0, 1.0);
  // Acceptance is not independent from one position to the next (easy stretches of text are
  // easy throughout): estimate each position's rate given that the earlier ones were accepted.
  const int i = static_cast<int>(d);
  double e = 1.0, run = 1.0;
  for (int pos = 1; pos <= gamma; ++pos) {
    const int p = std::min(pos, kMaxDepth);
    const double a =
        (accepted_at_[i][p] + kShrinkStrength * overall) / (reached_at_[i][p] + kShrinkStrength);
    run *= std::clamp(a, 0.0, 1.0);
    e += run;
  }
  return e;
}

void GammaPolicy::refit() {
  fit_line();
  // A pass over more tokens never costs less, whatever a few noisy samples say (src/README.md).
  for (size_t k = 1; k <= kMaxK; ++k) {
    est_[k] = fit_ms(k);
    if (k > 1) est_[k] = std::max(est_[k], est_[k - 1]);
  }
}

double GammaPolicy::target_ms(size_t k) const {
  const double base = k >= 1 && k <= kMaxK ? est_[k] : fit_ms(k);
  // the level moves every k alike; never below a twentieth of the pass it shifts
  return std::max(base + level_, 0.05 * base);
}

void GammaPolicy::fit_line() {
  // A weighted least-squares line T(k) = intercept + slope * k through the per-k medians (each
  // weighted by its sample count, at most 8); with one measured k, the prior's shape through it.
  std::vector<double> ks, ms, w;
  for (size_t j = 1; j <= kMaxK; ++j) {
    if (target_samples_[j].empty()) continue;
    ks.push_back(double(j));
    ms.push_back(median_[j]);
    w.push_back(std::min<double>(target_samples_[j].size(), 8));
  }
  has_line_ = !ks.empty();
  if (!has_line_) return;
  auto through_prior = [&](double kbar, double tbar) {  // the prior's shape through one point
    const double t1 = tbar / (1.0 + kPriorSlope * (kbar - 1.0));
    slope_ = kPriorSlope * t1;
    intercept_ = t1 - slope_;
  };
  if (ks.size() == 1) {
    through_prior(ks[0], ms[0]);
    return;
  }
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < ks.size(); ++i) {
    sw += w[i];
    sx += w[i] * ks[i];
    sy += w[i] * ms[i];
    sxx += w[i] * ks[i] * ks[i];
    sxy += w[i] * ks[i] * ms[i];
  }
  const double den = sw * sxx - sx * sx;
  slope_ = den > 0 ? (sw * sxy - sx * sy) / den : 0.0;
  slope_ = std::max(slope_, 0.0);  // a pass over more tokens never costs less
  intercept_ = (sy - slope_ * sx) / sw;
  // A one-token pass costs at least what reading the weights costs: never less than a fifth
  // of the mean pass (noise can tilt a line through close k far off).
  if (intercept_ + slope_ < 0.2 * sy / sw) through_prior(sx / sw, sy / sw);
}

double GammaPolicy::fit_ms(size_t k) const {
  // Given costs: v(k) itself (time in units of a one-token pass).
  if (options_.has_cost_model) {
    const std::vector<double>& v = options_.cost_model.v;
    if (k <= v.size()) return v[k - 1];
    if (v.size() == 1) return v[0];
    return v.back() + (v.back() - v[v.size() - 2]) * double(k - v.size());
  }
  // Per k: the median of its samples shrunk towards the line through all k (fit_line), which
  // also fills the k not measured (a k's own few samples are noisy: src/README.md).
  if (!has_line_) return 1.0 + kPriorSlope * (double(k) - 1.0);  // units of T(1)
  const double line = intercept_ + slope_ * double(k);
  const size_t n = k <= kMaxK ? target_samples_[k].size() : 0;
  if (n == 0) return line;
  const double w = double(n) / double(n + kShrinkSamples);
  return w * median_[k] + (1.0 - w) * line;
}

double GammaPolicy::recent_pass_ms(size_t k) const {
  if (k < 1 || k > kMaxK || clean_samples_[k].size() < kMinClean) return pass_ms(k);
  const std::vector<double>& clean = clean_samples_[k];
  return median(std::vector<double>(clean.end() - kMinClean, clean.end())) + level_;
}

double GammaPolicy::v(size_t k) const { return target_ms(k) / target_ms(1); }

double GammaPolicy::draft_ms(Drafter d) const {
  if (d == Drafter::kLookup || d == Drafter::kNone) return 0.0;
  if (options_.has_cost_model) return options_.cost_model.c;
  const int i = static_cast<int>(d);
  if (draft_passes_[i] == 0) {
    return (d == Drafter::kHeads ? kPriorHeadsCost : kPriorDraftCost) * target_ms(1);
  }
  return draft_ms_[i] / draft_passes_[i];
}

double GammaPolicy::c(Drafter d) const { return draft_ms(d) / target_ms(1); }

// Expected tokens per unit of time (ms, or one-token passes with a cost model):
// E(alpha, gamma) / (gamma * draft pass + target pass over gamma + 1); a plain step 1 / T(1).
// Each plan is charged its own drafter's overhead per iteration (a plain step: kNone's).
double GammaPolicy::score(Drafter d, int match, int gamma) const {
  if (d == Drafter::kNone || gamma == 0) return 1.0 / (target_ms(1) + overhead_ms(Drafter::kNone));
  const double e = expected_tokens(d, match, gamma);
  return e / (gamma * draft_ms(d) + target_ms(static_cast<size_t>(gamma) + 1) + overhead_ms(d));
}

static void push_recent(std::vector<double>& samples, size_t most, double ms) {
  if (samples.size() == most) samples.erase(samples.begin());
  samples.push_back(ms);
}

void GammaPolicy::record_overhead(double ms) {
  if (!std::isfinite(ms)) return;
  push_recent(overhead_samples_, kMaxOverheadSamples, ms);
  overhead_ms_ = std::max(median(overhead_samples_), 0.0);
}

void GammaPolicy::record_overhead(Drafter d, double ms) {
  if (!std::isfinite(ms)) return;
  record_overhead(ms);
  std::vector<double>& mine = drafter_overhead_samples_[static_cast<int>(d)];
  push_recent(mine, kMaxOverheadSamples, ms);
  // The mean of the samples but the largest and the smallest, clamped at 0 only as a whole
  // (src/README.md, "The gamma policy's ledger").
  double sum = 0.0, largest = -INFINITY, smallest = INFINITY;
  for (double x : mine) {
    sum += x;
    largest = std::max(largest, x);
    smallest = std::min(smallest, x);
  }
  const bool trim = mine.size() >= kMinOverheadSamples;
  const double mean = trim ? (sum - largest - smallest) / static_cast<double>(mine.size() - 2)
                           : sum / static_cast<double>(mine.size());
  drafter_overhead_ms_[static_cast<int>(d)] = std::max(mean, 0.0);
}

double GammaPolicy::overhead_ms(Drafter d) const {
  if (options_.has_cost_model) return 0.0;  // given costs: time is v(k) and c alone
  const int i = static_cast<int>(d);
  if (drafter_overhead_samples_[i].size() >= kMinOverheadSamples) return drafter_overhead_ms_[i];
  // Plain steps not yet measured while a drafter is: assumed free outside the pass (a plain
  // step does a part of any drafting iteration's work), so that a few of them get measured;
  // else a drafter that always drafts would be compared with its own overhead.
  if (d == Drafter::kNone) {
    for (int j = 1; j < kDrafterCount; ++j) {
      if (drafter_overhead_samples_[j].size() >= kMinOverheadSamples) return 0.0;
    }
  }
  return overhead_ms_;
}

// Prompt lookup's rates are read at the match length (at least its n-gram).
static int match_of(const DraftOption& o) {
  return o.drafter == Drafter::kLookup ? std::max({o.match, o.ngram, 1}) : 0;
}

bool GammaPolicy::worth_revisiting(const Plan& p) const {
  if (p.drafter != Drafter::kLookup) return true;
  const double o = overhead_ms(Drafter::kNone);
  const double extra = std::max(overhead_ms(Drafter::kLookup) - o, 0.0);
  const double t1 = target_ms(1);
  // A k measured fewer than kExploreSamples times may owe its cost to one slow pass (a
  // preempted one, or the first after a cut): then the revisit is what measures it again.
  // (Given costs are not measured.)
  const size_t k = static_cast<size_t>(p.gamma) + 1;
  const bool few =
      !options_.has_cost_model && k <= kMaxK && target_samples_[k].size() < kExploreSamples;
  const double tk = few ? t1 : target_ms(k);
  const double e = expected_tokens(p.drafter, p.match, p.gamma);
  return e * (t1 + o) > t1 + o + 0.5 * (tk - t1 + extra);
}

Plan GammaPolicy::choose(const std::vector<DraftOption>& options) const {
  Plan best;  // a plain step
  best.score = score(Drafter::kNone, 0, 0);
  std::vector<DraftOption> usable;
  for (const DraftOption& o : options) {
    if (o.drafter != Drafter::kNone && o.max_depth >= 1) usable.push_back(o);
  }
  if (usable.empty()) return best;
  auto plan = [&](const DraftOption& o, int g) {
    const int m = match_of(o);
    return Plan{o.drafter, g, o.ngram, score(o.drafter, m, g), m};
  };

  if (options_.mode != GammaMode::kAuto) {
    const int gamma = options_.mode == GammaMode::kFixed ? options_.gamma : heuristic_gamma_;
    if (usable.size() == 1) {  // one drafter: it drafts whenever it can
      const DraftOption& o = usable[0];
      return plan(o, std::min(gamma, o.max_depth));
    }
    Plan pick{Drafter::kNone, 0, 0, -1.0};
    for (const DraftOption& o : usable) {
      const Plan p = plan(o, std::min(gamma, o.max_depth));
      if (p.score > pick.score) pick = p;
    }
    return pick;
  }

  // auto: the best (drafter, gamma) by expected tokens per unit of time, a plain step included.
  Plan drafting{Drafter::kNone, 0, 0, -1.0};  // the best plan that drafts
  Plan by_model{Drafter::kNone, 0, 0, -1.0};  // ... with a draft model or heads
  for (const DraftOption& o : usable) {
    const int top = std::min(options_.gamma_max, o.max_depth);
    for (int g = 1; g <= top; ++g) {
      const Plan p = plan(o, g);
      if (p.score > drafting.score) drafting = p;
      if (o.drafter != Drafter::kLookup && p.score > by_model.score) by_model = p;
    }
  }
  if (drafting.score > best.score) best = drafting;
  // A plain step teaches nothing about drafting with a model: estimates made from a few early
  // iterations (a slow first pass, a noisy machine) would keep auto on plain steps for good.
  // After a stretch of them, draft once with the best drafter and depth to refresh alpha, c and
  // v(k); costs ~1/16 of the gap between drafting and plain steps when plain steps are truly
  // better. Prompt lookup is measured on plain steps too: only v(k) can be stale there.
  if (best.drafter == Drafter::kNone && plain_run_ >= kRevisitAfter) {
    if (worth_revisiting(drafting)) return drafting;
    if (by_model.drafter != Drafter::kNone) return by_model;  // lookup cannot pay: the model
  }
  // Without a cost model the line through the measured passes needs two well-separated k: once
  // the best depth's k has a few samples, draft a few times at depth 1 (k = 2) — a cheap,
  // near-optimal choice — or, when depth 1 is the best, at depth 3. (Two close k far from 1 let
  // noise tilt the line: it then extrapolates a flat v(k) and the policy drafts far too deep.)
  // The first iteration is not measured: its pass includes the prompt.
  if (!options_.has_cost_model && iterations_ >= 1 && best.drafter != Drafter::kNone) {
    const size_t best_k = static_cast<size_t>(best.gamma) + 1;
    auto count = [&](size_t k) { return k <= kMaxK ? target_samples_[k].size() : size_t{0}; };
    if (count(best_k) >= kExploreSamples) {
      for (const DraftOption& o : usable) {
        if (o.drafter != best.drafter || o.ngram != best.ngram) continue;
        const int top = std::min(options_.gamma_max, o.max_depth);
        const int g = best.gamma > 1 ? 1 : std::min(3, top);
        if (g != best.gamma && count(static_cast<size_t>(g) + 1) < kExploreSamples) {
          return plan(o, g);
        }
      }
    }
  }
  return best;
}

void GammaPolicy::record(const Outcome& o) {
  const Plan& plan = o.plan;
  ++iterations_;
  plain_run_ = plan.drafter == Drafter::kNone ? plain_run_ + 1 : 0;
  const int i = static_cast<int>(plan.drafter);
  if (plan.drafter != Drafter::kNone) {
    accepted_[i] += o.accepted;
    examined_[i] += o.examined;
    if (o.chain) {  // positions 1..examined were tested, 1..accepted passed
      for (int p = 1; p <= std::min(o.examined, kMaxDepth); ++p) reached_at_[i][p] += 1;
      for (int p = 1; p <= std::min(o.accepted, kMaxDepth); ++p) accepted_at_[i][p] += 1;
    }
    if (options_.mode == GammaMode::kHeuristic && plan.gamma > 0) {
      // Hugging Face's schedule: +2 after a fully accepted draft, -1 otherwise.
      heuristic_gamma_ = o.accepted == plan.gamma ? heuristic_gamma_ + 2 : heuristic_gamma_ - 1;
      heuristic_gamma_ = std::clamp(heuristic_gamma_, 1, options_.gamma_max);
    }
  }
  if (!o.measured) return;
  if (o.draft_passes > 0 && plan.drafter != Drafter::kNone) {
    draft_ms_[i] += o.draft_ms;
    draft_passes_[i] += static_cast<double>(o.draft_passes);
  }
  const size_t k = o.target_tokens;
  if (k >= 1 && k <= kMaxK) {
    // Kept net of the level: what this pass would have cost when the run began.
    const double base_ms = o.target_ms - level_;
    auto keep = [&](std::vector<double>& samples) {  // the most recent ones
      if (samples.size() == kMaxSamples) samples.erase(samples.begin());
      samples.push_back(base_ms);
    };
    // The level follows a pass after no cut against its k's own median (plus the level), once
    // that k has one: a step of kLevelRate of the difference, at most kLevelClamp of the pass, so
    // that one preempted pass or garbage collection moves it little. (Given costs: no level.)
    std::vector<double>& own = target_samples_[k];
    if (!options_.has_cost_model && !o.after_cut && own.size() >= kMinClean) {
      const double predicted = median_[k] + level_;
      const double bound = kLevelClamp * predicted;
      level_ += kLevelRate * std::clamp(o.target_ms - predicted, -bound, bound);
    }
    keep(target_samples_[k]);
    if (!o.after_cut) keep(clean_samples_[k]);
    const std::vector<double>& clean = clean_samples_[k];
    // only this k's samples changed
    median_[k] = median(clean.size() >= kMinClean ? clean : target_samples_[k]);
    refit();
  }
}

void GammaPolicy::observe(const IterationRecord& rec, const ProposalInfo& drafted,
                          const Preview& preview) {
  const size_t n = rec.tree.size();
  const int accepted = static_cast<int>(rec.tree_verify.path.size());
  const bool measured = iterations_ > 0;  // the first pass reads the prompt
  // This pass against the latest clean ones over as many tokens, before it joins them (given
  // costs: none).
  const double excess =
      measured && !options_.has_cost_model ? rec.target_ms - recent_pass_ms(n + 1) : 0.0;
  Plan done;
  done.drafter = rec.drafter;
  done.gamma = rec.gamma;
  record(Outcome(done)
             .verified(rec.tree_verify.examined(), accepted, rec.tree.is_chain())
             .drafted(drafted.passes - drafted.backlog_passes, rec.draft_ms - drafted.backlog_ms)
             .target(n + 1, rec.target_ms)
             .timed(measured)
             .cut(ledger_.after_cut()));
  if (!preview.tokens.empty()) {
    record_lookup(preview.match, lookup_outcome(preview.tokens, rec.tree_verify.emitted,
                                                rec.target_probs, rec.tree.is_chain()));
  }
  const CostLedger::Sample last =
      ledger_.settle(rec.drafter, rec.draft_ms + rec.target_ms, excess, measured,
                     n > 0 && static_cast<size_t>(accepted) < n);
  if (last.set) record_overhead(last.drafter, last.ms);
}

}  // namespace specdec
