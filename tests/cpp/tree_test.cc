// Draft trees: the multi-candidate verification rule (with and without replacement, greedy),
// chain == speculative_verify, the shapes' limits.
#include "specdec/tree.h"

#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"
#include "specdec/proposer.h"
#include "specdec/verify.h"
#include "test_util.h"

namespace specdec {
namespace {

using testing::error_of;

using testing::chi_square;
using testing::dist;
using testing::kFalseAlarm;
using testing::random_distribution;
using testing::stack;

// A two-level tree below one root: `b1` children drawn from q1, each with `b2` children drawn
// from q2[its token]; the target's rows depend only on a node's token (p1 at the root, p2[x]
// after x), so the exact law of the first two emitted tokens is p1(x) p2[x](y).
struct TwoLevel {
  Distribution p1, q1;
  std::vector<Distribution> p2, q2;  // per first token
};

DraftTree draw_two_level(const TwoLevel& m, int b1, int b2, bool without, Rng& rng) {
  DraftTree t;
  t.without_replacement = without;
  t.q.resize(1);
  t.q[0] = m.q1;
  const size_t V = m.p1.size();
  for (int x : draw_children(m.q1.data(), V, b1, without, false, rng)) t.add(-1, x);
  const size_t level1 = t.size();
  for (size_t v = 0; v < level1; ++v) {
    const Distribution& q = m.q2[t.token[v]];
    t.q[v + 1] = q;
    for (int y : draw_children(q.data(), V, b2, without, false, rng)) t.add(static_cast<int>(v), y);
  }
  return t;
}

ProbMatrix rows_for(const TwoLevel& m, const DraftTree& t) {
  std::vector<Distribution> rows = {m.p1};
  for (size_t v = 0; v < t.size(); ++v) {
    // after a level-1 node: p2 of its token; after a level-2 node: anything valid
    rows.push_back(t.depth[v] == 1 ? m.p2[t.token[v]] : m.p1);
  }
  return stack(rows);
}

struct TreeLawCase {
  const char* name;
  int b1, b2;
  bool without_replacement;
  double sparsity;  // of the random rows (disjoint supports make the residual matter)
};
void PrintTo(const TreeLawCase& c, std::ostream* os) { *os << c.name; }

class TreeExactness : public ::testing::TestWithParam<TreeLawCase> {};

// The law of the first two emitted tokens is the target's, 200,000 trees per case.
TEST_P(TreeExactness, FirstTwoTokensFollowTheTarget) {
  const TreeLawCase& c = GetParam();
  constexpr size_t V = 5;
  Rng data(91 + c.b1 * 7 + c.b2);
  TwoLevel m;
  m.p1 = random_distribution(data, V, c.sparsity);
  m.q1 = random_distribution(data, V, c.sparsity);
  for (size_t x = 0; x < V; ++x) {
    m.p2.push_back(random_distribution(data, V, c.sparsity));
    m.q2.push_back(random_distribution(data, V, c.sparsity));
  }
  std::vector<double> probs(V * V);
  for (size_t x = 0; x < V; ++x) {
    for (size_t y = 0; y < V; ++y) probs[x * V + y] = double(m.p1[x]) * m.p2[x][y];
  }
  std::vector<uint64_t> counts(V * V, 0);
  Rng rng(7);
  for (int run = 0; run < 200000; ++run) {
    DraftTree t = draw_two_level(m, c.b1, c.b2, c.without_replacement, rng);
    TreeVerifyResult r = verify_tree(t, rows_for(m, t), rng);
    int x = r.emitted[0], y;
    if (r.emitted.size() >= 2) {
      y = r.emitted[1];
    } else {  // stopped after one token: the second comes from the target after x
      y = sample_index(m.p2[x].data(), V, rng.uniform());
    }
    ++counts[x * V + y];
  }
  auto chi = chi_square(counts, probs);
  EXPECT_EQ(chi.impossible, "");
  EXPECT_GT(chi.p_value, kFalseAlarm) << "chi2=" << chi.stat << " dof=" << chi.dof;
}

INSTANTIATE_TEST_SUITE_P(Table, TreeExactness,
                         ::testing::Values(TreeLawCase{"iid_3x2", 3, 2, false, 0.0},
                                           TreeLawCase{"distinct_3x2", 3, 2, true, 0.0},
                                           TreeLawCase{"iid_4x1_sparse", 4, 1, false, 0.4},
                                           TreeLawCase{"distinct_4x1_sparse", 4, 1, true, 0.4},
                                           TreeLawCase{"distinct_5x3_all_tokens", 5, 3, true, 0.0},
                                           TreeLawCase{"chain_1x1", 1, 1, false, 0.2}),
                         [](const auto& info) { return info.param.name; });

// A chain verifies exactly as speculative_verify: same uniforms, same decisions, same tokens.
TEST(Tree, ChainEqualsSpeculativeVerify) {
  Rng data(5);
  for (int rep = 0; rep < 300; ++rep) {
    const int gamma = 1 + rep % 6;
    const size_t V = 3 + rep % 9;
    std::vector<Distribution> p, q;
    for (int i = 0; i <= gamma; ++i) p.push_back(random_distribution(data, V, 0.3));
    DraftTree t;
    t.q.resize(1);
    std::vector<int> tokens;
    for (int i = 0; i < gamma; ++i) {
      q.push_back(random_distribution(data, V, 0.3));
      const int x = sample_index(q.back().data(), V, data.uniform());
      t.q[i] = q.back();
      t.add(i - 1, x);
      tokens.push_back(x);
    }
    Rng a(rep), b(rep);
    VerifyResult v = speculative_verify(stack(p), stack(q), tokens, a);
    TreeVerifyResult tv = verify_tree(t, stack(p), b);
    EXPECT_EQ(tv.emitted, v.emitted);
    EXPECT_EQ(static_cast<int>(tv.path.size()), v.n_accepted);
    EXPECT_EQ(tv.bonus, v.bonus);
    EXPECT_EQ(tv.examined(), static_cast<int>(v.positions.size()));
    for (size_t i = 0; i < v.positions.size(); ++i) {
      EXPECT_EQ(tv.nodes[i].u, v.positions[i].u);
      EXPECT_EQ(tv.nodes[i].accept_prob, v.positions[i].accept_prob);
    }
    EXPECT_EQ(a.state(), b.state());
    ASSERT_EQ(tv.residual.size(), v.residual.size());
    for (size_t i = 0; i < tv.residual.size(); ++i) EXPECT_EQ(tv.residual[i], v.residual[i]);
  }
}

TEST(Tree, GreedyFollowsTheArgmaxPath) {
  // root -> {1, 2}; 2 -> {0, 3}; target argmax: root 2, after 2: 3, after 3 (leaf): 1.
  DraftTree t;
  t.q.resize(1);
  t.add(-1, 1);
  t.add(-1, 2);
  t.add(1, 0);
  t.add(1, 3);
  Distribution a2 = dist({0.1f, 0.2f, 0.6f, 0.1f}), a3 = dist({0.1f, 0.1f, 0.1f, 0.7f}),
               a1 = dist({0.1f, 0.6f, 0.2f, 0.1f});
  TreeVerifyResult r = greedy_verify_tree(t, stack({a2, a1, a3, a1, a1}));
  EXPECT_EQ(r.path, (std::vector<int>{1, 3}));
  EXPECT_EQ(r.emitted, (std::vector<int>{2, 3, 1}));
  EXPECT_TRUE(r.bonus);
  EXPECT_EQ(r.nodes[0].status, NodeStatus::kRejected);
  EXPECT_EQ(r.nodes[1].status, NodeStatus::kAccepted);
  EXPECT_EQ(r.nodes[2].status, NodeStatus::kRejected);
  EXPECT_EQ(r.nodes[3].status, NodeStatus::kAccepted);
  // No child matches at the root: the correction is the root's argmax.
  TreeVerifyResult miss = greedy_verify_tree(t, stack({a3, a1, a3, a1, a1}));
  EXPECT_TRUE(miss.path.empty());
  EXPECT_EQ(miss.emitted, (std::vector<int>{3}));
  EXPECT_FALSE(miss.bonus);
  EXPECT_FLOAT_EQ(miss.residual[3], 1.0f);
}

TEST(Tree, EmptyTreeIsAPlainStep) {
  DraftTree t;
  Rng a(3), b(3);
  Distribution p = dist({0.2f, 0.5f, 0.3f});
  TreeVerifyResult r = verify_tree(t, stack({p}), a);
  EXPECT_EQ(r.emitted, (std::vector<int>{sample_index(p.data(), 3, b.uniform())}));
  EXPECT_FALSE(r.bonus);
  EXPECT_EQ(greedy_verify_tree(t, stack({p})).emitted, (std::vector<int>{1}));
}

TEST(Tree, DrawChildren) {
  Distribution q = dist({0.1f, 0.4f, 0.0f, 0.3f, 0.2f});
  Rng rng(1);
  EXPECT_EQ(draw_children(q.data(), 5, 3, false, true, rng), (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(draw_children(q.data(), 5, 8, true, true, rng), (std::vector<int>{1, 3, 4, 0}));
  for (int rep = 0; rep < 100; ++rep) {  // without replacement: distinct, never token 2
    std::vector<int> kids = draw_children(q.data(), 5, 8, true, false, rng);
    ASSERT_EQ(kids.size(), 4u);
    std::vector<int> sorted = kids;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{0, 1, 3, 4}));
  }
}

TEST(Tree, BadInputThrowsClearErrors) {
  struct Case {
    std::vector<int> branches;
    const char* message;
  };
  for (const Case& c :
       std::vector<Case>{{{}, "tree.branches: must list at least one depth"},
                         {{3, 0}, "tree.branches[1]: children per node must be in 1..8, got 0"},
                         {{9}, "tree.branches[0]: children per node must be in 1..8, got 9"},
                         {{4, 4, 4}, "tree.branches: the tree would hold more than 64 nodes"}}) {
    EXPECT_EQ(error_of([&] { check_tree_branches(c.branches); }), c.message);
  }
  EXPECT_EQ(check_tree_branches({3, 2, 1, 1}), 3u + 6 + 6 + 6);
  EXPECT_EQ(check_tree_branches({8, 7}), 64u);

  Distribution p = dist({0.5f, 0.5f}), q = dist({1.0f, 0.0f});
  DraftTree twice;
  twice.without_replacement = true;
  twice.add(-1, 0);
  twice.add(-1, 0);
  twice.q[0] = dist({0.5f, 0.5f});
  Rng rng(1);
  // The first child is accepted with probability 1 (p = q = 0.5): make it rejectable.
  EXPECT_EQ(error_of([&] {
              verify_tree(twice, stack({dist({0.0f, 1.0f}), p, p}), rng);
            }),
            "tree: node 1 repeats its sibling's token 0 (children drawn without replacement are "
            "distinct)");
  DraftTree zero;
  zero.add(-1, 1);
  zero.q[0] = q;
  EXPECT_EQ(error_of([&] {
              verify_tree(zero, stack({p, p}), rng);
            }),
            "tree: node 0 has token 1 with draft probability 0 (the draft could not have "
            "proposed it)");
  EXPECT_EQ(error_of([&] { verify_tree(zero, stack({p}), rng); }),
            "targetProbs: expected 2 rows (1 + tree nodes), got 1");
}

}  // namespace
}  // namespace specdec
