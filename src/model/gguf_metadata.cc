// Typed access to a GgufFile's metadata (gguf.h): views into the caller's buffer, checked
// while parsing, read here.
#include <cstring>

#include "base/errors.h"
#include "model/gguf.h"

namespace specdec {

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors[it->second];
}

namespace {

// n little-endian bytes at p.
uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

const GgufValue& need_key(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  if (!v) fail("model file: key '", key, "' is missing");
  return *v;
}

[[noreturn]] void wrong_type(const std::string& key, const GgufValue& v, const char* wanted) {
  fail("model file: key '", key, "' must be ", wanted, ", got ", gguf_type_name(v.type),
       v.type == GgufType::kArray ? std::string(" of ") + gguf_type_name(v.elem_type) : "");
}

bool is_integer(GgufType t) {
  return t <= GgufType::kI32 || t == GgufType::kU64 || t == GgufType::kI64;
}

}  // namespace

uint64_t GgufFile::get_u64(const std::string& key) const {
  const GgufValue& v = need_key(*this, key);
  if (!is_integer(v.type)) wrong_type(key, v, "an integer");
  const int n = static_cast<int>(gguf_scalar_size(v.type));
  const uint64_t raw = load_le(v.data, n);
  const bool is_signed = v.type == GgufType::kI8 || v.type == GgufType::kI16 ||
                         v.type == GgufType::kI32 || v.type == GgufType::kI64;
  const int shift = 64 - 8 * n;  // sign-extended through the top bits
  if (is_signed && static_cast<int64_t>(raw << shift) < 0) {
    fail("model file: key '", key, "' must not be negative, got ",
         static_cast<int64_t>(raw << shift) >> shift);
  }
  return raw;
}

double GgufFile::get_f64(const std::string& key) const {
  const GgufValue& v = need_key(*this, key);
  if (v.type == GgufType::kF32) {
    float x;
    std::memcpy(&x, v.data, 4);
    return x;
  }
  if (v.type != GgufType::kF64) wrong_type(key, v, "f32 or f64");
  double x;
  std::memcpy(&x, v.data, 8);
  return x;
}

std::string_view GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = need_key(*this, key);
  if (v.type != GgufType::kString) wrong_type(key, v, "string");
  return {reinterpret_cast<const char*>(v.data), v.bytes};
}

uint64_t GgufFile::array_size(const std::string& key) const {
  const GgufValue& v = need_key(*this, key);
  if (v.type != GgufType::kArray) wrong_type(key, v, "an array");
  return v.count;
}

}  // namespace specdec
