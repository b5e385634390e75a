#include "model/checkpoint.h"

#include <fstream>
#include <memory>

#include "base/errors.h"

namespace specdec {

const char* family_name(Family f) {
  static const char* const kNames[] = {"gpt2", "llama", "qwen2"};  // Family's order
  return kNames[static_cast<int>(f)];
}

const char* tensor_type_name(TensorType t) {
  static const char* const kNames[] = {"F32", "F16", "BF16", "Q8_0", "Q4_0"};  // TensorType's order
  return kNames[static_cast<int>(t)];
}

const uint8_t* tensor_bytes(const CheckpointTensor& t, Buffer<uint8_t>& scratch) {
  if (t.data || !t.fetch) return t.data;
  resize_scratch(scratch, t.bytes);
  t.fetch(scratch.data());
  return scratch.data();
}

ByteReader file_reader(const std::string& path, uint64_t* size) {
  auto in = std::make_shared<std::ifstream>(path, std::ios::binary | std::ios::ate);
  if (!*in) fail("model file '", path, "': cannot open");
  const std::streamoff end = in->tellg();
  if (end < 0) fail("model file '", path, "': cannot read its size");
  *size = static_cast<uint64_t>(end);
  return [in, path](uint64_t offset, size_t bytes, uint8_t* into) {
    in->clear();
    in->seekg(static_cast<std::streamoff>(offset));
    if (!in->read(reinterpret_cast<char*>(into), static_cast<std::streamsize>(bytes))) {
      fail("model file '", path, "': cannot read ", bytes, " bytes at offset ", offset);
    }
  };
}

const CheckpointTensor* Checkpoint::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

}  // namespace specdec
