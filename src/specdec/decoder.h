// The speculative decoder (lesson: "Code: A Full Decode Loop") as an object: step() runs one
// iteration — draft gamma tokens, score them with ONE target call over gamma + 1 positions,
// verify, append — and returns everything that happened. Loops belong to callers:
// speculative_decode / autoregressive_decode below, the CLI, the JS wrapper.
//
// One decoder for every mode. It holds a list of drafters (Proposer: a draft model, prompt
// lookup, Medusa-style heads); before each iteration the GammaPolicy (policy.h) picks one of
// their offers and the depth (fixed, auto or heuristic gamma), or a plain step; the drafter fills
// a DraftTree (a chain, or a tree of candidates); the target scores it in one call (tree_probs);
// verify_tree keeps the output exactly the target's; the policy observes what happened.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "sampling/rng.h"
#include "sampling/sampling.h"
#include "specdec/options.h"
#include "specdec/policy.h"
#include "specdec/proposer.h"
#include "specdec/record.h"
#include "specdec/source.h"
#include "specdec/tree.h"
#include "specdec/verify.h"

namespace specdec {

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
  // drafters: the caller's (a draft model, heads; they must outlive the decoder), asked in this
  // order; prompt lookup comes on top when options.lookup. Throws specdec::Error on an empty
  // prompt, bad sampling params, options that do not combine (check_decoder_options), or a
  // prompt longer than a source's context. The target must outlive the decoder.
  SpeculativeDecoder(DistributionSource& target, std::vector<Proposer*> drafters,
                     std::vector<int> prompt, const DecoderOptions& options);
  // A draft model as the drafter (null: none; ignored when options.plain).
  SpeculativeDecoder(DistributionSource& target, DistributionSource* draft, std::vector<int> prompt,
                     const DecoderOptions& options);

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

  // True when the token budget is spent, a stop token was generated or the context is full.
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
  void note_overhead(double ms) { policy_.note_overhead(ms); }

 private:
  struct Pending;  // an iteration under way (pending.h)

  SpeculativeDecoder(DistributionSource& target, std::vector<Proposer*> drafters,
                     std::unique_ptr<Proposer> owned, std::vector<int> prompt,
                     const DecoderOptions& options);
  size_t context_limit() const;
  void begin(Rng& rng);                // plans the iteration and starts drafting
  void plan(Pending& P, size_t room);  // asks the drafters, the policy chooses
  void start_draft(Pending& P, size_t room, Rng& rng);
  void verify(IterationRecord& rec, const Plan& plan, Rng& rng);  // target rows -> verdict
  void append(IterationRecord& rec);  // cut to the budget, into the sequence
  // advance()'s parts for an external source's rows (decoder_passes.cc): true when they are
  // here (rows, ms), else the query is posted.
  bool answer(bool target, std::vector<int> tokens, size_t n_last, ProbMatrix* rows, double* ms);
  bool answer_tree(bool target, size_t first, bool with_root, ProbMatrix* rows, double* ms);
  bool draft_levels(Rng& rng);  // the draft's depths; false while waiting for an answer
  bool score();                 // the target's pass; false while waiting for an answer
  size_t hidden_width() const;  // of the target's hidden state the drafters read (heads)

  DistributionSource& target_;
  DecoderOptions options_;
  std::vector<std::unique_ptr<Proposer>> owned_;  // the drafters built here (draft model, lookup)
  std::vector<Proposer*> drafters_;               // every drafter, in the order they are asked
  std::vector<DraftOption> offers_;               // this iteration's offers (kept: no allocation)
  GammaPolicy policy_;
  std::vector<int> tokens_;
  size_t prompt_length_;
  size_t vocab_ = 0;      // the target's, once known
  bool stopped_ = false;  // a stop token was generated
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
