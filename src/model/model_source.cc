#include "model/model_source.h"

#include <algorithm>
#include <memory>

#include "kernels/ops.h"
#include "specdec/errors.h"

namespace specdec {

ModelSource::ModelSource(const GPTModel& model) : model_(model), cache_(model.config()) {}

ProbMatrix ModelSource::next_token_probs(const std::vector<int>& tokens, size_t n_last) {
  if (n_last < 1 || n_last > tokens.size()) {
    fail("n_last: must be in [1, ", tokens.size(), "], got ", n_last);
  }
  if (tokens.size() > cache_.capacity()) {
    fail("tokens: ", tokens.size(), " tokens exceed the model context of ", cache_.capacity(),
         " tokens (block_size)");
  }
  // Reuse the cached prefix, but re-run at least the last n_last positions: their logits
  // are what the caller asks for.
  const auto mismatch = std::mismatch(cached_.begin(), cached_.end(), tokens.begin(), tokens.end());
  const size_t common = static_cast<size_t>(mismatch.first - cached_.begin());
  const size_t keep = std::min(common, tokens.size() - n_last);
  cache_.truncate(keep);
  cached_.resize(keep);

  const std::vector<int> fresh(tokens.begin() + keep, tokens.end());
  std::vector<float> logits = model_.forward(fresh, cache_);
  cached_.insert(cached_.end(), fresh.begin(), fresh.end());

  const size_t vocab = model_.config().vocab_size;
  ProbMatrix probs = xt::zeros<float>({n_last, vocab});
  const float* last = logits.data() + (fresh.size() - n_last) * vocab;
  for (size_t i = 0; i < n_last; ++i) {
    float* row = probs.data() + i * vocab;
    std::copy(last + i * vocab, last + (i + 1) * vocab, row);
    kernels::softmax(row, vocab);
  }
  return probs;
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
