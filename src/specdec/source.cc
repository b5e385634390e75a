#include "specdec/source.h"

#include "specdec/errors.h"

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

}  // namespace specdec
