// One way in for every model file: our own safetensors files (nanoGPT names, model/specdec_file.h),
// GGUF files (model/gguf.h) and Hugging Face folders (model/hf_folder.h) all become a Checkpoint
// (model/checkpoint.h), checked by one validation (check_checkpoint_config) and built by one
// loader (GPTModel::from_checkpoint). A single file's format is told here, once, from its first
// bytes; no other layer sniffs it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "model/checkpoint.h"

namespace specdec {

// The format of a single model file, from its first 4 bytes ("GGUF" magic, else safetensors).
// Inline: code that reads our own files only (the lite WASM module) tells a GGUF file without
// linking the GGUF frontend.
inline CheckpointFormat sniff_format(const uint8_t* first, size_t n) {
  return n >= 4 && std::memcmp(first, "GGUF", 4) == 0 ? CheckpointFormat::kGguf
                                                      : CheckpointFormat::kSpecdec;
}

// A single model file of `size` bytes, read through `read` (which must outlive the checkpoint):
// its header now (every check the header allows), each tensor when the loader converts it.
Checkpoint open_checkpoint(uint64_t size, const ByteReader& read);

// The same from bytes in memory (which must outlive the checkpoint) and, natively, from a path
// (the checkpoint holds the open file).
Checkpoint open_checkpoint(const uint8_t* bytes, size_t size);
Checkpoint open_checkpoint(const std::string& path);

}  // namespace specdec
