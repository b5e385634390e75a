// specdec bench: the native benchmark tables of issue 6 — kernel GFLOP/s by shape, ms/token of
// each model, the verify cost v(k), and speculative vs plain decoding by gamma and temperature
// with the predicted speedup E(alpha, gamma) / (gamma c + v(gamma + 1)) beside the measured one.
// Every figure is a median of --repeats runs with [min, max]; ratios come from the same run.
// The WASM figures come from bench/run.mjs over the same measurement code (src/bench/).
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "cli/cli.h"
#include "kernels/matmul.h"
#include "model/gpt_model.h"
#include "model/tokenizer.h"
#include "specdec/analytics.h"
#include "specdec/errors.h"

namespace specdec::cli {
namespace {

using bench::Stats;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "12.3 [11.9–12.8]"
std::string cell(const Stats& s, const char* f = "%.2f") {
  return fmt(f, s.median) + " [" + fmt(f, s.min) + "-" + fmt(f, s.max) + "]";
}

std::string json_stats(const Stats& s) {
  return "{\"median\":" + fmt("%.6g", s.median) + ",\"min\":" + fmt("%.6g", s.min) +
         ",\"max\":" + fmt("%.6g", s.max) + ",\"runs\":" + std::to_string(s.runs) + "}";
}

struct Json {
  std::string out = "{";
  void key(const std::string& k, const std::string& raw) {
    out += (out.size() > 1 ? "," : "") + json_escape(k) + ":" + raw;
  }
  std::string done() { return out + "}"; }
};

std::string join(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + items[i];
  return s + "]";
}

std::vector<std::vector<int>> prompt_tokens() {
  std::vector<std::vector<int>> out;
  for (const std::string& p : bench::prompts()) out.push_back(encode(p));
  return out;
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  const Args args(argv, {"target", "draft", "repeats", "max-tokens", "gamma-max", "only"},
                  {"json", "quick"});
  const std::string target_path = args.str("target", "models/target.safetensors");
  const std::string draft_path = args.str("draft", "models/draft.safetensors");
  const bool quick = args.has("quick");
  const int repeats = static_cast<int>(args.integer("repeats", quick ? 3 : 7));
  const size_t max_tokens = static_cast<size_t>(args.integer("max-tokens", 200));
  const int gamma_max = static_cast<int>(args.integer("gamma-max", 8));
  const std::string only = args.str("only", "kernels,models,verify,breakdown,spec");
  const bool json = args.has("json");
  if (repeats < 1 || repeats > 1000) fail("--repeats: must be in 1..1000, got ", repeats);
  if (gamma_max < 1 || gamma_max > 16) fail("--gamma-max: must be in 1..16, got ", gamma_max);
  auto section = [&](const char* name) { return only.find(name) != std::string::npos; };
  const double min_ms = quick ? 10.0 : 25.0;

  const GPTModel target = GPTModel::from_file(target_path);
  const GPTModel draft = GPTModel::from_file(draft_path);
  Json out;
  out.key("engine", json_escape("native"));
  out.key("target", json_escape(target_path));
  out.key("draft", json_escape(draft_path));
  out.key("repeats", std::to_string(repeats));
  auto say = [&](const char* f, const std::string& a = "") {
    if (!json) std::printf(f, a.c_str());
  };

  // ---------------------------------------------------------------- kernels
  if (section("kernels")) {
    const int C = target.config().n_embd;
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
    say("Kernel GFLOP/s (matmul, median [min-max] of repeats)\n");
    if (!json) {
      std::printf("%-34s", "shape");
      for (size_t m : ms) std::printf(" | %-19s", ("M=" + std::to_string(m)).c_str());
      std::printf("\n");
    }
    std::vector<std::string> rows;
    auto row = [&](const std::string& name, auto measure) {
      if (!json) std::printf("%-34s", name.c_str());
      std::vector<std::string> cells;
      for (size_t m : ms) {
        const Stats s = measure(m);
        cells.push_back("{\"m\":" + std::to_string(m) + ",\"gflops\":" + json_stats(s) + "}");
        if (!json) {
          std::printf(" | %-19s", cell(s, "%.1f").c_str());
          std::fflush(stdout);
        }
      }
      if (!json) std::printf("\n");
      rows.push_back("{\"shape\":" + json_escape(name) + ",\"by_m\":" + join(cells) + "}");
    };
    for (const Shape& s : shapes) {
      row(s.name,
          [&](size_t m) { return bench::matmul_gflops(m, s.k, s.n, s.copies, repeats, min_ms); });
    }
    for (const GPTModel* model : {&target, &draft}) {
      const GPTConfig& c = model->config();
      const double mb =
          (c.n_layer * 12.0 * c.n_embd * c.n_embd + double(c.vocab_size) * c.n_embd) * 4 / 1e6;
      const std::string name = std::string(model == &target ? "target" : "draft") +
                               " all layers (" + fmt("%.1f", mb) + " MB)";
      row(name, [&](size_t m) { return bench::model_matmul_gflops(c, m, repeats, min_ms); });
    }
    out.key("kernels", join(rows));
    say("\n");
  }

  // ---------------------------------------------------------------- ms/token
  if (section("models")) {
    say("Plain greedy decode, 255 tokens after a 1-token prompt (ms/token)\n");
    std::vector<std::string> rows;
    for (const GPTModel* model : {&target, &draft}) {
      std::vector<double> samples;
      bench::decode(*model, nullptr, {encode("\n")}, 1, 0.0f, 0, 255);  // warm-up
      for (int r = 0; r < repeats; ++r) {
        samples.push_back(
            bench::decode(*model, nullptr, {encode("\n")}, 1, 0.0f, 0, 255).ms_per_token());
      }
      const Stats s = bench::summarize(samples);
      const char* name = model == &target ? "target" : "draft";
      if (!json) std::printf("  %-7s %s ms/token\n", name, cell(s, "%.3f").c_str());
      rows.push_back("{\"model\":" + json_escape(name) + ",\"ms_per_token\":" + json_stats(s) +
                     "}");
    }
    out.key("decode", join(rows));
    say("\n");
  }

  // ---------------------------------------------------------------- v(k), c
  const std::vector<size_t> pasts = bench::decode_contexts(target.config().block_size);
  double c = 0.0;  // D(1) / V(1) from the forward timings
  if (section("verify")) {
    say("Verify cost: one pass over k tokens vs one step (mean over contexts 8..~%s)\n",
        std::to_string(pasts.back()).c_str());
    const Stats t1 = bench::forward_ms(target, 1, pasts, repeats);
    const Stats d1 = bench::forward_ms(draft, 1, pasts, repeats);
    c = d1.median / t1.median;
    std::vector<std::string> rows;
    for (int k = 1; k <= std::max(9, gamma_max + 1); ++k) {
      const Stats tk = k == 1 ? t1 : bench::forward_ms(target, k, pasts, repeats);
      if (!json) {
        std::printf("  k=%d  %s ms   v(k) = %.2f\n", k, cell(tk, "%.3f").c_str(),
                    tk.median / t1.median);
      }
      rows.push_back("{\"k\":" + std::to_string(k) + ",\"ms\":" + json_stats(tk) +
                     ",\"v\":" + fmt("%.4f", tk.median / t1.median) + "}");
    }
    if (!json) {
      std::printf("  draft step %s ms, target step %s ms: c = %.3f\n\n", cell(d1, "%.3f").c_str(),
                  cell(t1, "%.3f").c_str(), c);
    }
    out.key("verify", join(rows));
    out.key("draft_step_ms", json_stats(d1));
    out.key("target_step_ms", json_stats(t1));
    out.key("c", fmt("%.5f", c));
  }

  // ---------------------------------------------------------------- where a pass goes
  // The roofline of decoding: one core's read bandwidth over a buffer as large as the target's
  // weights bounds a one-token pass from below; then each kernel's share of a k-token pass.
  if (section("breakdown")) {
    const size_t bytes = bench::matmul_weight_bytes(target);
    const Stats bw = bench::read_gbs(bytes, repeats, min_ms);
    const double floor_ms = bytes / (bw.median * 1e6);
    if (!json) {
      std::printf(
          "Roofline: one core reads a %.1f MB stream at %s GB/s, so the target's matmuls need "
          ">= %.3f ms per pass\n",
          bytes / 1e6, cell(bw, "%.1f").c_str(), floor_ms);
      std::printf("Where a pass over k tokens goes (target, ms, mean over contexts)\n");
      std::printf("  %-3s | %-7s | %-7s | %-9s | %-9s | %-7s | %-7s | %s\n", "k", "pass", "matmul",
                  "GFLOP/s", "attention", "GELU", "rest", "matmul floor");
    }
    std::vector<std::string> rows;
    for (size_t k : {1, 2, 3, 5}) {
      const bench::PassBreakdown b = bench::pass_breakdown(target, k, pasts, repeats);
      const Stats& pass = b.pass;
      const double rest = pass.median - b.matmul.median - b.attention.median - b.gelu.median;
      const double gflops = 2.0 * k * (bytes / sizeof(float)) / (b.matmul.median * 1e6);
      if (!json) {
        std::printf("  %-3zu | %-7.3f | %-7.3f | %-9.1f | %-9.3f | %-7.3f | %-7.3f | %.3f\n", k,
                    pass.median, b.matmul.median, gflops, b.attention.median, b.gelu.median, rest,
                    floor_ms);
      }
      rows.push_back("{\"k\":" + std::to_string(k) + ",\"pass_ms\":" + json_stats(pass) +
                     ",\"matmul_ms\":" + json_stats(b.matmul) + ",\"attention_ms\":" +
                     json_stats(b.attention) + ",\"gelu_ms\":" + json_stats(b.gelu) +
                     ",\"rest_ms\":" + fmt("%.5f", rest) + "}");
    }
    if (bench::kHasThreads) {
      // What would lift the roofline: more cores reading. Output rows split over two threads.
      const Stats one = bench::split_matmul_ms(target, 1, repeats);
      const Stats two = bench::split_matmul_ms(target, 2, repeats);
      if (!json) {
        std::printf(
            "  one-token matmuls with output rows split over threads (bit-identical): 1 thread %s "
            "ms, 2 threads %s ms (%.2fx)\n",
            cell(one, "%.3f").c_str(), cell(two, "%.3f").c_str(), one.median / two.median);
      }
      out.key("split_matmul_ms", "{\"1\":" + json_stats(one) + ",\"2\":" + json_stats(two) + "}");
    }
    say("\n");
    out.key("read_gbs", json_stats(bw));
    out.key("weight_bytes", std::to_string(bytes));
    out.key("breakdown", join(rows));
  }

  // ---------------------------------------------------------------- spec vs plain
  // Per repeat, prompt by prompt: plain, then every gamma (so that plain and speculative runs see
  // the same machine state); ratios within the repeat. The cost model comes from the same runs,
  // whose decoder times its draft and target calls:
  //   S = plain ms/token; V(1) = plain target ms/pass; D = draft ms/pass; V(g+1) = target ms/pass
  //   of the speculative run; c = D / S; v = (V(g+1) + S - V(1)) / S — a speculative iteration
  //   also pays the per-iteration work outside the model passes that a plain step pays (S - V(1):
  //   sampling, verification).
  if (section("spec")) {
    const std::vector<std::vector<int>> prompts = prompt_tokens();
    auto add = [](bench::DecodeTotals& a, const bench::DecodeTotals& b) { a += b; };
    auto median_of = [](const std::vector<bench::DecodeTotals>& runs, auto f) {
      std::vector<double> xs;
      for (const bench::DecodeTotals& t : runs) xs.push_back(f(t));
      return bench::summarize(xs).median;
    };
    std::vector<std::string> rows;
    for (float temperature : {0.0f, 0.8f}) {
      bench::decode(target, nullptr, {prompts[0]}, 1, temperature, 1000, max_tokens);  // warm-up
      bench::decode(target, &draft, {prompts[0]}, 2, temperature, 1000, max_tokens);
      std::vector<double> plain_tps;
      std::vector<bench::DecodeTotals> plain_runs;
      std::vector<std::vector<double>> spec_tps(gamma_max + 1), ratio(gamma_max + 1);
      std::vector<std::vector<bench::DecodeTotals>> spec_runs(gamma_max + 1);
      for (int r = 0; r < repeats; ++r) {
        bench::DecodeTotals p;
        std::vector<bench::DecodeTotals> sp(gamma_max + 1);
        for (size_t i = 0; i < prompts.size(); ++i) {
          add(p,
              bench::decode(target, nullptr, {prompts[i]}, 1, temperature, 1000 + i, max_tokens));
          for (int g = 1; g <= gamma_max; ++g) {
            add(sp[g],
                bench::decode(target, &draft, {prompts[i]}, g, temperature, 1000 + i, max_tokens));
          }
        }
        plain_tps.push_back(1000.0 / p.ms_per_token());
        plain_runs.push_back(p);
        for (int g = 1; g <= gamma_max; ++g) {
          spec_tps[g].push_back(1000.0 / sp[g].ms_per_token());
          ratio[g].push_back(spec_tps[g].back() / plain_tps.back());
          spec_runs[g].push_back(sp[g]);
        }
      }
      const Stats plain = bench::summarize(plain_tps);
      const double step_ms = median_of(plain_runs, [](auto& t) { return t.ms_per_token(); });
      const double v1_ms =
          median_of(plain_runs, [](auto& t) { return t.target_ms / t.target_passes; });
      if (!json) {
        std::printf("Speculative vs plain, T = %.1f, %zu prompts x %zu tokens; plain %s tokens/s\n",
                    temperature, prompts.size(), max_tokens, cell(plain, "%.0f").c_str());
        std::printf(
            "  %-5s | %-20s | %-22s | %-6s | %-9s | %-6s | %-6s | %-6s | %-9s | %-9s | %s\n",
            "gamma", "spec tokens/s", "measured speedup", "alpha", "tok/pass", "E", "c", "v",
            "predicted", "pred/meas", "lesson E/(gc+1)");
      }
      int best = 1;
      for (int g = 1; g <= gamma_max; ++g) {
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
        if (!json) {
          std::printf(
              "  %-5d | %-20s | %-22s | %.3f  | %-9.2f | %-6.2f | %-6.3f | %-6.2f | %-9.3f | "
              "%+6.1f%%   "
              "| %.2f\n",
              g, cell(st, "%.0f").c_str(), cell(m, "%.3f").c_str(), alpha, all.tokens_per_pass(), e,
              c_step, v_step, pred, 100.0 * (pred / m.median - 1.0), lesson);
        }
        rows.push_back(
            "{\"temperature\":" + fmt("%.2f", temperature) + ",\"gamma\":" + std::to_string(g) +
            ",\"plain_tokens_per_s\":" + json_stats(plain) + ",\"spec_tokens_per_s\":" +
            json_stats(st) + ",\"speedup\":" + json_stats(m) + ",\"alpha\":" + fmt("%.5f", alpha) +
            ",\"tokens_per_pass\":" + fmt("%.4f", all.tokens_per_pass()) +
            ",\"expected_tokens_per_pass\":" + fmt("%.4f", e) +
            ",\"step_ms\":" + fmt("%.5f", step_ms) + ",\"c_step\":" + fmt("%.5f", c_step) +
            ",\"v_step\":" + fmt("%.4f", v_step) + ",\"predicted\":" + fmt("%.4f", pred) +
            ",\"lesson\":" + fmt("%.4f", lesson) + "}");
      }
      if (!json) {
        std::printf(
            "  cost model: S = %.3f ms (plain ms/token), V(1) = %.3f ms (plain target pass)\n",
            step_ms, v1_ms);
        std::printf("  best gamma at T = %.1f: %d (measured %.3fx)\n\n", temperature, best,
                    bench::summarize(ratio[best]).median);
      }
    }
    out.key("spec", join(rows));
  }
  if (json) std::printf("%s\n", out.done().c_str());
  return 0;
}

}  // namespace specdec::cli
