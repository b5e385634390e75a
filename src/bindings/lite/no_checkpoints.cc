// The lite module's stand-in for bindings/checkpoints.cc: it reads specdec's own model files
// only, and says where GGUF files and Hugging Face folders are read.
#include "base/errors.h"
#include "bindings/checkpoints.h"

namespace specdec::bindings {

LoadedCheckpoint model_from_gguf(uint64_t, const ByteReader&, const Weights*) {
  fail(
      "loadModel: specdec/lite reads specdec's own model files only; load GGUF files with the "
      "full build (import from 'specdec')");
}

LoadedCheckpoint model_from_folder(const std::vector<FolderFile>&, const Weights*) {
  fail(
      "loadModel: specdec/lite reads specdec's own model files only; load Hugging Face folders "
      "with the full build (import from 'specdec')");
}

}  // namespace specdec::bindings
