// specdec bench: the native benchmark tables — kernel GFLOP/s by shape, ms/token of each model,
// the verify cost v(k), the roofline of a pass over k = 1..8 tokens for each target given (one
// core's read bandwidth and mul+add peak, measured in the same run) with where the pass goes, and
// speculative vs plain decoding by gamma and temperature with the predicted speedup
// E(alpha, gamma) / (gamma c + v(gamma + 1)) beside the measured one. Every figure is a median of
// --repeats runs with [min, max]; ratios come from the same run. The WASM figures come from
// bench/run.mjs over the same measurement code (src/bench/).
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "bench/bench.h"
#include "cli/bench_report.h"
#include "cli/cli.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "model/gpt_model.h"
#include "model/heads.h"
#include "model/tokenizer.h"
#include "specdec/analytics.h"

namespace specdec::cli {
namespace {

using bench::Stats;

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<std::vector<int>> prompt_tokens() {
  std::vector<std::vector<int>> out;
  for (const std::string& p : bench::prompts()) out.push_back(encode(p));
  return out;
}

}  // namespace

// ---------------------------------------------------------------- kernels
void bench_kernels(const BenchRun& run) {
  const int C = run.target.config().n_embd;
  struct Shape {
    std::string name;
    size_t k, n, copies;
  };
  const std::vector<Shape> shapes = {
      {"K=" + std::to_string(C) + " N=" + std::to_string(3 * C) + " (c_attn)", size_t(C),
       size_t(3 * C), 1},
      {"K=" + std::to_string(C) + " N=" + std::to_string(4 * C) + " (c_fc)", size_t(C),
       size_t(4 * C), 1},
      {"K=" + std::to_string(4 * C) + " N=" + std::to_string(C) + " (mlp c_proj)", size_t(4 * C),
       size_t(C), 1},
      {"K=" + std::to_string(C) + " N=" + std::to_string(C) + " (attn c_proj)", size_t(C),
       size_t(C), 1},
      {"K=768 N=768", 768, 768, 1},
  };
  const std::vector<size_t> ms = {1, 2, 3, 4, 5, 6, 8};
  run.say("Kernel GFLOP/s (matmul, median [min-max] of repeats)\n");
  if (!run.json) {
    std::printf("%-34s", "shape");
    for (size_t m : ms) std::printf(" | %-19s", ("M=" + std::to_string(m)).c_str());
    std::printf("\n");
  }
  std::vector<std::string> rows;
  auto row = [&](const std::string& name, auto measure) {
    if (!run.json) std::printf("%-34s", name.c_str());
    std::vector<std::string> cells;
    for (size_t m : ms) {
      const Stats s = measure(m);
      cells.push_back("{\"m\":" + std::to_string(m) + ",\"gflops\":" + json_stats(s) + "}");
      if (!run.json) {
        std::printf(" | %-19s", cell(s, "%.1f").c_str());
        std::fflush(stdout);
      }
    }
    if (!run.json) std::printf("\n");
    rows.push_back("{\"shape\":" + json_escape(name) + ",\"by_m\":" + join(cells) + "}");
  };
  for (const Shape& s : shapes) {
    row(s.name, [&](size_t m) {
      return bench::matmul_gflops(m, s.k, s.n, s.copies, run.repeats, run.min_ms);
    });
  }
  for (const GPTModel* model : {&run.target, &run.draft}) {
    const GPTConfig& c = model->config();
    const double mb =
        (c.n_layer * 12.0 * c.n_embd * c.n_embd + double(c.vocab_size) * c.n_embd) * 4 / 1e6;
    const std::string name = std::string(model == &run.target ? "target" : "draft") +
                             " all layers (" + fmt("%.1f", mb) + " MB)";
    row(name, [&](size_t m) { return bench::model_matmul_gflops(c, m, run.repeats, run.min_ms); });
  }
  run.out.key("kernels", join(rows));
  run.say("\n");
}

// ---------------------------------------------------------------- ms/token
// Also the target's mean pass inside the decoder (its own timing of the model calls): the
// verify section's k = 1 pass must agree with it.
double bench_models(const BenchRun& run) {
  double decode_pass_ms = 0.0;
  run.say(
      "Plain greedy decode, 255 tokens after a 1-token prompt (ms/token; target pass inside the "
      "decoder)\n");
  std::vector<std::string> rows;
  for (const GPTModel* model : {&run.target, &run.draft}) {
    std::vector<double> samples, pass;
    bench::decode(*model, nullptr, {encode("\n")}, 1, 0.0f, 0, 255);  // warm-up
    for (int r = 0; r < run.repeats; ++r) {
      const bench::DecodeTotals t = bench::decode(*model, nullptr, {encode("\n")}, 1, 0.0f, 0, 255);
      samples.push_back(t.ms_per_token());
      pass.push_back(t.target_ms / t.target_passes);
    }
    const Stats s = bench::summarize(samples), p = bench::summarize(pass);
    const char* name = model == &run.target ? "target" : "draft";
    if (model == &run.target) decode_pass_ms = p.median;
    if (!run.json) {
      std::printf("  %-7s %s ms/token, pass %s ms\n", name, cell(s, "%.3f").c_str(),
                  cell(p, "%.3f").c_str());
    }
    rows.push_back("{\"model\":" + json_escape(name) + ",\"ms_per_token\":" + json_stats(s) +
                   ",\"pass_ms\":" + json_stats(p) + "}");
  }
  run.out.key("decode", join(rows));
  run.say("\n");
  return decode_pass_ms;
}

// ---------------------------------------------------------------- v(k), c
void bench_verify(const BenchRun& run, double decode_pass_ms) {
  const std::vector<size_t> pasts = bench::decode_contexts(run.target.config().block_size);
  run.say(
      "Verify cost: one pass over k tokens vs one step (mean over contexts 8..~%s; every k in "
      "every repeat)\n",
      std::to_string(pasts.back()).c_str());
  const int max_k = std::max(9, run.gamma_max + 1);
  bench::PassTimer timer(run.target, pasts, max_k);
  const Stats d1 = bench::forward_ms(run.draft, 1, pasts, run.repeats);
  std::vector<std::vector<double>> samples(max_k + 1);
  for (int r = -1; r < run.repeats; ++r) {  // r = -1: warm-up
    for (int k = 1; k <= max_k; ++k) {
      const double ms = timer.once(k);
      if (r >= 0) samples[k].push_back(ms);
    }
  }
  const Stats t1 = bench::summarize(samples[1]);
  const double c = d1.median / t1.median;  // D(1) / V(1) from the forward timings
  std::vector<std::string> rows;
  for (int k = 1; k <= max_k; ++k) {
    const Stats tk = bench::summarize(samples[k]);
    if (!run.json) {
      std::printf("  k=%d  %s ms   v(k) = %.2f\n", k, cell(tk, "%.3f").c_str(),
                  tk.median / t1.median);
    }
    rows.push_back("{\"k\":" + std::to_string(k) + ",\"ms\":" + json_stats(tk) +
                   ",\"v\":" + fmt("%.4f", tk.median / t1.median) + "}");
  }
  if (!run.json) {
    std::printf("  draft step %s ms, target step %s ms: c = %.3f\n", cell(d1, "%.3f").c_str(),
                cell(t1, "%.3f").c_str(), c);
    if (decode_pass_ms > 0.0) {
      std::printf(
          "  consistency: k = 1 pass %.3f ms vs plain decoding's target pass %.3f ms "
          "(%.2fx)\n",
          t1.median, decode_pass_ms, t1.median / decode_pass_ms);
    }
    std::printf("\n");
  }
  run.out.key("verify", join(rows));
  run.out.key("draft_step_ms", json_stats(d1));
  run.out.key("target_step_ms", json_stats(t1));
  run.out.key("c", fmt("%.5f", c));
}

// ---------------------------------------------------------------- spec vs plain
// Per repeat, prompt by prompt: plain, then every gamma (so that plain and speculative runs see
// the same machine state); ratios within the repeat. The cost model comes from the same runs,
// whose decoder times its draft and target calls:
//   S = plain ms/token; V(1) = plain target ms/pass; D = draft ms/pass; V(g+1) = target ms/pass
//   of the speculative run; c = D / S; v = (V(g+1) + S - V(1)) / S — a speculative iteration
//   also pays the per-iteration work outside the model passes that a plain step pays (S - V(1):
//   sampling, verification).
// Every repeat's totals: plain and each gamma, prompt by prompt; tokens/s and the ratio.
struct SpecRuns {
  std::vector<double> plain_tps;
  std::vector<bench::DecodeTotals> plain_runs;
  std::vector<std::vector<double>> spec_tps, ratio;  // [gamma]
  std::vector<std::vector<bench::DecodeTotals>> spec_runs;
};

SpecRuns spec_runs_of(const BenchRun& run, const std::vector<std::vector<int>>& prompts,
                      float temperature) {
  SpecRuns out;
  const size_t n = static_cast<size_t>(run.gamma_max) + 1;
  out.spec_tps.resize(n);
  out.ratio.resize(n);
  out.spec_runs.resize(n);
  for (int r = 0; r < run.repeats; ++r) {
    bench::DecodeTotals p;
    std::vector<bench::DecodeTotals> sp(n);
    for (size_t i = 0; i < prompts.size(); ++i) {
      p += bench::decode(run.target, nullptr, {prompts[i]}, 1, temperature, 1000 + i,
                         run.max_tokens);
      for (int g = 1; g <= run.gamma_max; ++g) {
        sp[g] += bench::decode(run.target, &run.draft, {prompts[i]}, g, temperature, 1000 + i,
                               run.max_tokens);
      }
    }
    out.plain_tps.push_back(1000.0 / p.ms_per_token());
    out.plain_runs.push_back(p);
    for (int g = 1; g <= run.gamma_max; ++g) {
      out.spec_tps[g].push_back(1000.0 / sp[g].ms_per_token());
      out.ratio[g].push_back(out.spec_tps[g].back() / out.plain_tps.back());
      out.spec_runs[g].push_back(sp[g]);
    }
  }
  return out;
}

void bench_spec(const BenchRun& run) {
  const std::vector<std::vector<int>> prompts = prompt_tokens();
  auto add = [](bench::DecodeTotals& a, const bench::DecodeTotals& b) { a += b; };
  auto median_of = [](const std::vector<bench::DecodeTotals>& runs, auto f) {
    std::vector<double> xs;
    for (const bench::DecodeTotals& t : runs) xs.push_back(f(t));
    return bench::summarize(xs).median;
  };
  std::vector<std::string> rows;
  for (float temperature : {0.0f, 0.8f}) {
    // Warm-up: one plain and one speculative decode.
    bench::decode(run.target, nullptr, {prompts[0]}, 1, temperature, 1000, run.max_tokens);
    bench::decode(run.target, &run.draft, {prompts[0]}, 2, temperature, 1000, run.max_tokens);
    const SpecRuns runs = spec_runs_of(run, prompts, temperature);
    const std::vector<double>& plain_tps = runs.plain_tps;
    const std::vector<bench::DecodeTotals>& plain_runs = runs.plain_runs;
    const std::vector<std::vector<double>>& spec_tps = runs.spec_tps;
    const std::vector<std::vector<double>>& ratio = runs.ratio;
    const std::vector<std::vector<bench::DecodeTotals>>& spec_runs = runs.spec_runs;
    const Stats plain = bench::summarize(plain_tps);
    const double step_ms = median_of(plain_runs, [](auto& t) { return t.ms_per_token(); });
    const double v1_ms =
        median_of(plain_runs, [](auto& t) { return t.target_ms / t.target_passes; });
    if (!run.json) {
      std::printf("Speculative vs plain, T = %.1f, %zu prompts x %zu tokens; plain %s tokens/s\n",
                  temperature, prompts.size(), run.max_tokens, cell(plain, "%.0f").c_str());
      std::printf("  %-5s | %-20s | %-22s | %-6s | %-9s | %-6s | %-6s | %-6s | %-9s | %-9s | %s\n",
                  "gamma", "spec tokens/s", "measured speedup", "alpha", "tok/pass", "E", "c", "v",
                  "predicted", "pred/meas", "lesson E/(gc+1)");
    }
    int best = 1;
    for (int g = 1; g <= run.gamma_max; ++g) {
      bench::DecodeTotals all;
      for (const bench::DecodeTotals& t : spec_runs[g]) add(all, t);
      const Stats st = bench::summarize(spec_tps[g]);
      const Stats m = bench::summarize(ratio[g]);
      const double alpha = all.alpha();
      const double e = expected_accepted_tokens(alpha, g);
      const double d_ms =
          median_of(spec_runs[g], [](auto& t) { return t.draft_ms / t.draft_passes; });
      const double vg_ms =
          median_of(spec_runs[g], [](auto& t) { return t.target_ms / t.target_passes; });
      const double c_step = d_ms / step_ms;
      const double v_step = (vg_ms + step_ms - v1_ms) / step_ms;
      const double pred = speculative_speedup_measured(alpha, g, c_step, v_step);
      const double lesson = speculative_speedup(alpha, g, d_ms / v1_ms);
      if (m.median > bench::summarize(ratio[best]).median) best = g;
      if (!run.json) {
        std::printf(
            "  %-5d | %-20s | %-22s | %.3f  | %-9.2f | %-6.2f | %-6.3f | %-6.2f | %-9.3f | "
            "%+6.1f%%   "
            "| %.2f\n",
            g, cell(st, "%.0f").c_str(), cell(m, "%.3f").c_str(), alpha, all.tokens_per_pass(), e,
            c_step, v_step, pred, 100.0 * (pred / m.median - 1.0), lesson);
      }
      rows.push_back("{\"temperature\":" + fmt("%.2f", temperature) + ",\"gamma\":" +
                     std::to_string(g) + ",\"plain_tokens_per_s\":" + json_stats(plain) +
                     ",\"spec_tokens_per_s\":" + json_stats(st) + ",\"speedup\":" + json_stats(m) +
                     ",\"alpha\":" + fmt("%.5f", alpha) +
                     ",\"tokens_per_pass\":" + fmt("%.4f", all.tokens_per_pass()) +
                     ",\"expected_tokens_per_pass\":" + fmt("%.4f", e) +
                     ",\"step_ms\":" + fmt("%.5f", step_ms) + ",\"c_step\":" + fmt("%.5f", c_step) +
                     ",\"v_step\":" + fmt("%.4f", v_step) + ",\"predicted\":" + fmt("%.4f", pred) +
                     ",\"lesson\":" + fmt("%.4f", lesson) + "}");
    }
    if (!run.json) {
      std::printf(
          "  cost model: S = %.3f ms (plain ms/token), V(1) = %.3f ms (plain target pass)\n",
          step_ms, v1_ms);
      std::printf("  best gamma at T = %.1f: %d (measured %.3fx)\n\n", temperature, best,
                  bench::summarize(ratio[best]).median);
    }
  }
  run.out.key("spec", join(rows));
}

// ---------------------------------------------------------------- the command
namespace {

// --thread-counts a,b,c: each a count in 1..n_threads; empty: 1..n_threads.
std::vector<int> parse_thread_counts(const std::string& list, long long n_threads) {
  std::vector<int> thread_counts;
  for (const std::string& t : split_list(list)) {
    thread_counts.push_back(
        static_cast<int>(integer_in("thread-counts", t, 1, n_threads,
                                    "counts in 1.." + std::to_string(n_threads) + " (--threads)")));
  }
  if (thread_counts.empty()) {
    for (int t = 1; t <= n_threads; ++t) thread_counts.push_back(t);
  }
  return thread_counts;
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"target", "draft", "heads", "repeats", "max-tokens", "gamma-max", "only",
                   "threads", "thread-counts"},
                  {"json", "quick"});
  // --target A,B: every section uses A; the roofline section ("breakdown") runs for each.
  const std::vector<std::string> target_paths =
      split_list(args.str("target", "models/target.safetensors"));
  if (target_paths.empty()) fail("--target: no file given");
  const std::string target_path = target_paths[0];
  const std::string draft_path = args.str("draft", "models/draft.safetensors");
  const bool quick = args.has("quick");
  const int repeats = static_cast<int>(args.integer("repeats", quick ? 3 : 7, 1, 1000));
  const size_t max_tokens = static_cast<size_t>(args.integer("max-tokens", 200, 1, 100000));
  const int gamma_max = static_cast<int>(args.integer("gamma-max", 8, 1, 16));
  const std::string only = args.str("only", "kernels,models,verify,breakdown,threads,spec");
  const bool json = args.has("json");
  auto section = [&](const char* name) { return only.find(name) != std::string::npos; };
  const double min_ms = quick ? 10.0 : 25.0;

  // --threads N: every section runs the models on N threads (default 1); the threads section
  // measures each count of --thread-counts (default 1..N) in the same run.
  const long long n_threads = args.integer("threads", 1, 1, kernels::ThreadPool::kMaxThreads);
  const std::vector<int> thread_counts =
      parse_thread_counts(args.str("thread-counts", ""), n_threads);
  kernels::ThreadPool pool(static_cast<int>(n_threads));
  GPTModel target = GPTModel::from_file(target_path);
  GPTModel draft = GPTModel::from_file(draft_path);
  target.set_thread_pool(&pool);
  draft.set_thread_pool(&pool);
  Json out;
  out.key("engine", json_escape("native"));
  out.key("target", json_escape(target_path));
  {
    std::vector<std::string> names;
    for (const std::string& t : target_paths) names.push_back(json_escape(t));
    out.key("targets", join(names));
  }
  out.key("draft", json_escape(draft_path));
  out.key("repeats", std::to_string(repeats));
  out.key("threads", std::to_string(n_threads));
  const BenchRun run{target, draft, pool, repeats, min_ms, max_tokens, gamma_max, json, out};

  if (section("kernels")) bench_kernels(run);
  const double decode_pass_ms = section("models") ? bench_models(run) : 0.0;
  if (section("verify")) bench_verify(run, decode_pass_ms);
  if (section("breakdown") || section("roofline")) bench_roofline(run, target_paths);
  if (section("threads") && kernels::ThreadPool::has_threads()) bench_threads(run, thread_counts);
  if (section("spec")) bench_spec(run);
  // The decoding modes (gamma auto / heuristic, prompt lookup, trees, heads): only when asked
  // for (--only modes), text tables only. --heads FILE adds the target's heads.
  if (only.find("modes") != std::string::npos && !json) {
    std::unique_ptr<MedusaHeads> heads;
    if (args.has("heads")) {
      heads = std::make_unique<MedusaHeads>(MedusaHeads::from_file(args.str("heads", ""), target));
    }
    bench_modes(target, draft, heads.get(), static_cast<int>(std::min<size_t>(max_tokens, 128)),
                repeats, gamma_max);
  }
  if (json) std::printf("%s\n", out.done().c_str());
  return 0;
}
}  // namespace specdec::cli
