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

// The Linear weights of the blocks, the ones an 8-bit file stores as .q8 + .scale.
bool is_block_linear(const std::string& name) {
  if (name.rfind("transformer.h.", 0) != 0) return false;
  for (const char* s :
       {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"}) {
    if (ends_with(name, s)) return true;
  }
  return false;
}

// t's bytes [offset, offset + n) into `into`: from the buffer it points into, or the reader.
void read_bytes(const TensorView& t, const ByteReader& read, uint64_t offset, size_t n,
                uint8_t* into) {
  if (n == 0) return;
  if (t.data) {
    std::memcpy(into, t.data + offset, n);
  } else {
    read(t.offset + offset, n, into);
  }
}

CheckpointTensor float_tensor(const TensorView& t, const ByteReader& read) {
  if (t.dtype == DType::kI8) {
    fail("model file: tensor '", t.name, "' has dtype I8; only 8-bit Linear weights (.q8) may");
  }
  CheckpointTensor ct;
  ct.type = t.dtype == DType::kF16 ? TensorType::kF16 : TensorType::kF32;
  ct.shape = t.shape;
  ct.bytes = static_cast<size_t>(t.numel * dtype_size(t.dtype));
  ct.fetch = [t, read, n = ct.bytes](uint8_t* into) { read_bytes(t, read, 0, n, into); };
  ct.fetch_range = [t, read](uint64_t offset, size_t n, uint8_t* into) {
    read_bytes(t, read, offset, n, into);
  };
  return ct;
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
  CheckpointTensor ct;
  ct.type = TensorType::kQ8_0;
  ct.shape = q.shape;
  const size_t blocks = static_cast<size_t>(s->numel);
  ct.bytes = blocks * (2 + kQ8Block);
  ct.fetch = [name, q, s = *s, read, blocks](uint8_t* into) {
    Buffer<int8_t> quants(blocks * kQ8Block);
    Buffer<uint16_t> scales(blocks);
    read_bytes(q, read, 0, quants.size(), reinterpret_cast<uint8_t*>(quants.data()));
    read_bytes(s, read, 0, blocks * 2, reinterpret_cast<uint8_t*>(scales.data()));
    for (size_t i = 0; i < quants.size(); ++i) {
      if (quants[i] == -128) {
        fail("model file: tensor '", name, ".q8' holds -128 at index ", i,
             " (8-bit weights are in [-127, 127])");
      }
    }
    for (size_t b = 0; b < blocks; ++b) {
      const float d = kernels::f16_to_f32(scales[b]);
      if (!(std::isfinite(d) && d > 0.0f)) {
        fail("model file: tensor '", name, ".scale' holds the block scale ", d, " at index ", b,
             " (scales must be finite and > 0)");
      }
      uint8_t* blk = into + b * (2 + kQ8Block);
      std::memcpy(blk, &scales[b], 2);
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
      if (int8 && is_block_linear(name)) {
        fail("model file: tensor '", name,
             "' is float in an 8-bit file (each Linear weight is stored as .q8 + .scale)");
      }
      ck.tensors[name] = float_tensor(t, read);
      continue;
    }
    const std::string base = name.substr(0, name.size() - 3);
    if (!is_block_linear(base)) fail("model file: unexpected tensor '", name, "'");
    ck.tensors[base] = q8_tensor(base, t, view.find(base + ".scale"), read);
  }
  check_checkpoint_config(ck.config);
  return ck;
}

}  // namespace specdec
