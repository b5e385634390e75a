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
#include <utility>
#include <vector>

#include "model/checkpoint.h"

namespace specdec {

// One file of a folder: its name (no directories) and either its bytes, which must outlive the
// checkpoint, or its size and a reader (streamed: the header, then each tensor when the model's
// loader converts it, as a GGUF file streams; the reader must outlive the checkpoint).
struct FolderFile {
  FolderFile(std::string file, const uint8_t* bytes, uint64_t bytes_size)
      : name(std::move(file)), data(bytes), size(bytes_size) {}
  FolderFile(std::string file, uint64_t file_size, ByteReader reader)
      : name(std::move(file)), size(file_size), read(std::move(reader)) {}

  std::string name;
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  ByteReader read;  // when data is null
};

// From the files (e.g. handed over from JavaScript); other files (tokenizer.json, ...) are
// ignored. Tensors point into the files' bytes or into Checkpoint::owned (transposes), or are
// fetched through the files' readers.
Checkpoint read_hf_folder(const std::vector<FolderFile>& files);

// Natively, from a directory: reads config.json and the index if there is one, and streams the
// weight files (the checkpoint's tensors hold the open files).
Checkpoint read_hf_folder(const std::string& dir);

}  // namespace specdec
