#include "sampling/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "base/errors.h"
#include "kernels/portable_math.h"

namespace specdec {

namespace {

// The shortest decimal that reads back as x, as JS prints a number: a stream's 6 significant
// digits would print the smallest float above 1 as "1", a value inside the range it breaks.
std::string shortest(float x) {
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {  // 9 digits read back as any float
    std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(x));
    if (std::strtof(text, nullptr) == x) break;
  }
  return text;
}

}  // namespace

void check_sampling_params(const SamplingParams& params) {
  if (!std::isfinite(params.temperature) || params.temperature < 0.0f) {
    fail("temperature: must be a finite number >= 0, got ", shortest(params.temperature));
  }
  if (params.top_k < 0) fail("topK: must be >= 0 (0 = off), got ", params.top_k);
  if (!(params.top_p > 0.0f && params.top_p <= 1.0f)) {
    fail("topP: must be in (0, 1] (1 = off), got ", shortest(params.top_p));
  }
}

bool is_greedy(const SamplingParams& params) { return params.temperature == 0.0f; }

void apply_sampling(float* probs, size_t n, const SamplingParams& params) {
  if (n == 0) return;
  if (is_greedy(params)) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i) {
      if (probs[i] > probs[best]) best = i;
    }
    std::fill(probs, probs + n, 0.0f);
    probs[best] = 1.0f;
    return;
  }
  bool changed = false;
  if (params.temperature != 1.0f) {
    // p^(1/T) relative to the largest entry (so the top token gets 1 before normalising).
    float max_p = *std::max_element(probs, probs + n);
    float log_max = portable_log(max_p);
    // Divide (not multiply by 1/T): 1/T overflows to inf for a tiny T, and 0 * inf is NaN.
    for (size_t i = 0; i < n; ++i) {
      if (probs[i] > 0.0f) {
        probs[i] = portable_exp((portable_log(probs[i]) - log_max) / params.temperature);
      }
    }
    changed = true;
  }
  const bool use_k = params.top_k > 0 && static_cast<size_t>(params.top_k) < n;
  const bool use_p = params.top_p < 1.0f;
  if (use_k || use_p) {
    // Token ids by decreasing probability, lower id first on ties.
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
    size_t keep = use_k ? static_cast<size_t>(params.top_k) : n;
    if (use_p) {
      double total = 0.0;
      for (size_t i = 0; i < keep; ++i) total += probs[order[i]];
      double cum = 0.0;
      size_t k = 0;
      while (k < keep) {
        cum += probs[order[k]];
        ++k;
        if (cum >= (params.top_p - 1e-6) * total) break;  // float-rounding slack
      }
      keep = std::max<size_t>(k, 1);
    }
    for (size_t i = keep; i < n; ++i) probs[order[i]] = 0.0f;
    changed = true;
  }
  if (changed) {
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) total += probs[i];
    for (size_t i = 0; i < n; ++i) probs[i] = static_cast<float>(probs[i] / total);
  }
}

}  // namespace specdec
