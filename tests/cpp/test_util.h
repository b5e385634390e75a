// Shared helpers for the statistical tests: chi-square goodness of fit and random distributions.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/errors.h"
#include "sampling/rng.h"
#include "specdec/distribution.h"

namespace specdec::testing {

// Regularised upper incomplete gamma Q(a, x) (Numerical Recipes: series / continued fraction).
inline double gamma_q(double a, double x) {
  if (x <= 0.0) return 1.0;
  const double gln = std::lgamma(a);
  if (x < a + 1.0) {
    double ap = a, sum = 1.0 / a, del = sum;
    for (int n = 0; n < 10000; ++n) {
      ap += 1.0;
      del *= x / ap;
      sum += del;
      if (std::fabs(del) < std::fabs(sum) * 1e-15) break;
    }
    return 1.0 - sum * std::exp(-x + a * std::log(x) - gln);
  }
  double b = x + 1.0 - a, c = 1.0 / 1e-300, d = 1.0 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1.0 / d;
    double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < 1e-15) break;
  }
  return std::exp(-x + a * std::log(x) - gln) * h;
}

// P(chi2_dof >= stat).
inline double chi_square_sf(double stat, int dof) { return gamma_q(0.5 * dof, 0.5 * stat); }

struct ChiSquare {
  double stat = 0.0;
  int dof = 0;
  double p_value = 1.0;
  std::string impossible;  // non-empty when a zero-probability cell was observed
};

// Goodness of fit of counts against expected probabilities. Cells with zero probability must
// have zero counts; they do not add degrees of freedom.
inline ChiSquare chi_square(const std::vector<uint64_t>& counts, const std::vector<double>& probs) {
  ChiSquare r;
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  int cells = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] <= 0.0) {
      if (counts[i] > 0) r.impossible += "cell " + std::to_string(i) + " ";
      continue;
    }
    double e = probs[i] * n;
    r.stat += (counts[i] - e) * (counts[i] - e) / e;
    ++cells;
  }
  r.dof = cells - 1;
  r.p_value = r.dof > 0 ? chi_square_sf(r.stat, r.dof) : 1.0;
  return r;
}

// The false-alarm probability every statistical test in this project is held to.
constexpr double kFalseAlarm = 1e-6;

// A random distribution over n tokens; `sparsity` of the entries are zero (at least one kept).
inline Distribution random_distribution(Rng& rng, size_t n, double sparsity = 0.0) {
  Distribution d = xt::zeros<float>({n});
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    double v = rng.uniform() < sparsity ? 0.0 : -std::log(1.0 - rng.uniform());  // Exp(1)
    d[i] = static_cast<float>(v);
    sum += v;
  }
  if (sum == 0.0) {
    d[rng.next_u32() % n] = 1.0f;
    sum = 1.0;
  }
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<float>(d[i] / sum);
  return d;
}

inline Distribution dist(std::vector<float> v) {
  Distribution d = xt::zeros<float>({v.size()});
  for (size_t i = 0; i < v.size(); ++i) d[i] = v[i];
  return d;
}

inline ProbMatrix stack(const std::vector<Distribution>& rows) {
  ProbMatrix m = xt::zeros<float>({rows.size(), rows.empty() ? size_t(0) : rows[0].size()});
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < rows[i].size(); ++j) m(i, j) = rows[i][j];
  }
  return m;
}

// The message of the specdec::Error that fn throws, or "no error".
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace specdec::testing
