// Typed access to a GgufFile's metadata (gguf.h): views into the caller's buffer, checked
// while parsing, read here.
#include <cstring>

#include "base/errors.h"
#include "model/gguf.h"

namespace specdec {
namespace {

// n little-endian bytes at p.
uint64_t load_le(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

}  // namespace

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors[it->second];
}

namespace {

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
bool is_signed(GgufType t) {
  return t == GgufType::kI8 || t == GgufType::kI16 || t == GgufType::kI32 || t == GgufType::kI64;
}

// An integer scalar at p of type t, as (negative?, magnitude bits) through int64 / uint64.
void read_integer(GgufType t, const uint8_t* p, bool* negative, uint64_t* u, int64_t* i) {
  const int n = static_cast<int>(gguf_scalar_size(t));
  const uint64_t raw = load_le(p, n);
  if (is_signed(t)) {
    const int shift = 64 - 8 * n;  // sign-extend through the top bits
    *i = static_cast<int64_t>(raw << shift) >> shift;
    *negative = *i < 0;
    *u = static_cast<uint64_t>(*i);
  } else {
    *u = raw;
    *negative = false;
    *i = static_cast<int64_t>(raw);
  }
}

double read_float(GgufType t, const uint8_t* p) {
  if (t == GgufType::kF32) {
    float x;
    std::memcpy(&x, p, 4);
    return x;
  }
  double x;
  std::memcpy(&x, p, 8);
  return x;
}

}  // namespace

namespace {
struct IntegerValue {
  bool negative;
  uint64_t u;
  int64_t i;
};

IntegerValue integer_of(const GgufFile& file, const std::string& key, GgufType* type) {
  const GgufValue& v = need_key(file, key);
  if (!is_integer(v.type)) wrong_type(key, v, "an integer");
  IntegerValue r;
  read_integer(v.type, v.data, &r.negative, &r.u, &r.i);
  *type = v.type;
  return r;
}
}  // namespace

uint64_t GgufFile::get_u64(const std::string& key) const {
  GgufType type;
  const IntegerValue r = integer_of(*this, key, &type);
  if (r.negative) fail("model file: key '", key, "' must not be negative, got ", r.i);
  return r.u;
}

int64_t GgufFile::get_i64(const std::string& key) const {
  GgufType type;
  const IntegerValue r = integer_of(*this, key, &type);
  if (type == GgufType::kU64 && r.u > uint64_t{INT64_MAX}) {
    fail("model file: key '", key, "' is too large: ", r.u);
  }
  return r.i;
}

double GgufFile::get_f64(const std::string& key) const {
  const GgufValue& v = need_key(*this, key);
  if (v.type != GgufType::kF32 && v.type != GgufType::kF64) wrong_type(key, v, "f32 or f64");
  return read_float(v.type, v.data);
}

bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue& v = need_key(*this, key);
  if (v.type != GgufType::kBool) wrong_type(key, v, "bool");
  return *v.data != 0;
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

std::vector<int64_t> GgufFile::int_array(const std::string& key) const {
  const GgufValue& v = need_key(*this, key);
  if (v.type != GgufType::kArray || !is_integer(v.elem_type)) {
    wrong_type(key, v, "an array of integers");
  }
  const size_t n = gguf_scalar_size(v.elem_type);
  std::vector<int64_t> out(v.count);
  for (uint64_t k = 0; k < v.count; ++k) {
    bool negative;
    uint64_t u;
    read_integer(v.elem_type, v.data + k * n, &negative, &u, &out[k]);
    if (v.elem_type == GgufType::kU64 && u > uint64_t{INT64_MAX}) {
      fail("model file: key '", key, "' element ", k, " is too large: ", u);
    }
  }
  return out;
}

std::vector<double> GgufFile::float_array(const std::string& key) const {
  const GgufValue& v = need_key(*this, key);
  if (v.type != GgufType::kArray ||
      (v.elem_type != GgufType::kF32 && v.elem_type != GgufType::kF64)) {
    wrong_type(key, v, "an array of f32 or f64");
  }
  const size_t n = gguf_scalar_size(v.elem_type);
  std::vector<double> out(v.count);
  for (uint64_t k = 0; k < v.count; ++k) out[k] = read_float(v.elem_type, v.data + k * n);
  return out;
}

std::vector<std::string_view> GgufFile::string_array(const std::string& key) const {
  const GgufValue& v = need_key(*this, key);
  if (v.type != GgufType::kArray || v.elem_type != GgufType::kString) {
    wrong_type(key, v, "an array of strings");
  }
  // The lengths were checked while parsing.
  std::vector<std::string_view> out;
  out.reserve(v.count);
  const uint8_t* p = v.data;
  for (uint64_t k = 0; k < v.count; ++k) {
    const uint64_t n = load_le(p, 8);
    out.emplace_back(reinterpret_cast<const char*>(p + 8), static_cast<size_t>(n));
    p += 8 + n;
  }
  return out;
}

}  // namespace specdec
