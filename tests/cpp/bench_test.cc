// The benchmark harness (src/bench/): the figures `specdec bench` and bench/run.mjs print are
// only as good as these helpers. Timings cannot be asserted on a shared machine, but their
// bookkeeping can: run counts, medians, byte counts, argument checks.
#include "bench/bench.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

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

TEST(Bench, WeightBytesCountEveryMatrix) {
  const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  const GPTConfig& c = m.config();
  const size_t C = c.n_embd, V = c.vocab_size;
  // 12 C^2 per layer + V C floats (the tiny model's shapes are panel multiples), whatever the
  // header and striping padding of the packed buffers.
  EXPECT_EQ(matmul_weight_bytes(m), (c.n_layer * 12 * C * C + V * C) * sizeof(float));
  EXPECT_EQ(matmul_flops_per_token(m), 2.0 * (c.n_layer * 12 * C * C + V * C));
}

TEST(Bench, ReadBandwidthIsPositiveAndCountsRepeats) {
  for (int streams : {1, 2, 8, 16}) {
    const Stats s = read_gbs(1 << 16, 3, 1.0, streams);
    EXPECT_EQ(s.runs, 3) << streams;
    EXPECT_GT(s.min, 0.0) << streams;
    EXPECT_TRUE(std::isfinite(s.max)) << streams;
    EXPECT_LE(s.min, s.median) << streams;
    EXPECT_LE(s.median, s.max) << streams;
  }
  EXPECT_THROW(read_gbs(1 << 16, 1, 1.0, 0), Error);
  EXPECT_THROW(read_gbs(1 << 16, 1, 1.0, 65), Error);
}

TEST(Bench, BestReadBandwidthIsTheBestStreamCount) {
  const ReadBandwidth b = best_read_gbs(1 << 16, 2, 1.0);
  ASSERT_EQ(b.by_streams.size(), 5u);
  const int counts[] = {1, 2, 4, 8, 16};
  bool found = false;
  for (size_t i = 0; i < b.by_streams.size(); ++i) {
    EXPECT_LE(b.by_streams[i].median, b.gbs.median);
    found = found || (counts[i] == b.streams && b.by_streams[i].median == b.gbs.median);
  }
  EXPECT_TRUE(found);
}

TEST(Bench, MulAddPeakIsPositive) {
  const Stats s = muladd_gflops(2, 1.0);
  EXPECT_EQ(s.runs, 2);
  EXPECT_GT(s.min, 0.0);
  EXPECT_TRUE(std::isfinite(s.max));
}

TEST(Bench, RooflineIsTheLargerOfMemoryAndArithmetic) {
  const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  const double bytes = double(matmul_weight_bytes(m)), flops = matmul_flops_per_token(m);
  EXPECT_EQ(flops, bytes / sizeof(float) * 2.0);  // panel multiples: 2 flops per weight
  struct Case {
    size_t k;
    double gbs, gflops;
  };
  for (const Case& c : {Case{1, 10.0, 1000.0}, Case{8, 10.0, 1.0}, Case{3, 0.5, 0.5}}) {
    const double memory = bytes / (c.gbs * 1e6), arithmetic = c.k * flops / (c.gflops * 1e6);
    EXPECT_DOUBLE_EQ(roofline_ms(m, c.k, c.gbs, c.gflops), std::max(memory, arithmetic));
  }
}

TEST(Bench, PassBreakdownMeasuresEveryKernelForEveryK) {
  const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  const std::vector<size_t> pasts = {8, 40};
  const std::vector<PassBreakdown> rows = pass_breakdown(m, {1, 3, 2}, pasts, 2);
  ASSERT_EQ(rows.size(), 3u);
  const size_t ks[] = {1, 3, 2};
  for (size_t i = 0; i < rows.size(); ++i) {
    const PassBreakdown& b = rows[i];
    EXPECT_EQ(b.k, ks[i]);
    for (const Stats* s : {&b.pass, &b.matmul, &b.matmul_in_pass, &b.attention, &b.gelu}) {
      EXPECT_EQ(s->runs, 2) << "k=" << b.k;
      EXPECT_TRUE(std::isfinite(s->median)) << "k=" << b.k;
      EXPECT_GE(s->min, 0.0) << "k=" << b.k;
    }
    EXPECT_GT(b.pass.median, 0.0);
    EXPECT_GT(b.matmul.median, 0.0);
    EXPECT_GT(b.attention.median, 0.0);
    EXPECT_GT(b.matmul_in_pass.median, 0.0);
    EXPECT_DOUBLE_EQ(b.rest_ms(),
                     b.pass.median - b.matmul_in_pass.median - b.attention.median - b.gelu.median);
  }
}

TEST(Bench, PassBreakdownRefusesContextsPastTheWindow) {
  const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  const size_t window = static_cast<size_t>(m.config().block_size);
  EXPECT_THROW(pass_breakdown(m, {2}, {window - 1}, 1), Error);
  EXPECT_THROW(pass_breakdown(m, {0}, {8}, 1), Error);
  EXPECT_THROW(pass_breakdown(m, {}, {8}, 1), Error);
}

TEST(Bench, PassTimerTimesEveryKUpToItsMaximum) {
  const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  PassTimer timer(m, {8, 30}, 4);
  for (size_t k : {4, 1, 3, 1}) EXPECT_GT(timer.once(k), 0.0) << k;
  EXPECT_THROW(timer.once(0), Error);
  EXPECT_THROW(timer.once(5), Error);
  const size_t window = static_cast<size_t>(m.config().block_size);
  EXPECT_THROW(PassTimer(m, {window - 2}, 3), Error);
  EXPECT_EQ(forward_ms(m, 2, {8}, 3).runs, 3);
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
