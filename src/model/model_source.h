// A GPTModel as a DistributionSource for the speculative decoder: it keeps a KV cache of the
// tokens it has seen and, on each call, forwards only what is new. A speculative iteration thus
// costs gamma one-token draft passes plus ONE target pass over gamma + 1 tokens, and a rejected
// draft is rolled back by truncating the cache to the accepted prefix.
#pragma once

#include <cstddef>
#include <vector>

#include "model/gpt_model.h"
#include "specdec/source.h"

namespace specdec {

class ModelSource : public DistributionSource {
 public:
  // The model must outlive the source. Several sources may share one model (self-drafting).
  explicit ModelSource(const GPTModel& model);

  // Finds the longest common prefix L of the cached tokens and `tokens`, truncates the cache to
  // min(L, tokens.size() - n_last), forwards the rest in one pass and returns the softmax
  // (portable exp) of the last n_last rows: (n_last, V).
  // Throws specdec::Error when n_last is outside [1, tokens.size()], tokens is longer than
  // block_size, or holds an id outside [0, V).
  ProbMatrix next_token_probs(const std::vector<int>& tokens, size_t n_last) override;

  size_t max_context() const override { return cache_.capacity(); }
  size_t cached_tokens() const override { return cache_.size(); }

 private:
  const GPTModel& model_;
  KVCache cache_;
  std::vector<int> cached_;  // the tokens whose keys and values cache_ holds
};

// The lesson's StepFunction API over a model: tokens -> next-token distribution. The returned
// function owns a ModelSource (shared, so the function stays copyable), so consecutive calls on
// growing sequences reuse its KV cache. The model must outlive the function.
StepFunction model_step(const GPTModel& model);

}  // namespace specdec
