// Benchmark-only bindings (bench/run.mjs): they run the measurement code of src/bench/ inside
// wasm, so the kernel and forward-pass figures carry no JS call overhead. Not part of the
// package's JS API (web/lib/core.js does not expose them); the benchmark reaches them on the raw
// module.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "bindings/interop.h"
#include "model/gpt_model.h"

namespace specdec::bindings {
namespace {

struct BenchModel {
  GPTModel model;
};

val stats_to_js(const bench::Stats& s) {
  val o = val::object();
  o.set("median", s.median);
  o.set("min", s.min);
  o.set("max", s.max);
  o.set("runs", s.runs);
  return o;
}

BenchModel* bench_load_model(val bytes) {
  return guard([&] {
    std::vector<uint8_t> buffer(js_length(bytes));
    val(emscripten::typed_memory_view(buffer.size(), buffer.data())).call<void>("set", bytes);
    return new BenchModel{GPTModel::from_safetensors(buffer.data(), buffer.size())};
  });
}

val bench_matmul(double m, double k, double n, double copies, int repeats, double min_ms) {
  return guard([&] {
    return stats_to_js(
        bench::matmul_gflops(size_t(m), size_t(k), size_t(n), size_t(copies), repeats, min_ms));
  });
}

val bench_model_matmuls(const BenchModel& b, double m, int repeats, double min_ms) {
  return guard([&] {
    return stats_to_js(bench::model_matmul_gflops(b.model.config(), size_t(m), repeats, min_ms));
  });
}

// pasts: number[] of cached-token counts.
val bench_forward(const BenchModel& b, double k, val pasts_js, int repeats) {
  return guard([&] {
    std::vector<size_t> pasts;
    for (int p : int_vector_from_js(pasts_js)) pasts.push_back(size_t(p));
    return stats_to_js(bench::forward_ms(b.model, size_t(k), pasts, repeats));
  });
}

val bench_read_gbs(double bytes, int repeats, double min_ms) {
  return guard([&] { return stats_to_js(bench::read_gbs(size_t(bytes), repeats, min_ms)); });
}

double bench_weight_bytes(const BenchModel& b) {
  return double(bench::matmul_weight_bytes(b.model));
}

val bench_pass_breakdown(const BenchModel& b, double k, val pasts_js, int repeats) {
  return guard([&] {
    std::vector<size_t> pasts;
    for (int p : int_vector_from_js(pasts_js)) pasts.push_back(size_t(p));
    const bench::PassBreakdown r = bench::pass_breakdown(b.model, size_t(k), pasts, repeats);
    val o = val::object();
    o.set("pass", stats_to_js(r.pass));
    o.set("matmul", stats_to_js(r.matmul));
    o.set("attention", stats_to_js(r.attention));
    o.set("gelu", stats_to_js(r.gelu));
    return o;
  });
}

val bench_decode_contexts(const BenchModel& b) {
  std::vector<int> out;
  for (size_t p : bench::decode_contexts(b.model.config().block_size)) out.push_back(int(p));
  return int32_array(out);
}

// The engine's decode loop with no JS in it (for comparison with the JS API's figures).
val bench_decode(const BenchModel& target, BenchModel* draft, val prompts_js, int gamma,
                 double temperature, double seed, double max_new_tokens) {
  return guard([&] {
    std::vector<std::vector<int>> prompts;
    for (size_t i = 0; i < js_length(prompts_js); ++i) {
      prompts.push_back(int_vector_from_js(prompts_js[i]));
    }
    const bench::DecodeTotals t =
        bench::decode(target.model, draft ? &draft->model : nullptr, prompts, gamma,
                      float(temperature), uint64_t(seed), size_t(max_new_tokens));
    val o = val::object();
    o.set("generated", double(t.generated));
    o.set("targetPasses", double(t.target_passes));
    o.set("draftPasses", double(t.draft_passes));
    o.set("drafted", double(t.drafted));
    o.set("examined", double(t.examined));
    o.set("accepted", double(t.accepted));
    o.set("ms", t.ms);
    o.set("targetMs", t.target_ms);
    o.set("draftMs", t.draft_ms);
    return o;
  });
}

std::string kernel_self_check() {
  return guard([] { return bench::kernel_self_check(); });
}

val bench_prompts() {
  val out = val::array();
  for (const std::string& p : bench::prompts()) out.call<void>("push", val(p));
  return out;
}

}  // namespace

EMSCRIPTEN_BINDINGS(specdec_bench) {
  using namespace emscripten;
  class_<BenchModel>("BenchModel").class_function("load", &bench_load_model, allow_raw_pointers());
  function("benchMatmul", &bench_matmul);
  function("benchModelMatmuls", &bench_model_matmuls);
  function("benchForward", &bench_forward);
  function("benchDecodeContexts", &bench_decode_contexts);
  function("benchReadGbs", &bench_read_gbs);
  function("benchWeightBytes", &bench_weight_bytes);
  function("benchPassBreakdown", &bench_pass_breakdown);
  function("benchDecode", &bench_decode, allow_raw_pointers());
  function("benchPrompts", &bench_prompts);
  function("kernelSelfCheck", &kernel_self_check);
}

}  // namespace specdec::bindings
