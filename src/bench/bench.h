// Measurements shared by the native `specdec bench` command and the WASM benchmark bindings
// (src/bindings/bench_bindings.cc), so that both time exactly the same code from inside the
// engine (no JS call overhead in the kernel figures). Every figure is a median of repeated
// runs, reported with its min and max. Nothing here is used by the library itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt_config.h"
#include "model/gpt_model.h"

namespace specdec::bench {

// The fixed prompt set of every decoding benchmark (Shakespeare-like, as the models were
// trained on).
const std::vector<std::string>& prompts();

// Milliseconds from a monotonic clock (performance.now() under Emscripten).
double now_ms();

struct Stats {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
  int runs = 0;
};
Stats summarize(std::vector<double> samples);

// ------------------------------------------------------------------ kernels

// Every SIMD kernel against its scalar reference, bit for bit, on random inputs at sizes around
// the vector and panel widths (matmul for M = 1..9, attention, dot, softmax, layer norm, GELU,
// SiLU), in whatever build this is compiled into. Returns "" or a description of the first
// mismatch. (tests/cpp/kernels_test.cc checks the native build; tests/js/kernels.test.mjs runs this
// in WASM.)
std::string kernel_self_check();

// GFLOP/s (2 m k n flops per call) of kernels::matmul with m rows against W (n, k). `copies`
// distinct weight matrices are cycled through, so the weights stream from copies * n * k * 4
// bytes (1 = cache-resident when small). Each repeat runs calls for at least min_ms.
Stats matmul_gflops(size_t m, size_t k, size_t n, size_t copies, int repeats, double min_ms);

// GFLOP/s of the linear layers of one forward pass of a model shaped `cfg`, in forward order,
// each layer with its own random weights (19.1 MB for the 6 x 256 target): GEMV (m = 1) and
// GEMM "at model scale", with the weights streaming from L3 as in real decoding.
Stats model_matmul_gflops(const GPTConfig& cfg, size_t m, int repeats, double min_ms);

// ------------------------------------------------------------------ roofline

// GB/s at which one core reads a stream of `bytes` of floats (a SIMD sum with 4 accumulators:
// the access pattern of the decoding GEMV without its multiplies). For a buffer larger than the
// caches next to the core this is the ceiling of any single-threaded M = 1 matmul.
Stats read_gbs(size_t bytes, int repeats, double min_ms);

// Bytes of packed weights the matmuls of one forward pass of `model` read (every linear layer
// and the LM head): divided by read_gbs, the least time a one-token pass can take.
size_t matmul_weight_bytes(const GPTModel& model);

// Where the time of one pass over k new tokens goes: the kernels of GPTModel::forward timed on
// their own with the model's shapes — matmul on the model's own packed weights (streaming from
// memory as in decoding), attention over a KV cache of the model's shape at each of `pasts`
// cached tokens, GELU on the MLP's hidden layer — each the mean per pass over `pasts`, median
// over repeats; `pass` is forward_ms() measured in the same repeats, and pass minus the three is
// the rest (layer norms, residual adds, KV copies, softmax of the output rows, call overhead).
struct PassBreakdown {
  Stats pass, matmul, attention, gelu;
};
PassBreakdown pass_breakdown(const GPTModel& model, size_t k, const std::vector<size_t>& pasts,
                             int repeats);

// Native builds only (WASM has no threads here): ms per pass of the target's one-token matmuls
// with the output rows of every matrix split over `threads` threads (a prototype of what would
// lift the one-core bandwidth roofline; each output keeps its summation order, and the result is
// checked bit for bit against one thread — throws on any difference).
Stats split_matmul_ms(const GPTModel& model, int threads, int repeats);
constexpr bool kHasThreads =
#if defined(__EMSCRIPTEN__)
    false;
#else
    true;
#endif

// ------------------------------------------------------------------ model passes

// Mean milliseconds of one ModelSource::next_token_probs call that forwards k new tokens after
// `past` cached ones (what the decoder's verify call costs), averaged over the given contexts;
// median over repeats. Each call alternates between two continuations so that the cache is
// rolled back and the k tokens are really recomputed.
Stats forward_ms(const GPTModel& model, size_t k, const std::vector<size_t>& pasts, int repeats);

// Cached-token counts that cover a decode of the benchmark prompts through a context window of
// block_size tokens evenly (8 points from 8 to ~7/8 of the window).
std::vector<size_t> decode_contexts(size_t block_size);

// ------------------------------------------------------------------ decoding

struct DecodeTotals {
  size_t generated = 0;
  size_t target_passes = 0;
  size_t draft_passes = 0;
  size_t drafted = 0;
  size_t examined = 0;
  size_t accepted = 0;
  double ms = 0.0;  // wall time of the decode loops (model loading and cache allocation excluded)
  double target_ms = 0.0;  // inside target calls
  double draft_ms = 0.0;   // inside draft calls
  double alpha() const { return examined ? double(accepted) / examined : 0.0; }
  double tokens_per_pass() const { return target_passes ? double(generated) / target_passes : 0.0; }
  double ms_per_token() const { return generated ? ms / generated : 0.0; }

  DecodeTotals& operator+=(const DecodeTotals& o) {
    generated += o.generated;
    target_passes += o.target_passes;
    draft_passes += o.draft_passes;
    drafted += o.drafted;
    examined += o.examined;
    accepted += o.accepted;
    ms += o.ms;
    target_ms += o.target_ms;
    draft_ms += o.draft_ms;
    return *this;
  }
};

// Decodes every prompt (token ids) with the engine's SpeculativeDecoder over ModelSources:
// plain when draft is null, else speculative with gamma. Seed of prompt i: seed + i.
DecodeTotals decode(const GPTModel& target, const GPTModel* draft,
                    const std::vector<std::vector<int>>& prompts, int gamma, float temperature,
                    uint64_t seed, size_t max_new_tokens);

}  // namespace specdec::bench
