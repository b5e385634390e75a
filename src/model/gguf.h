// GGUF v3 (ggml docs/gguf.md), the container of llama.cpp's model files, read from a byte buffer:
//
//   u32 magic "GGUF" | u32 version (2 or 3) | u64 tensor_count | u64 metadata_kv_count
//   kv x count:     string key | u32 value type | value
//   tensor x count: string name | u32 n_dims (1..4) | u64 ne[n_dims] (ne[0] = row length, the
//                   fastest-varying) | u32 ggml type | u64 offset (from the data section)
//   padding to `general.alignment` (32 if absent), then the data section.
//   string = u64 byte length + bytes (no NUL); array = u32 element type | u64 count | elements.
//
// The input is untrusted: every count, length, n_dims, offset and the alignment is checked
// against the bytes that are there before anything is allocated or read, sums and products are
// overflow-checked, duplicate keys and tensor names are refused, and each failure throws
// specdec::Error starting "model file:" and naming the key or tensor. Big-endian files (version
// read as 0x03000000) and versions other than 2 and 3 are refused by name.
//
// Nothing is copied: values and tensors are views into the caller's buffer, which must outlive
// the GgufFile. A string array (a tokenizer's 32k-150k tokens) is checked once while parsing;
// the loader reads its size (the tokenizer's tokens are read in JS, web/lib/tokenizer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/checkpoint.h"

namespace specdec {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kGgufDefaultAlignment = 32;
constexpr uint32_t kGgufMaxDims = 4;                  // GGML_MAX_DIMS
constexpr size_t kGgufMaxTensorName = 63;             // GGML_MAX_NAME (64) less the NUL
constexpr size_t kGgufMaxKeyBytes = size_t{1} << 16;  // a key: 64 KiB
constexpr uint64_t kGgufMaxTensors = 16384;

// Metadata value types (gguf_type).
enum class GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
const char* gguf_type_name(GgufType t);  // "u8" ... "f64", "string", "array"
size_t gguf_scalar_size(GgufType t);     // bytes of one scalar; 0 for string and array

// "Q4_K" for ggml type 12, "type 99" for numbers ggml does not define: for messages.
std::string ggml_type_name(uint32_t ggml_type);

// One metadata value, as a view: `data` points at the value's bytes in the buffer (for an array,
// at its first element), `bytes` of them. Nested arrays are refused while parsing.
struct GgufValue {
  GgufType type = GgufType::kU8;
  GgufType elem_type = GgufType::kU8;  // arrays only
  uint64_t count = 0;                  // arrays: number of elements
  const uint8_t* data = nullptr;
  size_t bytes = 0;
};

struct GgufTensor {
  std::string name;
  uint32_t ggml_type = 0;  // as stored; `type` is its TensorType
  TensorType type = TensorType::kF32;
  std::vector<uint64_t> ne;       // GGUF order: ne[0] is the row length
  uint64_t offset = 0;            // from the start of the data section
  const uint8_t* data = nullptr;  // `bytes` bytes inside the caller's buffer
  size_t bytes = 0;

  std::vector<uint64_t> shape() const;  // PyTorch order: ne reversed
};

struct GgufFile {
  uint32_t version = 3;
  uint64_t alignment = kGgufDefaultAlignment;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensor> tensors;  // in the file's order
  uint64_t data_offset = 0;         // where the data section starts in the file

  const GgufValue* find(const std::string& key) const;
  const GgufTensor* find_tensor(const std::string& name) const;

  // Typed access (what the loader reads); each throws specdec::Error naming the key when it is
  // absent or holds another type. Integers of any width are accepted unless negative; floats
  // accept f32 and f64; an array gives its element count.
  uint64_t get_u64(const std::string& key) const;
  double get_f64(const std::string& key) const;
  std::string_view get_string(const std::string& key) const;
  uint64_t array_size(const std::string& key) const;

 private:
  std::map<std::string, size_t> tensor_index_;
  friend GgufFile parse_gguf_any(const uint8_t* bytes, size_t available, uint64_t size, bool place);
};

// Validates the container (see the top of this file) and the tensors' layout: a type of
// checkpoint.h's TensorType (F32, F16, BF16, Q8_0, Q4_0; any other ggml type refused naming it,
// e.g. "Q4_K"), ne[0] a multiple of the block (32 for Q8_0 / Q4_0), offsets aligned, inside the
// data section and not overlapping.
GgufFile parse_gguf(const uint8_t* bytes, size_t size);

// Thrown by parse_gguf_header when the header runs past the bytes it was given (but not past
// the file): read it again with at least `bytes` bytes.
struct GgufNeedsMore {
  uint64_t bytes;
};

// parse_gguf from the file's first `available` bytes (the header: metadata and tensor infos) of
// `file_size`: the same checks (offsets against the file's size), but the tensors get no data
// (data null); checkpoint_from_gguf then reads them through a ByteReader. Throws GgufNeedsMore
// when `available` ends inside the header.
GgufFile parse_gguf_header(const uint8_t* bytes, size_t available, uint64_t file_size);

// A checkpoint (checkpoint.h) from a GGUF file of architecture llama, qwen2 or gpt2: the
// hyperparameters from `{arch}.*` and `tokenizer.ggml.*` keys, the tensors under Hugging Face
// names (their set and shapes are checked by the model's loader, GPTModel::from_checkpoint /
// check_checkpoint, as every format's). Tensors point into `bytes` (which must
// outlive the checkpoint), except llama's attn_q / attn_k rows, un-permuted into
// Checkpoint::owned (llama.cpp's converter permutes them for its pair-wise rotary; design §1.6).
// Refused by name: other architectures, rope scaling, a sliding window shorter than the
// context, a partial rotary, Llama 3's rope_freqs unless all 1, tensors of no Hugging Face name.
// With `read`, tensors without data (parse_gguf_header) are streamed: each one's bytes are read
// (and llama's Q / K rows un-permuted) when the model's loader converts it; each tensor keeps a
// copy of `read`, so what it reads (a file, a JS buffer) must outlive the checkpoint. The
// config is checked by check_checkpoint_config (model/checkpoint.h), as every format's.
Checkpoint checkpoint_from_gguf(const uint8_t* bytes, size_t size);
Checkpoint checkpoint_from_gguf(const GgufFile& file, const ByteReader* read = nullptr);

// A streamed GGUF checkpoint of a file of `size` bytes that `read` reads: the header is read
// from a prefix of first_read bytes (grown fourfold until it holds the header), the tensors
// one at a time (see above). What `read` reads must outlive the checkpoint.
Checkpoint checkpoint_from_gguf_stream(uint64_t size, const ByteReader& read,
                                       size_t first_read = size_t{16} << 20);

}  // namespace specdec
