// `specdec bench --only modes`: the decoding modes natively, the same tables as bench/modes.mjs
// (which measures them in WASM through the JS API): tokens/s of plain decoding, every fixed
// gamma, 'auto' and 'heuristic'; prompt lookup, the draft model and both on a copy-heavy task
// and on ordinary prompts; chains vs trees. Total tokens / total wall time of the decode loops
// over the same prompts and seeds, median of `repeats` runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "model/gpt_model.h"
#include "model/heads.h"
#include "model/model_source.h"
#include "model/tokenizer.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"

namespace specdec::cli {
namespace {

struct Run {
  double tokens_per_second = 0.0;
  double tokens_per_pass = 0.0;
  double alpha = 0.0;
  std::vector<size_t> by_drafter = std::vector<size_t>(kDrafterCount, 0);
};

// Held-out passages (the corpus's last 10%) at line starts; a fixed text when it is missing.
std::vector<std::string> passages(const std::string& source_dir, size_t n, size_t len,
                                  size_t skew) {
  std::ifstream f(source_dir + "/../shared/data/tinyshakespeare.txt", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string all = ss.str();
  std::vector<std::string> out;
  if (all.empty()) {
    for (size_t i = 0; i < n; ++i) {
      out.push_back(std::string("ROMEO:\nBut soft, what light through yonder window breaks?\n"
                                "It is the east, and Juliet is the sun.\nArise, fair sun, and "
                                "kill the envious moon,\nWho is already sick and pale with grief")
                        .substr(i % 7, len));
    }
    return out;
  }
  const std::string held = all.substr(all.size() * 9 / 10);
  for (size_t i = 0; i < n; ++i) {
    size_t at = (i + skew + 1) * (held.size() - 4 * len) / (n + skew + 2);
    while (at < held.size() && held[at - 1] != '\n') ++at;
    out.push_back(held.substr(at, len));
  }
  return out;
}

// Decodes prompts with the given drafters; the counters summed, tokens/s the median over
// repeats.
struct Bench {
  const GPTModel& target;
  const GPTModel& draft;
  const MedusaHeads* heads;
  int tokens;
  int repeats;

  Run once(const std::vector<std::string>& prompts, DecoderOptions o, bool use_draft,
           bool use_heads) const {
    Run run;
    double ms = 0.0;
    size_t generated = 0, passes = 0, accepted = 0, examined = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      ModelSource t(target);
      std::unique_ptr<ModelSource> d;
      std::unique_ptr<DraftModelProposer> by_draft;
      if (use_draft) {
        d = std::make_unique<ModelSource>(draft);
        by_draft = std::make_unique<DraftModelProposer>(*d);
      }
      std::unique_ptr<HeadsProposer> h;
      if (use_heads) h = std::make_unique<HeadsProposer>(*heads, t);
      o.max_new_tokens = static_cast<size_t>(tokens);
      SpeculativeDecoder dec(t, drafters({by_draft.get(), h.get()}), encode(prompts[i]), o);
      Rng rng(1000 + i);
      const auto t0 = std::chrono::steady_clock::now();
      while (!dec.done()) dec.step(rng);
      ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const DecoderStats& s = dec.stats();
      generated += s.generated;
      passes += s.target_passes;
      accepted += s.accepted;
      examined += s.examined;
      for (int k = 0; k < kDrafterCount; ++k) run.by_drafter[k] += s.by_drafter[k];
    }
    run.tokens_per_second = 1000.0 * generated / ms;
    run.tokens_per_pass = double(generated) / passes;
    run.alpha = examined ? double(accepted) / examined : 0.0;
    return run;
  }

  Run measure(const std::vector<std::string>& prompts, const DecoderOptions& o, bool use_draft,
              bool use_heads) const {
    std::vector<Run> runs;
    for (int r = 0; r < repeats; ++r) runs.push_back(once(prompts, o, use_draft, use_heads));
    std::sort(runs.begin(), runs.end(),
              [](const Run& a, const Run& b) { return a.tokens_per_second < b.tokens_per_second; });
    return runs[runs.size() / 2];
  }
};

constexpr const char* kHead =
    "| mode | tokens/s | vs plain | tokens/pass | alpha | iterations by drafter |\n"
    "|---|---|---|---|---|---|\n";

void row(const std::string& name, const Run& r, const Run& plain) {
  std::printf("| %s | %.1f | %.2fx | %.2f | %.3f | draft %zu, lookup %zu, heads %zu, none %zu |\n",
              name.c_str(), r.tokens_per_second, r.tokens_per_second / plain.tokens_per_second,
              r.tokens_per_pass, r.alpha, r.by_drafter[1], r.by_drafter[2], r.by_drafter[3],
              r.by_drafter[0]);
}

// Tokens/s by fixed gamma, 'auto' and 'heuristic' on ordinary prompts; returns 'auto''s options.
DecoderOptions gamma_table(const Bench& b, const std::vector<std::string>& ordinary,
                           const DecoderOptions& base, int gamma_max) {
  DecoderOptions plain = base;
  plain.plain = true;
  const Run p = b.measure(ordinary, plain, false, false);
  std::printf("\n#### Native, T = %.1f: tokens/s by gamma (ordinary prompts)\n\n%s",
              base.sampling.temperature, kHead);
  row("plain", p, p);
  Run best;
  int best_g = 0;
  for (int g = 1; g <= gamma_max; ++g) {
    DecoderOptions o = base;
    o.gamma = g;
    const Run r = b.measure(ordinary, o, true, false);
    row("gamma " + std::to_string(g), r, p);
    if (r.tokens_per_second > best.tokens_per_second) best = r, best_g = g;
  }
  DecoderOptions a = base, h = base;
  a.gamma_mode = GammaMode::kAuto;
  h.gamma_mode = GammaMode::kHeuristic;
  a.gamma_max = h.gamma_max = gamma_max;
  const Run ra = b.measure(ordinary, a, true, false), rh = b.measure(ordinary, h, true, false);
  row("auto", ra, p);
  row("heuristic", rh, p);
  std::printf("\nauto / best fixed (gamma %d): %.1f%%; auto / heuristic: %.3fx\n", best_g,
              100.0 * ra.tokens_per_second / best.tokens_per_second,
              ra.tokens_per_second / rh.tokens_per_second);
  return a;
}

// Prompt lookup, the draft model, both, and heads, with gamma 'auto' (options a).
void drafter_table(const Bench& b, const std::vector<std::string>& copy,
                   const std::vector<std::string>& ordinary, const DecoderOptions& a) {
  DecoderOptions plain = a;
  plain.plain = true;
  std::printf("\n#### Native, T = %.1f: drafters (gamma auto)\n\n%s", a.sampling.temperature,
              kHead);
  for (const auto& [task, prompts] :
       {std::pair<std::string, const std::vector<std::string>*>{"copy-heavy", &copy},
        {"ordinary", &ordinary}}) {
    const Run pp = b.measure(*prompts, plain, false, false);
    DecoderOptions lookup = a, both = a;
    lookup.lookup = both.lookup = true;
    row(task + ": plain", pp, pp);
    row(task + ": draft", b.measure(*prompts, a, true, false), pp);
    row(task + ": lookup", b.measure(*prompts, lookup, false, false), pp);
    row(task + ": lookup + draft", b.measure(*prompts, both, true, false), pp);
    if (b.heads) {
      DecoderOptions ho = a;
      ho.gamma_max = b.heads->count();
      row(task + ": heads", b.measure(*prompts, ho, false, true), pp);
    }
  }
}

// Trees at T = 0.8: the same depth and the same node budget.
void tree_table(const Bench& b, const std::vector<std::string>& ordinary) {
  DecoderOptions base;
  base.sampling.temperature = 0.8f;
  DecoderOptions plain = base;
  plain.plain = true;
  const Run p = b.measure(ordinary, plain, false, false);
  std::printf("\n#### Native, T = 0.8: chains and trees\n\n%s", kHead);
  struct Shape {
    const char* name;
    std::vector<int> branches;
    int gamma;
    bool heads;
  };
  std::vector<Shape> shapes = {{"draft: chain, depth 4", {}, 4, false},
                               {"draft: [2,2,1,1]", {2, 2, 1, 1}, 0, false},
                               {"draft: [3,2,1,1]", {3, 2, 1, 1}, 0, false},
                               {"draft: chain of 8", {}, 8, false},
                               {"draft: [2,1,1,1] (8 nodes)", {2, 1, 1, 1}, 0, false},
                               {"draft: chain of 16", {}, 16, false},
                               {"draft: [4,1,1,1] (16 nodes)", {4, 1, 1, 1}, 0, false},
                               {"draft: chain of 32", {}, 32, false},
                               {"draft: [8,1,1,1] (32 nodes)", {8, 1, 1, 1}, 0, false}};
  if (b.heads) {
    shapes.push_back({"heads: chain", {}, b.heads->count(), true});
    shapes.push_back({"heads: [3,2,1]", {3, 2, 1}, 0, true});
    shapes.push_back({"heads: [4,2]", {4, 2}, 0, true});
  }
  for (const Shape& s : shapes) {
    DecoderOptions o = base;
    if (s.branches.empty()) {
      o.gamma = s.gamma;
    } else {
      o.tree_branches = s.branches;
      if (s.heads) o.tree_branches.resize(std::min<size_t>(s.branches.size(), b.heads->count()));
    }
    row(s.name, b.measure(ordinary, o, !s.heads, s.heads), p);
  }
}

}  // namespace

int bench_modes(const GPTModel& target, const GPTModel& draft, const MedusaHeads* heads, int tokens,
                int repeats, int gamma_max) {
  const std::string root = SPECDEC_SOURCE_ROOT;
  const size_t n_prompts = 4;
  std::vector<std::string> ordinary = passages(root, n_prompts, 64, 0);
  std::vector<std::string> copy = passages(root, n_prompts, 150, 17);
  for (std::string& p : copy) p += p.substr(0, 20);
  const Bench b{target, draft, heads, tokens, repeats};
  for (float temperature : {0.0f, 0.8f}) {
    DecoderOptions base;
    base.sampling.temperature = temperature;
    drafter_table(b, copy, ordinary, gamma_table(b, ordinary, base, gamma_max));
  }
  tree_table(b, ordinary);
  return 0;
}

}  // namespace specdec::cli
