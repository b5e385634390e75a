#include "specdec/decoder.h"

#include <algorithm>
#include <chrono>

#include "specdec/errors.h"

namespace specdec {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Applies the sampling settings to every row; checks the rows first so that a bad step
// function is reported as such.
void prepare_rows(ProbMatrix& rows, const SamplingParams& sampling, const char* who) {
  const size_t vocab = rows.shape()[1];
  for (size_t i = 0; i < rows.shape()[0]; ++i) {
    float* row = rows.data() + i * vocab;
    check_distribution(row, vocab, who);
    apply_sampling(row, vocab, sampling);
  }
}

}  // namespace

SpeculativeDecoder::SpeculativeDecoder(DistributionSource& target, DistributionSource* draft,
                                       std::vector<int> prompt, const DecoderOptions& options)
    : target_(target), draft_(draft), options_(options), tokens_(std::move(prompt)) {
  if (tokens_.empty()) fail("prompt: must hold at least one token");
  if (!options_.plain) {
    if (draft_ == nullptr) fail("draft: required unless plain decoding is asked for");
    if (options_.gamma < 1 || options_.gamma > kMaxGamma) {
      fail("gamma: must be in 1..", kMaxGamma, ", got ", options_.gamma);
    }
  }
  check_sampling_params(options_.sampling);
  prompt_length_ = tokens_.size();
  const size_t limit = context_limit();
  if (limit && tokens_.size() > limit) {
    fail("prompt: ", tokens_.size(), " tokens exceed the model context of ", limit, " tokens");
  }
  stats_.reached_at.assign(options_.plain ? 0 : options_.gamma, 0);
  stats_.accepted_at.assign(options_.plain ? 0 : options_.gamma, 0);
}

size_t SpeculativeDecoder::context_limit() const {
  size_t t = target_.max_context();
  size_t d = (draft_ && !options_.plain) ? draft_->max_context() : 0;
  if (t == 0) return d;
  if (d == 0) return t;
  return std::min(t, d);
}

bool SpeculativeDecoder::done() const {
  if (options_.max_new_tokens && stats_.generated >= options_.max_new_tokens) return true;
  const size_t limit = context_limit();
  return limit && tokens_.size() > limit;  // the next distribution needs the whole sequence
}

std::vector<int> SpeculativeDecoder::generated() const {
  return std::vector<int>(tokens_.begin() + prompt_length_, tokens_.end());
}

IterationRecord SpeculativeDecoder::step(Rng& rng) {
  if (done()) fail("step: the decoder is done (token budget spent or context full)");
  IterationRecord rec;
  const SamplingParams& sampling = options_.sampling;
  const bool greedy = is_greedy(sampling);

  // Near the end of the context window draft fewer tokens: the target must score them all.
  size_t gamma = options_.plain ? 0 : static_cast<size_t>(options_.gamma);
  const size_t limit = context_limit();
  if (limit) gamma = std::min(gamma, limit - tokens_.size());

  // 1. Draft: gamma autoregressive samples from q (one draft call each).
  std::vector<int> seq = tokens_;
  if (gamma > 0) {
    for (size_t i = 0; i < gamma; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      ProbMatrix q = draft_->next_token_probs(seq, 1);
      rec.draft_ms += ms_since(t0);
      prepare_rows(q, sampling, "draft distribution");
      const size_t vocab = q.shape()[1];
      if (i == 0) rec.draft_probs = xt::zeros<float>({gamma, vocab});
      if (vocab != rec.draft_probs.shape()[1]) fail("draft: vocabulary size changed to ", vocab);
      std::copy(q.data(), q.data() + vocab, rec.draft_probs.data() + i * vocab);
      int x = greedy ? argmax(q.data(), vocab) : sample_index(q.data(), vocab, rng.uniform());
      rec.proposed.push_back(x);
      seq.push_back(x);
      ++stats_.draft_passes;
    }
  }

  // 2. Verify in parallel: ONE target call scores all gamma + 1 positions.
  auto t0 = std::chrono::steady_clock::now();
  rec.target_probs = target_.next_token_probs(seq, gamma + 1);
  rec.target_ms = ms_since(t0);
  prepare_rows(rec.target_probs, sampling, "target distribution");
  if (gamma > 0 && rec.target_probs.shape()[1] != rec.draft_probs.shape()[1]) {
    fail("draft and target vocabularies differ: ", rec.draft_probs.shape()[1], " vs ",
         rec.target_probs.shape()[1]);
  }
  ++stats_.target_passes;

  // 3-4. Accept a prefix, correct once (or take the bonus).
  if (gamma == 0) {
    const size_t vocab = rec.target_probs.shape()[1];
    int x;
    if (greedy) {
      x = argmax(rec.target_probs.data(), vocab);
    } else {
      rec.verify.u_final = rng.uniform();
      x = sample_index(rec.target_probs.data(), vocab, rec.verify.u_final);
    }
    rec.verify.emitted = {x};
  } else if (greedy) {
    rec.verify = greedy_verify(rec.target_probs, rec.proposed);
  } else {
    rec.verify = speculative_verify(rec.target_probs, rec.draft_probs, rec.proposed, rng);
  }

  // Append, cut to the token budget.
  size_t n = rec.verify.emitted.size();
  if (options_.max_new_tokens) n = std::min(n, options_.max_new_tokens - stats_.generated);
  rec.emitted.assign(rec.verify.emitted.begin(), rec.verify.emitted.begin() + n);
  tokens_.insert(tokens_.end(), rec.emitted.begin(), rec.emitted.end());

  ++stats_.iterations;
  stats_.generated += n;
  stats_.drafted += gamma;
  stats_.accepted += rec.verify.n_accepted;
  stats_.examined += rec.verify.positions.size();
  for (size_t i = 0; i < rec.verify.positions.size(); ++i) {
    ++stats_.reached_at[i];
    if (rec.verify.positions[i].accepted) ++stats_.accepted_at[i];
  }
  stats_.draft_ms += rec.draft_ms;
  stats_.target_ms += rec.target_ms;
  rec.target_cached = target_.cached_tokens();
  rec.draft_cached = draft_ ? draft_->cached_tokens() : 0;
  return rec;
}

namespace {
DecodeResult run(SpeculativeDecoder& dec, Rng& rng) {
  DecodeResult out;
  while (!dec.done()) {
    IterationRecord rec = dec.step(rng);
    out.trace.push_back({rec.proposed, rec.verify.n_accepted, rec.emitted});
  }
  out.tokens = dec.generated();
  out.stats = dec.stats();
  return out;
}

void check_budget(size_t max_new_tokens) {
  if (max_new_tokens == 0) fail("max_new_tokens: must be >= 1, got 0");
}
}  // namespace

DecodeResult speculative_decode(const std::vector<int>& prompt, DistributionSource& target,
                                DistributionSource& draft, int gamma, size_t max_new_tokens,
                                Rng& rng, const SamplingParams& sampling) {
  check_budget(max_new_tokens);
  DecoderOptions opt;
  opt.gamma = gamma;
  opt.sampling = sampling;
  opt.max_new_tokens = max_new_tokens;
  SpeculativeDecoder dec(target, &draft, prompt, opt);
  return run(dec, rng);
}

DecodeResult speculative_decode(const std::vector<int>& prompt, const StepFunction& target_step,
                                const StepFunction& draft_step, int gamma, size_t max_new_tokens,
                                Rng& rng, const SamplingParams& sampling) {
  StepFunctionSource target(target_step), draft(draft_step);
  return speculative_decode(prompt, target, draft, gamma, max_new_tokens, rng, sampling);
}

DecodeResult autoregressive_decode(const std::vector<int>& prompt, DistributionSource& target,
                                   size_t max_new_tokens, Rng& rng,
                                   const SamplingParams& sampling) {
  check_budget(max_new_tokens);
  DecoderOptions opt;
  opt.plain = true;
  opt.sampling = sampling;
  opt.max_new_tokens = max_new_tokens;
  SpeculativeDecoder dec(target, nullptr, prompt, opt);
  return run(dec, rng);
}

DecodeResult autoregressive_decode(const std::vector<int>& prompt, const StepFunction& step,
                                   size_t max_new_tokens, Rng& rng,
                                   const SamplingParams& sampling) {
  StepFunctionSource target(step);
  return autoregressive_decode(prompt, target, max_new_tokens, rng, sampling);
}

}  // namespace specdec
