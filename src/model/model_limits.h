// The limits a model file is checked against before anything it claims is allocated: they bound
// the work and memory an untrusted file can ask for. Below the checkpoint and the model, so that
// the one validation (check_checkpoint_config, model/checkpoint.h) and the loader share them.
#pragma once

#include <cstdint>

namespace specdec {

constexpr int kByteVocabSize = 256;  // our own files' tokens are UTF-8 bytes (model/tokenizer.h)
constexpr int kMaxBlockSize = 8192;  // the context (KV capacity) of any model
// Files read whole into memory (a heads file, the input of `specdec quantize`): their n_embd and
// their weights as float32.
constexpr int kMaxEmbd = 4096;
constexpr uint64_t kMaxParamBytes = uint64_t{512} << 20;

// Every model, whatever its format (check_checkpoint_config, GPTModel::from_checkpoint), sized
// for real small checkpoints (SmolLM2-360M f32 1.45 GB, TinyLlama-1.1B int8 ~1.6 GB, Qwen2.5's
// 151,936 tokens).
constexpr int kMaxFamilyVocab = 262144;
constexpr int kMaxFamilyLayers = 128;
constexpr int kMaxFamilyEmbd = 8192;                            // also bounds H hd and F / 4
constexpr uint64_t kMaxFamilyParamBytes = uint64_t{3} << 30;    // weights as held in memory
constexpr uint64_t kMaxFamilyKVCacheBytes = uint64_t{1} << 30;  // one full KVCache
constexpr int kDefaultFamilyContext = 4096;  // context when none is asked: min(this, max_positions)

}  // namespace specdec
