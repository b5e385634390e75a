#include "specdec/record.h"

#include <algorithm>

namespace specdec {

const char* drafter_name(Drafter d) {
  static constexpr const char* kNames[kDrafterCount] = {"none", "draft", "lookup", "heads"};
  const int i = static_cast<int>(d);
  return i >= 0 && i < kDrafterCount ? kNames[i] : "?";
}

ChainView chain_view(const IterationRecord& rec) {
  const DraftTree& tree = rec.tree;
  const TreeVerifyResult& tv = rec.tree_verify;
  const size_t n = tree.size(), vocab = rec.target_probs.shape()[1];
  ChainView view;
  VerifyResult& v = view.verify;
  v.emitted = tv.emitted;
  v.n_accepted = static_cast<int>(tv.path.size());
  v.bonus = tv.bonus;
  v.residual = tv.residual;
  v.u_final = tv.u_final;
  if (tree.is_chain()) {
    view.proposed = tree.token;
    if (n) view.draft_probs = xt::zeros<float>({n, vocab});
    for (size_t i = 0; i < n; ++i) {
      std::copy(tree.q[i].begin(), tree.q[i].end(), view.draft_probs.data() + i * vocab);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const NodeRecord& nr = tv.nodes[i];
    if (nr.status == NodeStatus::kUnexamined) continue;
    const bool on_path = nr.status == NodeStatus::kAccepted;
    if (!tree.is_chain() && !on_path) continue;
    v.positions.push_back(PositionRecord{tree.token[i], nr.p, nr.q, nr.accept_prob, nr.u, on_path});
  }
  return view;
}

void DecoderStats::add(const IterationRecord& rec) {
  const DraftTree& tree = rec.tree;
  const TreeVerifyResult& tv = rec.tree_verify;
  const size_t n = tree.size();
  ++iterations;
  ++target_passes;
  draft_passes += rec.draft_passes;
  generated += rec.emitted.size();
  drafted += n;
  accepted += tv.path.size();
  examined += static_cast<size_t>(tv.examined());
  for (int d = 0; d < rec.gamma && d < static_cast<int>(reached_at.size()); ++d) {
    // Depth d + 1 was reached when the walk tested a node there.
    bool reached = false, ok = false;
    for (size_t v = 0; v < n; ++v) {
      if (tree.depth[v] != d + 1 || tv.nodes[v].status == NodeStatus::kUnexamined) continue;
      reached = true;
      ok = ok || tv.nodes[v].status == NodeStatus::kAccepted;
    }
    reached_at[d] += reached;
    accepted_at[d] += ok;
  }
  if (static_cast<size_t>(rec.gamma) < gamma_histogram.size()) ++gamma_histogram[rec.gamma];
  ++by_drafter[static_cast<int>(rec.drafter)];
  draft_ms += rec.draft_ms;
  target_ms += rec.target_ms;
}

}  // namespace specdec
