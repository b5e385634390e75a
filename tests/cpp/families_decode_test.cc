// Speculative decoding between two models of one family sharing a vocabulary: a random tiny
// Llama target (2 layers, grouped-query attention) and a smaller Llama draft (1 layer, other
// head shapes), both built in memory as checkpoints and loaded by GPTModel::from_checkpoint.
// Exactness: the joint law of the first three emitted tokens equals plain sampling from the
// target (chi-square, false-alarm probability 1e-6), and greedy speculation equals greedy
// decoding.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/gpt_model.h"
#include "model/model_source.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"
#include "test_util.h"

namespace specdec {
namespace {

constexpr int kVocab = 4;  // 4^3 = 64 cells for the first three tokens

struct Shape {
  int n_layer, n_embd, n_head, n_kv_head, head_dim, n_ff;
};

// A random Llama checkpoint of this shape (F32, untied head), seeded.
Checkpoint random_llama(const Shape& s, uint64_t seed) {
  Checkpoint ck;
  FamilyConfig& c = ck.config;
  c.family = Family::kLlama;
  c.vocab_size = kVocab;
  c.n_layer = s.n_layer;
  c.n_embd = s.n_embd;
  c.n_head = s.n_head;
  c.n_kv_head = s.n_kv_head;
  c.head_dim = s.head_dim;
  c.n_ff = s.n_ff;
  c.max_positions = 64;
  Rng rng(seed);
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, float scale, float base) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> v(n);
    for (float& x : v) x = base + scale * static_cast<float>(2.0 * rng.uniform() - 1.0);
    std::vector<uint8_t> bytes(n * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    ck.owned.push_back(std::move(bytes));
    ck.tensors[name] = {TensorType::kF32,       shape, ck.owned.back().data(),
                        ck.owned.back().size(), {},    {}};
  };
  const uint64_t C = s.n_embd, Q = s.n_head * s.head_dim, KV = s.n_kv_head * s.head_dim;
  add("model.embed_tokens.weight", {kVocab, C}, 1.0f, 0.0f);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {C}, 0.2f, 1.0f);
    add(p + "self_attn.q_proj.weight", {Q, C}, 0.5f, 0.0f);
    add(p + "self_attn.k_proj.weight", {KV, C}, 0.5f, 0.0f);
    add(p + "self_attn.v_proj.weight", {KV, C}, 0.5f, 0.0f);
    add(p + "self_attn.o_proj.weight", {C, Q}, 0.5f, 0.0f);
    add(p + "post_attention_layernorm.weight", {C}, 0.2f, 1.0f);
    add(p + "mlp.gate_proj.weight", {uint64_t(s.n_ff), C}, 0.5f, 0.0f);
    add(p + "mlp.up_proj.weight", {uint64_t(s.n_ff), C}, 0.5f, 0.0f);
    add(p + "mlp.down_proj.weight", {C, uint64_t(s.n_ff)}, 0.5f, 0.0f);
  }
  add("model.norm.weight", {C}, 0.2f, 1.0f);
  add("lm_head.weight", {kVocab, C}, 0.3f, 0.0f);
  return ck;
}

class LlamaPair : public ::testing::Test {
 protected:
  LlamaPair()
      : target_(GPTModel::from_checkpoint(random_llama({2, 32, 4, 2, 8, 64}, 1))),
        draft_(GPTModel::from_checkpoint(random_llama({1, 16, 2, 1, 8, 32}, 2))) {}
  GPTModel target_, draft_;
};

TEST_F(LlamaPair, JointOfFirstThreeTokensMatchesTargetSampling) {
  const std::vector<int> prompt = {1, 3, 0};
  // The exact joint law: p(a | prompt) p(b | prompt a) p(c | prompt a b), from the target.
  ModelSource exact(target_);
  std::vector<double> probs(64, 0.0);
  const auto p0 = exact.next_token_probs(prompt, 1);
  for (int a = 0; a < kVocab; ++a) {
    std::vector<int> pa = prompt;
    pa.push_back(a);
    const auto p1 = exact.next_token_probs(pa, 1);
    for (int b = 0; b < kVocab; ++b) {
      std::vector<int> pab = pa;
      pab.push_back(b);
      const auto p2 = exact.next_token_probs(pab, 1);
      for (int c = 0; c < kVocab; ++c) {
        probs[a * 16 + b * 4 + c] = double(p0(0, a)) * p1(0, b) * p2(0, c);
      }
    }
  }
  std::vector<uint64_t> counts(64, 0);
  Rng rng(4040);
  ModelSource target(target_), draft(draft_);
  size_t accepted = 0, drafted = 0;
  for (int run = 0; run < 20000; ++run) {
    const DecodeResult r = speculative_decode(prompt, target, draft, 2, 3, rng);
    ASSERT_EQ(r.tokens.size(), 3u);
    ++counts[r.tokens[0] * 16 + r.tokens[1] * 4 + r.tokens[2]];
    accepted += r.stats.accepted;
    drafted += r.stats.drafted;
  }
  const auto chi = testing::chi_square(counts, probs);
  EXPECT_EQ(chi.impossible, "");
  EXPECT_GT(chi.p_value, testing::kFalseAlarm) << "chi2=" << chi.stat << " dof=" << chi.dof;
  // The draft is a different model: some but not all of its tokens are accepted.
  EXPECT_GT(accepted, 0u);
  EXPECT_LT(accepted, drafted);
  std::printf("[ info ] llama pair: alpha ~ %.3f over %zu drafted tokens\n",
              double(accepted) / drafted, drafted);
}

TEST_F(LlamaPair, GreedySpeculationEqualsGreedyDecoding) {
  const SamplingParams greedy{0.0f, 0, 1.0f};
  for (int gamma : {1, 3, 5}) {
    Rng a(1), b(2);
    ModelSource t1(target_), d1(draft_), t2(target_);
    const DecodeResult spec = speculative_decode({2, 1}, t1, d1, gamma, 40, a, greedy);
    const DecodeResult plain = autoregressive_decode({2, 1}, t2, 40, b, greedy);
    EXPECT_EQ(spec.tokens, plain.tokens) << "gamma " << gamma;
  }
}

}  // namespace
}  // namespace specdec
