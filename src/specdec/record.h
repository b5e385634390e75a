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

// One iteration. For plain decoding: proposed is empty, target_probs has 1 row, and
// verify.emitted holds the one token sampled from it.
struct IterationRecord {
  int gamma = 0;                     // depth drafted (0: a plain step)
  Drafter drafter = Drafter::kNone;  // who drafted
  int lookup_ngram = 0;              // prompt lookup: length of the matched n-gram
  // Chains (every mode but trees): the draft as a sequence.
  std::vector<int> proposed;  // draft tokens x_1..x_g (g = gamma, less near the context end)
  ProbMatrix draft_probs;     // (g, V) q rows after sampling settings (temperature 0: the
                              // draft's raw rows; lookup: one-hot)
  ProbMatrix target_probs;    // (n + 1, V) p rows after sampling settings (n = tree nodes)
  VerifyResult verify;        // per-position record, residual, n_accepted, bonus (trees: the
                              // accepted path's positions)
  // Every mode: the draft as a tree (a chain is a tree) and what happened to each node.
  DraftTree tree;
  TreeVerifyResult tree_verify;
  std::vector<int> emitted;  // tokens appended (verify.emitted cut to the token budget, or
                             // after a stop token)
  bool stopped = false;      // emitted ends with a stop token: the decoder is done
  size_t target_cached = 0;  // tokens in the target's KV cache after the iteration
  size_t draft_cached = 0;   // tokens in the draft's KV cache after the iteration
  double draft_ms = 0.0;     // wall time in the drafter (draft model, heads, lookup)
  double target_ms = 0.0;    // wall time in the target source
  size_t draft_passes = 0;   // drafter calls (one per depth drafted; heads: one)
};

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
