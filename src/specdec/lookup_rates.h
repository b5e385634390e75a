// What prompt lookup's proposals are worth, learned online from every iteration, whoever
// drafted it. Lookup proposes the tokens x_1..x_m that followed an earlier occurrence of the
// sequence's last tokens; it is decided before the iteration, from the context alone. The tokens
// an iteration emits follow the target's law whatever drafted them, so e_j | e_1..e_{j-1} is
// drawn from p_j: comparing them with x is a free sample of what lookup would have got had it
// drafted (x_j is accepted with probability p_j(x_j) given x_1..x_{j-1} were). Plain steps and
// draft-model iterations thus measure lookup at no cost, and a copy-heavy stretch is seen as
// soon as the text starts copying.
//
// The rate depends strongly on how long the match is (measured on our small target, held-out
// text, T = 0.8: a 1-token match continues 0.11 of the time, 3 tokens 0.4, 6-8 tokens 0.7),
// so the counts are kept per bucket of match length and per position of the chain.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "specdec/distribution.h"

namespace specdec {

constexpr int kLookupDepth = 32;  // positions of a proposal that are tracked

// One iteration's evidence about a proposal x_1..x_m: positions 1..reached were "tested" (the
// emitted tokens agreed with x_1..x_{j-1} and the burst reached j), and at each the acceptance:
// p_j(x_j) when the target's row for position j is known (lower variance than the 0/1 outcome,
// same mean), else 1 if e_j == x_j.
struct LookupOutcome {
  int reached = 0;
  std::array<double, kLookupDepth> accepted{};  // [j - 1]
};

// proposal: x_1..x_m; emitted: the iteration's whole burst e_1..e_r (not cut to a budget);
// rows: the target's rows after sampling settings. chain: row j - 1 is the distribution after
// the sequence + e_1..e_{j-1} for every j <= r (a chain or a plain step: the drafts before
// position j were accepted, so they are e_1..e_{j-1}); else (a tree) only row 0 is, and later
// positions count 0/1.
LookupOutcome lookup_outcome(const std::vector<int>& proposal, const std::vector<int>& emitted,
                             const ProbMatrix& rows, bool chain);

class LookupRates {
 public:
  static constexpr int kBuckets = 8;  // match lengths 1, 2, 3, 4-5, 6-8, 9-15, 16-31, 32+
  static int bucket(int match);

  void observe(int match, const LookupOutcome& o);
  // Acceptance at position pos (1-based) given 1..pos-1 were accepted, after a match of `match`
  // tokens: the bucket's counts, position 1 shrunk towards a prior for the bucket, each later
  // position towards the rate of the one before.
  double rate(int match, int pos) const;
  // 1 + sum_{j <= gamma} prod_{i <= j} rate(match, i).
  double expected_tokens(int match, int gamma) const;
  double observations(int match) const { return reached_[bucket(match)][1]; }

 private:
  // Decayed counts (each observation of a bucket first multiplies its counts by kDecay): text
  // changes, and a stretch of it is what the next iterations resemble.
  std::array<std::array<double, kLookupDepth + 1>, kBuckets> reached_{}, accepted_{};
};

}  // namespace specdec
