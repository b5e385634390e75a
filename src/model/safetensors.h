// safetensors container (huggingface.co/docs/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON header, then the raw tensor data. The header maps each tensor
// name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data
// section) plus an optional "__metadata__" object of strings.
//
// Parsed from a byte buffer so that the same code serves files (native) and bytes handed over
// from JavaScript (WASM). The input is untrusted: every size and offset is validated before
// anything is allocated or read, and each failure throws specdec::Error starting "model file:".
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/half.h"

namespace specdec {

constexpr size_t kMaxHeaderBytes = size_t{1} << 20;  // 1 MiB: ~10k tensor entries
constexpr size_t kMaxTensorRank = 8;

enum class DType { kF32, kF16, kI8, kBF16 };  // kBF16: Hugging Face folders only

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
  uint64_t numel = 0;
  const uint8_t* data = nullptr;  // numel * dtype_size(dtype) bytes inside the caller's buffer
  uint64_t offset = 0;            // of its first byte in the file
};

struct SafetensorsView {
  std::map<std::string, std::string> metadata;  // "__metadata__"
  std::map<std::string, TensorView> tensors;    // by name

  const TensorView* find(const std::string& name) const;
};

// Validates the container: header length within kMaxHeaderBytes and the buffer, strict JSON,
// a known dtype (F32, F16, I8; BF16 too when bf16 is set, as for Hugging Face checkpoints: our
// own files never hold it), rank <= kMaxTensorRank, offsets inside the data section, spanning
// exactly numel * dtype size bytes (overflow-checked), no two tensors overlapping.
// The views point into bytes, which must outlive the result.
SafetensorsView parse_safetensors(const uint8_t* bytes, size_t size, bool bf16 = false);

// Streaming (a file read a tensor at a time): the bytes the header takes, 8 + its length, from the
// file's first 8 bytes, checked against kMaxHeaderBytes and file_size; then the header alone,
// from those bytes, validated as parse_safetensors validates the file (offsets inside a data
// section of file_size - header bytes). Tensors get their offset, no data.
uint64_t safetensors_header_bytes(const uint8_t first8[8], uint64_t file_size);
SafetensorsView parse_safetensors_header(const uint8_t* header, size_t header_size,
                                         uint64_t file_size, bool bf16 = false);

// Widens the tensor to float (F16 and BF16 bit-exactly, incl. subnormals, inf and NaN; I8 as its
// integer values); out holds
// t.numel floats. Reads the little-endian data with memcpy (no alignment assumed).
void read_tensor_f32(const TensorView& t, float* out);

// A tensor to write: its bytes little-endian, numel * dtype_size(dtype) of them.
struct TensorData {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
};

// A safetensors file of these tensors (in this order) and metadata: the header's JSON padded
// with spaces to a multiple of 8 bytes. Throws specdec::Error on a size mismatch.
std::vector<uint8_t> write_safetensors(const std::map<std::string, std::string>& metadata,
                                       const std::vector<TensorData>& tensors);

// "[96, 32]": for error messages.
std::string shape_string(const std::vector<uint64_t>& shape);

// IEEE binary16 -> binary32 (kernels/half.h).
using kernels::f16_to_f32;

// The whole file; throws specdec::Error if it cannot be read or is larger than max_bytes.
std::vector<uint8_t> read_file(const std::string& path, size_t max_bytes);

}  // namespace specdec
