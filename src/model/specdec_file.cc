// Our own safetensors files as a Checkpoint (model/specdec_file.h).
#include "model/specdec_file.h"

#include <cmath>
#include <cstring>

#include "base/errors.h"
#include "kernels/half.h"
#include "kernels/matmul_q8.h"
#include "model/gpt_model.h"

namespace specdec {
namespace {

using kernels::kQ8Block;

bool ends_with(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// A config key of __metadata__ ("12" as a decimal string, as models/model.py writes them):
// digits only, no sign, no leading zero, at most 9 digits.
int config_value(const SafetensorsView& view, const char* key) {
  auto it = view.metadata.find(key);
  if (it == view.metadata.end()) fail("model file: __metadata__ lacks '", key, "' (model config)");
  const std::string& s = it->second;
  bool digits = !s.empty() && (s.size() == 1 || s[0] != '0');
  for (char c : s) digits = digits && c >= '0' && c <= '9';
  if (!digits) {
    fail("model file: __metadata__ '", key, "' = '", s,
         "' is not a decimal integer (digits only, no sign or leading zero)");
  }
  if (s.size() > 9) fail("model file: ", key, " = ", s, " is out of range");
  return std::stoi(s);
}

FamilyConfig read_config(const SafetensorsView& view) {
  FamilyConfig c;
  c.family = Family::kGPT2;
  c.gelu_erf = true;  // nanoGPT's exact GELU
  c.vocab_size = config_value(view, "vocab_size");
  c.n_layer = config_value(view, "n_layer");
  c.n_head = config_value(view, "n_head");
  c.n_embd = config_value(view, "n_embd");
  c.max_positions = config_value(view, "block_size");
  if (c.vocab_size != kByteVocabSize) {
    fail("model file: vocab_size = ", c.vocab_size, ", expected ", kByteVocabSize,
         " (byte-level tokens)");
  }
  if (c.n_head < 1 || c.n_embd % c.n_head != 0) {
    fail("model file: n_head = ", c.n_head, " does not divide n_embd = ", c.n_embd);
  }
  c.n_kv_head = c.n_head;
  c.head_dim = c.n_embd / c.n_head;
  c.n_ff = 4 * c.n_embd;
  c.context = c.max_positions;  // our files run their whole block_size
  c.tokenizer_tokens = kByteVocabSize;
  c.tied_head = view.find("lm_head.weight") == nullptr;
  return c;
}

// Whether the file is quantized (__metadata__ "weights": "int8"; absent or "f32": float).
bool file_is_int8(const SafetensorsView& view) {
  auto it = view.metadata.find("weights");
  if (it == view.metadata.end() || it->second == "f32") return false;
  if (it->second == "int8") return true;
  fail("model file: __metadata__ 'weights' = '", it->second, "', expected 'f32' or 'int8'");
}

CheckpointTensor float_tensor(const TensorView& t, const ByteReader& read) {
  if (t.dtype == DType::kI8) {
    fail("model file: tensor '", t.name, "' has dtype I8; only 8-bit Linear weights (.q8) may");
  }
  return stored_tensor(t.dtype == DType::kF16 ? TensorType::kF16 : TensorType::kF32, t.shape,
                       static_cast<size_t>(t.numel * dtype_size(t.dtype)), t.data, read, t.offset);
}

// X.weight.q8 (n, k) and X.weight.scale (n, k / 32) as one Q8_0 tensor (n, k): per block its F16
// scale, then its 32 quants. The quants' range and the scales are checked as they are fetched.
CheckpointTensor q8_tensor(const std::string& name, const TensorView& q, const TensorView* s,
                           const ByteReader& read) {
  if (!s) fail("model file: missing tensor '", name, ".scale'");
  if (q.dtype != DType::kI8) {
    fail("model file: tensor '", q.name, "' has dtype ", dtype_name(q.dtype), ", expected I8");
  }
  if (s->dtype != DType::kF16) {
    fail("model file: tensor '", s->name, "' has dtype ", dtype_name(s->dtype), ", expected F16");
  }
  if (q.shape.size() != 2 || q.shape[1] % kQ8Block != 0) {
    fail("model file: tensor '", q.name, "' has shape ", shape_string(q.shape),
         ", expected a matrix whose rows are blocks of ", kQ8Block);
  }
  const std::vector<uint64_t> scale_shape = {q.shape[0], q.shape[1] / kQ8Block};
  if (s->shape != scale_shape) {
    fail("model file: tensor '", s->name, "' has shape ", shape_string(s->shape), ", expected ",
         shape_string(scale_shape), " (one scale per block of 32 weights)");
  }
  const size_t blocks = static_cast<size_t>(s->numel);
  CheckpointTensor ct{TensorType::kQ8_0, q.shape, nullptr, blocks * (2 + kQ8Block), {}, {}};
  // The pair's bytes as stored (the type names no more than their size here).
  const CheckpointTensor qs =
      stored_tensor(TensorType::kQ8_0, {}, blocks * kQ8Block, q.data, read, q.offset);
  const CheckpointTensor ss =
      stored_tensor(TensorType::kF16, {}, blocks * 2, s->data, read, s->offset);
  ct.fetch = [name, qs, ss, blocks](uint8_t* into) {
    Buffer<uint8_t> q_bytes, s_bytes;
    const int8_t* quants = reinterpret_cast<const int8_t*>(tensor_bytes(qs, q_bytes));
    const uint8_t* scales = tensor_bytes(ss, s_bytes);
    for (size_t i = 0; i < blocks * kQ8Block; ++i) {
      if (quants[i] == -128) {
        fail("model file: tensor '", name, ".q8' holds -128 at index ", i,
             " (8-bit weights are in [-127, 127])");
      }
    }
    for (size_t b = 0; b < blocks; ++b) {
      uint16_t h;
      std::memcpy(&h, scales + 2 * b, 2);
      const float d = kernels::f16_to_f32(h);
      if (!(std::isfinite(d) && d > 0.0f)) {
        fail("model file: tensor '", name, ".scale' holds the block scale ", d, " at index ", b,
             " (scales must be finite and > 0)");
      }
      uint8_t* blk = into + b * (2 + kQ8Block);
      std::memcpy(blk, &h, 2);
      std::memcpy(blk + 2, &quants[b * kQ8Block], kQ8Block);
    }
  };
  return ct;
}

}  // namespace

Checkpoint checkpoint_from_specdec(const SafetensorsView& view, const ByteReader& read) {
  Checkpoint ck;
  ck.format = CheckpointFormat::kSpecdec;
  ck.config = read_config(view);
  const bool int8 = file_is_int8(view);
  for (const auto& [name, t] : view.tensors) {
    const bool q8 = ends_with(name, ".q8"), scale = ends_with(name, ".scale");
    if ((q8 || scale) && !int8) {
      fail("model file: tensor '", name,
           "' is part of an 8-bit weight, but __metadata__ 'weights' is not 'int8' (mixed "
           "layouts)");
    }
    if (scale) {
      if (!view.find(name.substr(0, name.size() - 6) + ".q8"))
        fail("model file: unexpected tensor '", name, "'");
      continue;
    }
    if (!q8) {
      if (int8 && view.find(name + ".q8")) {
        fail("model file: tensor '", name, "' is float beside its 8-bit '", name,
             ".q8' (mixed layouts: a quantized file stores each Linear weight as .q8 + .scale "
             "only)");
      }
      if (int8 && is_gpt2_block_linear(name)) {
        fail("model file: tensor '", name,
             "' is float in an 8-bit file (each Linear weight is stored as .q8 + .scale)");
      }
      ck.tensors[name] = float_tensor(t, read);
      continue;
    }
    const std::string base = name.substr(0, name.size() - 3);
    if (!is_gpt2_block_linear(base)) fail("model file: unexpected tensor '", name, "'");
    ck.tensors[base] = q8_tensor(base, t, view.find(base + ".scale"), read);
  }
  check_checkpoint_config(ck.config);
  return ck;
}

Checkpoint checkpoint_from_specdec(uint64_t size, const ByteReader& read) {
  return checkpoint_from_specdec(read_safetensors_header(size, read), read);
}

SafetensorsView read_safetensors_header(uint64_t size, const ByteReader& read, bool bf16) {
  uint8_t first8[8] = {};
  if (size >= 8) read(0, 8, first8);
  std::vector<uint8_t> header(static_cast<size_t>(safetensors_header_bytes(first8, size)));
  read(0, header.size(), header.data());
  return parse_safetensors_header(header.data(), header.size(), size, bf16);
}

}  // namespace specdec
