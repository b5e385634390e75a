// Sampling settings applied by ONE function to both the draft's and the target's
// distributions before verification (the lesson's pitfall: p and q must use identical
// settings, or the ratio p/q is wrong).
#pragma once

#include <cstddef>

namespace specdec {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy (one-hot argmax); > 0 rescales log-probabilities
  int top_k = 0;             // keep the k most likely tokens; 0 = off
  float top_p = 1.0f;        // keep the smallest set of most likely tokens with mass >= top_p
                             // (within 1e-6, for float rounding); 1 = off
};

// Throws specdec::Error when temperature is negative or not finite, top_k < 0, or top_p is
// outside (0, 1].
void check_sampling_params(const SamplingParams& params);

bool is_greedy(const SamplingParams& params);

// In place on a probability row of n entries: temperature (p^(1/T), computed as
// exp((log p - max log p) / T) with portable exp/log), then top-k, then top-p, then
// renormalisation (double sums). Temperature 0 gives a one-hot row at argmax (lowest index wins
// ties). Ties at the top-k/top-p boundary are broken by the lower token id. With the default
// params the row is returned unchanged (bit for bit). requires: a valid distribution.
void apply_sampling(float* probs, size_t n, const SamplingParams& params);

}  // namespace specdec
