// config.json of a Hugging Face folder as a FamilyConfig (model/checkpoint.h): model_type llama,
// qwen2 or gpt2, with transformers' defaults for optional fields (LlamaConfig, Qwen2Config,
// GPT2Config). Untrusted input: every refusal throws specdec::Error "config.json: ..." naming the
// key and the value -- an unknown model_type or architecture, a missing or malformed field,
// rope_scaling other than none / "default" / "llama3" (Llama 3's is implemented), a sliding
// window in use, a hidden_act other than silu, GPT-2 attention variants we do not run.
#pragma once

#include <cstddef>

#include "model/checkpoint.h"

namespace specdec {

FamilyConfig parse_hf_config(const char* text, size_t size);

}  // namespace specdec
