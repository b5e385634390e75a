// Real checkpoints as models for the bindings: a GGUF file (llama / qwen2 / gpt2) and a Hugging
// Face folder's files. The full modules link checkpoints.cc; the lite module (specdec/lite: the
// page's main thread, course sites that need the lesson's functions) links
// lite/no_checkpoints.cc instead, which refuses them with a message, so that the frontends'
// code (~47 kB gzip) is not in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/checkpoint.h"
#include "model/gpt_model.h"
#include "model/hf_folder.h"

namespace specdec::bindings {

struct LoadedCheckpoint {
  GPTModel model;
  double params = 0;  // parameters the checkpoint stores (a tied head counted once)
};

// weights: null keeps the file's layout (Q8_0 / Q4_0 as 8-bit, floats as f32). A GGUF file of
// `size` bytes is streamed through `read` (model/gguf.h: its header from a prefix, then one
// tensor at a time), so it is never whole in wasm memory beside the model.
LoadedCheckpoint model_from_gguf(uint64_t size, const ByteReader& read, const Weights* weights);
LoadedCheckpoint model_from_folder(const std::vector<FolderFile>& files, const Weights* weights);

}  // namespace specdec::bindings
