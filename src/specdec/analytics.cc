#include "specdec/analytics.h"

#include <cmath>

#include "base/errors.h"

namespace specdec {
namespace {
void check_alpha(double alpha) {
  if (!(alpha >= 0.0 && alpha <= 1.0)) fail("alpha: must be in [0, 1], got ", alpha);
}
void check_gamma(int gamma) {
  if (gamma < 1) fail("gamma: must be >= 1, got ", gamma);
}
void check_cost(double c, const char* name) {
  if (!(c >= 0.0) || !std::isfinite(c)) fail(name, ": must be a finite number >= 0, got ", c);
}
}  // namespace

double expected_accepted_tokens(double alpha, int gamma) {
  check_alpha(alpha);
  check_gamma(gamma);
  double sum = 0.0, term = 1.0;
  for (int i = 0; i <= gamma; ++i) {
    sum += term;
    term *= alpha;
  }
  return sum;
}

double speculative_speedup(double alpha, int gamma, double c) {
  return speculative_speedup_measured(alpha, gamma, c, 1.0);
}

double speculative_speedup_measured(double alpha, int gamma, double c, double verify_cost) {
  check_cost(c, "c");
  check_cost(verify_cost, "verifyCost");
  if (verify_cost <= 0.0) fail("verifyCost: must be > 0, got ", verify_cost);
  return expected_accepted_tokens(alpha, gamma) / (gamma * c + verify_cost);
}

int optimal_gamma(double alpha, double c, int gamma_max) {
  check_gamma(gamma_max);
  int best = 1;
  double best_speedup = speculative_speedup(alpha, 1, c);
  for (int g = 2; g <= gamma_max; ++g) {
    double s = speculative_speedup(alpha, g, c);
    if (s > best_speedup) {
      best = g;
      best_speedup = s;
    }
  }
  return best;
}

std::vector<DemoPoint> demonstrate_speculative(const std::vector<double>& alphas, int gamma_max,
                                               double c) {
  check_gamma(gamma_max);
  std::vector<DemoPoint> out;
  for (double a : alphas) {
    for (int g = 1; g <= gamma_max; ++g) {
      out.push_back({a, g, expected_accepted_tokens(a, g), speculative_speedup(a, g, c)});
    }
  }
  return out;
}

}  // namespace specdec
