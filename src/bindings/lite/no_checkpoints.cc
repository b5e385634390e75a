// The lite module's stand-in for bindings/checkpoints.cc: it reads specdec's own model files
// only (model/specdec_file.h, without model/load.h, whose GGUF branch would link the GGUF
// frontend), and says where GGUF files and Hugging Face folders are read.
#include <algorithm>
#include <vector>

#include "base/errors.h"
#include "bindings/checkpoints.h"
#include "model/load.h"
#include "model/safetensors.h"
#include "model/specdec_file.h"

namespace specdec::bindings {

Checkpoint open_model_file(uint64_t size, const ByteReader& read) {
  uint8_t first8[8] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(size, 8));
  read(0, n, first8);
  if (sniff_format(first8, n) == CheckpointFormat::kGguf) {
    fail(
        "loadModel: specdec/lite reads specdec's own model files only; load GGUF files with the "
        "full build (import from 'specdec')");
  }
  std::vector<uint8_t> header(static_cast<size_t>(safetensors_header_bytes(first8, size)));
  read(0, header.size(), header.data());
  return checkpoint_from_specdec(parse_safetensors_header(header.data(), header.size(), size),
                                 read);
}

Checkpoint open_folder(const std::vector<FolderFile>&) {
  fail(
      "loadModel: specdec/lite reads specdec's own model files only; load Hugging Face folders "
      "with the full build (import from 'specdec')");
}

}  // namespace specdec::bindings
