#include "bindings/model_bindings.h"

#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "bindings/handles.h"
#include "bindings/interop.h"
#include "model/gpt_model.h"
#include "model/heads.h"
#include "model/model_source.h"
#include "model/quantize.h"

namespace specdec::bindings {
namespace {

using emscripten::val;

// A JS byte array (Uint8Array) copied into wasm memory (heads files, quantizeModelFile).
std::vector<uint8_t> copy_bytes(const val& bytes) {
  std::vector<uint8_t> buffer(js_length(bytes));
  if (!buffer.empty()) {
    val(emscripten::typed_memory_view(buffer.size(), buffer.data())).call<void>("set", bytes);
  }
  return buffer;
}

// sd.quantizeModelFile(bytes): a float model file -> its 8-bit file (model/quantize.h), as a
// new Uint8Array.
val quantize_model(val bytes) {
  return guard([&] {
    const std::vector<uint8_t> buffer = copy_bytes(bytes);
    const std::vector<uint8_t> out = quantize_model_file(buffer.data(), buffer.size());
    return uint8_array(out.data(), out.size());
  });
}

// { weights, weightBytes }: how the model holds its weights (its config: CheckpointReader info).
val model_config(const ModelHandle& h) {
  return guard([&] {
    val o = val::object();
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
  class_<ModelHandle>("Model").function("config", &model_config);
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
