// The decoder's options and the rules for combining them, in one place: the CLI and the JS
// package pass their options here unchanged in meaning, and the errors name the options as the
// JS API spells them (gammaMax, promptLookup.minNgram, ...), so no layer above renames them.
#pragma once

#include <cstddef>
#include <vector>

#include "sampling/sampling.h"
#include "specdec/limits.h"
#include "specdec/policy.h"
#include "specdec/proposer.h"

namespace specdec {

struct DecoderOptions {
  int gamma = kDefaultGamma;  // draft tokens per iteration, 1..kMaxGamma (gamma_mode kFixed)
  SamplingParams sampling;    // applied to draft and target rows alike
  bool plain = false;         // plain autoregressive decoding (no draft), same record shape
  size_t max_new_tokens = 0;  // stop after this many generated tokens (0 = no limit)
  // Generation ends with the first of these tokens generated (e.g. the tokenizer's EOS ids): it
  // is kept, the rest of its burst is cut. Ids >= 0, at most kMaxStopTokens.
  std::vector<int> stop_tokens;
  // The draft's rows are fitted to the target's width when the two vocab_size differ only by
  // padding (the tokens agree: the JS layer checks the tokenizers): a wider row is cut to the
  // target's ids and renormalised, a narrower one padded with zeros. Speculative sampling with
  // that q is as exact as with any other. Needs a target whose width is known (a model).
  bool fit_draft_rows = false;

  // kAuto: before each iteration the gamma in 1..gamma_max (and the drafter) with the most
  // expected tokens per unit of time, from this run's measured acceptance and costs (or from
  // cost_model when has_cost_model: then a seed replays the run). kHeuristic: Hugging Face's
  // schedule (start at 5, +2 after a fully accepted draft, -1 otherwise), within 1..gamma_max.
  GammaMode gamma_mode = GammaMode::kFixed;
  int gamma_max = kDefaultGammaMax;
  bool has_cost_model = false;
  CostModel cost_model;

  // Prompt lookup drafting (alone, or beside a draft model or heads: the policy then picks,
  // per iteration, whichever it expects to give more tokens per unit of time).
  bool lookup = false;
  LookupOptions lookup_options;

  // A tree of candidates instead of a chain: children per node at each depth (depth =
  // tree_branches.size(), which replaces gamma). Needs a draft model or heads.
  std::vector<int> tree_branches;
  bool tree_without_replacement = true;  // distinct siblings (recursive rejection sampling)
};

// Throws specdec::Error naming the option when the options do not combine or are out of range:
// gamma (or gammaMax) outside 1..kMaxGamma, bad lookup, tree or cost-model options, plain
// decoding with a drafter, gamma 'auto' or 'heuristic' with a tree, a tree without a drafter
// that drafts trees, more than one drafter with a model, no drafter at all, a draft model whose
// vocab_size is not the target's (both built-in models) unless fit_draft_rows. drafters: the
// caller's (prompt lookup, from options.lookup, comes on top); target: the scorer.
void check_decoder_options(const DecoderOptions& o, const std::vector<Proposer*>& drafters,
                           const DistributionSource& target);

// The depth the policy may choose up to: gamma, gamma_max, or the tree's depth (0: plain).
int max_depth(const DecoderOptions& o);

}  // namespace specdec
