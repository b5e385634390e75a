// The benchmark harness (src/bench/): the figures `specdec bench` and bench/run.mjs print are
// only as good as these helpers. Timings cannot be asserted on a shared machine, but their
// bookkeeping can: run counts, medians, byte counts, argument checks.
#include "bench/bench.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "model/gpt_model.h"
#include "specdec/errors.h"

namespace specdec::bench {
namespace {

std::string fixture(const std::string& name) {
  return std::string(SPECDEC_SOURCE_DIR) + "/tests/fixtures/" + name;
}

struct SummarizeCase {
  std::vector<double> samples;
  double median, min, max;
};

TEST(Bench, SummarizeTakesMedianMinMax) {
  const std::vector<SummarizeCase> cases = {
      {{3.0}, 3.0, 3.0, 3.0},
      {{2.0, 1.0}, 1.5, 1.0, 2.0},
      {{5.0, 1.0, 3.0}, 3.0, 1.0, 5.0},
      {{4.0, 1.0, 3.0, 2.0}, 2.5, 1.0, 4.0},
      {{7.0, 7.0, 1.0, 9.0, 7.0}, 7.0, 1.0, 9.0},
  };
  for (const SummarizeCase& c : cases) {
    const Stats s = summarize(c.samples);
    EXPECT_EQ(s.median, c.median);
    EXPECT_EQ(s.min, c.min);
    EXPECT_EQ(s.max, c.max);
    EXPECT_EQ(s.runs, static_cast<int>(c.samples.size()));
  }
  EXPECT_EQ(summarize({}).runs, 0);
}

TEST(Bench, WeightBytesCountEveryPackedMatrix) {
  const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  const GPTConfig& c = m.config();
  const size_t C = c.n_embd, V = c.vocab_size;
  auto packed = [](size_t n, size_t k) { return kernels::packed_size(n, k) * sizeof(float); };
  const size_t layer = packed(3 * C, C) + packed(C, C) + packed(4 * C, C) + packed(C, 4 * C);
  EXPECT_EQ(matmul_weight_bytes(m), c.n_layer * layer + packed(V, C));
  // The tiny model's shapes are panel multiples: 12 C^2 per layer + V C, in floats.
  EXPECT_EQ(matmul_weight_bytes(m), (c.n_layer * 12 * C * C + V * C) * sizeof(float));
}

TEST(Bench, ReadBandwidthIsPositiveAndCountsRepeats) {
  const Stats s = read_gbs(1 << 16, 3, 1.0);
  EXPECT_EQ(s.runs, 3);
  EXPECT_GT(s.min, 0.0);
  EXPECT_TRUE(std::isfinite(s.max));
  EXPECT_LE(s.min, s.median);
  EXPECT_LE(s.median, s.max);
}

TEST(Bench, PassBreakdownMeasuresEveryKernel) {
  const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  const std::vector<size_t> pasts = {8, 40};
  for (size_t k : {1, 3}) {
    const PassBreakdown b = pass_breakdown(m, k, pasts, 2);
    for (const Stats* s : {&b.pass, &b.matmul, &b.attention, &b.gelu}) {
      EXPECT_EQ(s->runs, 2) << "k=" << k;
      EXPECT_TRUE(std::isfinite(s->median)) << "k=" << k;
      EXPECT_GE(s->min, 0.0) << "k=" << k;
    }
    EXPECT_GT(b.pass.median, 0.0);
    EXPECT_GT(b.matmul.median, 0.0);
    EXPECT_GT(b.attention.median, 0.0);
  }
}

TEST(Bench, PassBreakdownRefusesContextsPastTheWindow) {
  const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  const size_t window = static_cast<size_t>(m.config().block_size);
  EXPECT_THROW(pass_breakdown(m, 2, {window - 1}, 1), Error);
  EXPECT_THROW(pass_breakdown(m, 0, {8}, 1), Error);
}

TEST(Bench, SplitMatmulIsBitIdenticalToOneThread) {
  if (!kHasThreads) GTEST_SKIP() << "no threads in this build";
  const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  // split_matmul_ms throws when any output of the split differs from one thread's.
  for (int threads : {1, 2}) {
    const Stats s = split_matmul_ms(m, threads, 1);
    EXPECT_EQ(s.runs, 1) << threads;
    EXPECT_GT(s.median, 0.0) << threads;
  }
  EXPECT_THROW(split_matmul_ms(m, 0, 1), Error);
}

}  // namespace
}  // namespace specdec::bench
