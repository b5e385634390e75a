// Hostile and unusual Hugging Face folders (model/hf_folder.h, model/hf_config.h): each refused
// with a message naming the file, key or tensor and the value; config.json's accepted variants
// (transformers 5's rope_parameters, Llama 3 rope scaling, eos lists, GPT-2's erf GELU); Q4_0
// blocks load as the 8-bit blocks of the same values.
#include "model/hf_folder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/errors.h"
#include "kernels/half.h"
#include "model/gpt_model.h"
#include "model/hf_config.h"
#include "model/kv_cache.h"
#include "model/safetensors.h"

namespace specdec {
namespace {

using Files = std::map<std::string, std::vector<uint8_t>>;

std::string fixture(const std::string& family) {
  return std::string(SPECDEC_SOURCE_DIR) + "/tests/fixtures/families/" + family;
}

Files read_folder(const std::string& family) {
  Files files;
  for (const char* name :
       {"config.json", "model.safetensors", "model.safetensors.index.json",
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    std::ifstream in(fixture(family) + "/" + name, std::ios::binary);
    if (in.good()) files[name] = std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }
  return files;
}

// The folder from its files' bytes, or streamed: each file read through a reader (as the
// bindings read a JS buffer), the size of each read appended to *reads.
GPTModel load(const Files& files, bool streamed = false, std::vector<size_t>* reads = nullptr) {
  std::vector<FolderFile> list;
  for (const auto& [name, b] : files) {
    if (!streamed) {
      list.emplace_back(name, b.data(), b.size());
      continue;
    }
    const std::vector<uint8_t>* data = &b;
    list.emplace_back(name, uint64_t{b.size()},
                      [data, reads](uint64_t at, size_t n, uint8_t* into) {
                        if (at + n > data->size())
                          throw std::logic_error("a read past the end of the file");
                        std::memcpy(into, data->data() + at, n);
                        if (reads) reads->push_back(n);
                      });
  }
  return GPTModel::from_checkpoint(read_hf_folder(list));
}

std::string text(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }
std::vector<uint8_t> bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

// config.json with `from` replaced by `to` (once; the test fails if `from` is absent).
std::function<void(Files&)> config_edit(const std::string& from, const std::string& to) {
  return [from, to](Files& f) {
    std::string c = text(f["config.json"]);
    const size_t at = c.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    f["config.json"] = bytes(c.replace(at, from.size(), to));
  };
}

// A safetensors file of `file` rewritten: edit(tensors) on its tensors.
std::function<void(Files&)> tensors_edit(const std::string& file,
                                         std::function<void(std::vector<TensorData>&)> edit) {
  return [file, edit](Files& f) {
    const SafetensorsView view = parse_safetensors(f[file].data(), f[file].size(), true);
    std::vector<TensorData> tensors;
    for (const auto& [name, t] : view.tensors) {
      tensors.push_back({name, t.dtype, t.shape,
                         std::vector<uint8_t>(t.data, t.data + t.numel * dtype_size(t.dtype))});
    }
    edit(tensors);
    f[file] = write_safetensors({}, tensors);
  };
}

struct HostileCase {
  const char* what;
  const char* family;
  std::function<void(Files&)> edit;
  const char* message;  // a substring of the error
};

TEST(HfFolder, HostileFoldersAreRefusedClearly) {
  const char* const shard2 = "model-00002-of-00002.safetensors";
  const HostileCase cases[] = {
      {"no config", "gpt2", [](Files& f) { f.erase("config.json"); }, "no config.json"},
      {"no weights", "gpt2", [](Files& f) { f.erase("model.safetensors"); },
       "no model.safetensors and no model.safetensors.index.json"},
      {"missing shard", "llama", [&](Files& f) { f.erase(shard2); },
       "missing shard 'model-00002-of-00002.safetensors'"},
      {"config not JSON", "gpt2", [](Files& f) { f["config.json"] = bytes("{\"model_type\": "); },
       "config.json: JSON: unexpected end of input"},
      {"unknown model_type", "llama",
       config_edit("\"model_type\": \"llama\"", "\"model_type\": \"mistral\""),
       "model_type 'mistral' is not supported (llama, qwen2, gpt2)"},
      {"architecture", "llama", config_edit("LlamaForCausalLM", "LlamaModel"),
       "architectures does not list LlamaForCausalLM"},
      {"missing field", "llama", config_edit("\"hidden_size\"", "\"hidden_sizes\""),
       "missing 'hidden_size'"},
      {"negative field", "qwen2",
       config_edit("\"num_hidden_layers\": 2", "\"num_hidden_layers\": -2"),
       "'num_hidden_layers' = -2 is not a non-negative integer"},
      {"rope yarn", "llama",
       config_edit("\"rope_scaling\": null",
                   "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4}"),
       "rope_scaling type 'yarn' is not supported"},
      {"sliding window", "qwen2",
       config_edit("\"use_sliding_window\": false", "\"use_sliding_window\": true"),
       "sliding-window attention is not supported"},
      {"hidden_act", "llama", config_edit("\"silu\"", "\"gelu\""),
       "hidden_act 'gelu' is not supported"},
      {"gpt2 activation", "gpt2", config_edit("gelu_new", "relu"),
       "activation_function 'relu' is not supported"},
      {"kv heads", "llama", config_edit("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3"),
       "n_kv_head = 3 does not divide n_head = 4"},
      {"wrong shape", "llama",
       config_edit("\"intermediate_size\": 64", "\"intermediate_size\": 96"),
       "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [64, 32], expected [96, 32]"},
      {"bad dtype", "gpt2",
       tensors_edit("model.safetensors",
                    [](std::vector<TensorData>& t) {
                      for (TensorData& d : t) {
                        if (d.name != "h.0.ln_1.bias") continue;
                        d.dtype = DType::kI8;
                        d.data.resize(d.data.size() / 4);
                      }
                    }),
       "tensor 'h.0.ln_1.bias' has dtype I8; a Hugging Face folder holds F32, F16 or BF16"},
      {"missing tensor", "qwen2",
       tensors_edit("model.safetensors",
                    [](std::vector<TensorData>& t) {
                      t.erase(std::remove_if(t.begin(), t.end(),
                                             [](const TensorData& d) {
                                               return d.name ==
                                                      "model.layers.1.self_attn.k_proj.bias";
                                             }),
                              t.end());
                    }),
       "missing tensor 'model.layers.1.self_attn.k_proj.bias' [8]"},
      {"unexpected tensor", "gpt2",
       tensors_edit("model.safetensors",
                    [](std::vector<TensorData>& t) {
                      t.push_back({"h.7.ln_1.weight", DType::kF32, {1}, std::vector<uint8_t>(4)});
                    }),
       "unexpected tensor 'transformer.h.7.ln_1.weight'"},
      {"non-finite weight", "gpt2",
       tensors_edit("model.safetensors",
                    [](std::vector<TensorData>& t) {
                      for (TensorData& d : t) {
                        if (d.name == "ln_f.weight") std::memset(d.data.data() + 8, 0xff, 4);
                      }
                    }),
       "tensor 'transformer.ln_f.weight' holds a non-finite value"},
      {"index names a tensor the shard lacks", "llama",
       [](Files& f) {
         std::string idx = text(f["model.safetensors.index.json"]);
         const std::string key = "\"model.norm.weight\": \"model-00002-of-00002.safetensors\"";
         const size_t at = idx.find(key);
         ASSERT_NE(at, std::string::npos);
         f["model.safetensors.index.json"] = bytes(idx.replace(
             at, key.size(), "\"model.norm.weight\": \"model-00001-of-00002.safetensors\""));
       },
       "maps tensor 'model.norm.weight' to model-00001-of-00002.safetensors, which lacks it"},
  };
  for (const HostileCase& c : cases) {
    Files files = read_folder(c.family);
    c.edit(files);
    for (bool streamed : {false, true}) {
      try {
        load(files, streamed);
        ADD_FAILURE() << c.what << ": loaded" << (streamed ? " (streamed)" : "");
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
            << c.what << (streamed ? " (streamed)" : "") << ": " << e.what();
      }
    }
  }
}

// A folder streamed a tensor at a time gives the model its bytes give, bit for bit (GPT-2's
// Conv1D weights transposed as they are read, Llama's shards); no read is larger than the largest
// weight file's header or tensor, and a cut weight file is refused as its bytes are.
// A directory is read as the same files handed over from JS are: a file it lacks is named in
// the folder's words ("model folder: no config.json"), not as a file that cannot be opened.
TEST(HfFolder, ADirectoryLackingAFileIsRefusedAsItsFilesAre) {
  const std::string dir = testing::TempDir() + "hf_dir_" + std::to_string(::getpid());
  for (const char* missing : {"config.json", "model-00002-of-00002.safetensors"}) {
    SCOPED_TRACE(missing);
    std::filesystem::remove_all(dir);
    std::filesystem::copy(fixture("llama"), dir);
    std::filesystem::remove(dir + "/" + missing);
    std::string error = "(accepted)";
    try {
      read_hf_folder(dir);
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_EQ(error.rfind("model folder: ", 0), 0u) << error;
    EXPECT_NE(error.find(missing), std::string::npos) << error;
  }
  std::filesystem::remove_all(dir);
}

TEST(HfFolder, StreamedFolderLoadsAsItsBytes) {
  for (const char* family : {"gpt2", "llama", "qwen2"}) {
    const Files files = read_folder(family);
    std::vector<size_t> reads;
    const GPTModel whole = load(files), streamed = load(files, true, &reads);
    KVCache a(whole.config()), b(streamed.config());
    const std::vector<float> x = whole.forward({3, 17, 42}, a),
                             y = streamed.forward({3, 17, 42}, b);
    ASSERT_EQ(x.size(), y.size()) << family;
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * 4), 0) << family;
    size_t largest = 0;  // the largest header or tensor of the weight files
    for (const auto& [name, bytes] : files) {
      if (name.find(".safetensors") == std::string::npos || name.find(".json") != std::string::npos)
        continue;
      const SafetensorsView view = parse_safetensors(bytes.data(), bytes.size(), true);
      largest = std::max<size_t>(largest, view.tensors.begin()->second.offset);
      for (const auto& [n, t] : view.tensors)
        largest = std::max(largest, size_t(t.numel * dtype_size(t.dtype)));
    }
    EXPECT_LE(*std::max_element(reads.begin(), reads.end()),
              std::max(largest, files.at("config.json").size()))
        << family;
  }
  Files cut = read_folder("gpt2");
  cut["model.safetensors"].resize(cut["model.safetensors"].size() - 3);
  for (bool streamed : {false, true}) {
    try {
      load(cut, streamed);
      ADD_FAILURE() << "a cut file loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("outside the data section"), std::string::npos)
          << e.what();
    }
  }
}

FamilyConfig config_of(const std::string& json) {
  return parse_hf_config(json.data(), json.size());
}

TEST(HfConfig, AcceptedVariants) {
  const std::string llama =
      R"({"model_type":"llama","vocab_size":128256,"hidden_size":2048,"intermediate_size":8192,)"
      R"("num_hidden_layers":16,"num_attention_heads":32,"num_key_value_heads":8,)"
      R"("max_position_embeddings":131072,"rms_norm_eps":1e-05,"tie_word_embeddings":true,)"
      R"("bos_token_id":128000,"eos_token_id":[128001,128008,128009],)";
  const FamilyConfig a = config_of(
      llama +
      R"("rope_theta":500000.0,"rope_scaling":{"factor":32.0,"high_freq_factor":4.0,)"
      R"("low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"}})");
  EXPECT_EQ(a.family, Family::kLlama);
  EXPECT_EQ(a.head_dim, 64);
  EXPECT_EQ(a.n_kv_head, 8);
  EXPECT_EQ(a.rope_theta, 500000.0);
  EXPECT_EQ(a.rope_scaling.factor, 32.0);
  EXPECT_EQ(a.rope_scaling.original_max_positions, 8192.0);
  EXPECT_EQ(a.eos_token_ids, (std::vector<int>{128001, 128008, 128009}));
  EXPECT_EQ(a.bos_token_id, 128000);
  EXPECT_TRUE(a.tied_head);
  // transformers 5: rope_parameters with the theta inside.
  const FamilyConfig b =
      config_of(llama + R"("rope_parameters":{"rope_type":"default","rope_theta":1e6}})");
  EXPECT_EQ(b.rope_theta, 1e6);
  EXPECT_EQ(b.rope_scaling.factor, 0.0);
  const FamilyConfig g = config_of(
      R"({"model_type":"gpt2","vocab_size":50257,"n_embd":768,"n_layer":12,"n_head":12,)"
      R"("n_positions":1024,"n_inner":null,"activation_function":"gelu","eos_token_id":50256})");
  EXPECT_EQ(g.family, Family::kGPT2);
  EXPECT_EQ(g.n_ff, 3072);
  EXPECT_TRUE(g.gelu_erf);
  EXPECT_TRUE(g.tied_head);
  EXPECT_EQ(g.eos_token_ids, std::vector<int>{50256});
  // The default MLP width 4 * n_embd is checked like a stored value (no int overflow).
  try {
    config_of(R"({"model_type":"gpt2","vocab_size":8,"n_embd":1073741824,"n_layer":1,)"
              R"("n_head":1,"n_positions":8})");
    ADD_FAILURE() << "n_embd 2^30 without n_inner was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'n_inner' is missing and its default 4294967296"),
              std::string::npos)
        << e.what();
  }
}

// Q4_0 blocks (d, 16 bytes of nibbles) load as the 8-bit blocks of the same values: the model
// equals one whose Q8_0 blocks hold q = nibble - 8 under the same d, bit for bit.
TEST(HfFolder, Q4_0LoadsAsTheSameEightBitBlocks) {
  Checkpoint q4 = read_hf_folder(fixture("llama"));
  Checkpoint q8 = read_hf_folder(fixture("llama"));
  uint32_t state = 1;
  for (auto& [name, t] : q4.tensors) {
    if (t.shape.size() != 2 || name.find(".layers.") == std::string::npos) continue;
    const size_t blocks = t.shape[0] * t.shape[1] / 32;
    std::vector<uint8_t> b4(blocks * 18), b8(blocks * 34);
    for (size_t b = 0; b < blocks; ++b) {
      const uint16_t d = kernels::f32_to_f16(0.01f * (1 + b % 7));
      std::memcpy(&b4[b * 18], &d, 2);
      std::memcpy(&b8[b * 34], &d, 2);
      for (size_t j = 0; j < 16; ++j) {
        state = state * 1103515245u + 12345u;
        const uint8_t byte = static_cast<uint8_t>(state >> 16);
        b4[b * 18 + 2 + j] = byte;
        b8[b * 34 + 2 + j] = static_cast<uint8_t>((byte & 15) - 8);
        b8[b * 34 + 2 + j + 16] = static_cast<uint8_t>((byte >> 4) - 8);
      }
    }
    q4.owned.push_back(std::move(b4));
    t = {TensorType::kQ4_0, t.shape, q4.owned.back().data(), q4.owned.back().size(), {}, {}};
    q8.owned.push_back(std::move(b8));
    q8.tensors[name] = {TensorType::kQ8_0,      t.shape, q8.owned.back().data(),
                        q8.owned.back().size(), {},      {}};
  }
  const GPTModel m4 = GPTModel::from_checkpoint(q4), m8 = GPTModel::from_checkpoint(q8);
  KVCache c4(m4.config()), c8(m8.config());
  const std::vector<float> a = m4.forward({3, 17, 42}, c4), b = m8.forward({3, 17, 42}, c8);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
}

}  // namespace
}  // namespace specdec
