// The tree attention mask: every node of a draft tree scored in one pass gets the logits of its
// path run as a plain sequence, bit for bit; the accepted path's keys and values are kept.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/errors.h"
#include "kernels/ops.h"
#include "model/gpt_model.h"
#include "model/model_source.h"
#include "model/tokenizer.h"
#include "test_util.h"

namespace specdec {
namespace {

using testing::error_of;

std::string repo(const std::string& path) { return std::string(SPECDEC_SOURCE_DIR) + "/" + path; }

// softmax of the last row of a fresh, uncached pass over tokens.
std::vector<float> fresh_last(const GPTModel& m, const std::vector<int>& tokens) {
  KVCache cache(m.config());
  std::vector<float> logits = m.forward(tokens, cache);
  const size_t V = m.config().vocab_size;
  std::vector<float> row(logits.end() - V, logits.end());
  kernels::softmax(row.data(), V);
  return row;
}

bool row_equals(const ProbMatrix& m, size_t r, const std::vector<float>& v) {
  return std::memcmp(m.data() + r * m.shape()[1], v.data(), v.size() * sizeof(float)) == 0;
}

// A random tree: each node's parent is the root or an earlier node, depth at most max_depth.
DraftTree random_tree(Rng& rng, size_t nodes, int max_depth) {
  DraftTree t;
  while (t.size() < nodes) {
    const int parent = static_cast<int>(rng.next_u32() % (t.size() + 1)) - 1;
    if (parent >= 0 && t.depth[parent] >= max_depth) continue;
    t.add(parent, static_cast<int>(32 + rng.next_u32() % 90));
  }
  // renumber depth by depth, as drafters produce trees (parents before children either way)
  return t;
}

class TreeForward : public ::testing::TestWithParam<const char*> {};

TEST_P(TreeForward, EveryNodeEqualsItsPathRunAlone) {
  const GPTModel model = GPTModel::from_file(repo(GetParam()));
  const std::vector<int> prompt = encode("ROMEO:\nWhat light");
  Rng rng(17);
  for (size_t nodes : {2, 7, 24}) {
    const DraftTree tree = random_tree(rng, nodes, 5);
    ModelSource source(model);
    ProbMatrix rows = source.tree_probs(prompt, tree, 0, true);
    ASSERT_EQ(rows.shape()[0], nodes + 1);
    EXPECT_TRUE(row_equals(rows, 0, fresh_last(model, prompt)));
    for (size_t v = 0; v < nodes; ++v) {
      std::vector<int> seq = prompt;
      for (int x : tree.path_tokens(static_cast<int>(v))) seq.push_back(x);
      EXPECT_TRUE(row_equals(rows, v + 1, fresh_last(model, seq))) << "node " << v;
    }
    EXPECT_EQ(source.forwarded_tokens(), prompt.size() + nodes);  // one pass
  }
}

// A drafter asks depth by depth: nodes cached by the previous call are reused, and the rows are
// those of the one-pass tree.
TEST_P(TreeForward, DepthByDepthReusesCachedNodes) {
  const GPTModel model = GPTModel::from_file(repo(GetParam()));
  const std::vector<int> prompt = encode("KING:");
  DraftTree tree;
  ModelSource source(model), whole(model);
  source.next_token_probs(prompt, 1);
  const size_t before = source.forwarded_tokens();
  Rng rng(2);
  size_t level_begin = 0;
  for (int depth = 1; depth <= 3; ++depth) {
    const size_t level_end = tree.size();
    const size_t parents = depth == 1 ? 1 : level_end - level_begin;
    for (size_t i = 0; i < parents; ++i) {
      const int parent = depth == 1 ? -1 : static_cast<int>(level_begin + i);
      for (int b = 0; b < 2; ++b) tree.add(parent, static_cast<int>(97 + rng.next_u32() % 26));
    }
    level_begin = level_end;
    ProbMatrix rows = source.tree_probs(prompt, tree, level_begin, false);
    for (size_t v = level_begin; v < tree.size(); ++v) {
      std::vector<int> seq = prompt;
      for (int x : tree.path_tokens(static_cast<int>(v))) seq.push_back(x);
      EXPECT_TRUE(row_equals(rows, v - level_begin, fresh_last(model, seq)));
    }
  }
  EXPECT_EQ(source.forwarded_tokens() - before, tree.size());  // each node forwarded once
}

// After verification the sequence continues along one branch: the next call keeps that path's
// keys and values (moved into place) and forwards only what is new.
TEST_P(TreeForward, AcceptedPathIsKeptOthersDropped) {
  const GPTModel model = GPTModel::from_file(repo(GetParam()));
  const std::vector<int> prompt = encode("First Citizen:\n");
  Rng rng(5);
  const DraftTree tree = random_tree(rng, 20, 4);
  for (size_t v = 0; v < tree.size(); v += 3) {
    ModelSource source(model);
    source.tree_probs(prompt, tree, 0, true);
    const size_t before = source.forwarded_tokens();
    std::vector<int> seq = prompt;
    for (int x : tree.path_tokens(static_cast<int>(v))) seq.push_back(x);
    seq.push_back('e');  // the correction or bonus token
    ProbMatrix next = source.next_token_probs(seq, 1);
    EXPECT_EQ(source.forwarded_tokens() - before, 1u) << "node " << v;  // only the new token
    EXPECT_EQ(source.cached_tokens(), seq.size());
    EXPECT_TRUE(row_equals(next, 0, fresh_last(model, seq)));
    // and a second tree below the new sequence works as the first did
    ProbMatrix again = source.tree_probs(seq, tree, 0, true);
    std::vector<int> seq2 = seq;
    for (int x : tree.path_tokens(static_cast<int>(tree.size() - 1))) seq2.push_back(x);
    EXPECT_TRUE(row_equals(again, tree.size(), fresh_last(model, seq2)));
  }
  // A sequence that leaves the tree: the tree is dropped, the shared prefix kept.
  ModelSource source(model);
  source.tree_probs(prompt, tree, 0, true);
  std::vector<int> other = prompt;
  other.push_back(1);
  ProbMatrix r = source.next_token_probs(other, 1);
  EXPECT_TRUE(row_equals(r, 0, fresh_last(model, other)));
}

INSTANTIATE_TEST_SUITE_P(Models, TreeForward,
                         ::testing::Values("tests/fixtures/tiny_f32.safetensors",
                                           "models/target.safetensors"),
                         [](const auto& info) {
                           return std::string(info.param).find("tiny") != std::string::npos
                                      ? std::string("tiny")
                                      : std::string("shipped_target");
                         });

TEST(TreeForwardErrors, ClearMessages) {
  const GPTModel model = GPTModel::from_file(repo("tests/fixtures/tiny_f32.safetensors"));
  KVCache cache(model.config());
  model.forward({1, 2, 3}, cache);
  const int seq = GPTModel::kSequence, root = KVCache::kTreeRoot;
  std::vector<int> bad = {root, 7};
  EXPECT_EQ(
      error_of([&] {
        model.forward({4, 5}, cache, &bad);
      }),
      "forward: tree parent 7 of token 1 is not an earlier tree slot (3..3) or -1 (the root)");
  std::vector<int> order = {root, seq};
  EXPECT_EQ(error_of([&] {
              model.forward({4, 5}, cache, &order);
            }),
            "forward: sequence token 1 after tree nodes");
  EXPECT_EQ(cache.size(), 3u);  // failed calls leave the cache as it was
  std::vector<int> ok = {root, 3, 3};
  model.forward({4, 5, 6}, cache, &ok);
  EXPECT_EQ(cache.linear_size(), 3u);
  EXPECT_EQ(cache.tree_size(), 3u);
  EXPECT_EQ(error_of([&] { model.forward({7}, cache); }),
            "forward: the cache holds 3 draft-tree slots (commit or truncate)");
  EXPECT_EQ(error_of([&] { cache.commit_path({5}); }),
            "KVCache::commit_path: slot 5 at depth 0 does not continue the path");
  cache.commit_path({3, 5});
  EXPECT_EQ(cache.size(), 5u);
  EXPECT_EQ(cache.tree_size(), 0u);
}

}  // namespace
}  // namespace specdec
