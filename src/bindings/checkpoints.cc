#include "bindings/checkpoints.h"

#include "model/load.h"

namespace specdec::bindings {

Checkpoint open_model_file(uint64_t size, const ByteReader& read) {
  return open_checkpoint(size, read);
}

Checkpoint open_folder(const std::vector<FolderFile>& files) { return read_hf_folder(files); }

}  // namespace specdec::bindings
