// The sections of `specdec bench` (cmd_bench.cc: kernels, models, verify, spec; bench_physics.cc:
// roofline, threads) and what they share: the run they measure and the helpers that write a
// figure as a text cell ("12.3 [11.9-12.8]") or as JSON. Internal to the CLI.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "cli/cli.h"

namespace specdec {
class GPTModel;
namespace kernels {
class ThreadPool;
}
}  // namespace specdec

namespace specdec::cli {

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "12.3 [11.9-12.8]": median [min-max].
inline std::string cell(const bench::Stats& s, const char* f = "%.2f") {
  return fmt(f, s.median) + " [" + fmt(f, s.min) + "-" + fmt(f, s.max) + "]";
}

inline std::string json_stats(const bench::Stats& s) {
  return "{\"median\":" + fmt("%.6g", s.median) + ",\"min\":" + fmt("%.6g", s.min) +
         ",\"max\":" + fmt("%.6g", s.max) + ",\"runs\":" + std::to_string(s.runs) + "}";
}

// A JSON array of already-written values.
inline std::string join(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + items[i];
  return s + "]";
}

// One JSON object written key by key, in the order the sections run.
struct Json {
  std::string out = "{";
  void key(const std::string& k, const std::string& raw) {
    out += (out.size() > 1 ? "," : "") + json_escape(k) + ":" + raw;
  }
  std::string done() { return out + "}"; }
};

// What every section reads, and where it writes: text tables on stdout, or (json) keys of out,
// printed as one object at the end.
struct BenchRun {
  GPTModel& target;
  GPTModel& draft;
  kernels::ThreadPool& pool;  // both models run on it
  int repeats;                // every figure is a median of this many runs
  double min_ms;              // the shortest timed batch of a kernel measurement
  size_t max_tokens;          // tokens per decode
  int gamma_max;
  bool json;
  Json& out;
  // printf(f, a) when writing text; nothing with --json.
  void say(const char* f, const std::string& a = "") const {
    if (!json) std::printf(f, a.c_str());
  }
};

// Kernel GFLOP/s by matmul shape (the target's own shapes and each model's layers) by M.
void bench_kernels(const BenchRun& run);
// Plain greedy ms/token of each model; returns the target's mean pass inside the decoder.
double bench_models(const BenchRun& run);
// The verify cost v(k) and c; decode_pass_ms (0: not measured) is checked against k = 1.
void bench_verify(const BenchRun& run, double decode_pass_ms);
// For each of target_paths (the first is run.target): the roofline of a pass over k tokens and
// where the pass goes.
void bench_roofline(const BenchRun& run, const std::vector<std::string>& target_paths);
// A pass and decoding at each of thread_counts threads.
void bench_threads(const BenchRun& run, const std::vector<int>& thread_counts);
// Speculative vs plain decoding by gamma and temperature, with the predicted speedup.
void bench_spec(const BenchRun& run);

}  // namespace specdec::cli
