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
  uint8_t first8[8] = {};
  read(0, static_cast<size_t>(std::min<uint64_t>(size, 8)), first8);
  if (sniff_format(first8, static_cast<size_t>(std::min<uint64_t>(size, 8))) ==
      CheckpointFormat::kGguf) {
    return checkpoint_from_gguf_stream(size, read);
  }
  const uint64_t n = safetensors_header_bytes(first8, size);
  std::vector<uint8_t> header(static_cast<size_t>(n));
  read(0, header.size(), header.data());
  return checkpoint_from_specdec(parse_safetensors_header(header.data(), header.size(), size),
                                 read);
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
