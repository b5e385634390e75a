// A small strict JSON (RFC 8259) parser for safetensors headers and test fixtures. Untrusted
// input: every malformed document throws specdec::Error naming the byte offset; nesting is
// capped so that deep input cannot exhaust the stack, and so is the number of values (memory);
// duplicate object keys are rejected (a header with two entries for one tensor is ambiguous).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace specdec::json {

constexpr int kMaxDepth = 64;
// At most this many values per document: a tree node costs ~35x the bytes of a "0," so an
// unbounded count would let a 1 MiB header cost ~36 MB (and wasm memory never shrinks). A
// model header holds ~15 values per tensor; 2^17 leaves room for thousands of tensors.
constexpr size_t kMaxValues = size_t{1} << 17;

struct Value {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Type type = Type::kNull;
  bool boolean = false;
  std::string text;                                    // kString: decoded; kNumber: as written
  std::vector<Value> items;                            // kArray
  std::vector<std::pair<std::string, Value>> members;  // kObject, in document order

  // The member named key, or null. requires: type == kObject.
  const Value* find(const std::string& key) const;
};

// Parses one JSON value surrounded by optional whitespace; anything else is an error.
Value parse(const char* text, size_t size);

// The value of a number literal that is a plain non-negative integer (no sign, fraction or
// exponent) fitting in 64 bits; false for anything else.
bool to_u64(const Value& v, uint64_t* out);

// The value of any number literal (nearest double).
double to_double(const Value& v);

// "string", "number", ...: for error messages.
const char* type_name(Value::Type type);

}  // namespace specdec::json
