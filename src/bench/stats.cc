// The clock, the summary statistics and the random inputs of every benchmark figure.
#include <algorithm>
#include <chrono>

#include "bench/bench.h"

namespace specdec::bench {

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Stats summarize(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.min = samples.front();
  s.max = samples.back();
  s.runs = static_cast<int>(n);
  return s;
}

std::vector<float> random_floats(Rng& rng, size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.uniform() * 2.0 - 1.0) * 0.05f;
  return v;
}

}  // namespace specdec::bench
