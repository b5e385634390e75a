// The speedup model of the lesson ("The Speedup: How Many Tokens per Pass"), plus the
// measured-cost extension used by the benchmarks: verifying k tokens costs v(k) target steps.
#pragma once

#include <vector>

namespace specdec {

// E[tokens per target pass] = 1 + a + ... + a^gamma = (1 - a^(gamma+1)) / (1 - a); gamma + 1 at
// a = 1 (summed directly, so there is no 0/0 near 1). requires: a in [0, 1], gamma >= 1.
double expected_accepted_tokens(double alpha, int gamma);

// Wall-clock speedup over plain decoding when a draft step costs c target steps and a
// verify pass costs one: E / (gamma * c + 1). requires: c >= 0.
double speculative_speedup(double alpha, int gamma, double c);

// Same with a measured verify cost v = time(verify gamma + 1 tokens) / time(one step):
// E / (gamma * c + v).
double speculative_speedup_measured(double alpha, int gamma, double c, double verify_cost);

// The gamma in 1..gamma_max with the largest speculative_speedup (the smallest on ties).
int optimal_gamma(double alpha, double c, int gamma_max);

struct DemoPoint {
  double alpha;
  int gamma;
  double tokens_per_pass;
  double speedup;
};

// The explorer's faint dots: for each alpha and gamma = 1..gamma_max, tokens per pass and
// speedup at draft cost c (the lesson plots them at c = 0.1).
std::vector<DemoPoint> demonstrate_speculative(const std::vector<double>& alphas = {0.4, 0.6, 0.8,
                                                                                    0.9},
                                               int gamma_max = 8, double c = 0.1);

}  // namespace specdec
