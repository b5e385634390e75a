// Medusa-style heads: the loader (validated like a model file, and against its target), the
// forward pass against PyTorch, and decoding with heads as the drafter (chain and tree): greedy
// output == greedy plain, and the law of the first three tokens is the target's.
#include "model/heads.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "base/errors.h"
#include "fixture_models.h"
#include "model/json.h"
#include "model/model_source.h"
#include "model/safetensors.h"
#include "model/tokenizer.h"
#include "specdec/decoder.h"
#include "test_util.h"
#include "toy_models.h"

namespace specdec {
namespace {

using testing::error_of;

using testing::chi_square;
using testing::kFalseAlarm;

using testing::fixture;
using testing::fixture_model;

class HeadsTest : public ::testing::Test {
 protected:
  static const GPTModel& target() { return fixture_model("tiny_f32.safetensors"); }
  static const MedusaHeads& tiny_heads() {
    static const MedusaHeads loaded =
        MedusaHeads::from_file(fixture("tiny_heads.safetensors"), target());
    return loaded;
  }
};

TEST_F(HeadsTest, ForwardMatchesPyTorch) {
  const std::vector<uint8_t> text = read_file(fixture("tiny_heads_golden.json"), 1 << 20);
  const json::Value golden = json::parse(reinterpret_cast<const char*>(text.data()), text.size());
  std::vector<int> tokens;
  for (const json::Value& t : golden.find("tokens")->items)
    tokens.push_back(int(json::to_double(t)));
  // The hidden state at the next-to-last position; the token after it is the prompt's last.
  ModelSource source(target());
  source.next_token_probs(std::vector<int>(tokens.begin(), tokens.end() - 1), 1);
  for (const char* name : {"tiny_heads", "tiny_heads_token"}) {
    const MedusaHeads heads =
        MedusaHeads::from_file(fixture(std::string(name) + ".safetensors"), target());
    ASSERT_EQ(heads.count(), 3);
    EXPECT_EQ(heads.token_input(), std::string(name) == "tiny_heads_token");
    const std::vector<float> logits = heads.forward(source.hidden_row(0), tokens.back());
    const auto& rows = golden.find(name)->items;
    ASSERT_EQ(rows.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      for (size_t v = 0; v < 256; ++v) {
        const double want = json::to_double(rows[i].items[v]);
        EXPECT_NEAR(logits[i * 256 + v], want, 1e-4 + 1e-4 * std::fabs(want)) << name << i;
      }
    }
  }
}

// The file with `from` replaced by `to` (same length) wherever it occurs in the header.
std::vector<uint8_t> patched(const std::string& from, const std::string& to) {
  std::vector<uint8_t> bytes = read_file(fixture("tiny_heads.safetensors"), 1 << 20);
  std::string s(bytes.begin(), bytes.end());
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  std::copy(to.begin(), to.end(), bytes.begin() + at);
  return bytes;
}

TEST_F(HeadsTest, LoaderRefusesWhatDoesNotFit) {
  auto load = [&](const std::vector<uint8_t>& b, const GPTModel& t) {
    MedusaHeads::from_safetensors(b.data(), b.size(), t);
  };
  struct Case {
    const char* from;
    const char* to;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"specdec-heads", "specdec-headz",
            "heads file: __metadata__ 'format' = 'specdec-headz', expected 'specdec-heads'"},
           {"\"n_heads\":\"3\"", "\"n_heads\":\"9\"",
            "heads file: __metadata__ 'n_heads' = '9' is not an integer in 1..8"},
           {"\"n_embd\":\"32\"", "\"n_embd\":\"64\"",
            "heads file: made for a target of width 64 and vocabulary 256, not this one (width "
            "32, vocabulary 256)"},
           {"medusa.2.bias", "medusa.2.biaz", "heads file: missing tensor 'medusa.2.bias'"},
           {"\"token_input\":\"0\"", "\"token_input\":\"1\"",
            "heads file: missing tensor 'medusa.0.token_weight'"},
           {"\"target_fingerprint\":\"9", "\"target_fingerprint\":\"8",
            "heads file: made for another target (target_fingerprint 88bd42aacc7ea8f1; this "
            "target's is 98bd42aacc7ea8f1)"}}) {
    EXPECT_EQ(error_of([&] { load(patched(c.from, c.to), target()); }), c.message);
  }
  // The F16 twin of the target has other weights: its heads would be wrong.
  const GPTModel other = GPTModel::from_file(fixture("tiny_f16.safetensors"));
  EXPECT_NE(error_of([&] {
              MedusaHeads::from_file(fixture("tiny_heads.safetensors"), other);
            }).find("heads file: made for another target"),
            std::string::npos);
  std::vector<uint8_t> junk = {1, 2, 3};
  EXPECT_EQ(error_of([&] { load(junk, target()); }).rfind("heads file: ", 0), 0u);
  // A proposer over another model's source is refused too.
  ModelSource wrong(other);
  EXPECT_EQ(error_of([&] { HeadsProposer(tiny_heads(), wrong); }),
            "heads: loaded for another target model than the decoder's");
}

// One decode; the source may be reused across calls (its cache follows each new sequence).
DecodeResult decode_with_heads(ModelSource& source, const MedusaHeads& heads,
                               const std::vector<int>& prompt, DecoderOptions opt, Rng& rng) {
  HeadsProposer proposer(heads, source);
  SpeculativeDecoder dec(source, {&proposer}, prompt, opt);
  return decode_to_end(dec, rng);
}

TEST_F(HeadsTest, GreedyHeadsEqualGreedyPlain) {
  const std::vector<int> prompt = encode("ROMEO: hello");
  DecoderOptions plain;
  plain.plain = true;
  plain.sampling.temperature = 0.0f;
  plain.max_new_tokens = 60;
  Rng r0(1);
  ModelSource source(target());
  SpeculativeDecoder ref(source, nullptr, prompt, plain);
  while (!ref.done()) ref.step(r0);
  const MedusaHeads token_heads =
      MedusaHeads::from_file(fixture("tiny_heads_token.safetensors"), target());
  for (std::vector<int> branches : {std::vector<int>{}, {2, 2}, {3, 2, 1}}) {
    for (const MedusaHeads* h : {&tiny_heads(), &token_heads}) {
      DecoderOptions opt = plain;
      opt.plain = false;
      opt.gamma = 3;
      opt.tree_branches = branches;
      Rng rng(2);
      ModelSource s(target());
      DecodeResult r = decode_with_heads(s, *h, prompt, opt, rng);
      EXPECT_EQ(r.tokens, ref.generated()) << branches.size();
      EXPECT_EQ(r.stats.by_drafter[static_cast<int>(Drafter::kNone)], 1u);  // the first step only
      EXPECT_GT(r.stats.by_drafter[static_cast<int>(Drafter::kHeads)], 0u);
    }
  }
}

TEST_F(HeadsTest, FirstThreeTokensFollowTheTarget) {
  const std::vector<int> prompt = encode("ROMEO: hello");
  SamplingParams sp{1.0f, 3, 1.0f};
  // The exact law of the first three tokens with top-k 3 (27 cells), from the target alone.
  const auto exact = testing::exact_joint(prompt, sp, [&](const std::vector<int>& seq) {
    ModelSource s(target());
    ProbMatrix p = s.next_token_probs(seq, 1);
    Distribution row = xt::zeros<float>({p.shape()[1]});
    std::copy(p.data(), p.data() + p.shape()[1], row.data());
    return row;
  });
  std::map<std::vector<int>, size_t> index;
  std::vector<double> probs;
  for (auto& [seq, p] : exact) {
    index[seq] = probs.size();
    probs.push_back(p);
  }
  const MedusaHeads token_heads =
      MedusaHeads::from_file(fixture("tiny_heads_token.safetensors"), target());
  for (std::vector<int> branches : {std::vector<int>{}, {2, 2}}) {
    for (bool without : {true, false}) {
      if (branches.empty() && !without) continue;
      // the token-input heads on the tree drawn with replacement
      const MedusaHeads& heads = branches.size() && !without ? token_heads : tiny_heads();
      DecoderOptions opt;
      opt.gamma = 3;
      opt.sampling = sp;
      opt.max_new_tokens = 3;
      opt.tree_branches = branches;
      opt.tree_without_replacement = without;
      std::vector<uint64_t> counts(probs.size(), 0);
      Rng rng(31);
      size_t heads_iterations = 0;
      ModelSource source(target());
      for (int run = 0; run < 25000; ++run) {
        DecodeResult r = decode_with_heads(source, heads, prompt, opt, rng);
        auto it = index.find(r.tokens);
        ASSERT_NE(it, index.end());
        ++counts[it->second];
        heads_iterations += r.stats.by_drafter[static_cast<int>(Drafter::kHeads)];
      }
      EXPECT_GT(heads_iterations, 12500u);  // the heads really drafted
      auto chi = chi_square(counts, probs);
      EXPECT_GT(chi.p_value, kFalseAlarm)
          << "branches " << branches.size() << " without " << without << " chi2=" << chi.stat;
    }
  }
}

// Heads drafting for an external target (a GPU model, answered by the caller): the answer
// carries the target's hidden states, and the iterations are the built-in target's, bit for
// bit (chain and tree, sampled); without the hidden states the answer is refused by name.
TEST_F(HeadsTest, AnExternalTargetHandsOverItsHiddenStates) {
  const std::vector<int> prompt = encode("ROMEO: hello");
  for (std::vector<int> branches : {std::vector<int>{}, {2, 2}}) {
    DecoderOptions opt;
    opt.gamma = 3;
    opt.tree_branches = branches;
    opt.sampling.temperature = 0.8f;
    opt.max_new_tokens = 40;
    ModelSource builtin(target());
    HeadsProposer ref_heads(tiny_heads(), builtin);
    SpeculativeDecoder ref(builtin, {&ref_heads}, prompt, opt);
    Rng r0(5);
    std::vector<IterationRecord> want;
    while (!ref.done()) want.push_back(ref.step(r0));

    ModelSource answer(target());
    ExternalSource ext("targetScore", target().config().block_size, true);
    HeadsProposer ext_heads(tiny_heads(), ext);
    SpeculativeDecoder dec(ext, {&ext_heads}, prompt, opt);
    Rng r1(5);
    std::vector<IterationRecord> got;
    size_t asked = 0;
    while (!dec.done()) {
      while (const ExternalQuery* q = dec.advance(r1)) {
        ASSERT_EQ(q->hidden_width, static_cast<size_t>(target().config().n_embd));
        ProbMatrix rows;
        if (q->tree) {
          DraftTree t;
          for (size_t v = 0; v < q->tree_tokens.size(); ++v)
            t.add(q->tree_parents[v], q->tree_tokens[v]);
          rows = answer.tree_probs(q->tokens, t, q->first, q->with_root);
        } else {
          rows = answer.next_token_probs(q->tokens, q->n_last);
        }
        std::vector<float> hidden;
        for (size_t i = 0; i < answer.hidden_rows(); ++i) {
          const float* h = answer.hidden_row(i);
          hidden.insert(hidden.end(), h, h + q->hidden_width);
        }
        if (asked++ == 1) {  // once: an answer without its hidden states
          EXPECT_NE(error_of([&] {
                      dec.supply(rows, false);
                    }).find("targetScore: heads draft from the target's hidden states"),
                    std::string::npos);
        }
        dec.supply(std::move(rows), false, std::move(hidden));
      }
      got.push_back(dec.finish(r1));
    }
    ASSERT_EQ(got.size(), want.size()) << branches.size();
    size_t by_heads = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].tree.token, want[i].tree.token) << i;
      EXPECT_EQ(got[i].emitted, want[i].emitted) << i;
      by_heads += got[i].drafter == Drafter::kHeads;
    }
    EXPECT_GT(by_heads, 0u);
  }
}

}  // namespace
}  // namespace specdec
