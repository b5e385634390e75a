#include "model/model_source.h"

#include <algorithm>
#include <memory>

#include "base/errors.h"
#include "kernels/ops.h"

namespace specdec {

ModelSource::ModelSource(const GPTModel& model) : model_(model), cache_(model.config()) {}

const float* ModelSource::hidden_row(size_t i) const {
  if (i >= n_hidden_) fail("hidden_row: row ", i, " of ", n_hidden_);
  return hidden_.data() + i * static_cast<size_t>(model_.config().n_embd);
}

void ModelSource::follow_tree(const std::vector<int>& tokens) {
  if (cache_.tree_size() == 0) return;
  const size_t linear = cache_.linear_size();
  std::vector<size_t> path;
  const bool continues =
      tokens.size() >= cached_.size() && std::equal(cached_.begin(), cached_.end(), tokens.begin());
  if (continues) {
    int cur = -1;
    for (size_t j = cached_.size(); j < tokens.size(); ++j) {
      int next = -1;
      for (size_t v = 0; v < tree_token_.size(); ++v) {
        if (tree_parent_[v] == cur && tree_token_[v] == tokens[j]) {
          next = static_cast<int>(v);
          break;
        }
      }
      if (next < 0) break;
      path.push_back(linear + static_cast<size_t>(next));
      cached_.push_back(tokens[j]);
      cur = next;
    }
  }
  cache_.commit_path(path);  // also drops the other branches
  tree_parent_.clear();
  tree_token_.clear();
}

void ModelSource::keep_prefix(const std::vector<int>& tokens, size_t rerun) {
  const auto mismatch = std::mismatch(cached_.begin(), cached_.end(), tokens.begin(), tokens.end());
  const size_t keep = std::min<size_t>(mismatch.first - cached_.begin(), tokens.size() - rerun);
  cache_.truncate(keep);
  cached_.resize(keep);
}

ProbMatrix ModelSource::rows_of(const std::vector<float>& logits, const std::vector<float>& hidden,
                                const std::vector<size_t>& pass_rows) {
  const size_t vocab = model_.config().vocab_size, C = model_.config().n_embd;
  ProbMatrix probs = xt::zeros<float>({pass_rows.size(), vocab});
  hidden_.resize(pass_rows.size() * C);
  for (size_t i = 0; i < pass_rows.size(); ++i) {
    float* row = probs.data() + i * vocab;
    const size_t r = pass_rows[i];
    std::copy(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab, row);
    kernels::softmax(row, vocab);
    std::copy(hidden.begin() + r * C, hidden.begin() + (r + 1) * C, hidden_.begin() + i * C);
  }
  n_hidden_ = pass_rows.size();
  return probs;
}

ProbMatrix ModelSource::next_token_probs(const std::vector<int>& tokens, size_t n_last) {
  if (n_last < 1 || n_last > tokens.size()) {
    fail("n_last: must be in [1, ", tokens.size(), "], got ", n_last);
  }
  if (tokens.size() > cache_.capacity()) {
    fail("tokens: ", tokens.size(), " tokens exceed the model context of ", cache_.capacity(),
         " tokens (block_size)");
  }
  follow_tree(tokens);
  // Reuse the cached prefix, but re-run at least the last n_last positions: their logits
  // are what the caller asks for.
  keep_prefix(tokens, n_last);
  const size_t keep = cached_.size();

  const std::vector<int> fresh(tokens.begin() + keep, tokens.end());
  std::vector<float> hidden;
  std::vector<float> logits = model_.forward(fresh, cache_, nullptr, &hidden);
  forwarded_ += fresh.size();
  cached_.insert(cached_.end(), fresh.begin(), fresh.end());

  std::vector<size_t> rows(n_last);
  for (size_t i = 0; i < n_last; ++i) rows[i] = fresh.size() - n_last + i;
  return rows_of(logits, hidden, rows);
}

ProbMatrix ModelSource::tree_probs(const std::vector<int>& tokens, const DraftTree& tree,
                                   size_t first, bool with_root) {
  check_tree_query(tokens, tree, first, with_root);
  const size_t n = tree.size();
  if (tree.is_chain()) {  // a plain sequence: the cache stays linear
    std::vector<int> seq = tokens;
    seq.insert(seq.end(), tree.token.begin(), tree.token.end());
    return next_token_probs(seq, n - first + (with_root ? 1 : 0));
  }
  if (tokens.size() + n > cache_.capacity()) {
    fail("tokens: ", tokens.size(), " tokens and ", n, " tree nodes exceed the model context of ",
         cache_.capacity(), " tokens (block_size)");
  }
  // Reuse the tree nodes cached by the previous call when it asked about the same sequence and
  // the tree has only grown since; otherwise start the tree afresh.
  size_t k = cache_.tree_size();
  bool reuse = k > 0 && !with_root && cached_ == tokens && k <= first && k <= n;
  for (size_t v = 0; reuse && v < k; ++v) {
    reuse = tree_parent_[v] == tree.parent[v] && tree_token_[v] == tree.token[v];
  }
  if (!reuse) {
    follow_tree(tokens);
    k = 0;
    keep_prefix(tokens, with_root ? 1 : 0);
  }
  // One pass: the sequence's uncached tail, then nodes k .. n - 1 under the tree mask.
  const size_t n_seq = tokens.size() - cached_.size();
  const size_t seq_len = tokens.size();
  std::vector<int> pass(tokens.begin() + cached_.size(), tokens.end());
  std::vector<int> parents(n_seq, GPTModel::kSequence);
  for (size_t v = k; v < n; ++v) {
    pass.push_back(tree.token[v]);
    parents.push_back(tree.parent[v] < 0 ? KVCache::kTreeRoot
                                         : static_cast<int>(seq_len) + tree.parent[v]);
  }
  std::vector<float> hidden;
  std::vector<float> logits = model_.forward(pass, cache_, &parents, &hidden);
  forwarded_ += pass.size();
  cached_.assign(tokens.begin(), tokens.end());
  tree_parent_.assign(tree.parent.begin(), tree.parent.end());
  tree_token_.assign(tree.token.begin(), tree.token.end());

  std::vector<size_t> rows;
  if (with_root) rows.push_back(n_seq - 1);  // n_seq >= 1: keep <= tokens.size() - 1
  for (size_t v = first; v < n; ++v) rows.push_back(n_seq + (v - k));
  return rows_of(logits, hidden, rows);
}

StepFunction model_step(const GPTModel& model) {
  auto source = std::make_shared<ModelSource>(model);
  return [source](const std::vector<int>& tokens) {
    ProbMatrix probs = source->next_token_probs(tokens, 1);
    Distribution row = xt::zeros<float>({probs.shape()[1]});
    std::copy(probs.data(), probs.data() + probs.shape()[1], row.data());
    return row;
  };
}

}  // namespace specdec
