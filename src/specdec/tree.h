// Draft trees (lesson: "What's Next"): instead of one chain of gamma draft tokens, several
// candidates per position, all scored by ONE target pass with a tree attention mask, and
// verified from the root down with a multi-candidate rule that keeps the output exactly the
// target's. A chain is the tree whose every node has one child: it verifies exactly as
// speculative_verify does, uniform for uniform.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "sampling/rng.h"
#include "specdec/distribution.h"
#include "specdec/limits.h"

namespace specdec {

// A tree of draft tokens below the committed sequence (the root). Nodes are numbered in the
// order they were drawn, depth by depth: a node's parent has a smaller index, and the children
// of one node are in the order they were drawn.
struct DraftTree {
  std::vector<int> parent;  // (n,) parent node, or -1 for a child of the root
  std::vector<int> token;   // (n,) drafted token
  std::vector<int> depth;   // (n,) 1 for a child of the root
  // q[v + 1] (q[0] for the root): the draft distribution the children of node v were drawn
  // from, after the sampling settings; empty for a node without children.
  std::vector<Distribution> q;
  // Children of one node were drawn without replacement (distinct tokens: each from q with the
  // earlier siblings removed and renormalised) rather than independently from q.
  bool without_replacement = false;

  size_t size() const { return token.size(); }
  bool empty() const { return token.empty(); }
  int max_depth() const;
  // Appends a node; returns its index. q gets a slot (empty) for it.
  int add(int parent_node, int tok);
  // Children of node v (-1: the root), in index order.
  std::vector<int> children(int v) const;
  // Tokens from the root down to node v, v's included.
  std::vector<int> path_tokens(int v) const;
  // Every node has at most one child.
  bool is_chain() const;
};

// Per depth, the number of children each node gets (e.g. {3, 2, 1, 1}: 3 at depth 1, each with
// 2 children, ...). Throws specdec::Error when empty, an entry is outside 1..kMaxTreeBranches,
// or the tree would hold more than kMaxTreeNodes nodes. Returns the number of nodes.
size_t check_tree_branches(const std::vector<int>& branches);

// What happened to one node.
enum class NodeStatus { kUnexamined, kAccepted, kRejected };

struct NodeRecord {
  float p = 0.0f;            // the target's probability of the token when it was tested (after the
                             // residual updates of earlier rejected siblings)
  float q = 0.0f;            // the draft probability it was tested against (after removing earlier
                             // siblings when drawn without replacement)
  double accept_prob = 0.0;  // min(1, p / q); greedy: 1 if it is the target's argmax, else 0
  double u = std::numeric_limits<double>::quiet_NaN();  // uniform drawn (NaN when greedy)
  NodeStatus status = NodeStatus::kUnexamined;
};

struct TreeVerifyResult {
  std::vector<NodeRecord> nodes;  // (n,) one per tree node
  std::vector<int> path;          // accepted nodes, root to leaf
  std::vector<int> emitted;       // path tokens + one correction or bonus token
  bool bonus = false;             // the last token came from an accepted leaf's row
  // The distribution the last token was drawn from when it was a correction (the target row
  // with the residual updates of every rejected child; greedy: one-hot argmax); empty at a
  // bonus.
  Distribution residual;
  double u_final = std::numeric_limits<double>::quiet_NaN();  // uniform of the last sample
  int examined() const;                                       // nodes tested
};

// target_probs: (n + 1, V): row 0 after the committed sequence, row v + 1 after node v's path.
// Walks from the root: tries the children of the current node in order, accepting child x with
// probability min(1, p(x) / q(x)); on a rejection p becomes the normalised residual
// (p - q)+ and, when drawn without replacement, q loses x (renormalised). The first accepted
// child becomes the current node; when every child is rejected the last token is drawn from p;
// at a leaf it is drawn from the leaf's row (bonus). Uniforms: one per tested child, then one
// for the last token. Throws specdec::Error on shape mismatches, invalid rows, out-of-range
// tokens, a tested token with q(x) == 0, or repeated siblings when drawn without replacement.
TreeVerifyResult verify_tree(const DraftTree& tree, const ProbMatrix& target_probs, Rng& rng);

// Temperature 0: accept the child that is the target row's argmax (lowest id on ties); the
// last token is the argmax of the last row reached. Draws no uniforms; rows need only be
// finite and non-negative.
TreeVerifyResult greedy_verify_tree(const DraftTree& tree, const ProbMatrix& target_probs);

}  // namespace specdec
