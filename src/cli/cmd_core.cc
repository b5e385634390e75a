// Subcommands on the core alone: the analytics table (lesson Exercise 2) and the toy decode
// demo (lesson "Code: A Full Decode Loop").
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/errors.h"
#include "cli/cli.h"
#include "sampling/rng.h"
#include "specdec/analytics.h"
#include "specdec/decoder.h"
#include "specdec/distribution.h"

namespace specdec::cli {

int cmd_analytics(const std::vector<std::string>& argv) {
  Args args(argv, {"alpha", "cost", "gamma-max"}, {"json"});
  const double alpha = args.num("alpha", 0.85);
  const double cost = args.num("cost", 0.15);
  const long long gamma_max = args.integer("gamma-max", 10, 1, 1000);
  const int best = optimal_gamma(alpha, cost, static_cast<int>(gamma_max));
  if (args.has("json")) {
    std::printf("{\"alpha\":%.17g,\"cost\":%.17g,\"optimal_gamma\":%d,\"rows\":[", alpha, cost,
                best);
    for (int g = 1; g <= gamma_max; ++g) {
      std::printf("%s{\"gamma\":%d,\"tokens_per_pass\":%.17g,\"speedup\":%.17g}", g > 1 ? "," : "",
                  g, expected_accepted_tokens(alpha, g), speculative_speedup(alpha, g, cost));
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("alpha = %.3f, draft cost c = %.3f\n", alpha, cost);
  for (int g = 1; g <= gamma_max; ++g) {
    std::printf("gamma=%2d: %.2f tokens/pass, %.2fx speedup%s\n", g,
                expected_accepted_tokens(alpha, g), speculative_speedup(alpha, g, cost),
                g == best ? "  <- best" : "");
  }
  return 0;
}

// The lesson's context-free toy pair over a 6-token vocabulary.
static const float kToyTarget[6] = {0.4f, 0.25f, 0.15f, 0.1f, 0.06f, 0.04f};
static const float kToyDraft[6] = {0.3f, 0.3f, 0.2f, 0.1f, 0.06f, 0.04f};

int cmd_toy_demo(const std::vector<std::string>& argv) {
  Args args(argv, {"seed", "gamma", "max-tokens"}, {"json"});
  const uint64_t seed = args.seed("seed", 1);
  const long long gamma = args.integer("gamma", 4, 1, kMaxGamma);
  const long long max_tokens = args.integer("max-tokens", 12, 1, 100000);
  auto constant = [](const float* p) {
    Distribution d = xt::zeros<float>({6});
    std::copy(p, p + 6, d.begin());
    return [d](const std::vector<int>&) { return d; };  // context-free
  };
  Rng rng(seed);
  DecodeResult r =
      speculative_decode({0}, constant(kToyTarget), constant(kToyDraft), static_cast<int>(gamma),
                         static_cast<size_t>(max_tokens), rng);
  if (args.has("json")) {
    std::printf("{\"seed\":%llu,\"gamma\":%lld,\"tokens\":%s,\"trace\":[",
                static_cast<unsigned long long>(seed), gamma, json_array(r.tokens).c_str());
    for (size_t i = 0; i < r.trace.size(); ++i) {
      const IterationTrace& t = r.trace[i];
      std::printf("%s{\"proposed\":%s,\"n_accepted\":%d,\"emitted\":%s}", i ? "," : "",
                  json_array(t.proposed).c_str(), t.n_accepted, json_array(t.emitted).c_str());
    }
    std::printf("],\"acceptance_rate\":%.6f,\"tokens_per_pass\":%.6f}\n", r.stats.acceptance_rate(),
                r.stats.tokens_per_pass());
    return 0;
  }
  auto list = [](const std::vector<int>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  std::printf(
      "target p = [0.4, 0.25, 0.15, 0.1, 0.06, 0.04], draft q = [0.3, 0.3, 0.2, 0.1, 0.06, "
      "0.04]\n");
  std::printf("generated %zu tokens: %s\n", r.tokens.size(), list(r.tokens).c_str());
  for (size_t i = 0; i < r.trace.size(); ++i) {
    const IterationTrace& t = r.trace[i];
    const bool cut = t.emitted.size() < size_t(t.n_accepted) + 1;
    std::printf("  iter %zu: proposed %s -> accepted %d, emitted %s%s\n", i,
                list(t.proposed).c_str(), t.n_accepted, list(t.emitted).c_str(),
                cut ? " (cut to the token budget)" : "");
  }
  Distribution p = xt::zeros<float>({6}), q = xt::zeros<float>({6});
  std::copy(kToyTarget, kToyTarget + 6, p.begin());
  std::copy(kToyDraft, kToyDraft + 6, q.begin());
  std::printf(
      "measured acceptance rate %.3f (expected alpha = 1 - TV = %.3f), %.2f tokens per target "
      "pass\n",
      r.stats.acceptance_rate(), acceptance_rate(p, q), r.stats.tokens_per_pass());
  return 0;
}

}  // namespace specdec::cli
