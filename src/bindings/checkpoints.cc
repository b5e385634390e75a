#include "bindings/checkpoints.h"

#include "model/checkpoint.h"
#include "model/gguf.h"

namespace specdec::bindings {
namespace {

double count_params(const Checkpoint& c) {
  double n = 0;
  for (const auto& [name, t] : c.tensors) {
    double numel = 1;
    for (uint64_t d : t.shape) numel *= static_cast<double>(d);
    n += numel;
  }
  return n;
}

LoadedCheckpoint build(const Checkpoint& checkpoint, const Weights* weights) {
  return {GPTModel::from_checkpoint(checkpoint, weights), count_params(checkpoint)};
}

}  // namespace

LoadedCheckpoint model_from_gguf(uint64_t size, const ByteReader& read, const Weights* weights) {
  return build(checkpoint_from_gguf_stream(size, read), weights);
}

LoadedCheckpoint model_from_folder(const std::vector<FolderFile>& files, const Weights* weights) {
  return build(read_hf_folder(files), weights);
}

}  // namespace specdec::bindings
