// One way in for a single model file (model/load.h): its format told once, from its magic.
#include "model/load.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "model/gguf.h"
#include "model/gpt_model.h"
#include "model/hf_folder.h"
#include "model/safetensors.h"
#include "model/specdec_file.h"

namespace specdec {

Checkpoint open_checkpoint(uint64_t size, const ByteReader& read) {
  uint8_t first4[4] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(size, 4));
  read(0, n, first4);
  if (sniff_format(first4, n) == CheckpointFormat::kGguf) {
    return checkpoint_from_gguf_stream(size, read);
  }
  return checkpoint_from_specdec(size, read);
}

Checkpoint open_checkpoint(const uint8_t* bytes, size_t size) {
  return open_checkpoint(size, [bytes](uint64_t offset, size_t n, uint8_t* into) {
    if (n) std::memcpy(into, bytes + offset, n);
  });
}

Checkpoint open_checkpoint(const std::string& path) {
  uint64_t size = 0;
  const ByteReader read = file_reader(path, &size);
  return open_checkpoint(size, read);
}

// GPTModel's entries from bytes and paths (gpt_model.h), here rather than beside
// from_checkpoint: a build that reads our own files only (the lite WASM module) links
// from_checkpoint without the GGUF and folder frontends these name.
GPTModel GPTModel::from_safetensors(const uint8_t* bytes, size_t size, const Weights* weights) {
  return from_checkpoint(open_checkpoint(bytes, size), weights);
}

GPTModel GPTModel::from_file(const std::string& path, const Weights* weights) {
  return from_checkpoint(open_checkpoint(path), weights);
}

GPTModel GPTModel::from_path(const std::string& path, const Weights* weights) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return from_checkpoint(read_hf_folder(path), weights);
  }
  return from_file(path, weights);  // streamed from the file a tensor at a time
}

}  // namespace specdec
