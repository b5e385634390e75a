// `specdec bench`'s physics sections: the roofline of a pass over k = 1..8 tokens for each target
// given (one core's read bandwidth and mul+add peak, measured in the same run) with where the pass
// goes, and the same physics and decoding on 1..T threads.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "cli/bench_report.h"
#include "kernels/thread_pool.h"
#include "model/gpt_model.h"

namespace specdec::cli {

using bench::Stats;

// ---------------------------------------------------------------- roofline, where a pass goes
// For each target: one core's read bandwidth over a buffer as large as its weights (the best
// of 1..16 streams) and the mul+add peak, measured here, give the roofline of a pass over k
// tokens: max(weight bytes / bandwidth, k x flops per token / peak). Then each kernel's share.
void bench_roofline(const BenchRun& run, const std::vector<std::string>& target_paths) {
  const Stats peak = bench::muladd_gflops(run.repeats, run.min_ms);
  if (!run.json) {
    std::printf("Mul+add peak (registers only, %s): %s GFLOP/s\n",
                bench::kMatmulVectorBits == 256 ? "256-bit AVX2" : "128-bit",
                cell(peak, "%.1f").c_str());
  }
  run.out.key("peak_gflops", json_stats(peak));
  // The 8-bit kernels' integer ceiling (only 8-bit targets use it).
  const Stats peak_int = bench::int_dot_gops(run.repeats, run.min_ms);
  if (!run.json)
    std::printf("Integer dot peak (8-bit weights): %s GOP/s\n", cell(peak_int, "%.1f").c_str());
  run.out.key("peak_int_gops", json_stats(peak_int));
  std::vector<std::string> targets_json;
  for (const std::string& path : target_paths) {
    std::unique_ptr<GPTModel> other;
    if (path != target_paths[0]) {
      other = std::make_unique<GPTModel>(GPTModel::from_file(path));
      other->set_thread_pool(&run.pool);
    }
    const GPTModel& model = other ? *other : run.target;
    const GPTConfig& cfg = model.config();
    const size_t bytes = bench::matmul_weight_bytes(model);
    const double flops = bench::matmul_flops_per_token(model);
    const bench::ReadBandwidth bw = bench::best_read_gbs(bytes, run.repeats, run.min_ms);
    const std::vector<size_t> ks = {1, 2, 3, 4, 5, 6, 7, 8};
    const std::vector<bench::PassBreakdown> rows =
        bench::pass_breakdown(model, ks, bench::decode_contexts(cfg.block_size), run.repeats);
    if (!run.json) {
      std::printf(
          "\nRoofline of %s (%dx%d, %.1f MB of %s weights, %.1f MFLOP per token): one core "
          "reads "
          "it at %s GB/s with %d streams (1 stream: %.1f GB/s)\n",
          path.c_str(), cfg.n_layer, cfg.n_embd, bytes / 1e6, weights_name(model.weight_type()),
          flops / 1e6, cell(bw.gbs, "%.1f").c_str(), bw.streams, bw.by_streams[0].median);
      std::printf("  %-2s | %-7s | %-7s | %-7s | %-16s | %-9s | %-11s | %-9s | %-7s | %-13s | %s\n",
                  "k", "pass", "matmul", "in pass", "roofline (bound)", "pass/roof", "matmul/roof",
                  "attention", "GELU", "rest (%)", "v(k)");
    }
    std::vector<std::string> rows_json;
    for (const bench::PassBreakdown& b : rows) {
      const double roof =
          bench::roofline_ms(model, b.k, bw.gbs.median, peak.median, peak_int.median);
      const bool compute = roof > bytes / (bw.gbs.median * 1e6);
      const double rest = b.rest_ms();
      if (!run.json) {
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
        ",\"n_embd\":" + std::to_string(cfg.n_embd) + ",\"weight_bytes\":" + std::to_string(bytes) +
        ",\"flops_per_token\":" + fmt("%.0f", flops) + ",\"read_gbs\":" + json_stats(bw.gbs) +
        ",\"read_streams\":" + std::to_string(bw.streams) +
        ",\"read_gbs_by_streams\":" + join(streams_json) + ",\"rows\":" + join(rows_json) + "}");
  }
  run.say("\n");
  run.out.key("roofline", join(targets_json));
}

// ---------------------------------------------------------------- threads
// One thread count's physics: printed (unless --json), and its JSON row.
std::string physics_row(const BenchRun& run, const bench::ThreadPhysics& t, size_t max_k) {
  const double v1 = t.pass_ms[0].median, r1 = t.roofline_ms[0];
  const bool int8 = t.peak_int_gops.runs > 0;  // measured for 8-bit targets only
  if (!run.json) {
    std::printf(
        "  T=%d: B(T) %s GB/s, P(T) %s GFLOP/s%s, fork-join %s us x %.1f regions per pass, "
        "draft step %s ms\n",
        t.threads, cell(t.read_gbs, "%.1f").c_str(), cell(t.peak_gflops, "%.1f").c_str(),
        int8 ? (", P_int(T) " + cell(t.peak_int_gops, "%.1f") + " GOP/s").c_str() : "",
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
    ks.push_back("{\"k\":" + std::to_string(k) + ",\"pass_ms\":" + json_stats(t.pass_ms[k - 1]) +
                 ",\"matmul_ms\":" + json_stats(t.matmul_ms[k - 1]) +
                 ",\"roofline_ms\":" + fmt("%.5f", t.roofline_ms[k - 1]) +
                 ",\"v\":" + fmt("%.4f", t.pass_ms[k - 1].median / v1) +
                 ",\"v_roofline\":" + fmt("%.4f", t.roofline_ms[k - 1] / r1) + "}");
  }
  return ("{\"threads\":" + std::to_string(t.threads) + ",\"read_gbs\":" + json_stats(t.read_gbs) +
          ",\"peak_gflops\":" + json_stats(t.peak_gflops) +
          (int8 ? ",\"peak_int_gops\":" + json_stats(t.peak_int_gops) : std::string()) +
          ",\"fork_join_us\":" + json_stats(t.fork_join_us) +
          ",\"regions_per_pass\":" + fmt("%.2f", t.regions_per_pass) +
          ",\"draft_step_ms\":" + json_stats(t.draft_step_ms) + ",\"passes\":" + join(ks) + "}");
}

// The physics of a pass with T threads: B(T), P(T), v(k) at T against the roofline v(k, T),
// the barrier; then decoding at each T (plain and speculative, round robin, greedy).
void bench_threads(const BenchRun& run, const std::vector<int>& thread_counts) {
  const size_t max_k = 8;
  const std::vector<bench::ThreadPhysics> phys = bench::thread_physics(
      run.target, run.draft, run.pool, thread_counts, max_k, run.repeats, run.min_ms);
  const size_t bytes = bench::matmul_weight_bytes(run.target);
  std::vector<std::string> rows;
  if (!run.json) {
    std::printf("Threads: one pass of the target (%.1f MB of %s weights) on T threads\n",
                bytes / 1e6, weights_name(run.target.weight_type()));
  }
  for (const bench::ThreadPhysics& t : phys) rows.push_back(physics_row(run, t, max_k));
  const std::vector<bench::ThreadDecoding> dec =
      bench::decode_by_threads(run.target, run.draft, run.pool, thread_counts,
                               std::min(run.gamma_max, 6), 0.0f, run.max_tokens, run.repeats);
  std::vector<std::string> drows;
  for (const bench::ThreadDecoding& d : dec) {
    const Stats& best = d.spec_ms_per_token[d.best_gamma - 1];
    if (!run.json) {
      std::printf(
          "  T=%d decoding (greedy, %zu prompts x %zu tokens): plain %s ms/token, speculative "
          "%s ms/token at gamma %d (%.2fx plain; alpha %.3f), draft step %s ms\n",
          d.threads, bench::prompts().size(), run.max_tokens,
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
  if (!run.json && dec.size() > 1) {
    const bench::ThreadDecoding &a = dec.front(), &b = dec.back();
    std::printf(
        "  T=%d vs T=%d: plain %.2fx, speculative (best gamma) %.2fx, B ratio %.2f, P ratio "
        "%.2f\n\n",
        b.threads, a.threads, a.plain_ms_per_token.median / b.plain_ms_per_token.median,
        a.spec_ms_per_token[a.best_gamma - 1].median / b.spec_ms_per_token[b.best_gamma - 1].median,
        phys.back().read_gbs.median / phys.front().read_gbs.median,
        phys.back().peak_gflops.median / phys.front().peak_gflops.median);
  }
  run.out.key("threads_physics", join(rows));
  run.out.key("threads_decoding", join(drows));
}

}  // namespace specdec::cli
