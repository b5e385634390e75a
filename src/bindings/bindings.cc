// Embind registrations: the few classes and functions web/lib/core.js needs. Kept thin:
// arguments are numbers, flat typed arrays and JS functions; validation of JS-side shapes and
// names happens in core.js, validation of values in the C++ core. Every body runs in guard().
#include <emscripten/bind.h>
#include <emscripten/val.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "base/errors.h"
#include "bindings/handles.h"
#include "bindings/interop.h"
#include "bindings/model_bindings.h"
#include "model/gpt_model.h"
#include "specdec/analytics.h"
#include "specdec/distribution.h"
#include "specdec/limits.h"
#include "specdec/tree.h"
#include "specdec/verify.h"

namespace specdec::bindings {
namespace {

using emscripten::allow_raw_pointers;

// ----------------------------------------------------------------- distributions
double acceptance_rate_js(val p, val q) {
  return guard([&] { return acceptance_rate(distribution_from_js(p), distribution_from_js(q)); });
}

double total_variation_js(val p, val q) {
  return guard([&] { return total_variation(distribution_from_js(p), distribution_from_js(q)); });
}

val residual_distribution_js(val p, val q) {
  return guard([&] {
    Distribution r = residual_distribution(distribution_from_js(p), distribution_from_js(q));
    return float32_array(r.data(), r.size());
  });
}

// ----------------------------------------------------------------- verification
// target_flat: (gamma + 1) * vocab, draft_flat: gamma * vocab (ignored when greedy).
val speculative_verify_js(val target_flat, val draft_flat, val draft_tokens, size_t vocab,
                          RngHandle* rng, bool greedy) {
  return guard([&] {
    const std::vector<int> tokens = int_vector_from_js(draft_tokens);
    const size_t gamma = tokens.size();
    ProbMatrix target = matrix_from_js(target_flat, gamma + 1, vocab);
    if (greedy) return verify_result_to_js(greedy_verify(target, tokens));
    if (rng == nullptr) fail("rng: required unless greedy");
    ProbMatrix draft = matrix_from_js(draft_flat, gamma, vocab);
    return verify_result_to_js(speculative_verify(target, draft, tokens, rng->rng));
  });
}

// ----------------------------------------------------------------- analytics
double expected_accepted_tokens_js(double alpha, int gamma) {
  return guard([&] { return expected_accepted_tokens(alpha, gamma); });
}

double speculative_speedup_js(double alpha, int gamma, double c, double verify_cost) {
  return guard([&] { return speculative_speedup_measured(alpha, gamma, c, verify_cost); });
}

int optimal_gamma_js(double alpha, double c, int gamma_max) {
  return guard([&] { return optimal_gamma(alpha, c, gamma_max); });
}

// -> { alpha: Float64Array, gamma: Int32Array, tokensPerPass: Float64Array,
//      speedup: Float64Array } (one entry per point, alpha-major)
val demonstrate_speculative_js(val alphas_js, int gamma_max, double c) {
  return guard([&] {
    std::vector<double> alphas(js_length(alphas_js));
    for (size_t i = 0; i < alphas.size(); ++i) alphas[i] = alphas_js[i].as<double>();
    const std::vector<DemoPoint> points = demonstrate_speculative(alphas, gamma_max, c);
    const size_t n = points.size();
    std::vector<double> alpha(n), tokens_per_pass(n), speedup(n);
    std::vector<int> gamma(n);
    for (size_t i = 0; i < n; ++i) {
      alpha[i] = points[i].alpha;
      gamma[i] = points[i].gamma;
      tokens_per_pass[i] = points[i].tokens_per_pass;
      speedup[i] = points[i].speedup;
    }
    val o = val::object();
    o.set("alpha", float64_array(alpha.data(), n));
    o.set("gamma", int32_array(gamma));
    o.set("tokensPerPass", float64_array(tokens_per_pass.data(), n));
    o.set("speedup", float64_array(speedup.data(), n));
    return o;
  });
}

// ----------------------------------------------------------------- RNG
RngHandle* create_rng(double seed_high, double seed_low) {
  return guard([&] { return new RngHandle(seed_from_halves(seed_high, seed_low)); });
}
double rng_uniform(RngHandle& h) { return h.rng.uniform(); }
double rng_next_u32(RngHandle& h) { return h.rng.next_u32(); }

// ----------------------------------------------------------------- decoder
// A JS step function (tokens: Int32Array) -> Float32Array; core.js wraps the user's function
// so that it always returns a Float32Array (or throws a JS error, which unwinds through here).
SourceSlot step_source(val fn) {
  StepFunction step = [fn](const std::vector<int>& tokens) {
    val probs = fn(int32_array(tokens));
    return distribution_from_js(probs);
  };
  return {nullptr, std::make_unique<StepFunctionSource>(std::move(step))};
}

// A source answered from JS (a score callback, maybe async): the decoder stops at its queries.
// trees: the callback scores trees too (a scoreTree method; tree queries, see handles.cc).
SourceSlot external_source(const std::string& name, double max_context, bool trees) {
  return {nullptr, std::make_unique<ExternalSource>(name, static_cast<size_t>(max_context), trees)};
}
void decoder_set_target_external(DecoderHandle& d, std::string name, double max_context,
                                 bool trees) {
  guard([&] { d.set_target(external_source(name, max_context, trees)); });
}
void decoder_set_draft_external(DecoderHandle& d, std::string name, double max_context,
                                bool trees) {
  guard([&] { d.set_draft(external_source(name, max_context, trees)); });
}

void decoder_set_target_step(DecoderHandle& d, val fn) {
  guard([&] { d.set_target(step_source(fn)); });
}
void decoder_set_draft_step(DecoderHandle& d, val fn) {
  guard([&] { d.set_draft(step_source(fn)); });
}

// A token budget from a JS number (an integer in 0..2^53 - 1, checked by the JS layer). size_t is
// 32 bits in WebAssembly: a budget past 2^32 - 1 is held as 2^32 - 1 (clamped here, never
// wrapped), a length no sequence reaches there (4 bytes an id in a 4 GB memory).
size_t token_budget(double x) {
  constexpr size_t kMost = std::numeric_limits<size_t>::max();
  return x >= static_cast<double>(kMost) ? kMost : static_cast<size_t>(x);
}

// options: { gamma (a number, 'auto', 'heuristic' or undefined), gammaMax, costC, costV (number[]
//            or null), lookup, minNgram, maxNgram (undefined: the defaults), tree (number[] or
//            null), treeReplacement, temperature, topK, topP, plain, maxNewTokens, seedHigh,
//            seedLow, keepDistributions }, typed by create-decoder.js; values and which options
//            combine are checked here and by check_decoder_options, naming the JS options.
DecoderOptions decoder_options(const val& options) {
  DecoderOptions o;
  const val gamma = options["gamma"];
  if (gamma.isString()) {
    o.gamma_mode = gamma.as<std::string>() == "auto" ? GammaMode::kAuto : GammaMode::kHeuristic;
  } else if (!gamma.isUndefined()) {
    o.gamma = gamma.as<int>();
  }
  if (!options["gammaMax"].isUndefined()) o.gamma_max = options["gammaMax"].as<int>();
  if (!options["costV"].isNull()) {
    o.has_cost_model = true;
    o.cost_model.c = options["costC"].as<double>();
    const val v = options["costV"];
    for (size_t i = 0; i < js_length(v); ++i) o.cost_model.v.push_back(v[i].as<double>());
  }
  o.lookup = options["lookup"].as<bool>();
  if (!options["minNgram"].isUndefined())
    o.lookup_options.min_ngram = options["minNgram"].as<int>();
  o.lookup_options.max_ngram = options["maxNgram"].isUndefined()
                                   ? std::max(kDefaultMaxNgram, o.lookup_options.min_ngram)
                                   : options["maxNgram"].as<int>();
  if (!options["tree"].isNull()) {
    o.tree_branches = int_vector_from_js(options["tree"]);
    check_tree_branches(o.tree_branches);  // an empty list would mean no tree
    const int depth = static_cast<int>(o.tree_branches.size());
    if (gamma.isNumber() && o.gamma != depth) {
      fail("gamma: ", o.gamma, " differs from the tree's depth ", depth,
           " (tree.branches.length); leave gamma out");
    }
  }
  o.tree_without_replacement = !options["treeReplacement"].as<bool>();
  o.sampling.temperature = options["temperature"].as<float>();
  o.sampling.top_k = options["topK"].as<int>();
  o.sampling.top_p = options["topP"].as<float>();
  o.plain = options["plain"].as<bool>();
  o.max_new_tokens = token_budget(options["maxNewTokens"].as<double>());
  if (!options["stopTokens"].isUndefined())
    o.stop_tokens = int_vector_from_js(options["stopTokens"]);
  o.fit_draft_rows = !options["fitDraftRows"].isUndefined() && options["fitDraftRows"].as<bool>();
  return o;
}

void decoder_start(DecoderHandle& d, val prompt, val options) {
  guard([&] {
    const DecoderOptions o = decoder_options(options);
    const uint64_t seed =
        seed_from_halves(options["seedHigh"].as<double>(), options["seedLow"].as<double>());
    d.start(int_vector_from_js(prompt), o, seed, options["keepDistributions"].as<bool>());
  });
}

// The decoder's defaults and limits (specdec/limits.h), as web/lib/base/limits.js writes them.
val limits_js() {
  val o = val::object();
  o.set("gamma", kDefaultGamma);
  o.set("gammaMax", kDefaultGammaMax);
  o.set("maxGamma", kMaxGamma);
  o.set("maxTreeBranches", kMaxTreeBranches);
  o.set("maxTreeNodes", kMaxTreeNodes);
  o.set("minNgram", kDefaultMinNgram);
  o.set("maxNgram", kDefaultMaxNgram);
  o.set("maxNgramLength", kMaxNgram);
  o.set("maxStopTokens", kMaxStopTokens);
  o.set("maxCheckpointWeightBytes", static_cast<double>(kMaxFamilyParamBytes));
  return o;
}

// The head of a record on the wire by name (kRecordWire, bindings/handles.h): { name: index,
// ..., length }, as web/lib/decoder/records.js reads it.
val record_wire_js() {
  val o = val::object();
  for (size_t i = 0; i < kRecordWire.size(); ++i) {
    o.set(std::string(kRecordWire[i]), static_cast<double>(i));
  }
  o.set("length", static_cast<double>(kRecordWire.size()));
  return o;
}

void decoder_set_budget(DecoderHandle& d, double total) {
  guard([&] { d.set_budget(token_budget(total)); });
}
val decoder_step(DecoderHandle& d) {
  return guard([&] { return d.step(); });
}
val decoder_advance(DecoderHandle& d) {
  return guard([&] { return d.advance(); });
}
val decoder_inbox(DecoderHandle& d, double n) {
  return guard([&] { return d.inbox(static_cast<size_t>(n)); });
}
void decoder_supply(DecoderHandle& d, double n, bool logits, val hidden) {
  guard([&] { d.supply(static_cast<size_t>(n), logits, hidden); });
}
val decoder_finish(DecoderHandle& d) {
  return guard([&] { return d.finish(); });
}
val decoder_extras(const DecoderHandle& d) { return d.extras(); }
bool decoder_in_iteration(const DecoderHandle& d) { return d.in_iteration(); }
bool decoder_done(const DecoderHandle& d) { return d.done(); }
void decoder_note_overhead(DecoderHandle& d, double ms) { d.note_overhead(ms); }
val decoder_tokens(const DecoderHandle& d) {
  return guard([&] { return d.tokens(); });
}
double decoder_prompt_length(const DecoderHandle& d) { return d.prompt_length(); }
val decoder_stats(const DecoderHandle& d) {
  return guard([&] { return d.stats(); });
}
val decoder_estimates(const DecoderHandle& d) {
  return guard([&] { return d.estimates(); });
}

// ----------------------------------------------------------------- diagnostics
// { heapBytes: size of wasm memory, inUseBytes: bytes malloc'ed and not freed }
val memory_stats() {
  struct mallinfo mi = mallinfo();
  val o = val::object();
  o.set("heapBytes", static_cast<double>(__builtin_wasm_memory_size(0)) * 65536.0);
  // mallinfo's fields are ints, which dlmalloc fills from a 32-bit size_t: past 2 GiB the int
  // is negative, and its bits as unsigned are the bytes (wasm32 memory is under 4 GiB).
  o.set("inUseBytes", static_cast<double>(static_cast<uint32_t>(mi.uordblks)));
  return o;
}

}  // namespace

EMSCRIPTEN_BINDINGS(specdec) {
  using namespace emscripten;

  function("acceptanceRate", &acceptance_rate_js);
  function("totalVariation", &total_variation_js);
  function("residualDistribution", &residual_distribution_js);
  function("speculativeVerify", &speculative_verify_js, allow_raw_pointers());
  function("expectedAcceptedTokens", &expected_accepted_tokens_js);
  function("speculativeSpeedup", &speculative_speedup_js);
  function("optimalGamma", &optimal_gamma_js);
  function("demonstrateSpeculative", &demonstrate_speculative_js);
  function("memoryStats", &memory_stats);
  function("limits", &limits_js);
  function("recordWire", &record_wire_js);

  class_<RngHandle>("Rng")
      .class_function("create", &create_rng, allow_raw_pointers())
      .function("uniform", &rng_uniform)
      .function("nextU32", &rng_next_u32);

  class_<DecoderHandle>("Decoder")
      .constructor<>()
      .function("setTargetStep", &decoder_set_target_step)
      .function("setDraftStep", &decoder_set_draft_step)
      .function("start", &decoder_start)
      .function("setBudget", &decoder_set_budget)
      .function("setTargetExternal", &decoder_set_target_external)
      .function("setDraftExternal", &decoder_set_draft_external)
      .function("step", &decoder_step)
      .function("advance", &decoder_advance)
      .function("inbox", &decoder_inbox)
      .function("supply", &decoder_supply)
      .function("finish", &decoder_finish)
      .function("extras", &decoder_extras)
      .function("inIteration", &decoder_in_iteration)
      .function("done", &decoder_done)
      .function("noteOverhead", &decoder_note_overhead)
      .function("tokens", &decoder_tokens)
      .function("promptLength", &decoder_prompt_length)
      .function("stats", &decoder_stats)
      .function("estimates", &decoder_estimates);

  register_model_bindings();
}

}  // namespace specdec::bindings
