#include "model/checkpoint.h"

namespace specdec {

const char* family_name(Family f) {
  static const char* const kNames[] = {"gpt2", "llama", "qwen2"};  // Family's order
  return kNames[static_cast<int>(f)];
}

const char* tensor_type_name(TensorType t) {
  static const char* const kNames[] = {"F32", "F16", "BF16", "Q8_0", "Q4_0"};  // TensorType's order
  return kNames[static_cast<int>(t)];
}

const uint8_t* tensor_bytes(const CheckpointTensor& t, std::vector<uint8_t>& scratch) {
  if (t.data || !t.fetch) return t.data;
  scratch.resize(t.bytes);
  t.fetch(scratch.data());
  return scratch.data();
}

const CheckpointTensor* Checkpoint::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

}  // namespace specdec
