// specdec bench: the native benchmark tables — kernel GFLOP/s by shape, ms/token of each model,
// the verify cost v(k), the roofline of a pass over k = 1..8 tokens for each target given (one
// core's read bandwidth and mul+add peak, measured in the same run) with where the pass goes, and
// speculative vs plain decoding by gamma and temperature with the predicted speedup
// E(alpha, gamma) / (gamma c + v(gamma + 1)) beside the measured one. Every figure is a median of
// --repeats runs with [min, max]; ratios come from the same run. The WASM figures come from
// bench/run.mjs over the same measurement code (src/bench/).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "bench/bench.h"
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
  const int repeats = static_cast<int>(args.integer("repeats", quick ? 3 : 7));
  const size_t max_tokens = static_cast<size_t>(args.integer("max-tokens", 200));
  const int gamma_max = static_cast<int>(args.integer("gamma-max", 8));
  const std::string only = args.str("only", "kernels,models,verify,breakdown,threads,spec");
  const bool json = args.has("json");
  if (repeats < 1 || repeats > 1000) fail("--repeats: must be in 1..1000, got ", repeats);
  if (gamma_max < 1 || gamma_max > 16) fail("--gamma-max: must be in 1..16, got ", gamma_max);
  auto section = [&](const char* name) { return only.find(name) != std::string::npos; };
  const double min_ms = quick ? 10.0 : 25.0;

  // --threads N: every section runs the models on N threads (default 1); the threads section
  // measures each count of --thread-counts (default 1..N) in the same run.
  const long long n_threads = args.integer("threads", 1);
  if (n_threads < 1 || n_threads > kernels::ThreadPool::kMaxThreads) {
    fail("--threads: must be in 1..", kernels::ThreadPool::kMaxThreads, ", got ", n_threads);
  }
  std::vector<int> thread_counts;
  for (const std::string& t : split_list(args.str("thread-counts", ""))) {
    const long long v = std::atoll(t.c_str());
    if (v < 1 || v > n_threads || std::to_string(v) != t) {
      fail("--thread-counts: '", t, "' is not a count in 1..", n_threads, " (--threads)");
    }
    thread_counts.push_back(static_cast<int>(v));
  }
  if (thread_counts.empty()) {
    for (int t = 1; t <= n_threads; ++t) thread_counts.push_back(t);
  }
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
  // Also the target's mean pass inside the decoder (its own timing of the model calls): the
  // verify section's k = 1 pass must agree with it.
  double decode_pass_ms = 0.0;
  if (section("models")) {
    say("Plain greedy decode, 255 tokens after a 1-token prompt (ms/token; target pass inside the "
        "decoder)\n");
    std::vector<std::string> rows;
    for (const GPTModel* model : {&target, &draft}) {
      std::vector<double> samples, pass;
      bench::decode(*model, nullptr, {encode("\n")}, 1, 0.0f, 0, 255);  // warm-up
      for (int r = 0; r < repeats; ++r) {
        const bench::DecodeTotals t =
            bench::decode(*model, nullptr, {encode("\n")}, 1, 0.0f, 0, 255);
        samples.push_back(t.ms_per_token());
        pass.push_back(t.target_ms / t.target_passes);
      }
      const Stats s = bench::summarize(samples), p = bench::summarize(pass);
      const char* name = model == &target ? "target" : "draft";
      if (model == &target) decode_pass_ms = p.median;
      if (!json) {
        std::printf("  %-7s %s ms/token, pass %s ms\n", name, cell(s, "%.3f").c_str(),
                    cell(p, "%.3f").c_str());
      }
      rows.push_back("{\"model\":" + json_escape(name) + ",\"ms_per_token\":" + json_stats(s) +
                     ",\"pass_ms\":" + json_stats(p) + "}");
    }
    out.key("decode", join(rows));
    say("\n");
  }

  // ---------------------------------------------------------------- v(k), c
  const std::vector<size_t> pasts = bench::decode_contexts(target.config().block_size);
  double c = 0.0;  // D(1) / V(1) from the forward timings
  if (section("verify")) {
    say("Verify cost: one pass over k tokens vs one step (mean over contexts 8..~%s; every k in "
        "every repeat)\n",
        std::to_string(pasts.back()).c_str());
    const int max_k = std::max(9, gamma_max + 1);
    bench::PassTimer timer(target, pasts, max_k);
    const Stats d1 = bench::forward_ms(draft, 1, pasts, repeats);
    std::vector<std::vector<double>> samples(max_k + 1);
    for (int r = -1; r < repeats; ++r) {  // r = -1: warm-up
      for (int k = 1; k <= max_k; ++k) {
        const double ms = timer.once(k);
        if (r >= 0) samples[k].push_back(ms);
      }
    }
    const Stats t1 = bench::summarize(samples[1]);
    c = d1.median / t1.median;
    std::vector<std::string> rows;
    for (int k = 1; k <= max_k; ++k) {
      const Stats tk = bench::summarize(samples[k]);
      if (!json) {
        std::printf("  k=%d  %s ms   v(k) = %.2f\n", k, cell(tk, "%.3f").c_str(),
                    tk.median / t1.median);
      }
      rows.push_back("{\"k\":" + std::to_string(k) + ",\"ms\":" + json_stats(tk) +
                     ",\"v\":" + fmt("%.4f", tk.median / t1.median) + "}");
    }
    if (!json) {
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
    out.key("verify", join(rows));
    out.key("draft_step_ms", json_stats(d1));
    out.key("target_step_ms", json_stats(t1));
    out.key("c", fmt("%.5f", c));
  }

  // ---------------------------------------------------------------- roofline, where a pass goes
  // For each target: one core's read bandwidth over a buffer as large as its weights (the best
  // of 1..16 streams) and the mul+add peak, measured here, give the roofline of a pass over k
  // tokens: max(weight bytes / bandwidth, k x flops per token / peak). Then each kernel's share.
  if (section("breakdown") || section("roofline")) {
    const Stats peak = bench::muladd_gflops(repeats, min_ms);
    if (!json) {
      std::printf("Mul+add peak (registers only, %s): %s GFLOP/s\n",
                  bench::kMatmulVectorBits == 256 ? "256-bit AVX2" : "128-bit",
                  cell(peak, "%.1f").c_str());
    }
    out.key("peak_gflops", json_stats(peak));
    std::vector<std::string> targets_json;
    for (const std::string& path : target_paths) {
      std::unique_ptr<GPTModel> other;
      if (path != target_path) {
        other = std::make_unique<GPTModel>(GPTModel::from_file(path));
        other->set_thread_pool(&pool);
      }
      const GPTModel& model = other ? *other : target;
      const GPTConfig& cfg = model.config();
      const size_t bytes = bench::matmul_weight_bytes(model);
      const double flops = bench::matmul_flops_per_token(model);
      const bench::ReadBandwidth bw = bench::best_read_gbs(bytes, repeats, min_ms);
      const std::vector<size_t> ks = {1, 2, 3, 4, 5, 6, 7, 8};
      const std::vector<bench::PassBreakdown> rows =
          bench::pass_breakdown(model, ks, bench::decode_contexts(cfg.block_size), repeats);
      if (!json) {
        std::printf(
            "\nRoofline of %s (%dx%d, %.1f MB of f32 weights, %.1f MFLOP per token): one core "
            "reads "
            "it at %s GB/s with %d streams (1 stream: %.1f GB/s)\n",
            path.c_str(), cfg.n_layer, cfg.n_embd, bytes / 1e6, flops / 1e6,
            cell(bw.gbs, "%.1f").c_str(), bw.streams, bw.by_streams[0].median);
        std::printf(
            "  %-2s | %-7s | %-7s | %-7s | %-16s | %-9s | %-11s | %-9s | %-7s | %-13s | %s\n", "k",
            "pass", "matmul", "in pass", "roofline (bound)", "pass/roof", "matmul/roof",
            "attention", "GELU", "rest (%)", "v(k)");
      }
      std::vector<std::string> rows_json;
      for (const bench::PassBreakdown& b : rows) {
        const double roof = bench::roofline_ms(model, b.k, bw.gbs.median, peak.median);
        const bool compute = b.k * flops / (peak.median * 1e6) > bytes / (bw.gbs.median * 1e6);
        const double rest = b.rest_ms();
        if (!json) {
          std::printf(
              "  %-2zu | %-7.3f | %-7.3f | %-7.3f | %-7.3f (%-6s) | %-9.2f | %-11.2f | %-9.3f | "
              "%-7.3f | %-6.3f (%4.1f) | %.2f\n",
              b.k, b.pass.median, b.matmul.median, b.matmul_in_pass.median, roof,
              compute ? "flops" : "memory", b.pass.median / roof, b.matmul.median / roof,
              b.attention.median, b.gelu.median, rest, 100.0 * rest / b.pass.median,
              b.pass.median / rows[0].pass.median);
        }
        rows_json.push_back(
            "{\"k\":" + std::to_string(b.k) + ",\"pass_ms\":" + json_stats(b.pass) +
            ",\"matmul_ms\":" + json_stats(b.matmul) +
            ",\"matmul_in_pass_ms\":" + json_stats(b.matmul_in_pass) +
            ",\"attention_ms\":" + json_stats(b.attention) + ",\"gelu_ms\":" + json_stats(b.gelu) +
            ",\"rest_ms\":" + fmt("%.5f", rest) + ",\"roofline_ms\":" + fmt("%.5f", roof) +
            ",\"bound\":" + json_escape(compute ? "flops" : "memory") + "}");
      }
      std::vector<std::string> streams_json;
      for (const Stats& s : bw.by_streams) streams_json.push_back(json_stats(s));
      targets_json.push_back(
          "{\"target\":" + json_escape(path) + ",\"n_layer\":" + std::to_string(cfg.n_layer) +
          ",\"n_embd\":" + std::to_string(cfg.n_embd) +
          ",\"weight_bytes\":" + std::to_string(bytes) +
          ",\"flops_per_token\":" + fmt("%.0f", flops) + ",\"read_gbs\":" + json_stats(bw.gbs) +
          ",\"read_streams\":" + std::to_string(bw.streams) +
          ",\"read_gbs_by_streams\":" + join(streams_json) + ",\"rows\":" + join(rows_json) + "}");
    }
    say("\n");
    out.key("roofline", join(targets_json));
  }

  // ---------------------------------------------------------------- threads
  // The physics of a pass with T threads: B(T), P(T), v(k) at T against the roofline v(k, T),
  // the barrier; then decoding at each T (plain and speculative, round robin, greedy).
  if (section("threads") && kernels::ThreadPool::has_threads()) {
    const size_t max_k = 8;
    const std::vector<bench::ThreadPhysics> phys =
        bench::thread_physics(target, draft, pool, thread_counts, max_k, repeats, min_ms);
    const size_t bytes = bench::matmul_weight_bytes(target);
    std::vector<std::string> rows;
    if (!json) {
      std::printf("Threads: one pass of the target (%.1f MB of f32 weights) on T threads\n",
                  bytes / 1e6);
    }
    for (const bench::ThreadPhysics& t : phys) {
      const double v1 = t.pass_ms[0].median, r1 = t.roofline_ms[0];
      if (!json) {
        std::printf(
            "  T=%d: B(T) %s GB/s, P(T) %s GFLOP/s, fork-join %s us x %.1f regions per pass, "
            "draft step %s ms\n",
            t.threads, cell(t.read_gbs, "%.1f").c_str(), cell(t.peak_gflops, "%.1f").c_str(),
            cell(t.fork_join_us, "%.2f").c_str(), t.regions_per_pass,
            cell(t.draft_step_ms, "%.3f").c_str());
        std::printf("    %-2s | %-7s | %-7s | %-9s | %-6s | %-10s | %s\n", "k", "pass", "matmul",
                    "roofline", "v(k)", "roof v(k)", "matmul/roof");
        for (size_t k = 1; k <= max_k; ++k) {
          std::printf("    %-2zu | %-7.3f | %-7.3f | %-9.3f | %-6.2f | %-10.2f | %.2f\n", k,
                      t.pass_ms[k - 1].median, t.matmul_ms[k - 1].median, t.roofline_ms[k - 1],
                      t.pass_ms[k - 1].median / v1, t.roofline_ms[k - 1] / r1,
                      t.matmul_ms[k - 1].median / t.roofline_ms[k - 1]);
        }
      }
      std::vector<std::string> ks;
      for (size_t k = 1; k <= max_k; ++k) {
        ks.push_back("{\"k\":" + std::to_string(k) +
                     ",\"pass_ms\":" + json_stats(t.pass_ms[k - 1]) +
                     ",\"matmul_ms\":" + json_stats(t.matmul_ms[k - 1]) +
                     ",\"roofline_ms\":" + fmt("%.5f", t.roofline_ms[k - 1]) +
                     ",\"v\":" + fmt("%.4f", t.pass_ms[k - 1].median / v1) +
                     ",\"v_roofline\":" + fmt("%.4f", t.roofline_ms[k - 1] / r1) + "}");
      }
      rows.push_back(
          "{\"threads\":" + std::to_string(t.threads) + ",\"read_gbs\":" + json_stats(t.read_gbs) +
          ",\"peak_gflops\":" + json_stats(t.peak_gflops) + ",\"fork_join_us\":" +
          json_stats(t.fork_join_us) + ",\"regions_per_pass\":" + fmt("%.2f", t.regions_per_pass) +
          ",\"draft_step_ms\":" + json_stats(t.draft_step_ms) + ",\"passes\":" + join(ks) + "}");
    }
    const std::vector<bench::ThreadDecoding> dec = bench::decode_by_threads(
        target, draft, pool, thread_counts, std::min(gamma_max, 6), 0.0f, max_tokens, repeats);
    std::vector<std::string> drows;
    for (const bench::ThreadDecoding& d : dec) {
      const Stats& best = d.spec_ms_per_token[d.best_gamma - 1];
      if (!json) {
        std::printf(
            "  T=%d decoding (greedy, %zu prompts x %zu tokens): plain %s ms/token, speculative "
            "%s ms/token at gamma %d (%.2fx plain; alpha %.3f), draft step %s ms\n",
            d.threads, bench::prompts().size(), max_tokens,
            cell(d.plain_ms_per_token, "%.3f").c_str(), cell(best, "%.3f").c_str(), d.best_gamma,
            d.plain_ms_per_token.median / best.median, d.alpha[d.best_gamma - 1],
            cell(d.draft_step_ms, "%.4f").c_str());
      }
      std::vector<std::string> g;
      for (size_t i = 0; i < d.spec_ms_per_token.size(); ++i) {
        g.push_back("{\"gamma\":" + std::to_string(i + 1) +
                    ",\"ms_per_token\":" + json_stats(d.spec_ms_per_token[i]) +
                    ",\"alpha\":" + fmt("%.4f", d.alpha[i]) + "}");
      }
      drows.push_back("{\"threads\":" + std::to_string(d.threads) +
                      ",\"plain_ms_per_token\":" + json_stats(d.plain_ms_per_token) +
                      ",\"best_gamma\":" + std::to_string(d.best_gamma) + ",\"draft_step_ms\":" +
                      json_stats(d.draft_step_ms) + ",\"spec\":" + join(g) + "}");
    }
    if (!json && dec.size() > 1) {
      const bench::ThreadDecoding &a = dec.front(), &b = dec.back();
      std::printf(
          "  T=%d vs T=%d: plain %.2fx, speculative (best gamma) %.2fx, B ratio %.2f, P ratio "
          "%.2f\n\n",
          b.threads, a.threads, a.plain_ms_per_token.median / b.plain_ms_per_token.median,
          a.spec_ms_per_token[a.best_gamma - 1].median /
              b.spec_ms_per_token[b.best_gamma - 1].median,
          phys.back().read_gbs.median / phys.front().read_gbs.median,
          phys.back().peak_gflops.median / phys.front().peak_gflops.median);
    }
    out.key("threads_physics", join(rows));
    out.key("threads_decoding", join(drows));
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
