// A GPTModel as a DistributionSource for the speculative decoder: it keeps a KV cache of the
// tokens it has seen and, on each call, forwards only what is new. A speculative iteration thus
// costs gamma one-token draft passes plus ONE target pass over gamma + 1 tokens, and a rejected
// draft is rolled back by truncating the cache to the accepted prefix. A draft tree is scored
// in one pass with a tree attention mask; the next call keeps the accepted path's keys and
// values (moved into place) and forgets the other branches.
#pragma once

#include <cstddef>
#include <vector>

#include "model/gpt_model.h"
#include "specdec/source.h"

namespace specdec {

class ModelSource : public DistributionSource, public HiddenStates {
 public:
  // The model must outlive the source. Several sources may share one model (self-drafting).
  explicit ModelSource(const GPTModel& model);

  // Finds the longest common prefix L of the cached tokens and `tokens` (following a cached
  // draft tree's branch where `tokens` continue along one), truncates the cache to
  // min(L, tokens.size() - n_last), forwards the rest in one pass and returns the softmax
  // (portable exp) of the last n_last rows: (n_last, V).
  // Throws specdec::Error when n_last is outside [1, tokens.size()], tokens is longer than
  // block_size, or holds an id outside [0, V).
  ProbMatrix next_token_probs(const std::vector<int>& tokens, size_t n_last) override;

  // One forward pass: the sequence's uncached tail, then the tree's uncached nodes under a tree
  // attention mask (a chain is run as a plain sequence). Nodes already cached from the previous
  // call on the same sequence and tree are reused. Throws specdec::Error as next_token_probs,
  // and when the sequence plus the nodes exceed block_size.
  ProbMatrix tree_probs(const std::vector<int>& tokens, const DraftTree& tree, size_t first,
                        bool with_root) override;

  size_t max_context() const override { return cache_.capacity(); }
  size_t vocab_size() const override { return static_cast<size_t>(model_.config().vocab_size); }
  size_t cached_tokens() const override { return cache_.linear_size(); }

  // The final hidden states (after ln_f, (rows, C)) of the rows the last call returned, in the
  // same order: what Medusa-style heads read.
  const float* hidden_row(size_t i) const override;
  size_t hidden_rows() const override { return n_hidden_; }
  const GPTModel& model() const { return model_; }
  // Tokens run through the model since creation (what the KV cache saved shows here).
  size_t forwarded_tokens() const { return forwarded_; }

 private:
  // Keeps the cached branch of a draft tree that `tokens` continue along as sequence, then
  // drops every other tree slot.
  void follow_tree(const std::vector<int>& tokens);
  // Truncates the cache to the common prefix of the cached tokens and `tokens`, at most
  // tokens.size() - rerun of them (the last `rerun` are run again).
  void keep_prefix(const std::vector<int>& tokens, size_t rerun);
  // Softmax rows [from, from + n) of logits (pass rows), and their hidden states.
  ProbMatrix rows_of(const std::vector<float>& logits, const std::vector<float>& hidden,
                     const std::vector<size_t>& pass_rows);

  const GPTModel& model_;
  KVCache cache_;
  std::vector<int> cached_;       // the tokens of the cache's sequence slots
  std::vector<int> tree_parent_;  // cached tree nodes (node indices of the caller's tree)
  std::vector<int> tree_token_;
  std::vector<float> hidden_;  // (n_hidden_, C)
  size_t n_hidden_ = 0;
  size_t forwarded_ = 0;
};

// The lesson's StepFunction API over a model: tokens -> next-token distribution. The returned
// function owns a ModelSource (shared, so the function stays copyable), so consecutive calls on
// growing sequences reuse its KV cache. The model must outlive the function.
StepFunction model_step(const GPTModel& model);

}  // namespace specdec
