// The tensors a Llama / Qwen2 / GPT-2 config implies (Hugging Face names, model/checkpoint.h),
// with their shapes and the LayerWeights field each loads into; the checks of a checkpoint
// against them; and tensor conversion. Internal to GPTModel::from_checkpoint
// (model/family_loader.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/gpt_model.h"

namespace specdec::family {

struct Part {  // one checkpoint tensor of a fused weight: (rows, k), or (rows,) for a vector
  std::string name;
  uint64_t rows = 0;
};

// A Linear layer: q/k/v and gate/up fuse into one weight (rows are independent, so every
// output keeps the arithmetic of an unfused matmul).
struct LinearPlan {
  LinearWeights LayerWeights::*weight;
  std::vector<float> LayerWeights::*bias;
  std::vector<Part> parts;       // row blocks of the fused weight, in order
  std::vector<Part> bias_parts;  // their biases (all present or none)
  uint64_t k = 0;                // in_features
  bool bias_required = false;
};

struct VectorPlan {
  std::vector<float> LayerWeights::*field;
  Part part;
};

struct LayerPlan {
  std::vector<VectorPlan> vectors;
  std::vector<LinearPlan> linears;
};

// Layer l's tensors: Llama / Qwen2 "model.layers.{l}.", GPT-2 "transformer.h.{l}.".
LayerPlan layer_plan(Family family, const GPTConfig& c, int l);

struct GlobalNames {
  std::string embed, positions, norm_w, norm_b;  // positions, norm_b: GPT-2 only
};
GlobalNames global_names(Family family);

// Exactly the planned tensors (optional biases all present or none; lm_head.weight unless
// tied), each with its shape and the byte size its type implies; throws "model file: ...".
void check_tensor_set(const Checkpoint& ck, const GPTConfig& c, Family family);

bool is_quantized(TensorType t);  // Q8_0 / Q4_0

// The bytes a model of this shape holds its weights in (the packing's padding aside), known
// before anything is allocated: 8-bit Linear weights (int8 plus a float scale per block of 32),
// a head in 8-bit blocks where head_int8 (an 8-bit model whose head is stored in blocks), every
// other weight float32; a tied head's embedding held once, as the head.
uint64_t weight_bytes(const GPTConfig& c, bool int8, bool head_int8, bool tied);

// Q8_0 / Q4_0 blocks as our 8-bit blocks without requantizing: q (numel,) and scales
// (numel / 32,); a non-finite scale is refused.
// first_block: the index of t's first block in the whole tensor (t a part of it), for messages.
void blocks_to_q8(const std::string& name, const CheckpointTensor& t, int8_t* q, float* scales,
                  Buffer<uint8_t>& scratch, size_t first_block = 0);

// The number of values t holds (its type's bytes per value or per block of 32).
size_t tensor_numel(const CheckpointTensor& t);

// Any type widened to float (blocks dequantized: d * q, exact); non-finite values refused.
// first_value: the index of t's first value in the whole tensor (t a part of it), for messages.
// to_floats_into writes tensor_numel(t) floats at out (each written once: out may be
// uninitialised); scratch holds a fetched tensor's bytes (kept across calls, allocated once).
void to_floats_into(const std::string& name, const CheckpointTensor& t, float* out,
                    Buffer<uint8_t>& scratch, size_t first_value = 0);
std::vector<float> to_floats(const std::string& name, const CheckpointTensor& t,
                             size_t first_value = 0);

}  // namespace specdec::family
