#include "bindings/model_bindings.h"

#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "bindings/checkpoints.h"
#include "bindings/handles.h"
#include "bindings/interop.h"
#include "bindings/threads.h"
#include "model/gpt_model.h"
#include "model/heads.h"
#include "model/model_source.h"
#include "model/quantize.h"

namespace specdec::bindings {
namespace {

using emscripten::val;

// A loaded model. Decoders share ownership of the weights, so disposing the model handle
// while decoders still use it is safe: the weights go when the last user goes.
struct ModelHandle {
  std::shared_ptr<const GPTModel> model;
  double checkpoint_params = 0;  // a GGUF file's or a folder's parameters (0: our own file)
};

// A JS byte array (Uint8Array) copied into wasm memory.
std::vector<uint8_t> copy_bytes(const val& bytes) {
  std::vector<uint8_t> buffer(js_length(bytes));
  if (!buffer.empty()) {
    val(emscripten::typed_memory_view(buffer.size(), buffer.data())).call<void>("set", bytes);
  }
  return buffer;
}

// weights: 0 keeps the file's layout, 1 'f32' (refuses a quantized nanoGPT file; widens a GGUF
// file's Q8_0 / Q4_0), 2 'int8' (quantizes float Linear weights at load). A number, not a
// string: Embind's JS side mallocs a string argument and frees it after the call returns, so a
// call that throws (a refused file) would leak it.
Weights checked_weights(int weights) {
  if (weights < 0 || weights > 2) fail("weights: expected 0 (as stored), 1 (f32) or 2 (int8)");
  return weights == 2 ? Weights::kInt8 : Weights::kF32;
}

ModelHandle* hold(GPTModel&& model, double checkpoint_params = 0) {
  auto loaded = std::make_shared<GPTModel>(std::move(model));
  loaded->set_thread_pool(module_pool());  // the module's threads (null: one)
  std::shared_ptr<const GPTModel> shared = std::move(loaded);
  return new ModelHandle{std::move(shared), checkpoint_params};
}

ModelHandle* hold(LoadedCheckpoint&& loaded) {
  return hold(std::move(loaded.model), loaded.params);
}

// Copies `n` bytes at `offset` of a JS Uint8Array into wasm memory at `into`.
void copy_range(const val& bytes, uint64_t offset, size_t n, uint8_t* into) {
  if (n == 0) return;
  const val part = bytes.call<val>("subarray", double(offset), double(offset + n));
  val(emscripten::typed_memory_view(n, into)).call<void>("set", part);
}

// bytes: Uint8Array holding one model file: our safetensors file, or a GGUF file (llama /
// qwen2 / gpt2; bindings/checkpoints.h), told apart by the GGUF magic. Our files are copied in
// whole (at most 512 MiB of weights) and the copy freed before returning; a GGUF file is read a
// tensor at a time as the model is built, so wasm memory holds the model and one tensor.
ModelHandle* load_model(val bytes, int weights) {
  return guard([&] {
    const Weights want = checked_weights(weights);
    const Weights* asked = weights == 0 ? nullptr : &want;
    const uint64_t size = js_length(bytes);
    uint8_t magic[4] = {};
    if (size >= 4) copy_range(bytes, 0, 4, magic);
    if (size >= 4 && std::equal(magic, magic + 4, "GGUF")) {
      const ByteReader read = [&bytes](uint64_t offset, size_t n, uint8_t* into) {
        copy_range(bytes, offset, n, into);
      };
      return hold(model_from_gguf(size, read, asked));
    }
    const std::vector<uint8_t> buffer = copy_bytes(bytes);
    return hold(GPTModel::from_safetensors(buffer.data(), buffer.size(), asked));
  });
}

// files: a JS array of [name, bytes] pairs, the files of a Hugging Face folder (config.json,
// model.safetensors or the shards and their index; others are ignored); bytes: a Uint8Array, or
// any object with length and subarray(begin, end) (web/lib/sources.js). Every file is streamed
// as a GGUF file is: the JSON files read whole, each weight file's header, then each tensor
// when the model's loader converts it.
ModelHandle* load_folder(val files, int weights) {
  return guard([&] {
    const Weights want = checked_weights(weights);
    const size_t n = js_length(files);
    std::vector<val> sources;  // outlive the build: the readers refer to them
    sources.reserve(n);
    std::vector<FolderFile> list;
    for (size_t i = 0; i < n; ++i) {
      const val pair = files[i];
      sources.push_back(pair[1]);
      const val& bytes = sources.back();
      list.emplace_back(pair[0].as<std::string>(), uint64_t(js_length(bytes)),
                        [&bytes](uint64_t offset, size_t size, uint8_t* into) {
                          copy_range(bytes, offset, size, into);
                        });
    }
    return hold(model_from_folder(list, weights == 0 ? nullptr : &want));
  });
}

ModelHandle* load_model_as_stored(val bytes) { return load_model(bytes, 0); }

// sd.quantizeModelFile(bytes): a float model file -> its 8-bit file (model/quantize.h), as a
// new Uint8Array.
val quantize_model(val bytes) {
  return guard([&] {
    const std::vector<uint8_t> buffer = copy_bytes(bytes);
    const std::vector<uint8_t> out = quantize_model_file(buffer.data(), buffer.size());
    return uint8_array(out.data(), out.size());
  });
}

// { vocabSize, nLayer, nHead, nEmbd, blockSize, nKvHead, headDim, weights, weightBytes,
//   nParams (checkpoints only) }
val model_config(const ModelHandle& h) {
  return guard([&] {
    const GPTConfig& c = h.model->config();
    val o = val::object();
    o.set("vocabSize", c.vocab_size);
    o.set("nLayer", c.n_layer);
    o.set("nHead", c.n_head);
    o.set("nEmbd", c.n_embd);
    o.set("blockSize", c.block_size);
    o.set("nKvHead", c.kv_heads());
    o.set("headDim", c.head_size());
    if (h.checkpoint_params > 0) o.set("nParams", h.checkpoint_params);
    o.set("weights", std::string(weights_name(h.model->weight_type())));
    o.set("weightBytes", static_cast<double>(h.model->weight_bytes()));
    return o;
  });
}

SourceSlot model_source(const ModelHandle& h) {
  return {h.model, std::make_unique<ModelSource>(*h.model)};
}

// sd.modelStep(model): the lesson's model_step, a model with its own KV cache answering
// "the next-token distributions after the last n prefixes of these tokens".
struct ScorerHandle {
  SourceSlot slot;
};

ScorerHandle* model_scorer(const ModelHandle& m) {
  return guard([&] { return new ScorerHandle{model_source(m)}; });
}

// tokens: Int32Array; returns (nLast, V) probabilities, flat.
val scorer_probs(ScorerHandle& h, val tokens, double n_last) {
  return guard([&] {
    ProbMatrix rows =
        h.slot.source->next_token_probs(int_vector_from_js(tokens), static_cast<size_t>(n_last));
    return float32_array(rows.data(), rows.size());
  });
}

double scorer_cached(const ScorerHandle& h) {
  return static_cast<double>(h.slot.source->cached_tokens());
}

// Heads loaded for one target model; they keep its weights alive (their LM head is the target's).
struct HeadsHandle {
  std::shared_ptr<const GPTModel> target;
  std::shared_ptr<const MedusaHeads> heads;
};

HeadsHandle* load_heads(val bytes, const ModelHandle& target) {
  return guard([&] {
    const std::vector<uint8_t> buffer = copy_bytes(bytes);
    auto heads = std::make_shared<const MedusaHeads>(
        MedusaHeads::from_safetensors(buffer.data(), buffer.size(), *target.model));
    return new HeadsHandle{target.model, std::move(heads)};
  });
}

int heads_count(const HeadsHandle& h) { return h.heads->count(); }
bool heads_belong_to(const HeadsHandle& h, const ModelHandle& m) { return h.target == m.model; }

void decoder_set_heads(DecoderHandle& d, const HeadsHandle& h) {
  // The decoder shares the heads; they point at the target's weights, kept alive with them.
  guard([&] {
    d.set_heads(std::shared_ptr<const MedusaHeads>(
        h.heads.get(), [keep = h.heads, target = h.target](const MedusaHeads*) {}));
  });
}

void decoder_set_target_model(DecoderHandle& d, const ModelHandle& m) {
  guard([&] { d.set_target(model_source(m)); });
}
void decoder_set_draft_model(DecoderHandle& d, const ModelHandle& m) {
  guard([&] { d.set_draft(model_source(m)); });
}

}  // namespace

void register_model_bindings() {
  using namespace emscripten;
  class_<ModelHandle>("Model")
      .class_function("load", &load_model_as_stored, allow_raw_pointers())
      .class_function("loadWeights", &load_model, allow_raw_pointers())
      .class_function("loadFolder", &load_folder, allow_raw_pointers())
      .function("config", &model_config);
  class_<ScorerHandle>("Scorer")
      .class_function("create", &model_scorer, allow_raw_pointers())
      .function("probs", &scorer_probs)
      .function("cached", &scorer_cached);
  class_<HeadsHandle>("Heads")
      .class_function("load", &load_heads, allow_raw_pointers())
      .function("count", &heads_count)
      .function("belongsTo", &heads_belong_to);
  function("quantizeModelFile", &quantize_model);
  function("decoderSetHeads", &decoder_set_heads);
  function("decoderSetTargetModel", &decoder_set_target_model);
  function("decoderSetDraftModel", &decoder_set_draft_model);
}

}  // namespace specdec::bindings
