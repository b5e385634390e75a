// libFuzzer target: arbitrary bytes -> the safetensors/GPT loader (GPTModel::from_safetensors),
// and, when a file loads, a short bounded run of what a page does with it: a ModelSource call
// over a few tokens, a second call that reuses and rolls back the KV cache, and a few greedy
// steps of self-speculative decoding checked against plain greedy decoding.
//
// Bad input must end in specdec::Error, never in a crash, UB, a leak or a result that breaks
// the contract (checked below). The work per input is bounded by the input: a model that loads
// has at most size / 2 parameters (F16), and we run at most 8 positions.
//
// Files stored 8-bit (weights = int8) go the same way, and odd-sized inputs that load as float
// are also quantized at load and exercised again.
//
// Seed corpus: tests/fuzz/corpus/model (tests/fuzz/make_model_corpus.py); dictionary:
// tests/fuzz/fuzz_model.dict (scripts/fuzz passes it).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "base/errors.h"
#include "fuzz_check.h"
#include "model/gpt_model.h"
#include "model/model_source.h"
#include "model/safetensors.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"

namespace {

// A row of probabilities either holds a non-finite value (finite but extreme weights can
// overflow the forward pass; the decoder rejects such rows with an Error) or is a distribution.
void check_row(const float* row, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(row[i])) return;
    check(row[i] >= 0.0f && row[i] <= 1.0f);
    sum += row[i];
  }
  check(std::fabs(sum - 1.0) < 1e-3);
}

void exercise(const specdec::GPTModel& model, const uint8_t* data, size_t size) {
  using namespace specdec;
  const GPTConfig& c = model.config();
  // The loader's promises about the config.
  check(c.vocab_size >= 1 && c.vocab_size <= kMaxFamilyVocab);
  check(c.n_layer >= 1 && c.n_layer <= kMaxFamilyLayers);
  check(c.n_embd >= 1 && c.n_embd <= kMaxFamilyEmbd && c.n_head >= 1);
  check(c.block_size >= 1 && c.block_size <= kMaxBlockSize);
  check(model.weights().layers.size() == static_cast<size_t>(c.n_layer));
  if (c.vocab_size != kByteVocabSize) return;  // a GGUF file (one loader): tokens below are bytes

  // Tokens from the input's last bytes (any byte is a valid token), at most 8 and at most the
  // context.
  const size_t n = std::min<size_t>({8, static_cast<size_t>(c.block_size), size});
  std::vector<int> tokens(data + size - n, data + size);

  ModelSource source(model);
  check(source.max_context() == static_cast<size_t>(c.block_size));
  const size_t n_last = 1 + (data[0] % n);
  ProbMatrix p = source.next_token_probs(tokens, n_last);
  check(p.shape()[0] == n_last && p.shape()[1] == static_cast<size_t>(c.vocab_size));
  for (size_t i = 0; i < n_last; ++i) check_row(p.data() + i * c.vocab_size, c.vocab_size);
  check(source.cached_tokens() == n);

  // A second call that shares a prefix: the cache is truncated and reused.
  if (n >= 2) {
    tokens[n - 1] = (tokens[n - 1] + 1) % c.vocab_size;
    ProbMatrix q = source.next_token_probs(tokens, 1);
    check_row(q.data(), c.vocab_size);
    check(source.cached_tokens() == n);
  }
  // Past the context: an Error, and the source stays usable.
  std::vector<int> too_long(c.block_size + 1, 0);
  try {
    source.next_token_probs(too_long, 1);
    check(false);
  } catch (const Error&) {
  }

  // Greedy self-speculative decoding emits exactly greedy plain decoding (when the rows are
  // valid; otherwise both must stop with an Error).
  if (static_cast<size_t>(c.block_size) > n) {
    SamplingParams greedy;
    greedy.temperature = 0.0f;
    const size_t budget = std::min<size_t>(4, c.block_size - n + 1);
    std::vector<int> spec_tokens, plain_tokens;
    bool spec_failed = false, plain_failed = false;
    try {
      ModelSource target(model), draft(model);
      Rng rng(1);
      spec_tokens =
          speculative_decode(tokens, target, draft, 1 + data[0] % 3, budget, rng, greedy).tokens;
    } catch (const Error&) {
      spec_failed = true;
    }
    try {
      ModelSource target(model);
      Rng rng(1);
      plain_tokens = autoregressive_decode(tokens, target, budget, rng, greedy).tokens;
    } catch (const Error&) {
      plain_failed = true;
    }
    check(spec_failed == plain_failed);
    if (!spec_failed) check(spec_tokens == plain_tokens);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specdec;
  // The container alone: either an Error or views that lie inside the buffer.
  try {
    const SafetensorsView view = parse_safetensors(data, size);
    for (const auto& [name, t] : view.tensors) {
      check(t.data >= data && t.data + t.numel * dtype_size(t.dtype) <= data + size);
      check(t.shape.size() <= kMaxTensorRank);
    }
  } catch (const Error&) {
  }

  std::unique_ptr<GPTModel> model;
  try {
    model = std::make_unique<GPTModel>(GPTModel::from_safetensors(data, size));
  } catch (const Error&) {
    return 0;
  }
  // Odd-sized inputs also take the load-time 8-bit quantizer (kernels/matmul_q8.h) where the
  // shape allows it; a file stored 8-bit already is 8-bit.
  std::unique_ptr<GPTModel> quantized;
  if (size % 2 == 1 && model->weight_type() == Weights::kF32 && model->config().n_embd % 32 == 0) {
    const Weights int8 = Weights::kInt8;
    try {
      quantized = std::make_unique<GPTModel>(GPTModel::from_safetensors(data, size, &int8));
      check(quantized->weight_type() == Weights::kInt8);
    } catch (const Error&) {
      // A weight too large for a binary16 block scale is refused; nothing else may be.
    }
  }
  for (const GPTModel* m : {model.get(), quantized.get()}) {
    if (!m) continue;
    try {
      exercise(*m, data, size);
    } catch (const Error& e) {
      // Only the decoder's check of a non-finite row may throw on a loaded model.
      std::fprintf(stderr, "unexpected specdec::Error on a loaded model: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
