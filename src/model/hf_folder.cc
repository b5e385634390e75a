#include "model/hf_folder.h"

#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "base/errors.h"
#include "model/gpt_model.h"
#include "model/hf_config.h"
#include "model/json.h"
#include "model/safetensors.h"
#include "model/specdec_file.h"

namespace specdec {
namespace {

constexpr const char* kIndex = "model.safetensors.index.json";
constexpr const char* kSingle = "model.safetensors";
constexpr uint64_t kMaxJsonBytes = uint64_t{64} << 20;  // config.json, the index

bool ends_with(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

bool starts_with(const std::string& s, const std::string& t) { return s.rfind(t, 0) == 0; }

const FolderFile* find_file(const std::vector<FolderFile>& files, const std::string& name) {
  for (const FolderFile& f : files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// A JSON file's bytes: its buffer, or read whole into `scratch` (a streamed file).
const char* json_bytes(const FolderFile& f, std::vector<uint8_t>& scratch) {
  if (f.data || f.size == 0) return reinterpret_cast<const char*>(f.data);
  if (f.size > kMaxJsonBytes) {
    fail("model folder: ", f.name, " is ", f.size, " bytes, over the limit of ", kMaxJsonBytes,
         " for a JSON file");
  }
  scratch.resize(static_cast<size_t>(f.size));
  f.read(0, scratch.size(), scratch.data());
  return reinterpret_cast<const char*>(scratch.data());
}

// The weight files and which tensors each must hold (the index's weight_map; empty for one file).
std::map<std::string, std::set<std::string>> weight_files(const std::vector<FolderFile>& files) {
  const FolderFile* index = find_file(files, kIndex);
  if (!index) {
    if (!find_file(files, kSingle)) fail("model folder: no ", kSingle, " and no ", kIndex);
    return {{kSingle, {}}};
  }
  json::Value root;
  std::vector<uint8_t> scratch;
  try {
    root = json::parse(json_bytes(*index, scratch), static_cast<size_t>(index->size));
  } catch (const Error& e) {
    fail(kIndex, ": ", e.what());
  }
  const json::Value* map =
      root.type == json::Value::Type::kObject ? root.find("weight_map") : nullptr;
  if (!map || map->type != json::Value::Type::kObject || map->members.empty()) {
    fail(kIndex, ": no weight_map object of tensor name -> file name");
  }
  std::map<std::string, std::set<std::string>> out;
  for (const auto& [tensor, file] : map->members) {
    if (file.type != json::Value::Type::kString || file.text.find('/') != std::string::npos) {
      fail(kIndex, ": weight_map['", tensor, "'] is not a file name of the folder");
    }
    out[file.text].insert(tensor);
  }
  return out;
}

TensorType tensor_type(const std::string& file, const TensorView& t) {
  switch (t.dtype) {
    case DType::kF32:
      return TensorType::kF32;
    case DType::kF16:
      return TensorType::kF16;
    case DType::kBF16:
      return TensorType::kBF16;
    default:
      fail("model file: ", file, ": tensor '", t.name, "' has dtype ", dtype_name(t.dtype),
           "; a Hugging Face folder holds F32, F16 or BF16 weights");
  }
}

// Checkpoint.h's name of a stored tensor, or "" for a buffer that is not a weight.
std::string normalised_name(const std::string& name, const FamilyConfig& c) {
  if (ends_with(name, ".rotary_emb.inv_freq")) return "";
  if (c.family != Family::kGPT2) return c.tied_head && name == "lm_head.weight" ? "" : name;
  if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias")) return "";
  if (name == "lm_head.weight") return c.tied_head ? "" : name;
  return starts_with(name, "transformer.") ? name : "transformer." + name;
}

// (rows, cols) elements of es bytes -> (cols, rows).
void transpose(const uint8_t* in, size_t rows, size_t cols, size_t es, uint8_t* out) {
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      std::memcpy(out + (c * rows + r) * es, in + (r * cols + c) * es, es);
    }
  }
}

// The file's container: parsed from its bytes, or its header read and parsed (streamed).
SafetensorsView container(const FolderFile& f) {
  if (f.data) return parse_safetensors(f.data, static_cast<size_t>(f.size), /*bf16=*/true);
  return read_safetensors_header(f.size, f.read, /*bf16=*/true);
}

void add_file(const std::string& file, const FolderFile& f, const std::set<std::string>& listed,
              Checkpoint& ck) {
  const SafetensorsView view = container(f);
  for (const std::string& name : listed) {
    if (!view.find(name)) fail(kIndex, " maps tensor '", name, "' to ", file, ", which lacks it");
  }
  for (const auto& [stored, t] : view.tensors) {
    const std::string name = normalised_name(stored, ck.config);
    if (name.empty()) continue;
    if (ck.tensors.count(name))
      fail("model folder: tensor '", name, "' is stored twice (", file, ")");
    const size_t bytes = static_cast<size_t>(t.numel * dtype_size(t.dtype));
    CheckpointTensor ct =
        stored_tensor(tensor_type(file, t), t.shape, bytes, t.data, f.read, t.offset);
    if (ck.config.family == Family::kGPT2 && is_gpt2_block_linear(name)) {
      // GPT-2's Conv1D weight (in, out) as a Linear one (out, in).
      if (t.shape.size() != 2) {
        fail("model file: tensor '", name, "' has shape ", shape_string(t.shape),
             ", expected a matrix (Conv1D)");
      }
      const size_t rows = t.shape[0], cols = t.shape[1], es = dtype_size(t.dtype);
      ct.shape = {cols, rows};
      rewrite_tensor(ct, ck, [rows, cols, es](const uint8_t* in, uint8_t* out) {
        transpose(in, rows, cols, es, out);
      });
    }
    ck.tensors[name] = std::move(ct);
  }
}

}  // namespace

Checkpoint read_hf_folder(const std::vector<FolderFile>& files) {
  const FolderFile* config = find_file(files, "config.json");
  if (!config) fail("model folder: no config.json");
  Checkpoint ck;
  std::vector<uint8_t> scratch;
  ck.config = parse_hf_config(json_bytes(*config, scratch), static_cast<size_t>(config->size));
  for (const auto& [file, listed] : weight_files(files)) {
    const FolderFile* f = find_file(files, file);
    if (!f) fail("model folder: missing shard '", file, "' (named by ", kIndex, ")");
    add_file(file, *f, listed, ck);
  }
  check_checkpoint_config(ck.config);
  return ck;
}

Checkpoint read_hf_folder(const std::string& dir) {
  // The files there are (an absent one is named by the folder's checks, as a JS folder's is).
  std::vector<FolderFile> files;
  auto add = [&](const std::string& name) {
    if (!std::ifstream(dir + "/" + name).good()) return;
    uint64_t size = 0;
    ByteReader read = file_reader(dir + "/" + name, &size);
    files.emplace_back(name, size, std::move(read));
  };
  add("config.json");
  add(kIndex);
  if (!find_file(files, kIndex)) {
    add(kSingle);
  } else {
    for (const auto& [shard, listed] : weight_files(files)) add(shard);
  }
  return read_hf_folder(files);
}

}  // namespace specdec
