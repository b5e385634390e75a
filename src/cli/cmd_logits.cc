// specdec logits: the model's next-token log-probabilities after a prompt, all V of them (for
// checking a model file against PyTorch or llama.cpp, or looking at what it predicts). The model
// is one of our files, a GGUF file or a Hugging Face folder; the prompt's bytes are its token ids.
#include <cstdio>
#include <string>
#include <vector>

#include "base/errors.h"
#include "cli/cli.h"
#include "kernels/ops.h"
#include "model/gpt_model.h"
#include "model/tokenizer.h"

namespace specdec::cli {

int cmd_logits(const std::vector<std::string>& argv) {
  const Args args(argv, {"model", "prompt", "weights"}, {"json"});
  if (!args.has("model"))
    fail("--model: required (a .safetensors model, a .gguf file or a folder)");
  const std::string prompt = args.str("prompt", "");
  if (prompt.empty()) fail("--prompt: required, at least one byte");

  Weights weights;
  const GPTModel model = GPTModel::from_path(args.str("model", ""), weights_option(args, weights));
  const std::vector<int> tokens = encode(prompt);
  const size_t block_size = model.config().block_size;
  if (tokens.size() > block_size) {
    fail("--prompt: ", tokens.size(), " tokens exceed the model context of ", block_size,
         " tokens (block_size)");
  }
  KVCache cache(model.config());
  const std::vector<float> logits = model.forward(tokens, cache);
  const size_t V = model.config().vocab_size;
  std::vector<float> logprobs(logits.end() - V, logits.end());
  kernels::log_softmax(logprobs.data(), V);

  if (args.has("json")) {
    std::printf("{\"model\":%s,\"prompt\":%s,\"tokens\":%s,\"logprobs\":[",
                json_escape(args.str("model", "")).c_str(), json_escape(prompt).c_str(),
                json_array(tokens).c_str());
    for (size_t i = 0; i < V; ++i) std::printf("%s%.9g", i ? "," : "", logprobs[i]);
    std::printf("]}\n");
    return 0;
  }
  // One line per token id: id, the byte shown printable or as \xHH ([id] past a byte
  // vocabulary), log-probability.
  for (size_t i = 0; i < V; ++i) {
    char shown[16];
    if (V > 256) {
      std::snprintf(shown, sizeof shown, "[%zu]", i);
    } else if (i >= 0x20 && i < 0x7f) {
      std::snprintf(shown, sizeof shown, "'%c'", static_cast<char>(i));
    } else {
      std::snprintf(shown, sizeof shown, "\\x%02x", static_cast<unsigned>(i));
    }
    std::printf("%3zu %-6s %.9g\n", i, shown, logprobs[i]);
  }
  return 0;
}

}  // namespace specdec::cli
