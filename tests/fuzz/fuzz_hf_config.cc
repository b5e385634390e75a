// libFuzzer target: arbitrary bytes -> a Hugging Face folder (model/hf_folder.h) of config.json
// and model.safetensors -> GPTModel::from_checkpoint -> a forward pass of up to 4 tokens. The
// input's first two bytes give config.json's length (little-endian); the rest is the weights.
// Bad input must end in specdec::Error, never in a crash, UB or a leak. Work is bounded by the
// input: every weight the model holds is a byte range of it (F16/BF16: size / 2 parameters),
// and the context is 8 positions.
//
// Seed corpus: tests/fuzz/corpus/hf_config (models/hf_tiny.py's gpt2 and qwen2 folders,
// concatenated as above by tests/fuzz/make_hf_corpus.py).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/errors.h"
#include "fuzz_check.h"
#include "model/gpt_model.h"
#include "model/hf_folder.h"
#include "model/kv_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specdec;
  if (size < 2) return 0;
  const size_t n_config = std::min<size_t>(data[0] | (data[1] << 8), size - 2);
  const std::vector<FolderFile> files = {
      {"config.json", data + 2, n_config},
      {"model.safetensors", data + 2 + n_config, size - 2 - n_config}};
  try {
    const Checkpoint ck = read_hf_folder(files);
    const GPTModel model = GPTModel::from_checkpoint(ck, nullptr, 8);
    const GPTConfig& c = model.config();
    check(c.block_size >= 1 && c.block_size <= 8);
    check(c.n_head % c.kv_heads() == 0);
    KVCache cache(c);
    std::vector<int> tokens;
    for (size_t i = 0; i < 4 && i < size; ++i) tokens.push_back(data[size - 1 - i] % c.vocab_size);
    const std::vector<float> logits = model.forward(tokens, cache);
    check(logits.size() == tokens.size() * static_cast<size_t>(c.vocab_size));
  } catch (const Error&) {
  }
  return 0;
}
