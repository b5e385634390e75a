// The benchmark harness (src/bench/): the figures `specdec bench` and bench/run.mjs print are
// only as good as these helpers. Timings cannot be asserted on a shared machine, but their
// bookkeeping can: run counts, medians, byte counts, argument checks.
#include "bench/bench.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/errors.h"
#include "kernels/thread_pool.h"
#include "model/gpt_model.h"

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

// 8-bit Linear weights: 32 int8 + one float scale per 32 weights; the LM head stays float32.
TEST(Bench, EightBitModelsCountQuantsScalesAndIntegerOps) {
  const Weights int8 = Weights::kInt8;
  const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"), &int8);
  const GPTConfig& c = m.config();
  const size_t C = c.n_embd, V = c.vocab_size, linear = c.n_layer * 12 * C * C;
  EXPECT_EQ(matmul_weight_bytes(m), linear + linear / 32 * sizeof(float) + V * C * sizeof(float));
  EXPECT_EQ(matmul_flops_per_token(m), 2.0 * (linear + V * C));
  EXPECT_EQ(matmul_int_ops_per_token(m), 2.0 * linear);
  EXPECT_EQ(matmul_int_ops_per_token(GPTModel::from_file(fixture("tiny_f32.safetensors"))), 0.0);
  // Arithmetic bound: float ops at the float peak plus integer ops at the integer peak.
  const double bytes = double(matmul_weight_bytes(m));
  for (double peak_int : {1.0, 4.0}) {
    const double want = 5 * (2.0 * V * C / 1e6 + 2.0 * linear / (peak_int * 1e6));
    EXPECT_DOUBLE_EQ(roofline_ms(m, 5, 1e9, 1.0, peak_int), std::max(want, bytes / 1e15));
  }
  const Stats s = int_dot_gops(2, 1.0);
  EXPECT_EQ(s.runs, 2);
  EXPECT_GT(s.min, 0.0);
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

TEST(Bench, ThreadedReadAndPeakCountEveryThread) {
  kernels::ThreadPool pool(2);
  pool.set_load_probe(nullptr);  // both threads read, however busy the test machine
  const Stats one = read_gbs(1 << 20, 2, 2.0, 8);
  const Stats two = read_gbs(1 << 20, 2, 2.0, 8, &pool);
  EXPECT_EQ(two.runs, 2);
  EXPECT_GT(two.median, 0.0);
  EXPECT_GT(one.median, 0.0);
  EXPECT_GT(pool.stats().runs, 0u);  // both threads read
  EXPECT_GT(muladd_gflops(2, 2.0, &pool).median, 0.0);
  EXPECT_GT(fork_join_us(pool, 2).median, 0.0);
}

TEST(Bench, ThreadPhysicsMeasuresEveryCountAndK) {
  GPTModel t = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  GPTModel d = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  kernels::ThreadPool pool(2);
  EXPECT_THROW(thread_physics(t, d, pool, {1, 2}, 3, 1, 1.0), Error);  // models not on the pool
  t.set_thread_pool(&pool);
  d.set_thread_pool(&pool);
  const std::vector<ThreadPhysics> rows = thread_physics(t, d, pool, {1, 2}, 3, 1, 1.0);
  ASSERT_EQ(rows.size(), 2u);
  for (const ThreadPhysics& r : rows) {
    ASSERT_EQ(r.pass_ms.size(), 3u);
    ASSERT_EQ(r.roofline_ms.size(), 3u);
    for (size_t k = 0; k < 3; ++k) EXPECT_GT(r.pass_ms[k].median, 0.0);
    EXPECT_GE(r.roofline_ms[2], r.roofline_ms[0]);
    EXPECT_GT(r.draft_step_ms.median, 0.0);
  }
  EXPECT_EQ(pool.threads(), 2);  // restored
  EXPECT_THROW(thread_physics(t, d, pool, {3}, 3, 1, 1.0), Error);
  EXPECT_THROW(thread_physics(t, d, pool, {}, 3, 1, 1.0), Error);
}

TEST(Bench, DecodingByThreadsGivesTheSameAcceptance) {
  GPTModel t = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  GPTModel d = GPTModel::from_file(fixture("tiny_f16.safetensors"));
  kernels::ThreadPool pool(2);
  t.set_thread_pool(&pool);
  d.set_thread_pool(&pool);
  const std::vector<ThreadDecoding> rows = decode_by_threads(t, d, pool, {1, 2}, 2, 0.0f, 16, 1);
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(rows[0].alpha.size(), 2u);
  EXPECT_EQ(rows[0].alpha, rows[1].alpha);  // same tokens at any thread count
  EXPECT_GE(rows[1].best_gamma, 1);
}

}  // namespace
}  // namespace specdec::bench
