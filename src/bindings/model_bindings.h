// Models and decoders over them, registered from bindings.cc's EMSCRIPTEN_BINDINGS block. Models
// are built from files by bindings/checkpoint_reader.cc (Module.CheckpointReader build()).
#pragma once

#include <memory>

#include "model/gpt_model.h"

namespace specdec::bindings {

// A loaded model. Decoders share ownership of the weights, so disposing the model handle
// while decoders still use it is safe: the weights go when the last user goes.
struct ModelHandle {
  std::shared_ptr<const GPTModel> model;
};

void register_model_bindings();

}  // namespace specdec::bindings
