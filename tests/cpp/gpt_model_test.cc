// The C++ forward pass against PyTorch (golden logits written by `tests/fixtures/makers/write.py`),
// and the properties speculative decoding relies on: KV-cache rollback and batch invariance.
#include "model/gpt_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/errors.h"
#include "fixture_models.h"
#include "model/json.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace specdec {
namespace {

using testing::error_of;
using testing::fixture_model;
using testing::repo;

struct Golden {
  std::vector<int> tokens;
  std::vector<std::vector<double>> logits;  // (T, V)
};

// A golden file maps a key to {"prompt", "tokens", "logits"}: tests/fixtures/tiny_golden.json
// ("f32", "f16") and models/golden.json ("target", "draft": the shipped pair).
Golden read_golden(const std::string& path, const std::string& key) {
  const std::vector<uint8_t> bytes = read_file(repo(path), 64 << 20);
  const json::Value doc = json::parse(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const json::Value* entry = doc.find(key);
  Golden g;
  for (const json::Value& t : entry->find("tokens")->items) {
    g.tokens.push_back(static_cast<int>(json::to_double(t)));
  }
  for (const json::Value& row : entry->find("logits")->items) {
    g.logits.emplace_back();
    for (const json::Value& v : row.items) g.logits.back().push_back(json::to_double(v));
  }
  return g;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct GoldenCase {
  const char* model;   // safetensors file, from the repository root
  const char* golden;  // golden JSON file
  const char* key;
};
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.model; }

// Both fixtures hold the same random model; the F16 golden was computed from the rounded
// weights, so each file is compared with its own golden. The shipped pair is stored in F16 and
// its golden was computed by PyTorch from the same (widened) weights.
class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

// At 1, 2 and 3 threads (kernels/thread_pool.h): the same bits each time.
TEST_P(GoldenTest, ForwardMatchesPyTorch) {
  const GoldenCase& c = GetParam();
  GPTModel model = GPTModel::from_file(repo(c.model));
  const Golden golden = read_golden(c.golden, c.key);
  ASSERT_EQ(golden.logits.size(), golden.tokens.size());
  const size_t V = model.config().vocab_size;

  KVCache cache(model.config());
  const std::vector<float> logits = model.forward(golden.tokens, cache);
  for (int threads : {2, 3}) {
    kernels::ThreadPool pool(threads);
    model.set_thread_pool(&pool);
    KVCache c2(model.config());
    EXPECT_TRUE(bitwise_equal(model.forward(golden.tokens, c2), logits)) << threads << " threads";
    model.set_thread_pool(nullptr);
  }
  ASSERT_EQ(logits.size(), golden.tokens.size() * V);
  EXPECT_EQ(cache.size(), golden.tokens.size());
  double worst = 0.0;
  for (size_t t = 0; t < golden.tokens.size(); ++t) {
    ASSERT_EQ(golden.logits[t].size(), V);
    for (size_t v = 0; v < V; ++v) {
      const double expected = golden.logits[t][v];
      const double err =
          std::fabs(logits[t * V + v] - expected) / std::max(1.0, std::fabs(expected));
      worst = std::max(worst, err);
      ASSERT_LE(err, 1e-4) << "position " << t << ", token " << v << ": got " << logits[t * V + v]
                           << ", PyTorch " << expected;
    }
  }
  RecordProperty("max_relative_error", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(
    Models, GoldenTest,
    ::testing::Values(
        GoldenCase{"tests/fixtures/tiny_f32.safetensors", "tests/fixtures/tiny_golden.json", "f32"},
        GoldenCase{"tests/fixtures/tiny_f16.safetensors", "tests/fixtures/tiny_golden.json", "f16"},
        // 8-bit weights (the tiny model quantized), against NumPy's canonical arithmetic
        // (models/tools/q8_model.py), on prompts whose activations stay clear of a rounding
        // boundary.
        GoldenCase{"tests/fixtures/tiny_int8.safetensors", "tests/fixtures/tiny_int8_golden.json",
                   "int8"},
        GoldenCase{"tests/fixtures/tiny_int8.safetensors", "tests/fixtures/tiny_int8_golden.json",
                   "int8_long"},
        GoldenCase{"models/target.safetensors", "models/golden.json", "target"},
        GoldenCase{"models/draft.safetensors", "models/golden.json", "draft"}));

class TinyModelTest : public ::testing::Test {
 protected:
  // A fixed pseudo-random byte sequence.
  static std::vector<int> sequence(size_t n, int seed) {
    std::vector<int> t(n);
    uint32_t s = 2654435761u * static_cast<uint32_t>(seed + 1);
    for (size_t i = 0; i < n; ++i) {
      s = s * 1664525u + 1013904223u;
      t[i] = static_cast<int>(s >> 24);
    }
    return t;
  }

  static const GPTModel& model() { return fixture_model("tiny_f32.safetensors"); }
};

TEST_F(TinyModelTest, ConfigFromMetadata) {
  const GPTConfig& c = model().config();
  EXPECT_EQ(c.vocab_size, 256);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_embd, 32);
  EXPECT_EQ(c.block_size, 640);
  EXPECT_EQ(c.head_size(), 8);
}

// A k-token pass returns, bit for bit, the logits of k one-token passes (k = 1..9), at
// several cache offsets: what lets one target pass verify gamma drafts exactly.
TEST_F(TinyModelTest, BatchInvariance) {
  const size_t V = model().config().vocab_size;
  for (size_t prefix : {0u, 1u, 5u, 37u}) {
    for (size_t k = 1; k <= 9; ++k) {
      const std::vector<int> seq = sequence(prefix + k, static_cast<int>(k));
      const std::vector<int> head(seq.begin(), seq.begin() + prefix);
      const std::vector<int> tail(seq.begin() + prefix, seq.end());

      KVCache batched(model().config());
      if (prefix) model().forward(head, batched);
      const std::vector<float> together = model().forward(tail, batched);

      KVCache single(model().config());
      if (prefix) model().forward(head, single);
      std::vector<float> one_by_one;
      for (int token : tail) {
        const std::vector<float> row = model().forward({token}, single);
        ASSERT_EQ(row.size(), V);
        one_by_one.insert(one_by_one.end(), row.begin(), row.end());
      }
      EXPECT_TRUE(bitwise_equal(together, one_by_one)) << "prefix " << prefix << ", k " << k;
    }
  }
}

// Truncating the cache and extending it again gives the logits of a fresh cache, bit for bit,
// whether the new tokens repeat the old ones or differ (a rejected draft).
TEST_F(TinyModelTest, KVCacheRollback) {
  const std::vector<int> a = sequence(40, 1);
  std::vector<int> b = a;
  for (size_t i = 25; i < b.size(); ++i) b[i] = (b[i] + 7) % 256;

  KVCache fresh_a(model().config());
  const std::vector<float> expected_a = model().forward(a, fresh_a);
  KVCache fresh_b(model().config());
  const std::vector<float> expected_b = model().forward(b, fresh_b);
  const size_t V = model().config().vocab_size;

  KVCache cache(model().config());
  model().forward(a, cache);
  for (size_t keep : {25u, 10u, 0u}) {
    cache.truncate(keep);
    EXPECT_EQ(cache.size(), keep);
    const std::vector<float> again =
        model().forward(std::vector<int>(b.begin() + keep, b.end()), cache);
    EXPECT_TRUE(
        bitwise_equal(again, std::vector<float>(expected_b.begin() + keep * V, expected_b.end())))
        << "keep " << keep;
    cache.truncate(keep);
    const std::vector<float> back =
        model().forward(std::vector<int>(a.begin() + keep, a.end()), cache);
    EXPECT_TRUE(
        bitwise_equal(back, std::vector<float>(expected_a.begin() + keep * V, expected_a.end())))
        << "keep " << keep;
  }
}

// The cache is allocated uninitialised: slots are written before any pass reads them, and no
// kernel reads past a pass's slots. A cache whose every slot holds NaN first gives the logits of
// one holding zeros, bit for bit: sequence passes, a tree pass, a rollback and a committed path.
TEST_F(TinyModelTest, KVCacheSlotsPastSizeAreNeverRead) {
  const GPTConfig& cfg = model().config();
  auto filled = [&](float value) {
    KVCache c(cfg);
    const size_t rows = c.capacity() * cfg.head_size();
    for (int l = 0; l < cfg.n_layer; ++l) {
      for (int h = 0; h < cfg.kv_heads(); ++h) {
        std::fill_n(c.keys(l, h), rows, value);
        std::fill_n(c.values(l, h), rows, value);
      }
    }
    return c;
  };
  KVCache nan = filled(std::nanf("")), zero = filled(0.0f);
  std::vector<float> out[2];
  int i = 0;
  for (KVCache* c : {&nan, &zero}) {
    std::vector<float>& o = out[i++];
    auto run = [&](const std::vector<int>& tokens, const std::vector<int>* parents = nullptr) {
      const std::vector<float> l = model().forward(tokens, *c, parents);
      o.insert(o.end(), l.begin(), l.end());
    };
    run(sequence(21, 4));
    run({65, 66});
    // A tree of 5 nodes in slots 23..27 (parents are slots), then its path 23 -> 24 -> 26 kept.
    const std::vector<int> parents = {KVCache::kTreeRoot, 23, 23, 24, KVCache::kTreeRoot};
    run({70, 71, 72, 73, 74}, &parents);
    c->commit_path({23, 24, 26});
    run({80});
    c->truncate(9);
    run(sequence(5, 2));
  }
  for (float v : out[0]) ASSERT_TRUE(std::isfinite(v));
  EXPECT_TRUE(bitwise_equal(out[0], out[1]));
}

TEST_F(TinyModelTest, FillsTheWholeContext) {
  const size_t block = model().config().block_size;
  KVCache cache(model().config());
  model().forward(sequence(block - 1, 3), cache);
  const std::vector<float> last = model().forward({65}, cache);
  EXPECT_EQ(cache.size(), block);
  for (float v : last) ASSERT_TRUE(std::isfinite(v));
  EXPECT_THROW(model().forward({65}, cache), Error);
  EXPECT_EQ(cache.size(), block);
}

TEST_F(TinyModelTest, RejectsBadInput) {
  const GPTConfig& cfg = model().config();
  GPTConfig other = cfg;
  other.block_size = 16;
  struct Case {
    const char* what;
    std::vector<int> tokens;
    size_t cached;
    const char* message;
  };
  const Case cases[] = {
      {"empty", {}, 0, "tokens is empty"},
      {"id 256", {1, 256}, 0, "token 256 at index 1 is outside [0, 256)"},
      {"negative id", {-1}, 0, "token -1 at index 0"},
      {"past block_size", sequence(5, 1), cfg.block_size - 3u, "exceed the context of 640"},
  };
  for (const Case& c : cases) {
    KVCache cache(cfg);
    if (c.cached) model().forward(sequence(c.cached, 2), cache);
    const std::string error = error_of([&] { model().forward(c.tokens, cache); });
    EXPECT_NE(error.find(c.message), std::string::npos) << c.what << ": " << error;
    EXPECT_EQ(cache.size(), c.cached) << c.what << ": a failed call must not move the cache";
  }
  KVCache foreign(other);
  EXPECT_THROW(model().forward({1}, foreign), Error);
  KVCache cache(cfg);
  EXPECT_THROW(cache.truncate(1), Error);
}

}  // namespace
}  // namespace specdec
