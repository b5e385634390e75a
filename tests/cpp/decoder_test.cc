#include "specdec/decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "base/errors.h"
#include "test_util.h"
#include "toy_models.h"

namespace specdec {
namespace {

using testing::error_of;

using testing::chi_square;
using testing::dist;
using testing::exact_joint;
using testing::kFalseAlarm;
using testing::toy_draft;
using testing::toy_target;

// The lesson's toy decode: 12 tokens from the context-free pair, gamma 4.
TEST(Decoder, LessonToyDemoShape) {
  auto target = [](const std::vector<int>&) {
    return dist({0.4f, 0.25f, 0.15f, 0.1f, 0.06f, 0.04f});
  };
  auto draft = [](const std::vector<int>&) { return dist({0.3f, 0.3f, 0.2f, 0.1f, 0.06f, 0.04f}); };
  Rng rng(1);
  DecodeResult r = speculative_decode({0}, target, draft, 4, 12, rng);
  ASSERT_EQ(r.tokens.size(), 12u);
  size_t total = 0;
  for (size_t i = 0; i < r.trace.size(); ++i) {
    const IterationTrace& t = r.trace[i];
    EXPECT_EQ(t.proposed.size(), 4u);
    if (i + 1 < r.trace.size()) {
      EXPECT_EQ(t.emitted.size(), size_t(t.n_accepted) + 1);
    }
    for (size_t k = 0; k < size_t(t.n_accepted) && k < t.emitted.size(); ++k) {
      EXPECT_EQ(t.emitted[k], t.proposed[k]);
    }
    total += t.emitted.size();
  }
  EXPECT_EQ(total, 12u);
  EXPECT_EQ(r.stats.target_passes, r.trace.size());
}

TEST(Decoder, ExactlyMaxNewTokensComeOut) {
  for (size_t budget : {1, 2, 3, 5, 7, 11, 30}) {
    for (int gamma : {1, 3, 8}) {
      Rng rng(budget * 100 + gamma);
      DecodeResult r = speculative_decode({1, 2}, toy_target, toy_draft, gamma, budget, rng);
      EXPECT_EQ(r.tokens.size(), budget) << "gamma " << gamma;
      EXPECT_EQ(r.stats.generated, budget);
    }
  }
}

struct JointCase {
  const char* name;
  int gamma;
  SamplingParams sampling;
};
void PrintTo(const JointCase& c, std::ostream* os) { *os << c.name; }

// The central promise: the joint law of the first 3 emitted tokens of speculative decoding is
// the law of plain autoregressive sampling from the target. 100,000 runs per case; chi-square
// over the 64 cells with false-alarm probability 1e-6. Also checks plain decoding itself.
class DecoderExactness : public ::testing::TestWithParam<JointCase> {};

TEST_P(DecoderExactness, JointOfFirstThreeTokensMatchesPlainSampling) {
  const JointCase& c = GetParam();
  const std::vector<int> prompt = {2, 0, 1};
  const std::vector<double> probs = testing::dense_joint(exact_joint(prompt, c.sampling));
  auto index = [&](const std::vector<int>& seq) {
    return static_cast<size_t>(seq[0] * 16 + seq[1] * 4 + seq[2]);
  };
  for (bool plain : {false, true}) {
    std::vector<uint64_t> counts(64, 0);
    Rng rng(4242 + c.gamma);
    for (int run = 0; run < 100000; ++run) {
      DecodeResult r =
          plain ? autoregressive_decode(prompt, toy_target, 3, rng, c.sampling)
                : speculative_decode(prompt, toy_target, toy_draft, c.gamma, 3, rng, c.sampling);
      ++counts[index(r.tokens)];
    }
    auto chi = chi_square(counts, probs);
    EXPECT_EQ(chi.impossible, "") << (plain ? "plain" : "speculative");
    EXPECT_GT(chi.p_value, kFalseAlarm)
        << (plain ? "plain" : "speculative") << " chi2=" << chi.stat << " dof=" << chi.dof;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, DecoderExactness,
                         ::testing::Values(JointCase{"gamma1", 1, {}}, JointCase{"gamma2", 2, {}},
                                           JointCase{"gamma4", 4, {}},
                                           JointCase{"temperature07_topk3", 3, {0.7f, 3, 1.0f}},
                                           JointCase{"temperature15_topp08", 2, {1.5f, 0, 0.8f}}),
                         [](const auto& info) { return info.param.name; });

TEST(Decoder, GreedySpeculativeEqualsGreedyPlain) {
  SamplingParams greedy{0.0f, 0, 1.0f};
  for (int gamma : {1, 2, 4, 7}) {
    Rng a(1), b(2);  // greedy draws nothing: seeds do not matter
    DecodeResult spec = speculative_decode({3, 1}, toy_target, toy_draft, gamma, 200, a, greedy);
    DecodeResult plain = autoregressive_decode({3, 1}, toy_target, 200, b, greedy);
    EXPECT_EQ(spec.tokens, plain.tokens) << "gamma " << gamma;
    EXPECT_LT(spec.stats.target_passes, plain.stats.target_passes);
  }
}

TEST(Decoder, SelfDraftAcceptsEverything) {
  Rng rng(8);
  DecodeResult r = speculative_decode({0}, toy_target, toy_target, 5, 60, rng);
  EXPECT_EQ(r.stats.accepted, r.stats.drafted);
  for (size_t i = 0; i + 1 < r.trace.size(); ++i) {
    EXPECT_EQ(r.trace[i].emitted.size(), 6u);
  }
  EXPECT_EQ(r.stats.target_passes, 10u);  // 60 tokens, 6 per pass
}

TEST(Decoder, SameSeedReplaysTheSameTokens) {
  Rng a(5), b(5), c(6);
  auto ra = speculative_decode({1}, toy_target, toy_draft, 3, 100, a);
  auto rb = speculative_decode({1}, toy_target, toy_draft, 3, 100, b);
  auto rc = speculative_decode({1}, toy_target, toy_draft, 3, 100, c);
  EXPECT_EQ(ra.tokens, rb.tokens);
  EXPECT_NE(ra.tokens, rc.tokens);
}

// A source with a context window that records what it was asked.
class WindowSource : public DistributionSource {
 public:
  explicit WindowSource(size_t window) : window_(window) {}
  ProbMatrix next_token_probs(const std::vector<int>& tokens, size_t n_last) override {
    EXPECT_LE(tokens.size(), window_);
    calls.push_back(n_last);
    StepFunctionSource inner(toy_target);
    return inner.next_token_probs(tokens, n_last);
  }
  size_t max_context() const override { return window_; }
  std::vector<size_t> calls;

 private:
  size_t window_;
};

TEST(Decoder, OneTargetCallPerIterationAndTheContextWindowIsRespected) {
  WindowSource target(20), draft(20);
  DecoderOptions opt;
  opt.gamma = 4;
  SpeculativeDecoder dec(target, &draft, {1, 2, 3}, opt);
  Rng rng(3);
  size_t iterations = 0;
  while (!dec.done()) {
    IterationRecord rec = dec.step(rng);
    ++iterations;
    EXPECT_EQ(rec.target_probs.shape()[0], rec.tree.size() + 1);
    EXPECT_EQ(target.calls.back(), rec.tree.size() + 1);  // ONE call over g + 1 positions
    EXPECT_LE(rec.tree.size(), 4u);
  }
  EXPECT_EQ(target.calls.size(), iterations);
  EXPECT_EQ(dec.stats().target_passes, iterations);
  EXPECT_GT(dec.tokens().size(), 20u);  // filled: the last step may append a bonus past it
  EXPECT_LE(dec.tokens().size(), 21u);
  EXPECT_THROW(dec.step(rng), Error);
}

TEST(Decoder, StatsCountPerPosition) {
  DecoderOptions opt;
  opt.gamma = 3;
  StepFunctionSource t(toy_target), d(toy_draft);
  SpeculativeDecoder dec(t, &d, {0}, opt);
  Rng rng(12);
  for (int i = 0; i < 200; ++i) dec.step(rng);
  const DecoderStats& s = dec.stats();
  EXPECT_EQ(s.iterations, 200u);
  EXPECT_EQ(s.drafted, 600u);
  EXPECT_EQ(s.reached_at[0], 200u);
  size_t accepted = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_LE(s.accepted_at[i], s.reached_at[i]);
    if (i > 0) {
      EXPECT_EQ(s.reached_at[i], s.accepted_at[i - 1]);
    }
    accepted += s.accepted_at[i];
  }
  EXPECT_EQ(accepted, s.accepted);
  EXPECT_EQ(s.examined, s.reached_at[0] + s.reached_at[1] + s.reached_at[2]);
  EXPECT_DOUBLE_EQ(s.acceptance_rate(), double(s.accepted) / s.examined);
  EXPECT_EQ(s.generated, dec.tokens().size() - 1);
  EXPECT_NEAR(s.tokens_per_pass(), double(s.generated) / 200, 1e-12);
}

TEST(Decoder, PlainDecodingHasTheSameRecordShape) {
  DecoderOptions opt;
  opt.plain = true;
  StepFunctionSource t(toy_target);
  SpeculativeDecoder dec(t, nullptr, {0}, opt);
  Rng rng(1);
  IterationRecord rec = dec.step(rng);
  EXPECT_TRUE(rec.tree.token.empty());
  EXPECT_EQ(rec.target_probs.shape()[0], 1u);
  EXPECT_EQ(rec.emitted.size(), 1u);
  EXPECT_EQ(dec.stats().target_passes, 1u);
}

TEST(Decoder, BadInputThrowsClearErrors) {
  StepFunctionSource t(toy_target), d(toy_draft);
  DecoderOptions opt;
  EXPECT_EQ(error_of([&] { SpeculativeDecoder(t, &d, {}, opt); }),
            "prompt: must hold at least one token");
  opt.gamma = 0;
  EXPECT_EQ(error_of([&] { SpeculativeDecoder(t, &d, {0}, opt); }),
            "gamma: must be in 1..32, got 0");
  opt.gamma = 33;
  EXPECT_EQ(error_of([&] { SpeculativeDecoder(t, &d, {0}, opt); }),
            "gamma: must be in 1..32, got 33");
  opt.gamma = 4;
  opt.sampling.temperature = -1;
  EXPECT_EQ(error_of([&] { SpeculativeDecoder(t, &d, {0}, opt); }),
            "temperature: must be a finite number >= 0, got -1");
  opt.sampling.temperature = 1;
  EXPECT_EQ(error_of([&] { SpeculativeDecoder(t, nullptr, {0}, opt); }),
            "draft: required unless plain decoding, prompt lookup or heads is asked for");
  WindowSource small(4);
  EXPECT_EQ(error_of([&] {
              SpeculativeDecoder(small, &small, {1, 2, 3, 4, 5}, opt);
            }),
            "prompt: 5 tokens exceed the model context of 4 tokens");
  Rng rng(1);
  EXPECT_EQ(error_of([&] { speculative_decode({0}, toy_target, toy_draft, 4, 0, rng); }),
            "maxTokens: must be >= 1, got 0");

  auto unnormalised = [](const std::vector<int>&) { return dist({0.5f, 0.2f, 0.2f, 0.2f}); };
  EXPECT_EQ(error_of([&] { speculative_decode({0}, unnormalised, toy_draft, 4, 5, rng); }),
            "target distribution: probabilities sum to 1.1, not 1 (tolerance 0.001)");
  auto small_vocab = [](const std::vector<int>&) { return dist({0.5f, 0.5f}); };
  EXPECT_EQ(error_of([&] { speculative_decode({0}, toy_target, small_vocab, 4, 5, rng); }),
            "draft and target vocabularies differ: 2 vs 4");
}

// The overhead tests' set-up: prompt lookup alone (gamma 3) on a prompt that repeats itself, so
// that lookup finds drafts in it.
const std::vector<int> kRepeatingPrompt = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1};
DecoderOptions lookup_options(int max_new_tokens) {
  DecoderOptions opt;
  opt.lookup = true;
  opt.gamma = 3;
  opt.max_new_tokens = max_new_tokens;
  return opt;
}

// Each iteration's time outside its passes is charged to whoever drafted it (the policy weighs
// a drafter's own overhead): prompt lookup's iterations and plain steps are counted apart. The
// first iteration (its pass includes the prompt) and the last (recorded when the next begins)
// leave no sample.
TEST(Decoder, OverheadIsChargedToTheIterationsDrafter) {
  StepFunctionSource target(toy_target);
  SpeculativeDecoder dec(target, nullptr, kRepeatingPrompt, lookup_options(24));
  Rng rng(5);
  std::vector<Drafter> order;
  while (!dec.done()) order.push_back(dec.step(rng).drafter);
  std::map<Drafter, size_t> ran;
  for (size_t i = 1; i + 1 < order.size(); ++i) ++ran[order[i]];
  ASSERT_LT(order.size(), 32u);
  EXPECT_GT(ran[Drafter::kLookup], 0u);
  EXPECT_EQ(dec.policy().overhead_samples(Drafter::kLookup), ran[Drafter::kLookup]);
  EXPECT_EQ(dec.policy().overhead_samples(Drafter::kNone), ran[Drafter::kNone]);
  EXPECT_EQ(dec.policy().overhead_samples(Drafter::kDraftModel), 0u);
}

// A pass that takes longer than its k's estimate because the iteration before left rejected
// tokens (the cache cut back, paid by the next call) is charged to that iteration's drafter:
// the same run (fixed gamma: timing changes no choice) with and without 8 ms on every third of
// those passes (rare enough that v(k), a median, does not absorb them).
TEST(Decoder, ThePassAfterARejectionIsChargedToTheDrafterThatLeftIt) {
  auto lookup_overhead = [](bool slow_cuts) {
    bool slow = false;  // the next pass pays for a cut
    StepFunctionSource target([&](const std::vector<int>& seq) {
      if (slow) {
        slow = false;
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(8)) {
        }
      }
      return toy_target(seq);
    });
    SpeculativeDecoder dec(target, nullptr, kRepeatingPrompt, lookup_options(60));
    Rng rng(7);
    size_t rejected = 0;
    while (!dec.done()) {
      const IterationRecord rec = dec.step(rng);
      const bool cut =
          rec.drafter != Drafter::kNone && rec.tree_verify.path.size() < rec.tree.size();
      rejected += cut;
      slow = slow_cuts && cut && rejected % 3 == 0;
    }
    EXPECT_GE(rejected, 8u);
    EXPECT_GE(dec.policy().overhead_samples(Drafter::kLookup), 8u);
    return dec.policy().overhead_ms(Drafter::kLookup);
  };
  EXPECT_GT(lookup_overhead(true), lookup_overhead(false) + 0.8);
}

}  // namespace
}  // namespace specdec

namespace specdec {
namespace {

// A stop token ends generation where it first comes out, even inside a burst: the tokens are
// the run without stops cut after it (the same seed draws the same tokens), the record that
// carries it says stopped, and the decoder is done.
TEST(Decoder, AStopTokenEndsTheRunWhereItComesOut) {
  struct Case {
    const char* name;
    bool plain;
    int gamma;
  };
  for (const Case c : {Case{"plain", true, 4}, Case{"gamma 1", false, 1}, Case{"gamma 4", false, 4},
                       Case{"gamma 8", false, 8}}) {
    StepFunctionSource t(toy_target), d(toy_draft);
    DecoderOptions opt;
    opt.plain = c.plain;
    opt.gamma = c.gamma;
    opt.max_new_tokens = 60;
    auto run = [&](const std::vector<int>& stop, std::vector<bool>* stopped) {
      opt.stop_tokens = stop;
      SpeculativeDecoder dec(t, c.plain ? nullptr : &d, {1, 2}, opt);
      Rng rng(17);
      while (!dec.done()) stopped->push_back(dec.step(rng).stopped);
      return dec.generated();
    };
    std::vector<bool> ignored, stopped;
    const std::vector<int> all = run({}, &ignored);
    ASSERT_EQ(all.size(), 60u) << c.name;
    // The token whose first appearance is latest, so that the cut is inside the run.
    size_t cut = 0;
    for (int tok = 0; tok < 4; ++tok) {
      const size_t first = std::find(all.begin(), all.end(), tok) - all.begin();
      if (first < all.size()) cut = std::max(cut, first);
    }
    ASSERT_GT(cut, 0u) << c.name;
    const std::vector<int> got = run({all[cut], 99}, &stopped);
    EXPECT_EQ(got, std::vector<int>(all.begin(), all.begin() + cut + 1)) << c.name;
    ASSERT_FALSE(stopped.empty());
    EXPECT_TRUE(stopped.back()) << c.name;
    EXPECT_EQ(std::count(stopped.begin(), stopped.end(), true), 1) << c.name;
  }
  StepFunctionSource t(toy_target);
  DecoderOptions opt;
  opt.plain = true;
  opt.stop_tokens = {2, -1};
  EXPECT_EQ(error_of([&] { SpeculativeDecoder(t, nullptr, {0}, opt); }),
            "stopTokens[1]: a token id is >= 0, got -1");
  opt.stop_tokens.assign(kMaxStopTokens + 1, 3);
  EXPECT_EQ(error_of([&] { SpeculativeDecoder(t, nullptr, {0}, opt); }),
            "stopTokens: at most 256 tokens, got 257");
}

}  // namespace
}  // namespace specdec

namespace specdec {
namespace {

using testing::SizedSource;

// The toy draft over `width` ids: wider rows put 20% of the mass on ids the target lacks,
// narrower ones lose the last ids (then renormalised by the decoder).
Distribution padded_draft(const std::vector<int>& seq, size_t width) {
  const Distribution d = toy_draft(seq);
  Distribution out = xt::zeros<float>({width});
  for (size_t i = 0; i < std::min<size_t>(width, 4); ++i) out[i] = d[i] * (width > 4 ? 0.8f : 1.0f);
  for (size_t i = 4; i < width; ++i) out[i] = 0.2f / static_cast<float>(width - 4);
  float mass = 0;
  for (float v : out) mass += v;
  return out / mass;
}

// Draft and target whose vocab_size differ by padding (fit_draft_rows): the draft's rows are
// cut or padded to the target's width, and the first three tokens still follow the target's
// law exactly (chi-square as DecoderExactness); without the option the widths are refused. The
// narrower draft, like a model, refuses ids past its own: it is shown 0 in place of the
// target's id 3.
TEST(Decoder, PaddedDraftVocabulariesAreFittedAndStayExact) {
  const std::vector<int> prompt = {2, 0, 1};
  const std::vector<double> probs = testing::dense_joint(exact_joint(prompt, {}));
  for (size_t width : {6, 3}) {
    SizedSource target(toy_target, 4);
    size_t shown_zero = 0;
    SizedSource draft(
        [width, &shown_zero](const std::vector<int>& s) {
          for (int t : s) {
            if (static_cast<size_t>(t) >= width) fail("draft: token ", t, " outside its vocab");
          }
          shown_zero += s.back() == 0;
          return padded_draft(s, width);
        },
        width);
    DecoderOptions opt;
    opt.gamma = 3;
    opt.max_new_tokens = 3;
    opt.fit_draft_rows = true;
    std::vector<uint64_t> counts(64, 0);
    Rng rng(99 + width);
    size_t accepted = 0;
    for (int run = 0; run < 40000; ++run) {
      SpeculativeDecoder dec(target, &draft, prompt, opt);
      while (!dec.done()) dec.step(rng);
      const std::vector<int> g = dec.generated();
      ++counts[static_cast<size_t>(g[0] * 16 + g[1] * 4 + g[2])];
      accepted += dec.stats().accepted;
    }
    auto chi = chi_square(counts, probs);
    EXPECT_EQ(chi.impossible, "") << "draft width " << width;
    EXPECT_GT(chi.p_value, kFalseAlarm) << "draft width " << width << " chi2=" << chi.stat;
    EXPECT_GT(accepted, 10000u) << "draft width " << width;  // the draft did draft
    EXPECT_GT(shown_zero, 0u);
    opt.fit_draft_rows = false;  // refused up front (PairsOfOtherVocabularies)
    EXPECT_NE(error_of([&] { SpeculativeDecoder(target, &draft, prompt, opt); }), "");
  }
  StepFunctionSource unsized(toy_target), draft(toy_draft);
  DecoderOptions opt;
  opt.fit_draft_rows = true;
  EXPECT_EQ(error_of([&] { SpeculativeDecoder(unsized, &draft, prompt, opt); }),
            "fitDraftRows: needs a built-in target model (its vocabulary known before its first "
            "pass)");
}

}  // namespace
}  // namespace specdec
