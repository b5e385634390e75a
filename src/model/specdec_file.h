// Our own model files as a Checkpoint (model/checkpoint.h): a safetensors file with nanoGPT's
// tensor names (models/README.md) and the config in "__metadata__" as decimal strings
// (vocab_size = 256 byte-level tokens, n_layer, n_head, n_embd, block_size). It is a GPT-2
// checkpoint in Linear layout (out, in) with the exact erf GELU, learned positions and
// LayerNorm, a tied head unless the file holds lm_head.weight, run over its whole block_size.
//
// A quantized file (__metadata__ "weights": "int8", written by `specdec quantize` or
// models/quantize.py) stores each Linear weight X.weight (n, k) of the blocks as X.weight.q8 (I8
// (n, k), values in [-127, 127]) and X.weight.scale (F16 (n, k / 32), finite and > 0); the pair
// arrives as one Q8_0 tensor X.weight (a scale and 32 quants a block), so the loader takes the
// blocks as they are, as it takes a GGUF file's.
#pragma once

#include <cstdint>

#include "model/checkpoint.h"
#include "model/safetensors.h"

namespace specdec {

// From the file's parsed header (parse_safetensors_header; or parse_safetensors, whose tensors'
// data are then read in place): the format's own rules (the metadata, one layout of 8-bit
// weights, I8 / F16 dtypes of quants and scales) are checked now, the quants' range and the
// scales when each weight is fetched. `read` reads the file and must outlive the checkpoint;
// tensors with data read from it directly.
Checkpoint checkpoint_from_specdec(const SafetensorsView& view, const ByteReader& read);
// The same from a file of `size` bytes that `read` reads: its header read and parsed now.
Checkpoint checkpoint_from_specdec(uint64_t size, const ByteReader& read);

// A safetensors file's header (parse_safetensors_header), read through `read` (our files, and
// the weight files of a Hugging Face folder, with bf16).
SafetensorsView read_safetensors_header(uint64_t size, const ByteReader& read, bool bf16 = false);

}  // namespace specdec
