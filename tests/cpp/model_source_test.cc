// ModelSource: the KV-cache-backed DistributionSource, and speculative decoding with real
// (tiny) models through it: greedy speculative == greedy plain, and self-drafting accepts
// every proposal.
#include "model/model_source.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "fixture_models.h"
#include "kernels/ops.h"
#include "model/tokenizer.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"
#include "specdec/proposer.h"
#include "test_util.h"

namespace specdec {
namespace {

using testing::error_of;
using testing::fixture_model;

class ModelSourceTest : public ::testing::Test {
 protected:
  static const GPTModel& tiny_target() { return fixture_model("tiny_f32.safetensors"); }
  static const GPTModel& tiny_draft() { return fixture_model("tiny_f16.safetensors"); }

  // softmax of a fresh, uncached forward pass: what every call must return.
  static std::vector<float> fresh_probs(const std::vector<int>& tokens, size_t n_last) {
    KVCache cache(tiny_target().config());
    std::vector<float> logits = tiny_target().forward(tokens, cache);
    const size_t V = tiny_target().config().vocab_size;
    std::vector<float> rows(logits.end() - n_last * V, logits.end());
    for (size_t i = 0; i < n_last; ++i) kernels::softmax(rows.data() + i * V, V);
    return rows;
  }

  static bool equals(const ProbMatrix& m, const std::vector<float>& v) {
    return m.size() == v.size() && std::memcmp(m.data(), v.data(), v.size() * sizeof(float)) == 0;
  }
};

const std::vector<int> kPrompt = encode("ROMEO: hello, world!");

TEST_F(ModelSourceTest, ReportsContextAndCache) {
  ModelSource source(tiny_target());
  EXPECT_EQ(source.max_context(), 640u);
  EXPECT_EQ(source.cached_tokens(), 0u);
  const ProbMatrix p = source.next_token_probs(kPrompt, 1);
  ASSERT_EQ(p.shape()[0], 1u);
  ASSERT_EQ(p.shape()[1], 256u);
  EXPECT_EQ(source.cached_tokens(), kPrompt.size());
  double sum = 0.0;
  for (float v : p) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

// Whatever was cached before — a prefix, a diverging sequence, the same sequence, a longer
// one — every call returns the rows of a fresh forward pass, bit for bit, and the cache ends
// up holding exactly the tokens asked about.
TEST_F(ModelSourceTest, CacheReuseIsExact) {
  std::vector<int> a = kPrompt;
  for (int i = 0; i < 15; ++i) a.push_back('a' + i);
  std::vector<int> b(a.begin(), a.begin() + 25);
  b.push_back('!');
  b.push_back('?');
  struct Call {
    std::vector<int> tokens;
    size_t n_last;
  };
  const std::vector<Call> calls = {
      {std::vector<int>(a.begin(), a.begin() + 10), 1},  // cold
      {std::vector<int>(a.begin(), a.begin() + 14), 1},  // extends the cache
      {std::vector<int>(a.begin(), a.begin() + 20), 5},  // verify-style, 5 rows
      {b, 3},                                            // diverges at 25 after a rollback
      {b, 3},                                            // the same again
      {std::vector<int>(a.begin(), a.begin() + 8), 8},   // shorter: all rows re-run
      {a, 1},
  };
  ModelSource source(tiny_target());
  for (size_t i = 0; i < calls.size(); ++i) {
    const ProbMatrix p = source.next_token_probs(calls[i].tokens, calls[i].n_last);
    EXPECT_TRUE(equals(p, fresh_probs(calls[i].tokens, calls[i].n_last))) << "call " << i;
    EXPECT_EQ(source.cached_tokens(), calls[i].tokens.size()) << "call " << i;
  }
}

TEST_F(ModelSourceTest, RejectsBadCalls) {
  ModelSource source(tiny_target());
  struct Case {
    const char* what;
    std::vector<int> tokens;
    size_t n_last;
    const char* message;
  };
  const Case cases[] = {
      {"n_last 0", kPrompt, 0, "n_last: must be in [1, 20], got 0"},
      {"n_last too big", kPrompt, 21, "n_last: must be in [1, 20], got 21"},
      {"empty", {}, 1, "n_last: must be in [1, 0]"},
      {"too long", std::vector<int>(641, 65), 1,
       "tokens: 641 tokens exceed the model context of 640 tokens (block_size)"},
      {"bad id", {65, 300}, 1, "token 300"},
  };
  for (const Case& c : cases) {
    const std::string error = error_of([&] { source.next_token_probs(c.tokens, c.n_last); });
    EXPECT_NE(error.find(c.message), std::string::npos) << c.what << ": " << error;
  }
  // The source stays usable and exact after errors.
  EXPECT_TRUE(equals(source.next_token_probs(kPrompt, 2), fresh_probs(kPrompt, 2)));
}

TEST_F(ModelSourceTest, PromptLongerThanTheContextIsAnError) {
  ModelSource target(tiny_target()), draft(tiny_draft());
  Rng rng(1);
  const std::vector<int> prompt(641, 'x');
  try {
    speculative_decode(prompt, target, draft, 4, 10, rng);
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceed the model context of 640"), std::string::npos)
        << e.what();
  }
}

// Greedy speculative decoding emits exactly the greedy plain decoding of the target, here with
// the F16 copy of the model as draft (it disagrees now and then, exercising rejections).
TEST_F(ModelSourceTest, GreedySpeculativeEqualsGreedyPlain) {
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  const size_t n_tokens = 500;
  ModelSource plain_target(tiny_target());
  Rng rng(7);
  const DecodeResult plain = autoregressive_decode(kPrompt, plain_target, n_tokens, rng, greedy);
  ASSERT_EQ(plain.tokens.size(), n_tokens);
  EXPECT_EQ(plain.stats.target_passes, n_tokens);

  for (int gamma : {1, 4, 7}) {
    ModelSource target(tiny_target()), draft(tiny_draft());
    const DecodeResult spec =
        speculative_decode(kPrompt, target, draft, gamma, n_tokens, rng, greedy);
    EXPECT_EQ(spec.tokens, plain.tokens) << "gamma " << gamma;
    EXPECT_LT(spec.stats.target_passes, n_tokens) << "gamma " << gamma;
    EXPECT_GT(spec.stats.accepted, 0u) << "gamma " << gamma;
  }
}

// With the target as its own draft (separate caches), p and q are bit-identical at every
// position — the target scores gamma + 1 tokens in one pass, the draft one at a time, and
// batch invariance makes them agree — so at T = 1 every proposal is accepted.
TEST_F(ModelSourceTest, SelfDraftAcceptsEveryProposal) {
  ModelSource target(tiny_target()), draft(tiny_target());
  Rng rng(11);
  const DecodeResult r = speculative_decode(kPrompt, target, draft, 4, 200, rng, SamplingParams{});
  EXPECT_EQ(r.tokens.size(), 200u);
  EXPECT_EQ(r.stats.accepted, r.stats.drafted);
  EXPECT_EQ(r.stats.target_passes, 40u);  // 4 accepted + 1 bonus per pass
  for (const IterationTrace& it : r.trace) EXPECT_EQ(it.n_accepted, 4);
}

// One speculative iteration costs gamma one-token draft passes and ONE target pass: the
// caches end holding exactly the sequence each model last scored.
TEST_F(ModelSourceTest, IterationCachesHoldTheScoredSequence) {
  ModelSource target(tiny_target()), draft(tiny_draft());
  DecoderOptions options;
  options.gamma = 5;
  options.sampling.temperature = 0.0f;
  SpeculativeDecoder decoder(target, &draft, kPrompt, options);
  Rng rng(3);
  for (int i = 0; i < 20; ++i) {
    const size_t before = decoder.tokens().size();
    const IterationRecord rec = decoder.step(rng);
    EXPECT_EQ(rec.target_cached, before + 5);  // prompt so far + 5 drafts, scored at once
    EXPECT_EQ(rec.draft_cached, before + 4);   // the last draft token is never fed back
  }
}

// A draft pass that also catches up on plain steps, or on the prompt, is reported apart (the
// gamma policy keeps it out of c); right after an iteration the draft lacks at most 2 tokens,
// so none is.
TEST_F(ModelSourceTest, DraftPassesThatCatchUpAreReportedApart) {
  ModelSource draft(tiny_draft());
  DraftModelProposer proposer(draft);
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  Rng rng(1);
  const std::vector<int> chain;
  std::vector<int> tokens = kPrompt;
  auto propose = [&] {
    DraftTree tree;
    ProposalRequest req{tokens, 3, chain, false, 64, 0, false, greedy, rng};
    ProposalInfo info = proposer.propose(req, tree);
    EXPECT_EQ(info.passes, 3u);
    return std::make_pair(info, tree);
  };
  auto [first, tree] = propose();  // the prompt itself: a catch-up (lookup may draft first)
  EXPECT_EQ(first.backlog_passes, 1u);
  EXPECT_GT(first.backlog_ms, 0.0);
  // All three accepted plus a bonus token: the draft lacks the last draft token and the bonus.
  for (size_t v = 0; v < tree.size(); ++v) tokens.push_back(tree.token[v]);
  tokens.push_back(1);
  auto [next, tree2] = propose();
  EXPECT_EQ(next.backlog_passes, 0u);
  EXPECT_EQ(next.backlog_ms, 0.0);
  // All three accepted again, a bonus, then three plain steps: the next draft's first pass
  // catches up on them.
  for (size_t v = 0; v < 3; ++v) tokens.push_back(tree2.token[v]);
  for (int i = 0; i < 1 + 3; ++i) tokens.push_back(2);
  auto [late, tree3] = propose();
  EXPECT_EQ(late.backlog_passes, 1u);
  EXPECT_GT(late.backlog_ms, 0.0);
  EXPECT_LE(late.backlog_ms, late.ms);
}

// The lesson's StepFunction API gives the same decoding as the source it wraps.
TEST_F(ModelSourceTest, ModelStepMatchesModelSource) {
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  ModelSource target(tiny_target());
  Rng rng(5);
  const DecodeResult via_source = autoregressive_decode(kPrompt, target, 60, rng, greedy);
  const StepFunction step = model_step(tiny_target());
  const DecodeResult via_step = autoregressive_decode(kPrompt, step, 60, rng, greedy);
  EXPECT_EQ(via_step.tokens, via_source.tokens);
  const DecodeResult spec =
      speculative_decode(kPrompt, step, model_step(tiny_draft()), 3, 60, rng, greedy);
  EXPECT_EQ(spec.tokens, via_source.tokens);
}

TEST(Tokenizer, BytesRoundTrip) {
  const std::string text = "héllo\n\x01\xff";
  const std::vector<int> tokens = encode(text);
  ASSERT_EQ(tokens.size(), text.size());
  EXPECT_EQ(tokens[1], 0xc3);
  EXPECT_EQ(tokens.back(), 255);
  EXPECT_EQ(decode(tokens), text);
  EXPECT_THROW(decode({65, 256}), Error);
  EXPECT_THROW(decode({-1}), Error);
}

}  // namespace
}  // namespace specdec
