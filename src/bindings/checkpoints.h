// Model files as checkpoints for the bindings: every single file (our own safetensors files and
// GGUF files, told apart once by model/load.h) and every Hugging Face folder becomes a streamed
// Checkpoint (model/checkpoint.h) that GPTModel::from_checkpoint builds. The full modules link
// checkpoints.cc; the lite module (specdec/lite: the page's main thread, course sites that need
// the lesson's functions) links lite/no_checkpoints.cc instead, which reads our own files only
// and refuses the others with a message, so that the GGUF and folder frontends' code (~47 kB
// gzip) is not in it.
#pragma once

#include <cstdint>
#include <vector>

#include "model/checkpoint.h"
#include "model/hf_folder.h"

namespace specdec::bindings {

// A single model file of `size` bytes read through `read` (which must outlive the checkpoint):
// its header now, each tensor when the loader converts it, so the file is never whole in wasm
// memory beside the model.
Checkpoint open_model_file(uint64_t size, const ByteReader& read);
// A Hugging Face folder's files, each streamed the same way.
Checkpoint open_folder(const std::vector<FolderFile>& files);

}  // namespace specdec::bindings
