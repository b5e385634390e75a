// The speculative decoder (lesson: "Code: A Full Decode Loop") as an object: step() runs one
// iteration — draft gamma tokens, score them with ONE target call over gamma + 1 positions,
// verify, append — and returns everything that happened. Loops belong to callers:
// speculative_decode / autoregressive_decode below, the CLI, the JS wrapper.
#pragma once

#include <cstddef>
#include <vector>

#include "sampling/rng.h"
#include "sampling/sampling.h"
#include "specdec/source.h"
#include "specdec/verify.h"

namespace specdec {

constexpr int kMaxGamma = 32;

struct DecoderOptions {
  int gamma = 4;              // draft tokens per iteration, 1..kMaxGamma
  SamplingParams sampling;    // applied to draft and target rows alike
  bool plain = false;         // plain autoregressive decoding (no draft), same record shape
  size_t max_new_tokens = 0;  // stop after this many generated tokens (0 = no limit)
};

// One iteration. For plain decoding: proposed is empty, target_probs has 1 row, and
// verify.emitted holds the one token sampled from it.
struct IterationRecord {
  std::vector<int> proposed;  // draft tokens x_1..x_g (g = gamma, less near the context end)
  ProbMatrix draft_probs;     // (g, V) q rows after sampling settings
  ProbMatrix target_probs;    // (g + 1, V) p rows after sampling settings
  VerifyResult verify;        // per-position record, residual, n_accepted, bonus
  std::vector<int> emitted;   // tokens appended (verify.emitted cut to the token budget)
  size_t target_cached = 0;   // tokens in the target's KV cache after the iteration
  size_t draft_cached = 0;    // tokens in the draft's KV cache after the iteration
  double draft_ms = 0.0;      // wall time in the draft source
  double target_ms = 0.0;     // wall time in the target source
};

struct DecoderStats {
  size_t iterations = 0;
  size_t target_passes = 0;         // target calls (one per iteration)
  size_t draft_passes = 0;          // draft calls (one per drafted token)
  size_t drafted = 0;               // draft tokens proposed
  size_t examined = 0;              // draft tokens verified (those after a rejection never are)
  size_t accepted = 0;              // draft tokens accepted
  size_t generated = 0;             // tokens appended
  std::vector<size_t> reached_at;   // [i]: iterations that examined draft position i
  std::vector<size_t> accepted_at;  // [i]: ... and accepted it
  double draft_ms = 0.0;
  double target_ms = 0.0;

  // The measured alpha: accepted / examined. (accepted / drafted would understate it: the
  // drafts after a rejection are discarded unexamined.)
  double acceptance_rate() const { return examined ? double(accepted) / examined : 0.0; }
  double tokens_per_pass() const { return target_passes ? double(generated) / target_passes : 0.0; }
};

class SpeculativeDecoder {
 public:
  // draft may be null only when options.plain. The sources must outlive the decoder.
  // Throws specdec::Error on an empty prompt, gamma outside 1..kMaxGamma, bad sampling params,
  // or a prompt longer than a source's context.
  SpeculativeDecoder(DistributionSource& target, DistributionSource* draft, std::vector<int> prompt,
                     const DecoderOptions& options);

  // One iteration; requires !done(). The RNG is the caller's: the same seed replays it.
  IterationRecord step(Rng& rng);

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

 private:
  size_t context_limit() const;

  DistributionSource& target_;
  DistributionSource* draft_;
  DecoderOptions options_;
  std::vector<int> tokens_;
  size_t prompt_length_;
  DecoderStats stats_;
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
