#include "specdec/lookup_rates.h"

#include <algorithm>

namespace specdec {
namespace {

// Position 1's rate before any evidence, per bucket: a little below what our targets show on
// held-out text at T = 0.8 (a prior that promises too much costs whole iterations; one that
// promises too little costs nothing that the free evidence does not soon correct).
constexpr std::array<double, LookupRates::kBuckets> kPrior = {0.1, 0.25, 0.4,  0.5,
                                                              0.6, 0.7,  0.75, 0.8};
constexpr double kPriorStrength = 2.0;  // observations the prior (and each shrink) counts as
constexpr double kDecay = 0.97;         // per observation of a bucket: ~33 observations remembered

}  // namespace

LookupOutcome lookup_outcome(const std::vector<int>& proposal, const std::vector<int>& emitted,
                             const ProbMatrix& rows, bool chain) {
  LookupOutcome o;
  const size_t vocab = rows.dimension() == 2 ? rows.shape()[1] : 0;
  const size_t n = std::min({proposal.size(), emitted.size(), static_cast<size_t>(kLookupDepth)});
  for (size_t j = 0; j < n; ++j) {
    const int x = proposal[j];
    o.reached = static_cast<int>(j) + 1;
    const bool row_known = (j == 0 || chain) && j < rows.shape()[0];
    if (row_known && x >= 0 && static_cast<size_t>(x) < vocab) {
      o.accepted[j] = rows(j, static_cast<size_t>(x));
    } else {
      o.accepted[j] = emitted[j] == x ? 1.0 : 0.0;
    }
    if (emitted[j] != x) break;
  }
  return o;
}

int LookupRates::bucket(int match) {
  if (match <= 3) return std::max(match, 1) - 1;
  if (match <= 5) return 3;
  if (match <= 8) return 4;
  if (match <= 15) return 5;
  if (match <= 31) return 6;
  return 7;
}

void LookupRates::observe(int match, const LookupOutcome& o) {
  if (o.reached < 1) return;
  const int b = bucket(match);
  for (double& x : reached_[b]) x *= kDecay;
  for (double& x : accepted_[b]) x *= kDecay;
  for (int j = 1; j <= std::min(o.reached, kLookupDepth); ++j) {
    reached_[b][j] += 1.0;
    accepted_[b][j] += o.accepted[j - 1];
  }
}

double LookupRates::rate(int match, int pos) const {
  const int b = bucket(match);
  double r = kPrior[b];
  for (int j = 1; j <= std::min(pos, kLookupDepth); ++j) {
    r = (accepted_[b][j] + kPriorStrength * r) / (reached_[b][j] + kPriorStrength);
  }
  return std::clamp(r, 0.0, 1.0);
}

double LookupRates::expected_tokens(int match, int gamma) const {
  const int b = bucket(match);
  double e = 1.0, run = 1.0, r = kPrior[b];
  for (int j = 1; j <= gamma; ++j) {
    const int p = std::min(j, kLookupDepth);
    r = (accepted_[b][p] + kPriorStrength * r) / (reached_[b][p] + kPriorStrength);
    run *= std::clamp(r, 0.0, 1.0);
    e += run;
  }
  return e;
}

}  // namespace specdec
