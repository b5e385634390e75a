#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "base/errors.h"
#include "kernels/bf16.h"
#include "model/json.h"

namespace specdec {
namespace {

std::string tensor_error_prefix(const std::string& name) {
  return "model file: tensor '" + name + "'";
}

// [begin, end) of one tensor inside the data section.
struct Span {
  uint64_t begin, end;
  const std::string* name;
};

// data: the data section's bytes, or null when only the header is parsed (streaming);
// data_start: the section's offset in the file.
TensorView parse_tensor_entry(const std::string& name, const json::Value& entry,
                              const uint8_t* data, uint64_t data_start, uint64_t data_size,
                              std::vector<Span>& spans, bool bf16) {
  const std::string where = tensor_error_prefix(name);
  if (entry.type != json::Value::Type::kObject) {
    fail(where, ": entry must be an object, got ", json::type_name(entry.type));
  }
  for (const auto& [key, value] : entry.members) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail(where, ": unknown key '", key, "'");
    }
  }
  const json::Value* dtype = entry.find("dtype");
  const json::Value* shape = entry.find("shape");
  const json::Value* offsets = entry.find("data_offsets");
  if (!dtype || !shape || !offsets) {
    fail(where, ": missing '", !dtype ? "dtype" : !shape ? "shape" : "data_offsets", "'");
  }

  TensorView t;
  t.name = name;
  if (dtype->type != json::Value::Type::kString) fail(where, ": dtype must be a string");
  if (dtype->text == "F32") {
    t.dtype = DType::kF32;
  } else if (dtype->text == "F16") {
    t.dtype = DType::kF16;
  } else if (dtype->text == "I8") {
    t.dtype = DType::kI8;
  } else if (bf16 && dtype->text == "BF16") {
    t.dtype = DType::kBF16;
  } else {
    fail(where, " has dtype '", dtype->text, "' (supported: F32, F16, ", bf16 ? "BF16, " : "",
         "I8)");
  }

  if (shape->type != json::Value::Type::kArray || shape->items.size() > kMaxTensorRank) {
    fail(where, ": shape must be an array of at most ", kMaxTensorRank, " integers");
  }
  t.numel = 1;
  for (const json::Value& d : shape->items) {
    uint64_t dim;
    if (!json::to_u64(d, &dim)) fail(where, ": shape must hold non-negative integers");
    t.shape.push_back(dim);
  }
  // Overflow-checked: numel * element size must fit in the data section's range anyway.
  for (uint64_t dim : t.shape) {
    if (dim != 0 && t.numel > UINT64_MAX / 8 / dim) {
      fail(where, ": shape ", shape_string(t.shape), " is too large");
    }
    t.numel *= dim;
  }
  const uint64_t n_bytes = t.numel * dtype_size(t.dtype);

  uint64_t begin, end;
  if (offsets->type != json::Value::Type::kArray || offsets->items.size() != 2 ||
      !json::to_u64(offsets->items[0], &begin) || !json::to_u64(offsets->items[1], &end)) {
    fail(where, ": data_offsets must be two non-negative integers");
  }
  const std::string range = "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
  if (begin > end || end > data_size) {
    fail(where, ": data_offsets ", range, " are outside the data section of ", data_size, " bytes");
  }
  if (end - begin != n_bytes) {
    fail(where, ": data_offsets ", range, " span ", end - begin, " bytes, but shape ",
         shape_string(t.shape), " of ", dtype_name(t.dtype), " needs ", n_bytes);
  }
  t.data = data ? data + begin : nullptr;
  t.offset = data_start + begin;
  spans.push_back({begin, end, &name});  // name: a key of the parsed header
  return t;
}

}  // namespace

std::string shape_string(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

size_t dtype_size(DType dtype) {
  return dtype == DType::kF32 ? 4 : dtype == DType::kF16 || dtype == DType::kBF16 ? 2 : 1;
}

const char* dtype_name(DType dtype) {
  static const char* const kNames[] = {"F32", "F16", "I8", "BF16"};  // DType's order
  return kNames[static_cast<int>(dtype)];
}

const TensorView* SafetensorsView::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

uint64_t safetensors_header_bytes(const uint8_t first8[8], uint64_t file_size) {
  if (file_size < 8) {
    fail("model file: ", file_size, " bytes is too short for the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | first8[i];
  if (header_len > kMaxHeaderBytes) {
    fail("model file: header length ", header_len, " exceeds the limit of ", kMaxHeaderBytes,
         " bytes");
  }
  if (header_len > file_size - 8) {
    fail("model file: header length ", header_len, " exceeds the ", file_size - 8,
         " bytes after the length field (truncated file?)");
  }
  return 8 + header_len;
}

namespace {

// The container over `bytes`, which hold at least the header; data: whether they hold the whole
// file of file_size bytes (tensors then point into them).
SafetensorsView parse_container(const uint8_t* bytes, uint64_t file_size, bool data, bool bf16) {
  const uint64_t header_end = safetensors_header_bytes(bytes, file_size);
  json::Value header;
  try {
    header = json::parse(reinterpret_cast<const char*>(bytes + 8), header_end - 8);
  } catch (const Error& e) {
    fail("model file: header: ", e.what());
  }
  if (header.type != json::Value::Type::kObject) {
    fail("model file: header must be a JSON object, got ", json::type_name(header.type));
  }

  SafetensorsView view;
  const uint8_t* section = data ? bytes + header_end : nullptr;
  const uint64_t data_size = file_size - header_end;
  std::vector<Span> spans;
  for (const auto& [name, entry] : header.members) {
    if (name == "__metadata__") {
      if (entry.type != json::Value::Type::kObject) {
        fail("model file: __metadata__ must be an object, got ", json::type_name(entry.type));
      }
      for (const auto& [key, value] : entry.members) {
        if (value.type != json::Value::Type::kString) {
          fail("model file: __metadata__ value of '", key, "' must be a string, got ",
               json::type_name(value.type));
        }
        view.metadata[key] = value.text;
      }
      continue;
    }
    TensorView t = parse_tensor_entry(name, entry, section, header_end, data_size, spans, bf16);
    view.tensors.emplace(name, std::move(t));
  }
  // Sorted by start, a tensor overlaps an earlier one iff it starts before the furthest end so
  // far. Empty tensors occupy no bytes and cannot overlap.
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  const Span* furthest = nullptr;
  for (const Span& s : spans) {
    if (s.begin == s.end) continue;
    if (furthest && s.begin < furthest->end) {
      fail("model file: tensors '", *furthest->name, "' and '", *s.name, "' overlap (bytes [",
           furthest->begin, ", ", furthest->end, ") and [", s.begin, ", ", s.end, "))");
    }
    if (!furthest || s.end > furthest->end) furthest = &s;
  }
  return view;
}

}  // namespace

SafetensorsView parse_safetensors(const uint8_t* bytes, size_t size, bool bf16) {
  return parse_container(bytes, size, /*data=*/true, bf16);
}

SafetensorsView parse_safetensors_header(const uint8_t* header, size_t header_size,
                                         uint64_t file_size, bool bf16) {
  if (header_size < 8 || safetensors_header_bytes(header, file_size) != header_size) {
    fail("model file: the header given is ", header_size,
         " bytes, not the 8 + length the file's first 8 bytes say");
  }
  return parse_container(header, file_size, /*data=*/false, bf16);
}

void read_tensor_f32(const TensorView& t, float* out) {
  // safetensors data is little-endian, as are x86 and WebAssembly: plain byte copies suffice.
  if (t.dtype == DType::kI8) {
    for (uint64_t i = 0; i < t.numel; ++i)
      out[i] = static_cast<float>(static_cast<int8_t>(t.data[i]));
    return;
  }
  if (t.dtype == DType::kF32) {
    std::memcpy(out, t.data, t.numel * sizeof(float));
    return;
  }
  for (uint64_t i = 0; i < t.numel; ++i) {
    uint16_t h;
    std::memcpy(&h, t.data + 2 * i, sizeof h);
    out[i] = t.dtype == DType::kBF16 ? kernels::bf16_to_f32(h) : f16_to_f32(h);
  }
}

namespace {

// A JSON string literal.
std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      const char* hex = "0123456789abcdef";
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

std::vector<uint8_t> write_safetensors(const std::map<std::string, std::string>& metadata,
                                       const std::vector<TensorData>& tensors) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) header += ",";
      first = false;
      header += json_quote(key) + ":" + json_quote(value);
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const TensorData& t : tensors) {
    uint64_t numel = 1;
    for (uint64_t d : t.shape) numel *= d;
    if (numel * dtype_size(t.dtype) != t.data.size()) {
      fail("write_safetensors: tensor '", t.name, "' of shape ", shape_string(t.shape), " has ",
           t.data.size(), " bytes");
    }
    if (header.size() > 1) header += ",";
    header += json_quote(t.name) + ":{\"dtype\":\"" + dtype_name(t.dtype) + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + t.data.size()) + "]}";
    offset += t.data.size();
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  std::vector<uint8_t> out(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  for (const TensorData& t : tensors) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

std::vector<uint8_t> read_file(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail("model file '", path, "': cannot open");
  const std::streamoff size = in.tellg();
  if (size < 0) fail("model file '", path, "': cannot read its size");
  if (static_cast<uint64_t>(size) > max_bytes) {
    fail("model file '", path, "': ", size, " bytes exceeds the limit of ", max_bytes);
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    fail("model file '", path, "': read failed");
  }
  return bytes;
}

}  // namespace specdec
