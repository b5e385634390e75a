#include "specdec/distribution.h"

#include <algorithm>
#include <cmath>

#include "base/errors.h"

namespace specdec {

void check_distribution(const float* p, size_t n, const char* name) {
  if (n == 0) fail(name, ": empty distribution");
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    float v = p[i];
    if (!std::isfinite(v)) fail(name, ": entry ", i, " is not finite (", v, ")");
    if (v < 0.0f) fail(name, ": entry ", i, " is negative (", v, ")");
    sum += v;
  }
  if (std::fabs(sum - 1.0) > kProbSumTolerance) {
    fail(name, ": probabilities sum to ", sum, ", not 1 (tolerance ", kProbSumTolerance, ")");
  }
}

void check_distribution(const Distribution& p, const char* name) {
  check_distribution(p.data(), p.size(), name);
}

namespace {
void check_pair(const Distribution& p, const Distribution& q) {
  if (p.size() != q.size())
    fail("p, q: vocabulary sizes differ (", p.size(), " vs ", q.size(), ")");
  check_distribution(p, "p");
  check_distribution(q, "q");
}
}  // namespace

double acceptance_rate(const Distribution& p, const Distribution& q) {
  check_pair(p, q);
  double sum = 0.0;
  for (size_t i = 0; i < p.size(); ++i) sum += std::min(p[i], q[i]);
  return sum;
}

double total_variation(const Distribution& p, const Distribution& q) {
  check_pair(p, q);
  double sum = 0.0;
  for (size_t i = 0; i < p.size(); ++i) sum += std::fabs(double(p[i]) - double(q[i]));
  return 0.5 * sum;
}

void residual_distribution(const float* p, const float* q, size_t n, float* out) {
  double mass = 0.0;
  for (size_t i = 0; i < n; ++i) mass += std::max(0.0, double(p[i]) - double(q[i]));
  if (mass > 0.0) {
    for (size_t i = 0; i < n; ++i) {
      out[i] = static_cast<float>(std::max(0.0, double(p[i]) - double(q[i])) / mass);
    }
    return;
  }
  // (p - q)+ == 0: never sampled for exactness; return p (see the header).
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += p[i];
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i] / total);
}

Distribution residual_distribution(const Distribution& p, const Distribution& q) {
  check_pair(p, q);
  Distribution out = xt::zeros<float>({p.size()});
  residual_distribution(p.data(), q.data(), p.size(), out.data());
  return out;
}

int sample_index(const float* probs, size_t n, double u) {
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += probs[i];
  double target = u * total, cum = 0.0;
  int last_nonzero = -1;
  for (size_t i = 0; i < n; ++i) {
    if (probs[i] <= 0.0f) continue;
    cum += probs[i];
    last_nonzero = static_cast<int>(i);
    if (target < cum) return last_nonzero;
  }
  return last_nonzero;  // u * total rounded up to the total: the last token with mass
}

int argmax(const float* probs, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    if (probs[i] > probs[best]) best = i;
  }
  return static_cast<int>(best);
}

}  // namespace specdec
