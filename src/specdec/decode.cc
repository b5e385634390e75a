// The lesson's loops over the decoder: decode_to_end, speculative_decode and
// autoregressive_decode (decoder.h).
#include "base/errors.h"
#include "specdec/decoder.h"

namespace specdec {

DecodeResult decode_to_end(SpeculativeDecoder& dec, Rng& rng) {
  DecodeResult out;
  while (!dec.done()) {
    IterationRecord rec = dec.step(rng);
    const ChainView view = chain_view(rec);
    out.trace.push_back({view.proposed, view.verify.n_accepted, rec.emitted});
  }
  out.tokens = dec.generated();
  out.stats = dec.stats();
  return out;
}

namespace {
void check_budget(size_t max_new_tokens) {
  if (max_new_tokens == 0) fail("maxTokens: must be >= 1, got 0");
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
  return decode_to_end(dec, rng);
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
  return decode_to_end(dec, rng);
}

DecodeResult autoregressive_decode(const std::vector<int>& prompt, const StepFunction& step,
                                   size_t max_new_tokens, Rng& rng,
                                   const SamplingParams& sampling) {
  StepFunctionSource target(step);
  return autoregressive_decode(prompt, target, max_new_tokens, rng, sampling);
}

}  // namespace specdec
