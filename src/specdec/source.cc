#include "specdec/source.h"

#include "base/errors.h"

namespace specdec {

ProbMatrix StepFunctionSource::next_token_probs(const std::vector<int>& tokens, size_t n_last) {
  if (n_last < 1 || n_last > tokens.size()) {
    fail("n_last: must be in [1, ", tokens.size(), "], got ", n_last);
  }
  ProbMatrix out;
  std::vector<int> prefix(tokens.begin(), tokens.end() - n_last + 1);
  for (size_t i = 0; i < n_last; ++i) {
    if (i > 0) prefix.push_back(tokens[prefix.size()]);
    Distribution d = step_(prefix);
    if (i == 0) out = xt::zeros<float>({n_last, d.size()});
    if (d.size() != out.shape()[1]) {
      fail("step function: returned ", d.size(), " probabilities, earlier ", out.shape()[1]);
    }
    std::copy(d.begin(), d.end(), out.data() + i * d.size());
  }
  return out;
}

std::vector<int> chain_sequence(const std::vector<int>& tokens, const DraftTree& chain) {
  std::vector<int> seq = tokens;
  seq.insert(seq.end(), chain.token.begin(), chain.token.end());
  return seq;
}

void ExternalSource::set_hidden(std::vector<float> rows, size_t width) {
  hidden_ = std::move(rows);
  width_ = hidden_.empty() ? 0 : width;
}

const float* ExternalSource::hidden_row(size_t i) const {
  if (i >= hidden_rows()) fail(name_, ": no hidden state for row ", i);
  return hidden_.data() + i * width_;
}

ProbMatrix ExternalSource::next_token_probs(const std::vector<int>&, size_t) {
  fail(name_, ": its rows come from the caller (SpeculativeDecoder::advance / supply)");
}

ProbMatrix DistributionSource::tree_probs(const std::vector<int>& tokens, const DraftTree& tree,
                                          size_t first, bool with_root) {
  check_tree_query(tokens, tree, first, with_root);
  const size_t n_rows = (with_root ? 1 : 0) + tree.size() - first;
  if (tree.is_chain()) return next_token_probs(chain_sequence(tokens, tree), n_rows);
  ProbMatrix out;
  size_t r = 0;
  auto put = [&](const ProbMatrix& row) {
    if (r == 0) out = xt::zeros<float>({n_rows, row.shape()[1]});
    if (row.shape()[1] != out.shape()[1]) {
      fail("source: returned ", row.shape()[1], " probabilities, earlier ", out.shape()[1]);
    }
    std::copy(row.data(), row.data() + row.shape()[1], out.data() + r * out.shape()[1]);
    ++r;
  };
  if (with_root) put(next_token_probs(tokens, 1));
  for (size_t v = first; v < tree.size(); ++v) {
    std::vector<int> seq = tokens;
    const std::vector<int> path = tree.path_tokens(static_cast<int>(v));
    seq.insert(seq.end(), path.begin(), path.end());
    put(next_token_probs(seq, 1));
  }
  return out;
}

void check_tree_query(const std::vector<int>& tokens, const DraftTree& tree, size_t first,
                      bool with_root) {
  if (tokens.empty()) fail("tree_probs: the sequence is empty");
  if (first > tree.size() || (!with_root && first == tree.size())) {
    fail("tree_probs: first = ", first, " with ", tree.size(), " nodes asks for no row");
  }
  if (with_root && first != 0) fail("tree_probs: the root row comes only with first = 0");
}

}  // namespace specdec
