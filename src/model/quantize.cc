#include "model/quantize.h"

#include <cstring>
#include <map>
#include <string>

#include "base/errors.h"
#include "kernels/half.h"
#include "kernels/matmul_q8.h"
#include "model/gpt_model.h"
#include "model/load.h"
#include "model/safetensors.h"
#include "model/specdec_file.h"

namespace specdec {

namespace {

// Whether name is one of the block Linear weights stored 8-bit ("transformer.h.<l>.<linear>").
bool is_block_linear(const std::string& name) {
  static const char* const kLinear[] = {".attn.c_attn.weight", ".attn.c_proj.weight",
                                        ".mlp.c_fc.weight", ".mlp.c_proj.weight"};
  if (name.rfind("transformer.h.", 0) != 0) return false;
  for (const char* s : kLinear) {
    const size_t n = std::strlen(s);
    if (name.size() > n && name.compare(name.size() - n, n, s) == 0) return true;
  }
  return false;
}

}  // namespace

std::vector<uint8_t> quantize_model_file(const uint8_t* bytes, size_t size) {
  // Every check of a model file first: our own float file, and one that loads as 8-bit.
  if (sniff_format(bytes, size) != CheckpointFormat::kSpecdec) {
    fail(
        "model file: a GGUF file; quantize takes our own safetensors files (a GGUF file's "
        "Q8_0 / Q4_0 blocks load as they are)");
  }
  const SafetensorsView view = parse_safetensors(bytes, size);
  auto stored = view.metadata.find("weights");
  if (stored != view.metadata.end() && stored->second == "int8") {
    fail(
        "model file: stores 8-bit weights already (__metadata__ 'weights' = 'int8'); quantize "
        "its float file");
  }
  // parse_safetensors' views hold their data: the reader is never called.
  const Checkpoint ck = checkpoint_from_specdec(view, [](uint64_t, size_t, uint8_t*) {});
  const Weights int8 = Weights::kInt8;
  GPTModel::from_checkpoint(ck, &int8);  // throws where a weight cannot be quantized
  std::map<std::string, std::string> metadata = view.metadata;
  metadata["weights"] = "int8";
  std::vector<TensorData> out;
  for (const auto& [name, t] : view.tensors) {
    if (!is_block_linear(name)) {
      const size_t n_bytes = t.numel * dtype_size(t.dtype);
      out.push_back({name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + n_bytes)});
      continue;
    }
    const size_t n = t.shape[0], k = t.shape[1], blocks = k / kernels::kQ8Block;
    std::vector<float> w(t.numel);
    read_tensor_f32(t, w.data());
    std::vector<int8_t> w8(n * k);
    std::vector<float> scales(n * blocks);
    kernels::quantize_weights_q8(w.data(), n, k, w8.data(), scales.data());
    TensorData q{name + ".q8", DType::kI8, t.shape, std::vector<uint8_t>(n * k)};
    std::memcpy(q.data.data(), w8.data(), n * k);
    TensorData s{name + ".scale", DType::kF16, {n, blocks}, std::vector<uint8_t>(2 * n * blocks)};
    for (size_t i = 0; i < scales.size(); ++i) {
      const uint16_t h = kernels::f32_to_f16(scales[i]);  // exact: the scales are binary16 values
      s.data[2 * i] = static_cast<uint8_t>(h & 0xff);
      s.data[2 * i + 1] = static_cast<uint8_t>(h >> 8);
    }
    out.push_back(std::move(q));
    out.push_back(std::move(s));
  }
  std::vector<uint8_t> file = write_safetensors(metadata, out);
  // It loads (scales in binary16 range), read as our own file (not through model/load.h, whose
  // GGUF branch the lite WASM module does not link).
  const SafetensorsView written = parse_safetensors(file.data(), file.size());
  GPTModel::from_checkpoint(checkpoint_from_specdec(written, [](uint64_t, size_t, uint8_t*) {}));
  return file;
}

}  // namespace specdec
