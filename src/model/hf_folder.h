// A Hugging Face model folder as a Checkpoint (model/checkpoint.h): config.json (model/hf_config.h)
// and the weights, model.safetensors or shards listed by model.safetensors.index.json
// ("model-00001-of-00002.safetensors", ...), F32 / F16 / BF16. Names are normalised to
// checkpoint.h's: GPT-2 names get the "transformer." prefix, GPT-2's Conv1D weights (stored
// (in, out)) are transposed to (out, in), buffers that are not weights (GPT-2's attn.bias /
// attn.masked_bias masks, rotary_emb.inv_freq) are dropped, and so is lm_head.weight of a tied
// model. Every failure throws specdec::Error naming the file, tensor and value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint.h"

namespace specdec {

// One file of a folder: its name (no directories) and bytes, which must outlive the checkpoint.
struct FolderFile {
  std::string name;
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// From the files' bytes (e.g. handed over from JavaScript); other files (tokenizer.json, ...)
// are ignored. Tensors point into the files' bytes or into Checkpoint::owned (transposes).
Checkpoint read_hf_folder(const std::vector<FolderFile>& files);

// Natively, from a directory: reads config.json, the index if there is one, and the weights;
// the checkpoint owns the bytes (Checkpoint::owned).
Checkpoint read_hf_folder(const std::string& dir);

}  // namespace specdec
