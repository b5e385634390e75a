// libFuzzer target: arbitrary bytes -> the GGUF frontend (model/gguf.h): parse_gguf, every
// metadata value read through the typed accessors, then checkpoint_from_gguf; and the streamed
// path (checkpoint_from_gguf_stream) on the same bytes, which must agree.
//
// Bad input must end in specdec::Error, never in a crash, UB, a leak or a result that breaks
// the contract: every view lies inside the buffer, tensors do not overlap, and a checkpoint's
// tensors lie in the buffer or in Checkpoint::owned with the bytes their shape and type need.
//
// Seed corpus: tests/fuzz/corpus/gguf, tiny llama / qwen2 / gpt2 files in each tensor type,
// written by tests/cpp/gguf_test.cc (SPECDEC_GGUF_CORPUS=DIR build/gguf_test
// --gtest_filter=Gguf.WritesFuzzCorpus); dictionary: tests/fuzz/fuzz_gguf.dict.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/errors.h"
#include "fuzz_check.h"
#include "model/gguf.h"

namespace {

bool in(const uint8_t* p, size_t n, const uint8_t* data, size_t size) {
  return p >= data && n <= size && p - data <= static_cast<ptrdiff_t>(size - n);
}

// Bytes a tensor of this type and PyTorch shape needs.
uint64_t needed_bytes(specdec::TensorType type, const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  switch (type) {
    case specdec::TensorType::kF32:
      return 4 * n;
    case specdec::TensorType::kQ8_0:
      return n / 32 * 34;
    case specdec::TensorType::kQ4_0:
      return n / 32 * 18;
    default:
      return 2 * n;
  }
}

void read_every_value(const specdec::GgufFile& f) {
  using specdec::GgufType;
  for (const auto& [key, v] : f.metadata) {
    try {
      if (v.type == GgufType::kString) {
        f.get_string(key);
      } else if (v.type == GgufType::kF32 || v.type == GgufType::kF64) {
        f.get_f64(key);
      } else if (v.type == GgufType::kArray) {
        check(f.array_size(key) == v.count);
      } else if (v.type != GgufType::kBool) {
        f.get_u64(key);
      }
    } catch (const specdec::Error&) {
      // get_u64 of a negative integer: refused, by name.
    }
  }
}

// The streamed path (the header from a prefix grown from 64 bytes, tensors read on demand) must
// refuse what the whole buffer refuses, with the same message, and fetch the same bytes.
void check_streamed(const uint8_t* data, size_t size, const std::string& whole_error,
                    const specdec::Checkpoint* whole) {
  using namespace specdec;
  const ByteReader read = [&](uint64_t offset, size_t n, uint8_t* into) {
    check(offset <= size && n <= size - offset);
    if (n > 0) std::memcpy(into, data + offset, n);
  };
  Checkpoint streamed;
  std::string error;
  try {
    streamed = checkpoint_from_gguf_stream(size, read, 64);
  } catch (const Error& e) {
    error = e.what();
  }
  check(error == whole_error);
  if (!whole) return;
  check(streamed.tensors.size() == whole->tensors.size());
  for (const auto& [name, t] : whole->tensors) {
    const CheckpointTensor* s = streamed.find(name);
    check(s && s->bytes == t.bytes && s->shape == t.shape && s->type == t.type);
    Buffer<uint8_t> scratch;
    const uint8_t* got = tensor_bytes(*s, scratch);
    check(t.bytes == 0 || std::memcmp(got, t.data, t.bytes) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specdec;
  GgufFile file;
  try {
    file = parse_gguf(data, size);
  } catch (const Error& e) {
    check_streamed(data, size, e.what(), nullptr);
    return 0;
  }
  check(file.data_offset <= size && file.alignment >= 1);
  for (const auto& [key, v] : file.metadata) check(in(v.data, v.bytes, data, size));
  for (const GgufTensor& t : file.tensors) {
    check(in(t.data, t.bytes, data, size));
    check(t.ne.size() >= 1 && t.ne.size() <= kGgufMaxDims);
    check(t.bytes == needed_bytes(t.type, t.shape()));
    check(file.find_tensor(t.name) == &t);
  }
  read_every_value(file);

  Checkpoint ck;
  try {
    ck = checkpoint_from_gguf(file);
  } catch (const Error& e) {
    check_streamed(data, size, e.what(), nullptr);
    return 0;
  }
  check_streamed(data, size, "", &ck);
  const FamilyConfig& c = ck.config;
  check(c.n_layer >= 1 && c.n_embd >= 1 && c.n_head >= 1 && c.n_kv_head >= 1 && c.vocab_size >= 1);
  check(c.n_head % c.n_kv_head == 0);
  check(c.tied_head == (ck.find("lm_head.weight") == nullptr));
  for (const auto& [name, t] : ck.tensors) {
    check(t.bytes == needed_bytes(t.type, t.shape));
    bool owned = false;
    for (const auto& o : ck.owned) owned = owned || (t.data == o.data() && t.bytes == o.size());
    check(owned || in(t.data, t.bytes, data, size));
  }
  return 0;
}
