// Drafters ("proposers"): who proposes the draft tokens of an iteration. A draft model, prompt
// lookup (n-gram matching in the context, no model at all) and Medusa-style heads
// (model/heads.h) all fill the same DraftTree: tokens, and the distribution q each token was
// drawn from. The target scores the tree in one pass; verify_tree decides. A chain is the tree
// whose nodes have one child each.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <vector>

#include "sampling/rng.h"
#include "sampling/sampling.h"
#include "specdec/drafter.h"
#include "specdec/policy.h"
#include "specdec/source.h"
#include "specdec/tree.h"

namespace specdec {

// Checks a row from a source and applies the sampling settings in place (one function for
// draft and target rows: the lesson's pitfall is p and q under different settings).
void prepare_row(float* row, size_t vocab, const SamplingParams& sampling, const char* who);

// Draws `count` children from q (vocab entries, sampling settings already applied): greedy —
// the count most likely tokens (lowest id on ties), no uniforms; with replacement — count
// independent samples, one uniform each; without replacement — each from q with the earlier ones
// removed and renormalised, one uniform each, stopping early when q has no mass left.
std::vector<int> draw_children(const float* q, size_t vocab, int count, bool without_replacement,
                               bool greedy, Rng& rng);

struct ProposalRequest {
  const std::vector<int>& tokens;    // the committed sequence
  int depth;                         // draft this many levels (>= 1)
  const std::vector<int>& branches;  // children per node at depth d (index d - 1); past the end
                                     // of the list, or when empty, 1 (a chain)
  bool without_replacement;          // siblings drawn without replacement
  size_t max_nodes;                  // room left in the context window
  size_t vocab;                      // the target's vocabulary (0 before its first pass)
  bool fit_rows;                     // draft rows of another width are fitted to vocab
  const SamplingParams& sampling;
  Rng& rng;
};

struct ProposalInfo {
  size_t passes = 0;  // model passes (draft: one per depth; heads: one)
  double ms = 0.0;    // wall time in them
  // Of those, a first pass that also caught up on tokens the draft had not seen (the plain
  // steps taken since it last drafted): paid once per plain stretch, not per draft pass, so the
  // gamma policy leaves it out of its estimate of c.
  size_t backlog_passes = 0;
  double backlog_ms = 0.0;
};

class Proposer;
// The drafters given, the null ones left out (a caller's optional draft model and heads).
std::vector<Proposer*> drafters(std::initializer_list<Proposer*> given);

// Drafting with a draft model one depth at a time: which rows the next depth needs, and drawing
// its children from them. DraftModelProposer::propose runs it against its source; the decoder
// runs it itself when the draft's rows come from its caller (ExternalSource), one depth per
// answered query. Uniforms come from the Rng passed to take().
class DraftLevels {
 public:
  // backlog: the draft source lacks more tokens than an iteration leaves behind (the first
  // pass catches up; see ProposalInfo).
  DraftLevels(const ProposalRequest& req, bool backlog);

  bool done() const { return done_; }
  // The rows the next depth draws from, asked of `source` (the root, or the previous depth's
  // nodes in one tree_probs call).
  ProbMatrix ask(DistributionSource& source, const DraftTree& tree) const;
  // The same query as one sequence whose last row is wanted, for a source that scores one
  // sequence (only a chain can be asked this way: the previous depth holds one node).
  std::vector<int> chain_query(const DraftTree& tree) const;
  // The depth the next rows draw (1: from the row after the sequence) and the first node of
  // the previous depth (a tree query's `first`).
  int depth() const { return d_; }
  size_t level_begin() const { return level_begin_; }
  // Draws the next depth's children from `rows` (what ask() returned, ms the time it took).
  void take(ProbMatrix& rows, double ms, DraftTree& tree, Rng& rng);
  const ProposalInfo& info() const { return info_; }

 private:
  // tokens_, or a copy with the ids `source` lacks replaced (see ask()).
  const std::vector<int>& readable_by(const DistributionSource& source) const;

  const std::vector<int>& tokens_;
  mutable std::vector<int> readable_;  // readable_by's copy, when one is needed
  int depth_;
  const std::vector<int>& branches_;
  bool without_replacement_;
  size_t max_nodes_;
  size_t vocab_;
  bool fit_rows_;
  const SamplingParams& sampling_;
  bool backlog_;
  int d_ = 1;                               // the depth the next rows draw
  size_t level_begin_ = 0, level_end_ = 0;  // nodes of the previous depth
  bool done_ = false;
  ProposalInfo info_;
};

// One drafter. The decoder takes a list of them (SpeculativeDecoder) and knows them only through
// this interface; the policy chooses among their offers. A new drafter is a new Proposer and a
// line in drafter.h.
class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual Drafter kind() const = 0;  // who drafted, in records and statistics
  // Whether it can fill a tree (else it drafts chains: a tree's branches are ignored).
  virtual bool drafts_trees() const { return true; }
  // What it can propose after `tokens` right now: max_depth 0 when nothing (no n-gram match;
  // heads before the target's first pass). Lookup fills ngram and match. Called before
  // propose().
  virtual DraftOption offer(const std::vector<int>& tokens, int depth_limit, size_t vocab) = 0;
  // Fills the (empty) tree. Uniforms come from req.rng only.
  virtual ProposalInfo propose(const ProposalRequest& req, DraftTree& tree) = 0;
  // After verification: the target's last call returned rows, and row final_row produced the
  // last emitted token (heads read the hidden state there).
  virtual void observe(size_t final_row) { (void)final_row; }
  // Context window of the drafter's own model (0 = unlimited) and its cache, for the visualiser.
  virtual size_t max_context() const { return 0; }
  virtual size_t cached_tokens() const { return 0; }
  // The width of the target's hidden state the drafter reads after each target pass (heads:
  // n_embd; 0: none). An external target must hand it over with its rows.
  virtual size_t hidden_width() const { return 0; }
  // A drafter that reads a model's rows depth by depth: its source and the drafting of
  // propose() in steps (DraftLevels), so that the decoder can ask an external source for each
  // depth's rows. Null (the default): propose() drafts at once.
  virtual DistributionSource* draft_source() const { return nullptr; }
  virtual std::unique_ptr<DraftLevels> levels(const ProposalRequest& req) {
    (void)req;
    return nullptr;
  }
  // What it would propose at `depth` after the last offer(), when that costs nothing to ask
  // (prompt lookup): every iteration's tokens then measure it (GammaPolicy::observe). Empty
  // (the default): nothing.
  virtual std::vector<int> preview(const std::vector<int>& tokens, int depth) const {
    (void)tokens, (void)depth;
    return {};
  }
};

// A smaller model drafts: depth 1 from the distribution after the sequence, each further depth
// in ONE call for all nodes of the previous depth (tree_probs).
class DraftModelProposer : public Proposer {
 public:
  explicit DraftModelProposer(DistributionSource& draft) : draft_(draft) {}
  Drafter kind() const override { return Drafter::kDraftModel; }
  DraftOption offer(const std::vector<int>& tokens, int depth_limit, size_t vocab) override;
  ProposalInfo propose(const ProposalRequest& req, DraftTree& tree) override;
  // The drafting of propose(), to be run by the caller. The first call's first pass reads the
  // prompt: it is reported as a catch-up.
  std::unique_ptr<DraftLevels> levels(const ProposalRequest& req) override;
  DistributionSource* draft_source() const override { return &draft_; }
  size_t max_context() const override { return draft_.max_context(); }
  size_t cached_tokens() const override { return draft_.cached_tokens(); }

 private:
  DistributionSource& draft_;
  bool drafted_ = false;  // levels() has been asked for once (the prompt's pass)
};

// Prompt lookup (as Hugging Face's prompt_lookup_num_tokens, vLLM's ngram): finds the most
// recent earlier occurrence of the sequence's last n tokens, n from max_ngram down to
// min_ngram, and proposes the tokens that followed it. Its q is one-hot: a token is accepted
// with probability p(x), and a rejection samples p without x, renormalised.
struct LookupOptions {
  int min_ngram = kDefaultMinNgram;
  int max_ngram = kDefaultMaxNgram;
};
void check_lookup_options(const LookupOptions& o);  // 1 <= min <= max <= kMaxNgram

class PromptLookupProposer : public Proposer {
 public:
  explicit PromptLookupProposer(const LookupOptions& options);
  Drafter kind() const override { return Drafter::kLookup; }
  bool drafts_trees() const override { return false; }
  DraftOption offer(const std::vector<int>& tokens, int depth_limit, size_t vocab) override;
  ProposalInfo propose(const ProposalRequest& req, DraftTree& tree) override;

  // The match: continuation start and n-gram length (0 when none). Public for the tests.
  struct Match {
    size_t start = 0;  // index of the first continuation token
    int ngram = 0;
    size_t available = 0;  // continuation tokens available
    int length = 0;        // tokens that agree before the continuation (>= ngram, <= kMaxMatch)
  };
  static constexpr int kMaxMatch = 64;
  Match find(const std::vector<int>& tokens) const;
  // What the last offer() would propose at `depth`: x_1..x_m, m = min(depth, available) (empty
  // without a match). The decoder compares it with every iteration's tokens (lookup_rates.h).
  std::vector<int> proposal(const std::vector<int>& tokens, int depth) const;
  std::vector<int> preview(const std::vector<int>& tokens, int depth) const override {
    return proposal(tokens, depth);
  }

 private:
  LookupOptions options_;
  Match last_;  // from offer(), reused by propose()
};

}  // namespace specdec
