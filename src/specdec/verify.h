// Block verification (lesson: "Code: Verify a Draft"): the accepted prefix of the draft plus
// exactly one correction-or-bonus token. A pure function of its inputs and of the uniforms
// it draws from the Rng passed in, in this order: u_1 .. u_k for the positions examined, then
// one uniform for the correction (residual) or bonus (target row gamma) sample.
#pragma once

#include <limits>
#include <vector>

#include "sampling/rng.h"
#include "specdec/distribution.h"

namespace specdec {

// What happened at one draft position.
struct PositionRecord {
  int token = 0;             // the drafted token x
  float p = 0.0f;            // target probability p(x)
  float q = 0.0f;            // draft probability q(x)
  double accept_prob = 0.0;  // min(1, p(x) / q(x)); greedy: 1 if x == argmax p else 0
  double u = std::numeric_limits<double>::quiet_NaN();  // uniform drawn (NaN when greedy)
  bool accepted = false;
};

struct VerifyResult {
  std::vector<int> emitted;  // accepted prefix + 1 correction/bonus: n_accepted + 1
  int n_accepted = 0;        // length of the accepted prefix, 0..gamma
  std::vector<PositionRecord>
      positions;          // positions examined: the accepted ones + the rejected one
  bool bonus = false;     // all gamma accepted: last token drawn from target row gamma
  Distribution residual;  // at a rejection: the distribution the correction was drawn
                          // from ((p - q)+ normalised; greedy: one-hot argmax p);
                          // empty (size 0) at a bonus
  double u_final = std::numeric_limits<double>::quiet_NaN();  // uniform of the last sample
};

// target_probs: (gamma + 1, V), draft_probs: (gamma, V), draft_tokens: gamma ids in [0, V).
// Accepts draft token i when u_i < min(1, p_i(x_i) / q_i(x_i)); at the first rejection draws
// the correction from residual_distribution(p_i, q_i); if none is rejected draws the bonus from
// target row gamma. Throws specdec::Error on shape mismatches, gamma < 1, invalid rows,
// out-of-range tokens, or a drafted token with q(x) == 0 (the draft could not have proposed it).
VerifyResult speculative_verify(const ProbMatrix& target_probs, const ProbMatrix& draft_probs,
                                const std::vector<int>& draft_tokens, Rng& rng);

// Greedy verification (temperature 0): accept while the draft token equals argmax of the target
// row; the correction or bonus is the target's argmax. Draws no uniforms. Rows need only be
// finite and non-negative (they may be scores, not normalised).
VerifyResult greedy_verify(const ProbMatrix& target_probs, const std::vector<int>& draft_tokens);

}  // namespace specdec
