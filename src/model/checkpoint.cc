#include "model/checkpoint.h"

namespace specdec {

const char* family_name(Family f) {
  switch (f) {
    case Family::kGPT2:
      return "gpt2";
    case Family::kLlama:
      return "llama";
    case Family::kQwen2:
      return "qwen2";
  }
  return "?";
}

const char* tensor_type_name(TensorType t) {
  switch (t) {
    case TensorType::kF32:
      return "F32";
    case TensorType::kF16:
      return "F16";
    case TensorType::kBF16:
      return "BF16";
    case TensorType::kQ8_0:
      return "Q8_0";
    case TensorType::kQ4_0:
      return "Q4_0";
  }
  return "?";
}

const CheckpointTensor* Checkpoint::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

}  // namespace specdec
