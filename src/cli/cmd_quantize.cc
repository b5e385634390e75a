// specdec quantize IN OUT: a float model file -> its 8-bit form (model/quantize.h), and
// a line saying what changed.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "base/errors.h"
#include "cli/cli.h"
#include "model/gpt_model.h"
#include "model/quantize.h"
#include "model/safetensors.h"

namespace specdec::cli {

int cmd_quantize(const std::vector<std::string>& argv) {
  std::vector<std::string> paths, options;
  for (const std::string& a : argv) (a.rfind("--", 0) == 0 ? options : paths).push_back(a);
  const Args args(options, {}, {});
  if (paths.size() != 2) fail("expected two paths: IN (a float .safetensors model) and OUT");
  const std::vector<uint8_t> in = read_file(paths[0], 8 + kMaxHeaderBytes + kMaxParamBytes);
  const std::vector<uint8_t> out = quantize_model_file(in.data(), in.size());
  std::ofstream file(paths[1], std::ios::binary);
  if (!file.write(reinterpret_cast<const char*>(out.data()),
                  static_cast<std::streamsize>(out.size()))) {
    fail("cannot write '", paths[1], "'");
  }
  const GPTModel f32 = GPTModel::from_safetensors(in.data(), in.size());
  const GPTModel int8 = GPTModel::from_safetensors(out.data(), out.size());
  std::printf("%s: %zu bytes on disk (was %zu), %zu bytes of weights in memory (was %zu)\n",
              paths[1].c_str(), out.size(), in.size(), int8.weight_bytes(), f32.weight_bytes());
  return 0;
}

const Weights* weights_option(const Args& args, Weights& storage) {
  if (!args.has("weights")) return nullptr;
  const std::string w = args.str("weights", "");
  if (w == "f32") {
    storage = Weights::kF32;
  } else if (w == "int8") {
    storage = Weights::kInt8;
  } else {
    fail("--weights: expected f32 or int8, got '", w, "'");
  }
  return &storage;
}

}  // namespace specdec::cli
