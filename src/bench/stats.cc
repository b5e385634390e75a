// The clock and the summary statistics of every benchmark figure.
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

}  // namespace specdec::bench
