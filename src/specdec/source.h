// Where next-token distributions come from: toy step functions (the lesson's design) or real
// models with a KV cache (model/model_source.h). The decoder asks for the distributions after
// the last n prefixes of a sequence; a cached model forwards only what it has not seen yet.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "specdec/distribution.h"
#include "specdec/tree.h"

namespace specdec {

class DistributionSource {
 public:
  virtual ~DistributionSource() = default;

  // Row i (0-based) of the result is the next-token distribution after the prefix
  // tokens[0 .. tokens.size() - n_last + i], i.e. the rows score positions
  // tokens.size() - n_last + 1 .. tokens.size(). Returns (n_last, V) raw probabilities
  // (the decoder applies the sampling settings). requires: 1 <= n_last <= tokens.size().
  virtual ProbMatrix next_token_probs(const std::vector<int>& tokens, size_t n_last) = 0;

  // Distributions for a draft tree below the sequence `tokens`: when with_root, first the row
  // after `tokens` itself, then the rows after the paths of nodes first .. tree.size() - 1
  // (tokens + path_tokens(v)). requires: first <= tree.size(); with_root or first < size;
  // with_root only with first == 0. The tree may have grown since the last call (a drafter
  // asks depth by depth). The default asks next_token_probs once for a chain (a sequence),
  // else once per row (each path as a sequence);
  // a model overrides it with one forward pass under a tree attention mask.
  virtual ProbMatrix tree_probs(const std::vector<int>& tokens, const DraftTree& tree, size_t first,
                                bool with_root);

  // The longest sequence the source can score (0 = unlimited).
  virtual size_t max_context() const { return 0; }
  // Width of its rows when known before it is asked (a built-in model), else 0.
  virtual size_t vocab_size() const { return 0; }

  // Tokens held in the source's KV cache (0 when it has none): shown by the visualiser.
  virtual size_t cached_tokens() const { return 0; }

  // True when the rows come from the decoder's caller rather than from a call (ExternalSource).
  virtual bool external() const { return false; }
};

// The final hidden states (after ln_f, (rows, C)) of the rows a source's last call returned,
// in the same order: what Medusa-style heads draft from (model/heads.h).
class HiddenStates {
 public:
  virtual ~HiddenStates() = default;
  virtual const float* hidden_row(size_t i) const = 0;
  virtual size_t hidden_rows() const = 0;
};

// A source answered by the decoder's caller: when the decoder needs its rows it stops and
// reports the query (SpeculativeDecoder::advance), the caller computes the rows however it likes
// — asynchronously, in another runtime — and hands them over (SpeculativeDecoder::supply). It
// scores one sequence per query (chains), and also trees when `trees`: then a tree is asked as
// a tree query (ExternalQuery::tree: the rows of tree_probs, for one pass under a tree attention
// mask). `name` is what errors call it (e.g. "targetScore"); max_context is the longest
// sequence it can score (0 = unlimited).
// With heads drafting for it, the caller hands over the answer's hidden states too
// (SpeculativeDecoder::supply; ExternalQuery::hidden_width): it is their HiddenStates.
class ExternalSource : public DistributionSource, public HiddenStates {
 public:
  explicit ExternalSource(std::string name, size_t max_context = 0, bool trees = false)
      : name_(std::move(name)), max_context_(max_context), trees_(trees) {}
  // Never called by the decoder: throws specdec::Error.
  ProbMatrix next_token_probs(const std::vector<int>& tokens, size_t n_last) override;
  size_t max_context() const override { return max_context_; }
  bool external() const override { return true; }
  const std::string& name() const { return name_; }
  // The caller answers tree queries too (see ExternalQuery).
  bool scores_trees() const { return trees_; }
  // The hidden states of the last answer: (rows, width) row-major; none when empty.
  void set_hidden(std::vector<float> rows, size_t width);
  const float* hidden_row(size_t i) const override;
  size_t hidden_rows() const override { return width_ ? hidden_.size() / width_ : 0; }

 private:
  std::string name_;
  size_t max_context_;
  bool trees_;
  std::vector<float> hidden_;
  size_t width_ = 0;
};

// The sequence followed by a chain's tokens (a chain is scored as one sequence).
std::vector<int> chain_sequence(const std::vector<int>& tokens, const DraftTree& chain);

// Throws specdec::Error when a tree_probs query is malformed (see tree_probs).
void check_tree_query(const std::vector<int>& tokens, const DraftTree& tree, size_t first,
                      bool with_root);

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
