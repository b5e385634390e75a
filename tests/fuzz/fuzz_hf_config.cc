// libFuzzer target: arbitrary bytes -> a Hugging Face folder (model/hf_folder.h) of config.json
// and model.safetensors -> GPTModel::from_checkpoint -> a forward pass of up to 4 tokens. The
// input's first two bytes give config.json's length (little-endian); the rest is the weights.
// Bad input must end in specdec::Error, never in a crash, UB or a leak. Work is bounded by the
// input: every weight the model holds is a byte range of it (F16/BF16: size / 2 parameters),
// and the context is 8 positions.
//
// The same bytes streamed through readers give the same logits or the same message.
//
// Seed corpus: tests/fuzz/corpus/hf_config (tests/fixtures/makers/hf_tiny.py's gpt2 and qwen2
// folders, concatenated as above by tests/fuzz/make_hf_corpus.py).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/errors.h"
#include "fuzz_check.h"
#include "model/gpt_model.h"
#include "model/hf_folder.h"
#include "model/kv_cache.h"

namespace {

// The logits of up to 4 tokens, or the loader's message: what a folder gives.
struct Outcome {
  std::vector<float> logits;
  std::string error;
};

Outcome run(const std::vector<specdec::FolderFile>& files, const uint8_t* data, size_t size) {
  using namespace specdec;
  try {
    const Checkpoint ck = read_hf_folder(files);
    const GPTModel model = GPTModel::from_checkpoint(ck, nullptr, 8);
    const GPTConfig& c = model.config();
    check(c.block_size >= 1 && c.block_size <= 8);
    check(c.n_head % c.kv_heads() == 0);
    KVCache cache(c);
    std::vector<int> tokens;
    for (size_t i = 0; i < 4 && i < size; ++i) tokens.push_back(data[size - 1 - i] % c.vocab_size);
    Outcome out{model.forward(tokens, cache), ""};
    check(out.logits.size() == tokens.size() * static_cast<size_t>(c.vocab_size));
    return out;
  } catch (const Error& e) {
    return {{}, e.what()};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specdec;
  if (size < 2) return 0;
  const size_t n_config = std::min<size_t>(data[0] | (data[1] << 8), size - 2);
  const uint8_t* weights = data + 2 + n_config;
  const size_t n_weights = size - 2 - n_config;
  const Outcome whole = run(
      {{"config.json", data + 2, n_config}, {"model.safetensors", weights, n_weights}}, data, size);
  // The same files streamed (as the bindings read JS buffers): the same logits or message, and
  // every read inside its file.
  auto reader = [](const uint8_t* file, size_t n) {
    return [file, n](uint64_t at, size_t bytes, uint8_t* into) {
      check(at <= n && bytes <= n - at);
      std::memcpy(into, file + at, bytes);
    };
  };
  const Outcome streamed = run({{"config.json", n_config, reader(data + 2, n_config)},
                                {"model.safetensors", n_weights, reader(weights, n_weights)}},
                               data, size);
  check(streamed.error == whole.error);
  check(streamed.logits.size() == whole.logits.size());
  check(whole.logits.empty() ||
        std::memcmp(streamed.logits.data(), whole.logits.data(), whole.logits.size() * 4) == 0);
  return 0;
}
