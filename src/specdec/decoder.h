// The speculative decoder (lesson: "Code: A Full Decode Loop") as an object: step() runs one
// iteration — draft gamma tokens, score them with ONE target call over gamma + 1 positions,
// verify, append — and returns everything that happened. Loops belong to callers:
// speculative_decode / autoregressive_decode below, the CLI, the JS wrapper.
//
// One decoder for every mode. Before each iteration a GammaPolicy (policy.h) picks the depth
// (fixed, auto or heuristic gamma) and the drafter (a draft model or Medusa-style heads, prompt
// lookup, or none: a plain step); the drafter fills a DraftTree (a chain, or a tree of
// candidates); the target scores it in one call (tree_probs); verify_tree keeps the output
// exactly the target's.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "sampling/rng.h"
#include "sampling/sampling.h"
#include "specdec/policy.h"
#include "specdec/proposer.h"
#include "specdec/source.h"
#include "specdec/tree.h"
#include "specdec/verify.h"

namespace specdec {

constexpr int kMaxGamma = 32;

struct DecoderOptions {
  int gamma = 4;              // draft tokens per iteration, 1..kMaxGamma (gamma_mode kFixed)
  SamplingParams sampling;    // applied to draft and target rows alike
  bool plain = false;         // plain autoregressive decoding (no draft), same record shape
  size_t max_new_tokens = 0;  // stop after this many generated tokens (0 = no limit)

  // kAuto: before each iteration the gamma in 1..gamma_max (and the drafter) with the most
  // expected tokens per unit of time, from this run's measured acceptance and costs (or from
  // cost_model when has_cost_model: then a seed replays the run). kHeuristic: Hugging Face's
  // schedule (start at 5, +2 after a fully accepted draft, -1 otherwise), within 1..gamma_max.
  GammaMode gamma_mode = GammaMode::kFixed;
  int gamma_max = 8;
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
  std::vector<int> emitted;  // tokens appended (verify.emitted cut to the token budget)
  size_t target_cached = 0;  // tokens in the target's KV cache after the iteration
  size_t draft_cached = 0;   // tokens in the draft's KV cache after the iteration
  double draft_ms = 0.0;     // wall time in the drafter (draft model, heads, lookup)
  double target_ms = 0.0;    // wall time in the target source
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
  double acceptance_rate() const { return examined ? double(accepted) / examined : 0.0; }
  double tokens_per_pass() const { return target_passes ? double(generated) / target_passes : 0.0; }
};

// What an ExternalSource must answer before the iteration can go on: the distributions after
// the last n_last prefixes of `tokens`, (n_last, V) — as DistributionSource::next_token_probs.
// A tree query (`tree`, only to a source that scores_trees()) asks instead, as
// DistributionSource::tree_probs, for the row after `tokens` itself when with_root, then the
// rows after tokens + the path of each node first .. tree_tokens.size() - 1; n_last is then the
// number of rows, (with_root ? 1 : 0) + nodes - first.
struct ExternalQuery {
  bool target = true;  // the target's rows (else the draft's)
  std::string source;  // the ExternalSource's name
  std::vector<int> tokens;
  size_t n_last = 0;
  bool tree = false;
  std::vector<int> tree_tokens;   // (n,) the nodes' tokens
  std::vector<int> tree_parents;  // (n,) parent node, -1 for a child of the root
  size_t first = 0;
  bool with_root = false;
  // Heads draft from the target's hidden states: the answer must carry them, (n_last,
  // hidden_width) — the final hidden state (after ln_f) of each row (0: not asked).
  size_t hidden_width = 0;
};

class SpeculativeDecoder {
 public:
  // draft may be null when options.plain, options.lookup or heads is given. heads: a drafter
  // the caller owns (model/heads.h), instead of a draft model. The sources and heads must
  // outlive the decoder. Throws specdec::Error on an empty prompt, gamma (or gamma_max) outside
  // 1..kMaxGamma, bad sampling params, lookup or tree options, modes that do not combine
  // (plain with a drafter, auto with a tree, a tree without draft model or heads, both draft
  // and heads), or a prompt longer than a source's context.
  SpeculativeDecoder(DistributionSource& target, DistributionSource* draft, std::vector<int> prompt,
                     const DecoderOptions& options, Proposer* heads = nullptr);

  ~SpeculativeDecoder();

  // One iteration; requires !done(). The RNG is the caller's: the same seed replays it.
  // Throws specdec::Error when a source is external (use advance / supply / finish).
  IterationRecord step(Rng& rng);

  // The same iteration in parts, for sources answered by the caller (ExternalSource):
  // advance() starts an iteration when none is under way (requires !done()) and runs it until
  // it needs an external source's rows — it returns that query — or until it has all it needs
  // (returns null). supply() answers the query: (n_last, V) probabilities, or logits when
  // `logits` (the softmax is taken here); rows are checked (shape, NaN, inf) with errors naming
  // the source. finish() verifies and appends, and returns the record. step() is advance() +
  // finish(). An iteration whose query is never answered stays pending: the next advance()
  // returns the same query again (nothing drafted is redrawn), so a caller that gave up
  // (aborted) can resume. The Rng must be the same object throughout.
  const ExternalQuery* advance(Rng& rng);
  // hidden: (n_last, hidden_width) when the query asks for it (heads), else empty.
  void supply(ProbMatrix rows, bool logits, std::vector<float> hidden = {});
  IterationRecord finish(Rng& rng);
  // The query waiting for supply(), or null.
  const ExternalQuery* query() const;
  // An iteration is under way (started by advance(), not yet finished).
  bool in_iteration() const { return pending_ != nullptr; }

  // True when the token budget is spent or the context window is full.
  bool done() const;

  // Moves the token budget: generated tokens counted from the start, 0 = no limit. The next
  // step() cuts its burst to it (a streaming caller asks for "n more tokens" this way).
  void set_max_new_tokens(size_t n) { options_.max_new_tokens = n; }

  const std::vector<int>& tokens() const { return tokens_; }  // prompt + generated
  std::vector<int> generated() const;
  size_t prompt_length() const { return prompt_length_; }
  const DecoderStats& stats() const { return stats_; }
  const DecoderOptions& options() const { return options_; }
  const GammaPolicy& policy() const { return policy_; }
  // Adds time the caller spent on the last iteration outside step() (e.g. turning its record
  // into JS objects): the gamma policy weighs per-iteration costs (see GammaPolicy).
  void note_overhead(double ms) { pending_overhead_ += ms; }

 private:
  struct Pending;  // an iteration under way (decoder.cc)

  size_t context_limit() const;
  Proposer* proposer(Drafter d) const;
  void begin(Rng& rng);  // plans the iteration and starts drafting

  DistributionSource& target_;
  DistributionSource* draft_;
  DecoderOptions options_;
  std::unique_ptr<DraftModelProposer> draft_proposer_;
  std::unique_ptr<PromptLookupProposer> lookup_proposer_;
  Proposer* heads_ = nullptr;
  GammaPolicy policy_;
  std::vector<int> tokens_;
  size_t prompt_length_;
  size_t vocab_ = 0;               // the target's, once known
  double pending_overhead_ = 0.0;  // the caller's share of the last iteration (note_overhead)
  double last_overhead_ = -1.0;    // step()'s own share of the last iteration
  Drafter last_drafter_ = Drafter::kNone;  // who drafted it (its overhead is charged to it)
  // A pass's time beyond the policy's estimate for its k (a cache cut back after a rejected
  // draft, the garbage collection it triggers) goes with the overhead of the iteration that
  // caused it: the one before when that one left rejected tokens in the target's cache (the
  // cut is paid by the next call), else its own. So an iteration's sample is complete only
  // after the next pass: it waits in carry_.
  struct Carry {
    bool set = false;
    Drafter drafter = Drafter::kNone;
    double ms = 0.0;  // outside the passes, plus its own pass's excess unless moved back
    bool cut = false;  // it left rejected tokens for the next pass to cut
  };
  Carry carry_;
  double last_own_excess_ = 0.0;  // the last iteration's pass excess, unless moved back
  bool last_cut_ = false;         // the last iteration left rejected tokens
  DecoderStats stats_;
  std::unique_ptr<Pending> pending_;
  std::array<size_t, 2> external_vocab_{};  // row width an external target / draft answered with
};

// The lesson's trace entry.
struct IterationTrace {
  std::vector<int> proposed;
  int n_accepted = 0;
  std::vector<int> emitted;
};

struct DecodeResult {
  std::vector<int> tokens;            // the generated tokens (prompt excluded)
  std::vector<IterationTrace> trace;  // one entry per iteration
  DecoderStats stats;
};

// Steps the decoder until it is done; the trace and the generated tokens.
DecodeResult decode_to_end(SpeculativeDecoder& dec, Rng& rng);

// Exactly max_new_tokens tokens come out (the last burst is cut), unless the context fills.
DecodeResult speculative_decode(const std::vector<int>& prompt, DistributionSource& target,
                                DistributionSource& draft, int gamma, size_t max_new_tokens,
                                Rng& rng, const SamplingParams& sampling = {});
DecodeResult speculative_decode(const std::vector<int>& prompt, const StepFunction& target_step,
                                const StepFunction& draft_step, int gamma, size_t max_new_tokens,
                                Rng& rng, const SamplingParams& sampling = {});

// Plain sampling from the target, one call per token, for comparison.
DecodeResult autoregressive_decode(const std::vector<int>& prompt, DistributionSource& target,
                                   size_t max_new_tokens, Rng& rng,
                                   const SamplingParams& sampling = {});
DecodeResult autoregressive_decode(const std::vector<int>& prompt, const StepFunction& step,
                                   size_t max_new_tokens, Rng& rng,
                                   const SamplingParams& sampling = {});

}  // namespace specdec
