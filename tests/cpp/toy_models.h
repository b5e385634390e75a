// Toy models for the decoder tests: context-dependent distributions over 4 tokens, and the exact
// law of the first three tokens sampled from the target.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "sampling/sampling.h"
#include "specdec/distribution.h"
#include "specdec/source.h"
#include "test_util.h"

namespace specdec::testing {

// Context-dependent toy models over a small vocabulary: the next-token distribution depends on
// the last token and on the length, and the draft disagrees with the target (it even puts zero
// mass where the target has some, and the reverse).
inline Distribution toy_target(const std::vector<int>& seq) {
  const int last = seq.back(), len = static_cast<int>(seq.size());
  std::vector<float> w = {1.0f + (last * 3 + len) % 4, 2.0f + (last + 2 * len) % 3, 0.5f + last % 2,
                          (last + len) % 3 == 0 ? 0.0f : 1.5f};
  float s = w[0] + w[1] + w[2] + w[3];
  for (float& v : w) v /= s;
  return dist(w);
}

inline Distribution toy_draft(const std::vector<int>& seq) {
  const int last = seq.back(), len = static_cast<int>(seq.size());
  std::vector<float> w = {2.0f, 1.0f + (last + len) % 2, last == 2 ? 0.0f : 1.0f, 1.0f + len % 3};
  float s = w[0] + w[1] + w[2] + w[3];
  for (float& v : w) v /= s;
  return dist(w);
}

// Exact AR probability of every length-3 continuation under filtered target distributions
// (`next`: the target's next-token distribution; tokens of zero probability are left out).
inline std::map<std::vector<int>, double> exact_joint(
    const std::vector<int>& prompt, const SamplingParams& sp,
    const std::function<Distribution(const std::vector<int>&)>& next = toy_target) {
  std::map<std::vector<int>, double> out;
  std::function<void(std::vector<int>, std::vector<int>, double)> rec =
      [&](std::vector<int> seq, std::vector<int> gen, double prob) {
        if (gen.size() == 3) {
          out[gen] = prob;
          return;
        }
        Distribution p = next(seq);
        apply_sampling(p.data(), p.size(), sp);
        for (int x = 0; x < static_cast<int>(p.size()); ++x) {
          if (p[x] <= 0.0f) continue;
          auto s2 = seq, g2 = gen;
          s2.push_back(x);
          g2.push_back(x);
          rec(s2, g2, prob * p[x]);
        }
      };
  rec(prompt, {}, 1.0);
  return out;
}

// The joint law over the 64 sequences of 3 tokens of the 4-token toys, indexed 16 a + 4 b + c.
inline std::vector<double> dense_joint(const std::map<std::vector<int>, double>& joint) {
  std::vector<double> probs(64, 0.0);
  for (const auto& [seq, p] : joint) probs[seq[0] * 16 + seq[1] * 4 + seq[2]] = p;
  return probs;
}

// A step function whose row width is known before it is asked, as a built-in model's is.
class SizedSource : public StepFunctionSource {
 public:
  SizedSource(StepFunction step, size_t vocab)
      : StepFunctionSource(std::move(step)), vocab_(vocab) {}
  size_t vocab_size() const override { return vocab_; }

 private:
  size_t vocab_;
};

}  // namespace specdec::testing
