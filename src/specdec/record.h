// What one iteration of the decoder did (IterationRecord: one shape for every mode) and the
// totals over a run (DecoderStats).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "specdec/distribution.h"
#include "specdec/drafter.h"
#include "specdec/tree.h"
#include "specdec/verify.h"

namespace specdec {

// One iteration, in one shape for every mode: the draft as a tree (a chain is a tree) and what
// happened to each node. The lesson's chain view (proposed tokens, q rows, the per-position
// verdict) is built from it where it is shown (chain_view below), not held beside it. For plain
// decoding the tree is empty, target_probs has 1 row and tree_verify.emitted holds the one token
// sampled from it.
struct IterationRecord {
  int gamma = 0;                     // depth drafted (0: a plain step)
  Drafter drafter = Drafter::kNone;  // who drafted
  int lookup_ngram = 0;              // prompt lookup: length of the matched n-gram
  DraftTree tree;                    // tokens, parents, depths and q rows of the draft
  ProbMatrix target_probs;           // (n + 1, V) p rows after sampling settings (n = tree nodes)
  TreeVerifyResult tree_verify;
  std::vector<int> emitted;  // tokens appended (tree_verify.emitted cut to the token budget, or
                             // after a stop token)
  bool stopped = false;      // emitted ends with a stop token: the decoder is done
  size_t target_cached = 0;  // tokens in the target's KV cache after the iteration
  size_t draft_cached = 0;   // tokens in the draft's KV cache after the iteration
  double draft_ms = 0.0;     // wall time in the drafter (draft model, heads, lookup)
  double target_ms = 0.0;    // wall time in the target source
  size_t draft_passes = 0;   // drafter calls (one per depth drafted; heads: one)
};

// The verdict in the lesson's shape (speculative_verify's result): for a chain, the proposed
// tokens x_1..x_g, their q rows (g, V) after sampling settings (temperature 0: the draft's raw
// rows; lookup: one-hot) and every position examined; for a tree, the accepted path's positions
// (proposed and draft_probs empty). Built from the record when it is shown (CLI, bindings).
struct ChainView {
  std::vector<int> proposed;
  ProbMatrix draft_probs;
  VerifyResult verify;  // positions, residual, n_accepted, bonus, emitted (before the budget)
};
ChainView chain_view(const IterationRecord& rec);

struct DecoderStats {
  size_t iterations = 0;
  size_t target_passes = 0;         // target calls (one per iteration)
  size_t draft_passes = 0;          // drafter calls (one per depth drafted; heads: one)
  size_t drafted = 0;               // draft tokens proposed
  size_t examined = 0;              // draft tokens verified (those after a rejection never are)
  size_t accepted = 0;              // draft tokens accepted
  size_t generated = 0;             // tokens appended
  std::vector<size_t> reached_at;   // [i]: iterations that examined draft position i
  std::vector<size_t> accepted_at;  // [i]: ... and accepted it
  double draft_ms = 0.0;
  double target_ms = 0.0;
  std::vector<size_t> gamma_histogram;  // [g]: iterations that drafted depth g (0: plain steps)
  std::array<size_t, kDrafterCount> by_drafter{};  // iterations per Drafter

  // The measured alpha: accepted / examined. (accepted / drafted would understate it: the
  // drafts after a rejection are discarded unexamined.)
  // Counts one iteration in.
  void add(const IterationRecord& rec);

  double acceptance_rate() const { return examined ? double(accepted) / examined : 0.0; }
  double tokens_per_pass() const { return target_passes ? double(generated) / target_passes : 0.0; }
};

}  // namespace specdec
