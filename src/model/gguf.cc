// The GGUF container: parse_gguf and typed metadata access. The family mapping (tensor names,
// hyperparameters, the llama un-permute) is in gguf_checkpoint.cc.
#include "model/gguf.h"

#include <algorithm>
#include <cstring>

#include "base/errors.h"
#include "model/safetensors.h"  // shape_string

namespace specdec {
namespace {

// Reads little-endian fields from [bytes, bytes + size), refusing to read past the end: each
// failure names the field that did not fit.
// A header read from a prefix of the file (available < file size) throws GgufNeedsMore where
// the file has the bytes but the prefix does not; the size checks use the whole file's.
class Reader {
 public:
  Reader(const uint8_t* bytes, size_t available, uint64_t file_size)
      : bytes_(bytes), available_(available), size_(file_size) {}

  size_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }  // in the file
  const uint8_t* here() const { return bytes_ + pos_; }

  void need(uint64_t n, const std::string& field) const {
    if (n > left()) {
      fail(field, " needs ", n, " bytes at offset ", pos_, " but only ", left(),
           " are left (truncated file?)");
    }
    if (n > available_ - pos_) throw GgufNeedsMore{pos_ + n};
  }
  const uint8_t* take(uint64_t n, const std::string& field) {
    need(n, field);
    const uint8_t* p = here();
    pos_ += static_cast<size_t>(n);
    return p;
  }
  uint32_t u32(const std::string& field) { return static_cast<uint32_t>(le(take(4, field), 4)); }
  uint64_t u64(const std::string& field) { return le(take(8, field), 8); }
  // A string: u64 length (at most max_len) and its bytes.
  std::string_view str(const std::string& field, uint64_t max_len) {
    const uint64_t n = u64(field + " length");
    if (n > max_len) fail(field, " length ", n, " exceeds the limit of ", max_len);
    return {reinterpret_cast<const char*>(take(n, field)), static_cast<size_t>(n)};
  }

  static uint64_t le(const uint8_t* p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
  }

 private:
  const uint8_t* bytes_;
  size_t available_;
  uint64_t size_;
  size_t pos_ = 0;
};

}  // namespace

size_t gguf_scalar_size(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool:
      return 1;
    case GgufType::kU16:
    case GgufType::kI16:
      return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32:
      return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64:
      return 8;
    default:
      return 0;
  }
}

namespace {

size_t scalar_size(GgufType t) { return gguf_scalar_size(t); }

GgufType value_type(uint32_t raw, const std::string& where) {
  if (raw > static_cast<uint32_t>(GgufType::kF64)) fail(where, " has unknown value type ", raw);
  return static_cast<GgufType>(raw);
}

// One metadata value after its type: checked, and kept as a view.
GgufValue read_value(Reader& r, GgufType type, const std::string& where) {
  GgufValue v;
  v.type = type;
  if (type == GgufType::kString) {
    const std::string_view s = r.str(where, UINT64_MAX);
    v.data = reinterpret_cast<const uint8_t*>(s.data());
    v.bytes = s.size();
    return v;
  }
  if (type != GgufType::kArray) {
    v.bytes = scalar_size(type);
    v.data = r.take(v.bytes, where);
    if (type == GgufType::kBool && *v.data > 1) {
      fail(where, ": bool must be 0 or 1, got ", +*v.data);
    }
    return v;
  }
  v.elem_type = value_type(r.u32(where + " element type"), where);
  if (v.elem_type == GgufType::kArray) fail(where, ": nested arrays are not supported");
  v.count = r.u64(where + " count");
  v.data = r.here();
  if (v.elem_type == GgufType::kString) {
    // Each element is at least its 8-byte length: the count is bounded by the bytes left.
    if (v.count > r.left() / 8) {
      fail(where, ": ", v.count, " strings cannot fit in the ", r.left(), " bytes left");
    }
    for (uint64_t i = 0; i < v.count; ++i) {  // no allocation per element
      if (r.left() < 8) fail(where, ": string ", i, " of ", v.count, " is cut off");
      r.need(8, where);
      const uint64_t n = Reader::le(r.here(), 8);
      if (n > r.left() - 8) {
        fail(where, ": string ", i, " has length ", n, " but only ", r.left() - 8,
             " bytes are left (truncated file?)");
      }
      r.take(8 + n, where);
    }
  } else {
    const size_t n = scalar_size(v.elem_type);
    if (v.count > r.left() / n) {
      fail(where, ": ", v.count, " elements of ", gguf_type_name(v.elem_type),
           " cannot fit in the ", r.left(), " bytes left");
    }
    r.take(v.count * n, where);
    if (v.elem_type == GgufType::kBool) {
      for (uint64_t i = 0; i < v.count; ++i) {
        if (v.data[i] > 1) fail(where, ": bool element ", i, " must be 0 or 1, got ", +v.data[i]);
      }
    }
  }
  v.bytes = static_cast<size_t>(r.here() - v.data);
  return v;
}

// Elements per block and bytes per block of the types a checkpoint can hold.
struct TypeLayout {
  uint32_t ggml_type;
  TensorType type;
  uint64_t block, block_bytes;
};
constexpr TypeLayout kLayouts[] = {
    {0, TensorType::kF32, 1, 4},    {1, TensorType::kF16, 1, 2},    {30, TensorType::kBF16, 1, 2},
    {8, TensorType::kQ8_0, 32, 34}, {2, TensorType::kQ4_0, 32, 18},
};

GgufTensor read_tensor_info(Reader& r, uint64_t index) {
  GgufTensor t;
  const std::string slot = "model file: tensor " + std::to_string(index);
  t.name = std::string(r.str(slot + " name", kGgufMaxTensorName));
  const std::string where = "model file: tensor '" + t.name + "'";
  const uint32_t n_dims = r.u32(where + " n_dims");
  if (n_dims < 1 || n_dims > kGgufMaxDims) {
    fail(where, ": n_dims ", n_dims, " (must be 1..", kGgufMaxDims, ")");
  }
  uint64_t numel = 1;
  for (uint32_t i = 0; i < n_dims; ++i) {
    const uint64_t n = r.u64(where + " ne[" + std::to_string(i) + "]");
    t.ne.push_back(n);
    if (n == 0 || n > uint64_t{INT64_MAX} / numel) {
      fail(where, ": dimensions ", shape_string(t.ne), " are empty or too large");
    }
    numel *= n;
  }
  t.ggml_type = r.u32(where + " type");
  const TypeLayout* layout = nullptr;
  for (const TypeLayout& l : kLayouts) {
    if (l.ggml_type == t.ggml_type) layout = &l;
  }
  if (!layout) {
    fail(where, " has type ", ggml_type_name(t.ggml_type),
         " (supported: F32, F16, BF16, Q8_0, Q4_0)");
  }
  t.type = layout->type;
  if (t.ne[0] % layout->block != 0) {
    fail(where, ": row length ne[0] = ", t.ne[0], " is not a multiple of ", layout->block, " (",
         tensor_type_name(t.type), " blocks)");
  }
  const uint64_t blocks = numel / layout->block;
  if (blocks > SIZE_MAX / layout->block_bytes) fail(where, ": too large for this machine");
  t.bytes = static_cast<size_t>(blocks * layout->block_bytes);
  t.offset = r.u64(where + " offset");
  return t;
}

uint64_t read_alignment(const GgufFile& f) {
  const GgufValue* v = f.find("general.alignment");
  if (!v) return kGgufDefaultAlignment;
  if (v->type != GgufType::kU32) {
    fail("model file: general.alignment must be u32, got ", gguf_type_name(v->type));
  }
  const uint64_t a = Reader::le(v->data, 4);
  if (a == 0 || (a & (a - 1)) != 0) {
    fail("model file: general.alignment ", a, " is not a power of two");
  }
  return a;
}

// Offsets aligned, inside the data section, no two tensors sharing a byte.
void place_tensors(GgufFile& f, const uint8_t* data, uint64_t data_size) {
  std::vector<const GgufTensor*> order;
  for (GgufTensor& t : f.tensors) {
    const std::string where = "model file: tensor '" + t.name + "'";
    if (t.offset % f.alignment != 0) {
      fail(where, ": offset ", t.offset, " is not a multiple of the alignment ", f.alignment);
    }
    if (t.offset > data_size || t.bytes > data_size - t.offset) {
      fail(where, ": bytes [", t.offset, ", ", t.offset, " + ", t.bytes,
           ") are outside the data section of ", data_size, " bytes");
    }
    t.data = data ? data + t.offset : nullptr;
    order.push_back(&t);
  }
  std::sort(order.begin(), order.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const GgufTensor& a = *order[i - 1];
    const GgufTensor& b = *order[i];
    if (b.offset < a.offset + a.bytes) {
      fail("model file: tensors '", a.name, "' and '", b.name, "' overlap (bytes [", a.offset, ", ",
           a.offset + a.bytes, ") and [", b.offset, ", ", b.offset + b.bytes, "))");
    }
  }
}

}  // namespace

const char* gguf_type_name(GgufType t) {
  static const char* const kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                       "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < sizeof kNames / sizeof *kNames ? kNames[i] : "unknown";
}

std::string ggml_type_name(uint32_t ggml_type) {
  // ggml's type numbers; 4, 5, 31-33 and 36-38 were removed from ggml.
  static const char* const kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "",       "",      "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16",  "",
      "",        "",       "TQ1_0",   "TQ2_0", "",       "",      "",      "MXFP4"};
  if (ggml_type < sizeof kNames / sizeof *kNames && *kNames[ggml_type]) return kNames[ggml_type];
  return "type " + std::to_string(ggml_type);
}

std::vector<uint64_t> GgufTensor::shape() const { return {ne.rbegin(), ne.rend()}; }

// The container from the first `available` bytes of a file of `size` bytes: tensors placed in
// the data section when `place` (the whole file is there), else left without data (offsets still
// checked against the file's size).
GgufFile parse_gguf_any(const uint8_t* bytes, size_t available, uint64_t size, bool place) {
  Reader r(bytes, available, size);
  const uint32_t magic = r.u32("model file: magic");
  if (magic != kGgufMagic) fail("model file: not a GGUF file (magic 0x", std::hex, magic, ")");
  GgufFile f;
  f.version = r.u32("model file: version");
  if (f.version == 0x03000000 || f.version == 0x02000000) {
    fail("model file: big-endian GGUF (version field 0x", std::hex, f.version,
         ") is not supported: convert it to little-endian");
  }
  if (f.version != 2 && f.version != 3) {
    fail("model file: GGUF version ", f.version, " is not supported (2 or 3)");
  }
  const uint64_t n_tensors = r.u64("model file: tensor_count");
  const uint64_t n_kv = r.u64("model file: metadata_kv_count");
  // A kv takes at least 8 + 4 + 1 bytes (an empty key, a u8), a tensor info 8 + 4 + 8 + 4 + 8.
  if (n_kv > r.left() / 13) fail("model file: metadata_kv_count ", n_kv, " cannot fit in the file");
  if (n_tensors > kGgufMaxTensors || n_tensors > r.left() / 32) {
    fail("model file: tensor_count ", n_tensors, " exceeds the limit of ", kGgufMaxTensors,
         " or the file");
  }
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key(r.str("model file: key " + std::to_string(i), kGgufMaxKeyBytes));
    const std::string where = "model file: key '" + key + "'";
    const GgufType type = value_type(r.u32(where + " type"), where);
    GgufValue v = read_value(r, type, where);
    if (!f.metadata.emplace(key, v).second) fail("model file: duplicate key '", key, "'");
  }
  f.alignment = read_alignment(f);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t = read_tensor_info(r, i);
    if (!f.tensor_index_.emplace(t.name, f.tensors.size()).second) {
      fail("model file: duplicate tensor '", t.name, "'");
    }
    f.tensors.push_back(std::move(t));
  }
  // The data section starts at the next multiple of the alignment (which may be past the end
  // only when there is no tensor data).
  const uint64_t pad = (f.alignment - r.pos() % f.alignment) % f.alignment;
  if (pad > r.left()) {
    if (!f.tensors.empty()) r.need(pad, "model file: padding before the data section");
    f.data_offset = size;
  } else {
    f.data_offset = r.pos() + static_cast<size_t>(pad);
  }
  place_tensors(f, place ? bytes + f.data_offset : nullptr, size - f.data_offset);
  return f;
}

GgufFile parse_gguf(const uint8_t* bytes, size_t size) {
  return parse_gguf_any(bytes, size, size, true);
}

GgufFile parse_gguf_header(const uint8_t* bytes, size_t available, uint64_t file_size) {
  if (available > file_size)
    fail("model file: a header of ", available, " bytes of a file of ", file_size);
  // Never placed, even when the whole file was given: the caller's buffer is only the header's.
  return parse_gguf_any(bytes, available, file_size, false);
}

}  // namespace specdec
