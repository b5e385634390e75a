// Models from safetensors bytes (sd.loadModel) and decoders over them. Registered from
// bindings.cc's EMSCRIPTEN_BINDINGS block.
#pragma once

namespace specdec::bindings {

void register_model_bindings();

}  // namespace specdec::bindings
