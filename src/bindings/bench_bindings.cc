// Benchmark-only bindings (bench/run.mjs): they run the measurement code of src/bench/ inside
// wasm, so the kernel and forward-pass figures carry no JS call overhead. Linked only into the
// benchmark's own module (specdec_bench_wasm in cmake/wasm.cmake: the library's bindings plus
// these), never into the shipped web/lib/wasm/specdec-core.wasm.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "bench/bench.h"
#include "bindings/interop.h"
#include "bindings/threads.h"
#include "model/gpt_model.h"

namespace specdec::bindings {
namespace {

// A JS object of the fields {name, value}, in their order.
val js_object(std::initializer_list<std::pair<const char*, val>> fields) {
  val o = val::object();
  for (const auto& [name, value] : fields) o.set(name, value);
  return o;
}

struct BenchModel {
  GPTModel model;
};

BenchModel* bench_load_model(val bytes) {
  return guard([&] {
    std::vector<uint8_t> buffer(js_length(bytes));
    val(emscripten::typed_memory_view(buffer.size(), buffer.data())).call<void>("set", bytes);
    auto* m = new BenchModel{GPTModel::from_safetensors(buffer.data(), buffer.size())};
    m->model.set_thread_pool(module_pool());
    return m;
  });
}

val bench_matmul(double m, double k, double n, double copies, int repeats, double min_ms) {
  return guard([&] {
    return stats_js(
        bench::matmul_gflops(size_t(m), size_t(k), size_t(n), size_t(copies), repeats, min_ms));
  });
}

val bench_model_matmuls(const BenchModel& b, double m, int repeats, double min_ms) {
  return guard([&] {
    return stats_js(bench::model_matmul_gflops(b.model.config(), size_t(m), repeats, min_ms));
  });
}

// pasts: number[] of cached-token counts.
val bench_forward(const BenchModel& b, double k, val pasts_js, int repeats) {
  return guard([&] {
    std::vector<size_t> pasts;
    for (int p : int_vector_from_js(pasts_js)) pasts.push_back(size_t(p));
    return stats_js(bench::forward_ms(b.model, size_t(k), pasts, repeats));
  });
}

val bench_read_gbs(double bytes, int repeats, double min_ms, int streams) {
  return guard([&] {
    return stats_js(bench::read_gbs(size_t(bytes), repeats, min_ms, streams, module_pool()));
  });
}

// { gbs: Stats (the best), streams, byStreams: Stats[] for 1, 2, 4, 8, 16 streams }
val bench_best_read_gbs(double bytes, int repeats, double min_ms) {
  return guard([&] {
    const bench::ReadBandwidth r =
        bench::best_read_gbs(size_t(bytes), repeats, min_ms, module_pool());
    val by = val::array();
    for (const bench::Stats& s : r.by_streams) by.call<void>("push", stats_js(s));
    return js_object({{"gbs", stats_js(r.gbs)}, {"streams", val(r.streams)}, {"byStreams", by}});
  });
}

val bench_muladd_gflops(int repeats, double min_ms) {
  return guard([&] { return stats_js(bench::muladd_gflops(repeats, min_ms, module_pool())); });
}

double bench_weight_bytes(const BenchModel& b) {
  return double(bench::matmul_weight_bytes(b.model));
}

double bench_flops_per_token(const BenchModel& b) { return bench::matmul_flops_per_token(b.model); }

// ks, pasts: number[]. Returns [{ k, pass, matmul, attention, gelu }] (Stats of ms per pass).
val bench_pass_breakdown(const BenchModel& b, val ks_js, val pasts_js, int repeats) {
  return guard([&] {
    std::vector<size_t> ks, pasts;
    for (int k : int_vector_from_js(ks_js)) ks.push_back(size_t(k));
    for (int p : int_vector_from_js(pasts_js)) pasts.push_back(size_t(p));
    val rows = val::array();
    for (const bench::PassBreakdown& r : bench::pass_breakdown(b.model, ks, pasts, repeats)) {
      rows.call<void>("push", js_object({{"k", val(double(r.k))},
                                         {"pass", stats_js(r.pass)},
                                         {"matmul", stats_js(r.matmul)},
                                         {"matmulInPass", stats_js(r.matmul_in_pass)},
                                         {"attention", stats_js(r.attention)},
                                         {"gelu", stats_js(r.gelu)}}));
    }
    return rows;
  });
}

// Mean ms of a pass over each k of ks (number[]) after each context, every k in every repeat
// (round robin): { k: Stats }[] in the order of ks.
val bench_forward_ks(const BenchModel& b, val ks_js, val pasts_js, int repeats) {
  return guard([&] {
    std::vector<size_t> ks, pasts;
    for (int k : int_vector_from_js(ks_js)) ks.push_back(size_t(k));
    for (int p : int_vector_from_js(pasts_js)) pasts.push_back(size_t(p));
    size_t max_k = 1;
    for (size_t k : ks) max_k = std::max(max_k, k);
    bench::PassTimer timer(b.model, pasts, max_k);
    std::vector<std::vector<double>> samples(ks.size());
    for (int r = -1; r < repeats; ++r) {
      for (size_t i = 0; i < ks.size(); ++i) {
        const double ms = timer.once(ks[i]);
        if (r >= 0) samples[i].push_back(ms);
      }
    }
    val rows = val::array();
    for (size_t i = 0; i < ks.size(); ++i) {
      rows.call<void>("push", js_object({{"k", val(double(ks[i]))},
                                         {"ms", stats_js(bench::summarize(samples[i]))}}));
    }
    return rows;
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
    return js_object({{"generated", val(double(t.generated))},
                      {"targetPasses", val(double(t.target_passes))},
                      {"draftPasses", val(double(t.draft_passes))},
                      {"drafted", val(double(t.drafted))},
                      {"examined", val(double(t.examined))},
                      {"accepted", val(double(t.accepted))},
                      {"ms", val(t.ms)},
                      {"targetMs", val(t.target_ms)},
                      {"draftMs", val(t.draft_ms)}});
  });
}

std::vector<int> counts_from_js(const val& a) { return int_vector_from_js(a); }

kernels::ThreadPool& pool_or_fail() {
  kernels::ThreadPool* p = module_pool();
  if (!p) fail("threads: this module runs on one thread (load the threaded build)");
  return *p;
}

// bench::thread_physics for thread counts `threads` (number[]): one object per count with
// readGbs, peakGflops, forkJoinUs, regionsPerPass, draftStepMs (Stats) and passMs, matmulMs
// (Stats[] for k = 1..maxK), rooflineMs (number[]).
val bench_thread_physics(const BenchModel& target, const BenchModel& draft, val threads,
                         double max_k, int repeats, double min_ms) {
  return guard([&] {
    val rows = val::array();
    for (const bench::ThreadPhysics& t :
         bench::thread_physics(target.model, draft.model, pool_or_fail(), counts_from_js(threads),
                               size_t(max_k), repeats, min_ms)) {
      val pass = val::array(), mm = val::array(), roof = val::array();
      for (size_t k = 0; k < t.pass_ms.size(); ++k) {
        pass.call<void>("push", stats_js(t.pass_ms[k]));
        mm.call<void>("push", stats_js(t.matmul_ms[k]));
        roof.call<void>("push", t.roofline_ms[k]);
      }
      rows.call<void>("push", js_object({{"threads", val(t.threads)},
                                         {"readGbs", stats_js(t.read_gbs)},
                                         {"peakGflops", stats_js(t.peak_gflops)},
                                         {"peakIntGops", stats_js(t.peak_int_gops)},
                                         {"forkJoinUs", stats_js(t.fork_join_us)},
                                         {"regionsPerPass", val(t.regions_per_pass)},
                                         {"draftStepMs", stats_js(t.draft_step_ms)},
                                         {"passMs", pass},
                                         {"matmulMs", mm},
                                         {"rooflineMs", roof}}));
    }
    return rows;
  });
}

// bench::decode_by_threads: { threads, plainMsPerToken, specMsPerToken: Stats[] (gamma 1..),
// alpha: number[], bestGamma, draftStepMs }[].
val bench_decode_by_threads(const BenchModel& target, const BenchModel& draft, val threads,
                            int gamma_max, double temperature, double max_new_tokens, int repeats) {
  return guard([&] {
    val rows = val::array();
    for (const bench::ThreadDecoding& d : bench::decode_by_threads(
             target.model, draft.model, pool_or_fail(), counts_from_js(threads), gamma_max,
             float(temperature), size_t(max_new_tokens), repeats)) {
      val spec = val::array(), alpha = val::array();
      for (size_t g = 0; g < d.spec_ms_per_token.size(); ++g) {
        spec.call<void>("push", stats_js(d.spec_ms_per_token[g]));
        alpha.call<void>("push", d.alpha[g]);
      }
      rows.call<void>("push", js_object({{"threads", val(d.threads)},
                                         {"plainMsPerToken", stats_js(d.plain_ms_per_token)},
                                         {"specMsPerToken", spec},
                                         {"alpha", alpha},
                                         {"bestGamma", val(d.best_gamma)},
                                         {"draftStepMs", stats_js(d.draft_step_ms)}}));
    }
    return rows;
  });
}

val bench_fork_join_us(int repeats) {
  return guard([&] { return stats_js(bench::fork_join_us(pool_or_fail(), repeats)); });
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
  function("benchForwardKs", &bench_forward_ks);
  function("benchReadGbs", &bench_read_gbs);
  function("benchBestReadGbs", &bench_best_read_gbs);
  function("benchMuladdGflops", &bench_muladd_gflops);
  function("benchWeightBytes", &bench_weight_bytes);
  function("benchFlopsPerToken", &bench_flops_per_token);
  function("benchPassBreakdown", &bench_pass_breakdown);
  function("benchDecode", &bench_decode, allow_raw_pointers());
  function("benchPrompts", &bench_prompts);
  function("benchThreadPhysics", &bench_thread_physics);
  function("benchDecodeByThreads", &bench_decode_by_threads);
  function("benchForkJoinUs", &bench_fork_join_us);
}

}  // namespace specdec::bindings
