// Sources answered by the caller (ExternalSource + advance / supply / finish): the same
// iterations as step() with sources that answer themselves, bit for bit, in every mode that
// combines with them; resuming an unanswered query; logits; clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/errors.h"
#include "model/gpt_model.h"
#include "model/model_source.h"
#include "specdec/decoder.h"
#include "test_util.h"
#include "toy_models.h"

namespace specdec {
namespace {

using testing::error_of;

std::string fixture(const std::string& name) {
  return std::string(SPECDEC_SOURCE_DIR) + "/tests/fixtures/" + name;
}

const GPTModel& tiny_target() {
  static const GPTModel m = GPTModel::from_file(fixture("tiny_f32.safetensors"));
  return m;
}
const GPTModel& tiny_draft() {
  static const GPTModel m = GPTModel::from_file(fixture("tiny_f16.safetensors"));
  return m;
}

// Runs dec to its end, handing a copy of each query it asks to answer(query, rng), which supplies
// the rows; returns the iterations.
template <typename Answer>
std::vector<IterationRecord> answer_queries(SpeculativeDecoder& dec, uint64_t seed, Answer answer) {
  Rng rng(seed);
  std::vector<IterationRecord> out;
  while (!dec.done()) {
    while (const ExternalQuery* q = dec.advance(rng)) answer(ExternalQuery(*q), rng);
    out.push_back(dec.finish(rng));
  }
  return out;
}

// Runs a decoder whose external sources are answered by `target_answer` / `draft_answer`
// (each its own ModelSource), asking every query twice before answering it (the second
// advance() must return the same query: a caller that gave up and came back).
std::vector<IterationRecord> run_external(const DecoderOptions& o, bool external_target,
                                          bool external_draft, uint64_t seed) {
  ModelSource target_model(tiny_target()), draft_model(tiny_draft());
  ExternalSource target_ext("targetScore", tiny_target().config().block_size);
  ExternalSource draft_ext("draftScore", tiny_draft().config().block_size);
  DistributionSource& target =
      external_target ? static_cast<DistributionSource&>(target_ext) : target_model;
  DistributionSource* draft = o.plain || o.lookup ? nullptr
                              : external_draft    ? static_cast<DistributionSource*>(&draft_ext)
                                                  : &draft_model;
  SpeculativeDecoder dec(target, draft, {1, 2, 3}, o);
  return answer_queries(dec, seed, [&](const ExternalQuery& first, Rng& rng) {
    const ExternalQuery* again = dec.advance(rng);
    EXPECT_TRUE(again && again->tokens == first.tokens && again->n_last == first.n_last);
    ModelSource& answer = first.target ? target_model : draft_model;
    EXPECT_EQ(first.source, first.target ? "targetScore" : "draftScore");
    dec.supply(answer.next_token_probs(first.tokens, first.n_last), false);
  });
}

// A tree query's tree, rebuilt from its tokens and parents.
DraftTree tree_of(const ExternalQuery& q) {
  DraftTree t;
  for (size_t v = 0; v < q.tree_tokens.size(); ++v) t.add(q.tree_parents[v], q.tree_tokens[v]);
  return t;
}

// As run_external, with sources that score trees (answered by tree_probs when asked a tree);
// counts the tree queries each side got.
std::vector<IterationRecord> run_external_trees(const DecoderOptions& o, bool external_draft,
                                                uint64_t seed, size_t* target_trees,
                                                size_t* draft_trees) {
  ModelSource target_model(tiny_target()), draft_model(tiny_draft());
  ExternalSource target_ext("targetScore", tiny_target().config().block_size, true);
  ExternalSource draft_ext("draftScore", tiny_draft().config().block_size, true);
  DistributionSource* draft =
      external_draft ? static_cast<DistributionSource*>(&draft_ext) : &draft_model;
  SpeculativeDecoder dec(target_ext, draft, {1, 2, 3}, o);
  return answer_queries(dec, seed, [&](const ExternalQuery& first, Rng&) {
    ModelSource& answer = first.target ? target_model : draft_model;
    if (first.tree) {
      ++*(first.target ? target_trees : draft_trees);
      const DraftTree t = tree_of(first);
      EXPECT_EQ(first.n_last, (first.with_root ? 1u : 0u) + t.size() - first.first);
      EXPECT_EQ(first.with_root, first.target);  // the draft asks for a depth's nodes only
      dec.supply(answer.tree_probs(first.tokens, t, first.first, first.with_root), false);
    } else {
      dec.supply(answer.next_token_probs(first.tokens, first.n_last), false);
    }
  });
}

std::vector<IterationRecord> run_builtin(const DecoderOptions& o, uint64_t seed) {
  ModelSource target(tiny_target()), draft(tiny_draft());
  SpeculativeDecoder dec(target, o.plain || o.lookup ? nullptr : &draft, {1, 2, 3}, o);
  Rng rng(seed);
  std::vector<IterationRecord> out;
  while (!dec.done()) out.push_back(dec.step(rng));
  return out;
}

void expect_same(const std::vector<IterationRecord>& a, const std::vector<IterationRecord>& b,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tree.token, b[i].tree.token) << what << " iteration " << i;
    EXPECT_EQ(a[i].emitted, b[i].emitted) << what << " iteration " << i;
    EXPECT_EQ(a[i].gamma, b[i].gamma) << what << " iteration " << i;
    EXPECT_EQ(a[i].drafter, b[i].drafter) << what << " iteration " << i;
    ASSERT_EQ(a[i].target_probs.size(), b[i].target_probs.size()) << what;
    for (size_t j = 0; j < a[i].target_probs.size(); ++j) {
      ASSERT_EQ(a[i].target_probs.data()[j], b[i].target_probs.data()[j]) << what;
    }
  }
}

struct ModeCase {
  const char* name;
  float temperature;
  bool plain, lookup, auto_gamma;
  int gamma;
};

TEST(External, SameIterationsAsBuiltInSourcesInEveryMode) {
  const ModeCase cases[] = {
      {"gamma 4, T 0.8", 0.8f, false, false, false, 4},
      {"gamma 3, greedy", 0.0f, false, false, false, 3},
      {"plain, T 1", 1.0f, true, false, false, 1},
      {"lookup, T 0.8", 0.8f, false, true, false, 3},
      {"auto with costs, T 0.8", 0.8f, false, false, true, 4},
  };
  for (const ModeCase& c : cases) {
    DecoderOptions o;
    o.gamma = c.gamma;
    o.sampling.temperature = c.temperature;
    o.plain = c.plain;
    o.lookup = c.lookup;
    o.max_new_tokens = 40;
    if (c.auto_gamma) {
      o.gamma_mode = GammaMode::kAuto;
      o.gamma_max = 6;
      o.has_cost_model = true;
      o.cost_model.c = 0.1;
      o.cost_model.v = {1.0, 1.1, 1.2, 1.3, 1.5, 1.7, 1.9};
    }
    const auto reference = run_builtin(o, 7);
    expect_same(run_external(o, true, true, 7), reference, std::string(c.name) + ", both external");
    expect_same(run_external(o, true, false, 7), reference,
                std::string(c.name) + ", target external");
    expect_same(run_external(o, false, true, 7), reference,
                std::string(c.name) + ", draft external");
  }
}

TEST(External, SourcesThatScoreTreesGetTreeQueriesAndGiveTheBuiltInIterations) {
  struct TreeCase {
    const char* name;
    float temperature;
    std::vector<int> branches;
    bool replacement;
  };
  const TreeCase cases[] = {
      {"tree 2x2x1, T 0.8", 0.8f, {2, 2, 1}, false},
      {"tree 3x1, greedy", 0.0f, {3, 1}, false},
      {"tree 2x2, T 1, with replacement", 1.0f, {2, 2}, true},
      {"chain as a tree 1x1x1, T 0.8", 0.8f, {1, 1, 1}, false},
  };
  for (const TreeCase& c : cases) {
    DecoderOptions o;
    o.sampling.temperature = c.temperature;
    o.tree_branches = c.branches;
    o.tree_without_replacement = !c.replacement;
    o.max_new_tokens = 30;
    const auto reference = run_builtin(o, 11);
    for (bool external_draft : {true, false}) {
      size_t target_trees = 0, draft_trees = 0;
      expect_same(run_external_trees(o, external_draft, 11, &target_trees, &draft_trees), reference,
                  std::string(c.name) + (external_draft ? ", both" : ", target"));
      const bool chain = c.branches == std::vector<int>{1, 1, 1};
      // A chain is asked as one sequence; every iteration of a tree drafts a tree.
      EXPECT_EQ(target_trees, chain ? 0u : reference.size()) << c.name;
      EXPECT_EQ(draft_trees > 0, external_draft && !chain && c.branches[0] > 1) << c.name;
    }
  }
}

TEST(External, QueriesAreOneTargetCallPerIterationAndOneDraftCallPerToken) {
  ExternalSource target("targetScore"), draft("draftScore");
  DecoderOptions o;
  o.gamma = 3;
  o.max_new_tokens = 20;
  SpeculativeDecoder dec(target, &draft, {0}, o);
  Rng rng(3);
  while (!dec.done()) {
    int target_queries = 0, draft_queries = 0;
    while (const ExternalQuery* q = dec.advance(rng)) {
      if (q->target) {
        ++target_queries;
        EXPECT_EQ(q->n_last, 4u);  // gamma + 1 positions in one call
        EXPECT_EQ(q->tokens.size(), dec.tokens().size() + 3);
      } else {
        ++draft_queries;
        EXPECT_EQ(q->n_last, 1u);
        EXPECT_EQ(q->tokens.size(), dec.tokens().size() + draft_queries - 1);
      }
      ProbMatrix rows = xt::zeros<float>({q->n_last, size_t{4}});
      for (size_t i = 0; i < q->n_last; ++i) {
        Distribution p = (q->target ? testing::toy_target : testing::toy_draft)(
            std::vector<int>(q->tokens.begin(), q->tokens.end() - q->n_last + 1 + i));
        std::copy(p.begin(), p.end(), rows.data() + i * 4);
      }
      dec.supply(rows, false);
    }
    dec.finish(rng);
    EXPECT_EQ(target_queries, 1);
    EXPECT_EQ(draft_queries, 3);
  }
}

TEST(External, LogitsAreSoftmaxedHere) {
  ExternalSource target("targetScore");
  DecoderOptions o;
  o.plain = true;
  o.max_new_tokens = 1;
  SpeculativeDecoder dec(target, nullptr, {0}, o);
  Rng rng(1);
  ASSERT_NE(dec.advance(rng), nullptr);
  ProbMatrix logits = {{1.0f, 2.0f, 3.0f, -100.0f}};
  dec.supply(logits, true);
  EXPECT_EQ(dec.advance(rng), nullptr);
  IterationRecord r = dec.finish(rng);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(-100.0);
  EXPECT_NEAR(r.target_probs(0, 0), std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(r.target_probs(0, 2), std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(r.target_probs(0, 3), 0.0, 1e-6);
}

std::string supply_error(ProbMatrix rows, bool logits) {
  ExternalSource target("targetScore");
  DecoderOptions o;
  o.plain = true;
  SpeculativeDecoder dec(target, nullptr, {0}, o);
  Rng rng(1);
  dec.advance(rng);
  return error_of([&] { dec.supply(rows, logits); });
}

TEST(External, BadRowsAreReportedByName) {
  const float nan = std::nanf(""), inf = INFINITY;
  struct Case {
    ProbMatrix rows;
    bool logits;
    const char* expect;
  } cases[] = {
      {{{0.5f, 0.5f}, {0.5f, 0.5f}}, false, "targetScore: returned 4 values, expected 1 rows"},
      {{{0.5f, nan}}, true, "targetScore: row 0 holds NaN at token 1"},
      {{{0.5f, inf}}, true, "targetScore: row 0 holds an infinite logit at token 1"},
      {{{-inf, 0.0f}}, true, "targetScore: row 0 holds an infinite logit at token 0"},
      {{{0.5f, 0.7f}}, false, "targetScore row 0"},
      {{{-0.5f, 1.5f}}, false, "targetScore row 0"},
  };
  for (const Case& c : cases) {
    const std::string e = supply_error(c.rows, c.logits);
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
  }
}

TEST(External, RowsKeepTheirWidthAcrossIterations) {
  ExternalSource target("targetScore");
  DecoderOptions o;
  o.plain = true;
  SpeculativeDecoder dec(target, nullptr, {0}, o);
  Rng rng(1);
  ASSERT_NE(dec.advance(rng), nullptr);
  dec.supply(ProbMatrix({{0.0f, 1.0f, 2.0f, 3.0f}}), true);
  ASSERT_EQ(dec.advance(rng), nullptr);
  dec.finish(rng);
  ASSERT_NE(dec.advance(rng), nullptr);
  EXPECT_NE(error_of([&] {
              dec.supply(ProbMatrix({{0.0f, 1.0f, 2.0f, 3.0f, 4.0f}}), true);
            }).find("targetScore: returned rows of 5 values, 4 before"),
            std::string::npos);
  EXPECT_NE(dec.query(), nullptr);  // still waiting: a right answer goes on
  dec.supply(ProbMatrix({{0.0f, 1.0f, 2.0f, 3.0f}}), true);
  EXPECT_EQ(dec.query(), nullptr);
}

TEST(External, MisuseIsRefusedClearly) {
  ExternalSource target("targetScore"), draft("draftScore");
  DecoderOptions o;
  o.gamma = 2;
  SpeculativeDecoder dec(target, &draft, {0}, o);
  Rng rng(1);
  EXPECT_NE(error_of([&] { dec.step(rng); }).find("draftScore: answered by the caller"),
            std::string::npos);
  EXPECT_TRUE(dec.in_iteration());  // the iteration waits; it is not lost
  EXPECT_NE(error_of([&] { dec.finish(rng); }).find("finish: the iteration is not ready"),
            std::string::npos);
  SpeculativeDecoder idle(target, &draft, {0}, o);
  EXPECT_NE(error_of([&] {
              idle.supply(ProbMatrix({{1.0f}}), false);
            }).find("supply: no query is waiting"),
            std::string::npos);

  DecoderOptions tree = o;
  tree.tree_branches = {2, 1};
  ModelSource model(tiny_draft());
  EXPECT_NE(error_of([&] { SpeculativeDecoder(target, &model, {0}, tree); })
                .find("tree: targetScore scores one sequence per call; a tree needs a built-in "
                      "target or a callback that scores trees"),
            std::string::npos);
  ModelSource built_in_target(tiny_target());
  EXPECT_NE(error_of([&] {
              SpeculativeDecoder(built_in_target, &draft, {0}, tree);
            }).find("tree: draftScore scores one sequence per call; it drafts chains"),
            std::string::npos);
}

}  // namespace
}  // namespace specdec
