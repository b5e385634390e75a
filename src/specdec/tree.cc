#include "specdec/tree.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/errors.h"

namespace specdec {

int DraftTree::max_depth() const {
  return depth.empty() ? 0 : *std::max_element(depth.begin(), depth.end());
}

int DraftTree::add(int parent_node, int tok) {
  if (q.empty()) q.resize(1);  // the root's slot
  parent.push_back(parent_node);
  token.push_back(tok);
  depth.push_back(parent_node < 0 ? 1 : depth[parent_node] + 1);
  q.emplace_back();
  return static_cast<int>(token.size()) - 1;
}

std::vector<int> DraftTree::children(int v) const {
  std::vector<int> out;
  for (size_t i = 0; i < parent.size(); ++i) {
    if (parent[i] == v) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<int> DraftTree::path_tokens(int v) const {
  std::vector<int> out;
  for (; v >= 0; v = parent[v]) out.push_back(token[v]);
  std::reverse(out.begin(), out.end());
  return out;
}

bool DraftTree::is_chain() const {
  for (size_t i = 0; i < parent.size(); ++i) {
    if (parent[i] != static_cast<int>(i) - 1) return false;
  }
  return true;
}

size_t check_tree_branches(const std::vector<int>& branches) {
  if (branches.empty()) fail("tree.branches: must list at least one depth");
  size_t nodes = 0, width = 1;
  for (size_t d = 0; d < branches.size(); ++d) {
    if (branches[d] < 1 || branches[d] > kMaxTreeBranches) {
      fail("tree.branches[", d, "]: children per node must be in 1..", kMaxTreeBranches, ", got ",
           branches[d]);
    }
    width *= static_cast<size_t>(branches[d]);
    nodes += width;
    if (nodes > static_cast<size_t>(kMaxTreeNodes)) {
      fail("tree.branches: the tree would hold more than ", kMaxTreeNodes, " nodes");
    }
  }
  return nodes;
}

int TreeVerifyResult::examined() const {
  int n = 0;
  for (const NodeRecord& r : nodes) n += r.status != NodeStatus::kUnexamined;
  return n;
}

namespace {

const float* row(const ProbMatrix& m, size_t i) { return m.data() + i * m.shape()[1]; }

size_t check_tree(const DraftTree& tree, const ProbMatrix& target_probs) {
  const size_t n = tree.size();
  if (tree.parent.size() != n || tree.depth.size() != n) {
    fail("tree: parent, token and depth must have one entry per node");
  }
  if (target_probs.shape()[0] != n + 1) {
    fail("targetProbs: expected ", n + 1, " rows (1 + tree nodes), got ", target_probs.shape()[0]);
  }
  const size_t vocab = target_probs.shape()[1];
  if (vocab == 0) fail("targetProbs: vocabulary size is 0");
  for (size_t i = 0; i < n; ++i) {
    if (tree.parent[i] < -1 || tree.parent[i] >= static_cast<int>(i)) {
      fail("tree: node ", i, " has parent ", tree.parent[i], " (must be -1 or an earlier node)");
    }
    if (tree.token[i] < 0 || static_cast<size_t>(tree.token[i]) >= vocab) {
      fail("tree: node ", i, " has token id ", tree.token[i], " outside [0, ", vocab, ")");
    }
  }
  return vocab;
}

// Renormalises q in place after zeroing entry x (sampling without replacement). Sums in double.
void remove_token(std::vector<float>& q, int x) {
  q[x] = 0.0f;
  double sum = 0.0;
  for (float v : q) sum += v;
  if (sum <= 0.0) return;  // nothing left to draw: no further sibling can exist
  const float inv = static_cast<float>(1.0 / sum);
  for (float& v : q) v *= inv;
}

}  // namespace

TreeVerifyResult verify_tree(const DraftTree& tree, const ProbMatrix& target_probs, Rng& rng) {
  const size_t vocab = check_tree(tree, target_probs);
  const size_t n = tree.size();
  for (size_t i = 0; i <= n; ++i) {
    check_distribution(row(target_probs, i), vocab,
                       ("targetProbs[" + std::to_string(i) + "]").c_str());
  }
  if (n > 0 && tree.q.size() != n + 1)
    fail("tree: expected ", n + 1, " draft rows (q), got ", tree.q.size());

  TreeVerifyResult r;
  r.nodes.resize(n);
  int cur = -1;  // the root
  std::vector<float> p, q, residual(vocab);
  for (;;) {
    const float* target_row = row(target_probs, static_cast<size_t>(cur + 1));
    const std::vector<int> kids = tree.children(cur);
    if (kids.empty()) {  // a leaf (or an empty tree): the free bonus token
      r.bonus = !r.path.empty();
      r.u_final = rng.uniform();
      r.emitted.push_back(sample_index(target_row, vocab, r.u_final));
      return r;
    }
    const Distribution& q_row = tree.q[static_cast<size_t>(cur + 1)];
    if (q_row.size() != vocab) {
      fail("tree: the draft row of node ", cur, " has ", q_row.size(), " entries, expected ",
           vocab);
    }
    check_distribution(q_row.data(), vocab, ("draft row of node " + std::to_string(cur)).c_str());
    p.assign(target_row, target_row + vocab);
    q.assign(q_row.begin(), q_row.end());
    int accepted = -1;
    for (size_t j = 0; j < kids.size(); ++j) {
      const int v = kids[j];
      const int x = tree.token[v];
      if (tree.without_replacement) {
        for (size_t i = 0; i < j; ++i) {
          if (tree.token[kids[i]] == x) {
            fail("tree: node ", v, " repeats its sibling's token ", x,
                 " (children drawn without replacement are distinct)");
          }
        }
      }
      if (q[x] <= 0.0f) {
        fail("tree: node ", v, " has token ", x,
             " with draft probability 0 (the draft could not have proposed it)");
      }
      NodeRecord& rec = r.nodes[v];
      rec.p = p[x];
      rec.q = q[x];
      rec.accept_prob = std::min(1.0, double(rec.p) / double(rec.q));
      rec.u = rng.uniform();
      if (rec.u < rec.accept_prob) {
        rec.status = NodeStatus::kAccepted;
        accepted = v;
        break;
      }
      rec.status = NodeStatus::kRejected;
      // Rejected: what remains to be sampled is the residual of p against the proposal.
      residual_distribution(p.data(), q.data(), vocab, residual.data());
      p = residual;
      if (tree.without_replacement) remove_token(q, x);
    }
    if (accepted < 0) {  // every child rejected: correct once from what p has become
      r.residual = xt::zeros<float>({vocab});
      std::copy(p.begin(), p.end(), r.residual.data());
      r.u_final = rng.uniform();
      r.emitted.push_back(sample_index(p.data(), vocab, r.u_final));
      return r;
    }
    r.path.push_back(accepted);
    r.emitted.push_back(tree.token[accepted]);
    cur = accepted;
  }
}

TreeVerifyResult greedy_verify_tree(const DraftTree& tree, const ProbMatrix& target_probs) {
  const size_t vocab = check_tree(tree, target_probs);
  const size_t n = tree.size();
  for (size_t i = 0; i < (n + 1) * vocab; ++i) {
    const float v = target_probs.data()[i];
    if (!std::isfinite(v) || v < 0.0f) {
      fail("targetProbs[", i / vocab, "]: entry ", i % vocab, " is negative or not finite (", v,
           ")");
    }
  }
  TreeVerifyResult r;
  r.nodes.resize(n);
  int cur = -1;
  for (;;) {
    const float* target_row = row(target_probs, static_cast<size_t>(cur + 1));
    const int best = argmax(target_row, vocab);
    const std::vector<int> kids = tree.children(cur);
    if (kids.empty()) {
      r.bonus = !r.path.empty();
      r.emitted.push_back(best);
      return r;
    }
    int accepted = -1;
    for (int v : kids) {
      NodeRecord& rec = r.nodes[v];
      rec.p = target_row[tree.token[v]];
      const Distribution& q_row = tree.q[static_cast<size_t>(cur + 1)];
      rec.q = q_row.size() == vocab ? q_row[tree.token[v]] : 1.0f;
      const bool ok = tree.token[v] == best;
      rec.accept_prob = ok ? 1.0 : 0.0;
      rec.status = ok ? NodeStatus::kAccepted : NodeStatus::kRejected;
      if (ok) {
        accepted = v;
        break;
      }
    }
    if (accepted < 0) {
      r.residual = xt::zeros<float>({vocab});
      r.residual[best] = 1.0f;
      r.emitted.push_back(best);
      return r;
    }
    r.path.push_back(accepted);
    r.emitted.push_back(tree.token[accepted]);
    cur = accepted;
  }
}

}  // namespace specdec
