// Where next-token distributions come from: toy step functions (the lesson's design) or real
// models with a KV cache (model/model_source.h). The decoder asks for the distributions after
// the last n prefixes of a sequence; a cached model forwards only what it has not seen yet.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "specdec/distribution.h"

namespace specdec {

class DistributionSource {
 public:
  virtual ~DistributionSource() = default;

  // Row i (0-based) of the result is the next-token distribution after the prefix
  // tokens[0 .. tokens.size() - n_last + i], i.e. the rows score positions
  // tokens.size() - n_last + 1 .. tokens.size(). Returns (n_last, V) raw probabilities
  // (the decoder applies the sampling settings). requires: 1 <= n_last <= tokens.size().
  virtual ProbMatrix next_token_probs(const std::vector<int>& tokens, size_t n_last) = 0;

  // The longest sequence the source can score (0 = unlimited).
  virtual size_t max_context() const { return 0; }

  // Tokens held in the source's KV cache (0 when it has none): shown by the visualiser.
  virtual size_t cached_tokens() const { return 0; }
};

// A step function maps a token sequence to the next-token distribution after it.
using StepFunction = std::function<Distribution(const std::vector<int>& tokens)>;

// Adapts a step function: one call per requested prefix.
class StepFunctionSource : public DistributionSource {
 public:
  explicit StepFunctionSource(StepFunction step) : step_(std::move(step)) {}
  ProbMatrix next_token_probs(const std::vector<int>& tokens, size_t n_last) override;

 private:
  StepFunction step_;
};

}  // namespace specdec
