// Model files in, through the one loader (model/load.h, through bindings/checkpoints.h: the lite
// module reads our own files only): Module.CheckpointReader opens a single file or a Hugging Face
// folder in the caller's JS buffers, checks it as loading it on the CPU does and says what it is
// (info); then either build() makes the Model (sd.loadModel on the CPU) or the WebGPU backend
// (web/lib/webgpu/webgpu-checkpoint.js) fetches one tensor at a time, converted by the loader's
// own conversions (model/family_plan.h: widened or dequantized, finite values checked; 8-bit
// blocks as quants and scales) as a fresh typed array. Either way the file stays in JS and wasm
// memory holds the model (or one tensor), never the file. Also Module.safetensorsHeader: a
// safetensors header parsed and checked by model/safetensors.h, for what JS says of a file (its
// __metadata__) and for Node tools (web/lib/safetensors-node.js). Tensor names arrive as JS
// values (not std::string, which Embind mallocs and would leak when the call throws).
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/buffer.h"
#include "base/errors.h"
#include "bindings/checkpoints.h"
#include "bindings/interop.h"
#include "bindings/model_bindings.h"
#include "bindings/threads.h"
#include "kernels/matmul_q8.h"
#include "model/family_plan.h"
#include "model/gpt_model.h"
#include "model/safetensors.h"

namespace specdec::bindings {
namespace {

using kernels::kQ8Block;

// A reader of a JS byte source (a Uint8Array, or any object with length and subarray(begin,
// end): web/lib/model/sources.js ChunkedBytes), which must outlive it. Offsets are 64-bit (passed
// to JS as doubles, exact below 2^53): a file may be larger than wasm32's size_t.
ByteReader js_reader(const val& bytes) {
  return [&bytes](uint64_t offset, size_t n, uint8_t* into) {
    if (n == 0) return;
    const val part = bytes.call<val>("subarray", double(offset), double(offset + n));
    if (part["length"].as<double>() != double(n)) {
      fail("bytes: the source gave ", part["length"].as<double>(), " bytes at offset ", offset,
           " where ", n, " were asked");
    }
    val(emscripten::typed_memory_view(n, into)).call<void>("set", part);
  };
}

// weights: 0 keeps the file's layout, 1 'f32' (refuses a quantized nanoGPT file; widens a GGUF
// file's Q8_0 / Q4_0), 2 'int8' (quantizes float Linear weights at load). A number, not a
// string: Embind's JS side mallocs a string argument and frees it after the call returns, so a
// call that throws (a refused file) would leak it.
Weights checked_weights(int weights) {
  if (weights < 0 || weights > 2) fail("weights: expected 0 (as stored), 1 (f32) or 2 (int8)");
  return weights == 2 ? Weights::kInt8 : Weights::kF32;
}

class CheckpointReader {
 public:
  // files: null for a single file (`bytes`: our safetensors file or a GGUF file, told apart by
  // model/load.h), else a JS array of [name, bytes] pairs, a Hugging Face folder's files
  // (config.json, model.safetensors or the shards and their index; others are ignored), with
  // tokenizer_tokens the tokens its tokenizer.json defines (0: unknown), checked against the
  // embedding's rows with the config before any weight is read.
  CheckpointReader(val bytes, val files, double tokenizer_tokens) {
    if (files.isNull()) {
      sources_.push_back(std::move(bytes));
      checkpoint_ = open_model_file(js_size(sources_[0], "bytes"), js_reader(sources_[0]));
    } else {
      if (!(tokenizer_tokens >= 0 && tokenizer_tokens <= 2147483647.0) ||
          tokenizer_tokens != std::floor(tokenizer_tokens)) {
        fail("tokenizerTokens: expected an integer in 0..2147483647 (0: unknown), got ",
             tokenizer_tokens);
      }
      const size_t n = js_length(files);
      sources_.reserve(n);  // the readers refer to its elements
      std::vector<FolderFile> list;
      for (size_t i = 0; i < n; ++i) {
        const val pair = files[i];
        sources_.push_back(pair[1]);
        const std::string name = pair[0].as<std::string>();
        list.emplace_back(name, js_size(sources_.back(), name.c_str()), js_reader(sources_.back()));
      }
      checkpoint_ = open_folder(list);
      checkpoint_.config.tokenizer_tokens = static_cast<int>(tokenizer_tokens);
    }
    // What loading it checks before anything is allocated, in the same words (the least memory
    // it can need: the weights asked for are checked again by build()).
    config_ = check_checkpoint(checkpoint_).config;
  }
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  // { format, family, vocabSize, nLayer, nHead, nEmbd, blockSize, nKvHead, headDim, nParams }
  val info() const {
    return guard([&] { return info_of(); });
  }

  // The one way from a checkpoint (any format) to a model: weights as checked_weights.
  ModelHandle* build(int weights) const {
    return guard([&] {
      const Weights want = checked_weights(weights);
      auto loaded = std::make_shared<GPTModel>(
          GPTModel::from_checkpoint(checkpoint_, weights == 0 ? nullptr : &want));
      loaded->set_thread_pool(module_pool());  // the module's threads (null: one)
      return new ModelHandle{std::move(loaded)};
    });
  }

  // The tensor's type as the formats spell it ("F32" ... "Q8_0"), "" when there is none.
  std::string type(val name) const {
    const CheckpointTensor* t = checkpoint_.find(name.as<std::string>());
    return t ? tensor_type_name(t->type) : "";
  }

  // The tensor as float (widened, blocks dequantized, non-finite values refused).
  val floats(val js_name) {
    return guard([&] {
      const std::string name = js_name.as<std::string>();
      const CheckpointTensor& t = tensor(name);
      Buffer<float> out(family::tensor_numel(t));
      family::to_floats_into(name, t, out.data(), scratch_);
      return float32_array(out.data(), out.size());
    });
  }

  // A Linear weight (n, k) as 8-bit blocks: { q: Int8Array (n k), scales: Float32Array
  // (n k / 32) }: stored blocks as they are, a float weight quantized as the loader does.
  val int8(val js_name) {
    return guard([&] { return int8_of(js_name.as<std::string>()); });
  }

 private:
  val info_of() const {
    val o = val::object();
    o.set("format", std::string(format_name(checkpoint_.format)));
    o.set("family", std::string(family_name(checkpoint_.config.family)));
    o.set("vocabSize", config_.vocab_size);
    o.set("nLayer", config_.n_layer);
    o.set("nHead", config_.n_head);
    o.set("nEmbd", config_.n_embd);
    o.set("blockSize", config_.block_size);
    o.set("nKvHead", config_.kv_heads());
    o.set("headDim", config_.head_size());
    double params = 0;
    for (const auto& [name, t] : checkpoint_.tensors) {
      double numel = 1;
      for (uint64_t d : t.shape) numel *= static_cast<double>(d);
      params += numel;
    }
    o.set("nParams", params);
    return o;
  }

  val int8_of(const std::string& name) {
    const CheckpointTensor& t = tensor(name);
    if (t.shape.size() != 2 || t.shape[1] % kQ8Block != 0) {
      fail("model file: tensor '", name, "' is not a matrix of rows in blocks of ", kQ8Block);
    }
    const size_t n = t.shape[0], k = t.shape[1];
    Buffer<int8_t> q(n * k);
    Buffer<float> scales(n * k / kQ8Block);
    if (family::is_quantized(t.type)) {
      family::blocks_to_q8(name, t, q.data(), scales.data(), scratch_);
    } else {
      Buffer<float> w(n * k);
      family::to_floats_into(name, t, w.data(), scratch_);
      kernels::quantize_weights_q8(w.data(), n, k, q.data(), scales.data());
      for (size_t i = 0; i < scales.size(); ++i) {
        if (!(std::isfinite(scales[i]) && scales[i] > 0.0f)) {
          fail("model file: tensor '", name, "' cannot be quantized (block ", i, " scale ",
               scales[i], ")");
        }
      }
    }
    val o = val::object();
    o.set("q", val::global("Int8Array").new_(emscripten::typed_memory_view(q.size(), q.data())));
    o.set("scales", float32_array(scales.data(), scales.size()));
    return o;
  }

  const CheckpointTensor& tensor(const std::string& name) const {
    const CheckpointTensor* t = checkpoint_.find(name);
    if (!t) fail("model file: missing tensor '", name, "'");
    return *t;
  }

  std::vector<val> sources_;  // the file or the folder's files; the checkpoint reads through them
  Checkpoint checkpoint_;
  GPTConfig config_;
  Buffer<uint8_t> scratch_;  // a fetched tensor's bytes, kept across tensors
};

// Module.safetensorsHeader(bytes, bf16): the header of a safetensors file (bytes as the reader's;
// only the header is read) as { metadata: [[key, value]...], tensors: [{ name, dtype, shape,
// begin, end }...], dataStart }, begin / end in the data section, which starts at dataStart.
val safetensors_header(val bytes, bool bf16) {
  return guard([&] {
    const uint64_t size = js_size(bytes, "bytes");
    const ByteReader read = js_reader(bytes);
    uint8_t first8[8] = {};
    read(0, static_cast<size_t>(std::min<uint64_t>(size, 8)), first8);
    std::vector<uint8_t> header(static_cast<size_t>(safetensors_header_bytes(first8, size)));
    read(0, header.size(), header.data());
    const SafetensorsView view = parse_safetensors_header(header.data(), header.size(), size, bf16);
    val metadata = val::array();
    for (const auto& [key, value] : view.metadata) {
      val pair = val::array();
      pair.call<void>("push", key, value);
      metadata.call<void>("push", pair);
    }
    val tensors = val::array();
    for (const auto& [name, t] : view.tensors) {
      val o = val::object(), shape = val::array();
      for (uint64_t d : t.shape) shape.call<void>("push", double(d));
      const double begin = double(t.offset - header.size());
      o.set("name", name);
      o.set("dtype", std::string(dtype_name(t.dtype)));
      o.set("shape", shape);
      o.set("begin", begin);
      o.set("end", begin + double(t.numel * dtype_size(t.dtype)));
      tensors.call<void>("push", o);
    }
    val o = val::object();
    o.set("metadata", metadata);
    o.set("tensors", tensors);
    o.set("dataStart", double(header.size()));
    return o;
  });
}

// Module.safetensorsHeaderBytes(first8, fileBytes): the bytes a safetensors header takes, 8 + its
// length, checked against the limit and the file's size: what a tool reads of a file for its
// header.
double header_bytes(val first8, double file_size) {
  return guard([&] {
    uint8_t b[8] = {};
    const size_t n = std::min<size_t>(js_length(first8), 8);
    js_reader(first8)(0, n, b);
    return double(safetensors_header_bytes(b, n < 8 ? n : static_cast<uint64_t>(file_size)));
  });
}

CheckpointReader* open_reader(val bytes, val files, double tokenizer_tokens) {
  return guard([&] { return new CheckpointReader(bytes, files, tokenizer_tokens); });
}

}  // namespace
}  // namespace specdec::bindings

EMSCRIPTEN_BINDINGS(specdec_checkpoint_reader) {
  using namespace emscripten;
  using namespace specdec::bindings;
  class_<CheckpointReader>("CheckpointReader")
      .class_function("open", &open_reader, allow_raw_pointers())
      .function("info", &CheckpointReader::info)
      .function("build", &CheckpointReader::build, allow_raw_pointers())
      .function("type", &CheckpointReader::type)
      .function("floats", &CheckpointReader::floats)
      .function("int8", &CheckpointReader::int8);
  function("safetensorsHeader", &safetensors_header);
  function("safetensorsHeaderBytes", &header_bytes);
}
