#include "bindings/model_bindings.h"

#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "bindings/checkpoints.h"
#include "bindings/handles.h"
#include "bindings/interop.h"
#include "bindings/threads.h"
#include "model/checkpoint.h"
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
  double params = 0;  // the parameters the checkpoint stores
  CheckpointFormat format = CheckpointFormat::kSpecdec;
};

// A JS byte array (Uint8Array) copied into wasm memory (heads files, quantizeModelFile).
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

double count_params(const Checkpoint& c) {
  double n = 0;
  for (const auto& [name, t] : c.tensors) {
    double numel = 1;
    for (uint64_t d : t.shape) numel *= static_cast<double>(d);
    n += numel;
  }
  return n;
}

// The one way from a checkpoint (any format, header checked, tensors streamed) to a model.
ModelHandle* build(const Checkpoint& checkpoint, int weights) {
  const Weights want = checked_weights(weights);
  auto loaded = std::make_shared<GPTModel>(
      GPTModel::from_checkpoint(checkpoint, weights == 0 ? nullptr : &want));
  loaded->set_thread_pool(module_pool());  // the module's threads (null: one)
  std::shared_ptr<const GPTModel> shared = std::move(loaded);
  return new ModelHandle{std::move(shared), count_params(checkpoint), checkpoint.format};
}

// Copies `n` bytes at `offset` of a JS byte source (a Uint8Array, or any object with length and
// subarray(begin, end): web/lib/model/sources.js) into wasm memory at `into`. Offsets are 64-bit
// (passed to JS as doubles, exact below 2^53): a file may be larger than wasm32's size_t.
void copy_range(const val& bytes, uint64_t offset, size_t n, uint8_t* into) {
  if (n == 0) return;
  const val part = bytes.call<val>("subarray", double(offset), double(offset + n));
  if (part["length"].as<double>() != double(n)) {
    fail("bytes: the source gave ", part["length"].as<double>(), " bytes at offset ", offset,
         " where ", n, " were asked");
  }
  val(emscripten::typed_memory_view(n, into)).call<void>("set", part);
}

// A streamed file's reader over a JS byte source, which must outlive the reader.
ByteReader js_reader(const val& bytes) {
  return [&bytes](uint64_t offset, size_t n, uint8_t* into) { copy_range(bytes, offset, n, into); };
}

// bytes: one model file (our safetensors file or a GGUF file, told apart by model/load.h), a
// Uint8Array or any object with length and subarray(begin, end) (web/lib/model/sources.js
// ChunkedBytes). Streamed: its header is checked first, then each tensor is copied in when the
// model's loader converts it, so wasm memory holds the model and one tensor, never the file.
ModelHandle* load_model(val bytes, int weights) {
  return guard([&] {
    checked_weights(weights);
    const ByteReader read = js_reader(bytes);
    return build(open_model_file(js_size(bytes, "bytes"), read), weights);
  });
}

// files: a JS array of [name, bytes] pairs, the files of a Hugging Face folder (config.json,
// model.safetensors or the shards and their index; others are ignored); bytes as load_model's.
// Every file is streamed: the JSON files read whole, each weight file's header, then each
// tensor when the model's loader converts it. tokenizer_tokens: the tokens the folder's
// tokenizer.json defines (0: unknown), checked against the embedding's rows with the config,
// before any weight is read.
ModelHandle* load_folder(val files, int weights, double tokenizer_tokens) {
  return guard([&] {
    checked_weights(weights);
    if (!(tokenizer_tokens >= 0 && tokenizer_tokens <= 2147483647.0) ||
        tokenizer_tokens != std::floor(tokenizer_tokens)) {
      fail("tokenizerTokens: expected an integer in 0..2147483647 (0: unknown), got ",
           tokenizer_tokens);
    }
    const size_t n = js_length(files);
    std::vector<val> sources;  // outlive the build: the readers refer to them
    sources.reserve(n);
    std::vector<FolderFile> list;
    for (size_t i = 0; i < n; ++i) {
      const val pair = files[i];
      sources.push_back(pair[1]);
      const std::string name = pair[0].as<std::string>();
      list.emplace_back(name, js_size(sources.back(), name.c_str()), js_reader(sources.back()));
    }
    Checkpoint checkpoint = open_folder(list);
    checkpoint.config.tokenizer_tokens = static_cast<int>(tokenizer_tokens);
    return build(checkpoint, weights);
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
//   nParams, format ('specdec' / 'gguf' / 'hf': model/checkpoint.h format_name) }
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
    o.set("nParams", h.params);
    o.set("format", std::string(format_name(h.format)));
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
