// The loader's limits (model/gpt_model.h, model/safetensors.h) and the context limit:
// - a file whose config, shapes or sizes exceed the limits is refused with a clear message
//   BEFORE anything proportional to the claimed sizes is allocated (this binary replaces
//   operator new to record the largest single allocation during a refused load);
// - a prompt longer than the context is an error naming both lengths, for speculative and plain
//   decoding; a prompt that exactly fills the context gets one token.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <iterator>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "fixture_models.h"
#include "model/gpt_model.h"
#include "model/model_source.h"
#include "model/safetensors.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"

// ------------------------------------------------------------------ allocation watch
namespace {
std::atomic<size_t> g_largest{0};
std::atomic<bool> g_watching{false};

void* allocate(size_t n) {
  if (g_watching.load(std::memory_order_relaxed)) {
    size_t seen = g_largest.load(std::memory_order_relaxed);
    while (n > seen && !g_largest.compare_exchange_weak(seen, n)) {
    }
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(size_t n) { return allocate(n); }
void* operator new[](size_t n) { return allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace specdec {
namespace {

using testing::fixture;
using testing::fixture_model;

// The tiny F32 fixture split into its header text and data section, to edit the header.
struct Parts {
  std::string header;
  std::vector<uint8_t> data;
};

Parts tiny() {
  const std::vector<uint8_t> bytes = read_file(fixture("tiny_f32.safetensors"), 64 << 20);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  return {std::string(bytes.begin() + 8, bytes.begin() + 8 + n),
          std::vector<uint8_t>(bytes.begin() + 8 + n, bytes.end())};
}

std::vector<uint8_t> file(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  out.reserve(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<uint8_t>(uint64_t{header.size()} >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// The tiny fixture with `from` replaced by `to` in its header (exactly once).
std::vector<uint8_t> edited(const std::string& from, const std::string& to) {
  Parts p = tiny();
  const size_t at = p.header.find(from);
  if (at == std::string::npos) throw std::runtime_error("test: '" + from + "' not in the header");
  p.header.replace(at, from.size(), to);
  return file(p.header, p.data);
}

// The tiny fixture with the __metadata__ values of `changes` ({key, new value}) replaced.
std::vector<uint8_t> with_meta(const std::vector<std::pair<std::string, std::string>>& changes) {
  Parts p = tiny();
  for (const auto& [key, value] : changes) {
    const std::string from = "\"" + key + "\":\"";
    const size_t at = p.header.find(from);
    if (at == std::string::npos) throw std::runtime_error("test: '" + key + "' not in the header");
    const size_t begin = at + from.size();
    p.header.replace(begin, p.header.find('"', begin) - begin, value);
  }
  return file(p.header, p.data);
}

struct Refusal {
  std::string what;
  std::vector<uint8_t> bytes;
  const char* message;
};

std::vector<Refusal> refusals() {
  // One __metadata__ value changed: {key, value, message}.
  const char* const one_value[][3] = {
      {"n_layer", "100000", "config n_layer = 100000 is outside 1..128"},
      {"block_size", "1000000", "context 1000000 is outside 1..8192"},
      {"block_size", "1000000000000000000000000000000",
       "block_size = 1000000000000000000000000000000 is out of range"},
      {"n_embd", "1000000", "config n_embd = 1000000 is outside 1..8192"},
      {"n_head", "3", "n_head = 3 does not divide n_embd = 32"},    // not dividing n_embd
      {"n_head", "64", "n_head = 64 does not divide n_embd = 32"},  // above n_embd
      {"vocab_size", "100000000", "vocab_size = 100000000, expected 256"},
      {"n_layer", "02", "'n_layer' = '02' is not a decimal integer"},  // a leading zero
  };
  std::vector<Refusal> out;
  for (const auto& [key, value, message] : one_value) {
    out.push_back({std::string(key) + " " + value, with_meta({{key, value}}), message});
  }
  const Refusal more[] = {
      // Each dimension within range, the product over the weights' cap (~51 GB as f32, over
      // 3 GiB even as 8-bit), refused before the shapes are looked at.
      {"parameters over the cap", with_meta({{"n_layer", "64"}, {"n_embd", "4096"}}),
       "over the limit of 3221225472"},
      {"KV cache over the cap",
       with_meta({{"n_layer", "32"}, {"n_embd", "1024"}, {"block_size", "8192"}}),
       "over the limit of 1073741824"},
      // Within both caps (100 M parameters, a 256 MiB KV cache), but the file does not hold
      // such tensors: refused on the shapes, before the weights are allocated.
      {"large config, small tensors",
       with_meta({{"n_layer", "32"}, {"n_head", "8"}, {"n_embd", "512"}, {"block_size", "2048"}}),
       "has shape [256, 32], expected [256, 512]"},
      {"tensor claiming 2^80 elements",
       edited("\"shape\":[256,32],\"data_offsets\":[0,32768]",
              "\"shape\":[1099511627776,1099511627776],\"data_offsets\":[0,32768]"),
       "is too large"},
      {"tensor claiming 2^40 bytes past the data",
       edited("\"shape\":[256,32],\"data_offsets\":[0,32768]",
              "\"shape\":[262144,1048576],\"data_offsets\":[0,1099511627776]"),
       "outside the data section"},
  };
  out.insert(out.end(), std::begin(more), std::end(more));
  return out;
}

TEST(Limits, RefusedBeforeAnythingLargeIsAllocated) {
  for (const Refusal& r : refusals()) {
    SCOPED_TRACE(r.what);
    g_largest = 0;
    g_watching = true;
    std::string message;
    try {
      GPTModel::from_safetensors(r.bytes.data(), r.bytes.size());
    } catch (const Error& e) {
      message = e.what();
    }
    g_watching = false;
    EXPECT_NE(message.find(r.message), std::string::npos)
        << "got      " << message << "\nexpected " << r.message;
    EXPECT_EQ(message.rfind("model file: ", 0), 0u) << message;
    // The header is ~3 kB: nothing near the sizes the file claims (or even the file's own
    // 200 kB) is allocated before the refusal.
    EXPECT_LT(g_largest.load(), size_t{64} << 10) << "largest allocation " << g_largest.load();
  }
}

// The control: the watch does see the weights of a file that loads (wpe alone is 80 kB).
TEST(Limits, TheAllocationWatchSeesALoadedModel) {
  const Parts p = tiny();
  const std::vector<uint8_t> bytes = file(p.header, p.data);
  g_largest = 0;
  g_watching = true;
  GPTModel::from_safetensors(bytes.data(), bytes.size());
  g_watching = false;
  EXPECT_GE(g_largest.load(), size_t{640 * 32 * 4});
}

TEST(Limits, HeaderLengthIsCheckedBeforeTheHeaderIsRead) {
  std::vector<uint8_t> bytes = file("{}", {});
  for (int i = 0; i < 8; ++i) bytes[i] = 0xff;  // 2^64 - 1
  g_largest = 0;
  g_watching = true;
  EXPECT_THROW(parse_safetensors(bytes.data(), bytes.size()), Error);
  g_watching = false;
  EXPECT_LT(g_largest.load(), size_t{4} << 10);
}

TEST(Limits, TheStatedLimits) {
  // The values the README states; a change here must change the README too.
  EXPECT_EQ(kMaxHeaderBytes, size_t{1} << 20);
  EXPECT_EQ(kMaxTensorRank, 8u);
  EXPECT_EQ(kByteVocabSize, 256);
  EXPECT_EQ(kMaxEmbd, 4096);
  EXPECT_EQ(kMaxBlockSize, 8192);
  EXPECT_EQ(kMaxParamBytes, uint64_t{512} << 20);
  EXPECT_EQ(kMaxFamilyVocab, 262144);
  EXPECT_EQ(kMaxFamilyLayers, 128);
  EXPECT_EQ(kMaxFamilyEmbd, 8192);
  EXPECT_EQ(kMaxFamilyParamBytes, uint64_t{3} << 30);
  EXPECT_EQ(kMaxFamilyKVCacheBytes, uint64_t{1} << 30);
  EXPECT_EQ(kMaxGamma, 32);
}

// ------------------------------------------------------------------ the context limit

class ContextLimit : public ::testing::Test {
 protected:
  static const GPTModel& model() { return fixture_model("tiny_f32.safetensors"); }

  // One arm of each test: the tiny model decoding plain, or speculatively as its own draft.
  struct Arm {
    explicit Arm(bool plain) : target(model()), draft(model()) { options.plain = plain; }
    SpeculativeDecoder decoder(std::vector<int> prompt) {
      return SpeculativeDecoder(target, options.plain ? nullptr : &draft, std::move(prompt),
                                options);
    }
    ModelSource target, draft;
    DecoderOptions options;
  };
};

TEST_F(ContextLimit, PromptLongerThanTheContextIsAClearError) {
  for (const bool plain : {false, true}) {
    SCOPED_TRACE(plain ? "plain" : "speculative");
    Arm arm(plain);
    arm.options.max_new_tokens = 5;
    try {
      SpeculativeDecoder dec = arm.decoder(std::vector<int>(641, 'a'));
      ADD_FAILURE() << "no exception";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "prompt: 641 tokens exceed the model context of 640 tokens");
    }
    EXPECT_EQ(arm.target.cached_tokens(), 0u) << "nothing was run";
  }
}

TEST_F(ContextLimit, PromptFillingTheContextGetsOneToken) {
  for (const bool plain : {false, true}) {
    SCOPED_TRACE(plain ? "plain" : "speculative");
    Arm arm(plain);
    arm.options.gamma = 8;
    SpeculativeDecoder dec = arm.decoder(std::vector<int>(640, 'a'));
    Rng rng(1);
    ASSERT_FALSE(dec.done());
    const IterationRecord rec = dec.step(rng);
    EXPECT_TRUE(rec.tree.token.empty()) << "no room to draft";
    EXPECT_EQ(rec.emitted.size(), 1u);
    EXPECT_TRUE(dec.done());
    EXPECT_THROW(dec.step(rng), Error);
  }
}

}  // namespace
}  // namespace specdec
