// specdec generate: speculative (or, with --plain, autoregressive) decoding with two GPT
// models from safetensors files. Text mode streams the generated text to stdout and a summary
// to stderr; --json prints one object with the settings, the per-iteration trace and stats.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/errors.h"
#include "cli/cli.h"
#include "kernels/thread_pool.h"
#include "model/gpt_model.h"
#include "model/heads.h"
#include "model/model_source.h"
#include "model/tokenizer.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"
#include "specdec/limits.h"

namespace specdec::cli {
namespace {

// A JSON number; JSON has no NaN or infinity.
std::string json_number(double v) {
  if (v != v || v - v != 0.0) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string gamma_json(const DecoderOptions& o) {
  if (o.gamma_mode == GammaMode::kAuto) return "\"auto\"";
  if (o.gamma_mode == GammaMode::kHeuristic) return "\"heuristic\"";
  return std::to_string(o.tree_branches.empty() ? o.gamma : int(o.tree_branches.size()));
}

std::string settings_json(const Args& args, const DecoderOptions& options, uint64_t seed) {
  const bool plain = options.plain;
  return "{\"target\":" + json_escape(args.str("target", "")) + ",\"draft\":" +
         (args.has("draft") && !plain ? json_escape(args.str("draft", "")) : "null") +
         ",\"heads\":" +
         (args.has("heads") && !plain ? json_escape(args.str("heads", "")) : "null") +
         ",\"lookup\":" + (options.lookup ? "true" : "false") + ",\"tree\":" +
         (options.tree_branches.empty() ? "null" : json_array(options.tree_branches)) +
         ",\"plain\":" + (plain ? "true" : "false") + ",\"gamma\":" + gamma_json(options) +
         ",\"gamma_max\":" + std::to_string(options.gamma_max) +
         ",\"temperature\":" + json_number(options.sampling.temperature) +
         ",\"top_k\":" + std::to_string(options.sampling.top_k) +
         ",\"top_p\":" + json_number(options.sampling.top_p) + ",\"seed\":" + std::to_string(seed) +
         ",\"max_tokens\":" + std::to_string(options.max_new_tokens) + "}";
}

// {"parent": [...], "token": [...], "status": "a"|"r"|"-" per node, "path": [...]}
std::string tree_json(const IterationRecord& r) {
  std::string status = "\"";
  for (const NodeRecord& n : r.tree_verify.nodes) {
    status += n.status == NodeStatus::kAccepted   ? 'a'
              : n.status == NodeStatus::kRejected ? 'r'
                                                  : '-';
  }
  return "{\"parent\":" + json_array(r.tree.parent) + ",\"token\":" + json_array(r.tree.token) +
         ",\"status\":" + status + "\",\"path\":" + json_array(r.tree_verify.path) + "}";
}

std::string trace_json(const std::vector<IterationRecord>& records) {
  std::string out = "[";
  for (size_t i = 0; i < records.size(); ++i) {
    const IterationRecord& r = records[i];
    out += std::string(i ? "," : "") + "{\"drafter\":\"" + drafter_name(r.drafter) +
           "\",\"gamma\":" + std::to_string(r.gamma) +
           (r.lookup_ngram ? ",\"lookup_ngram\":" + std::to_string(r.lookup_ngram) : "") +
           ",\"proposed\":" + json_array(r.tree.is_chain() ? r.tree.token : std::vector<int>{}) +
           (r.tree.is_chain() ? "" : ",\"tree\":" + tree_json(r)) +
           ",\"n_accepted\":" + std::to_string(r.tree_verify.path.size()) +
           ",\"emitted\":" + json_array(r.emitted) +
           ",\"bonus\":" + (r.tree_verify.bonus ? "true" : "false") + "}";
  }
  return out + "]";
}

std::string stats_json(const DecoderStats& s, double wall_ms) {
  std::string by_position = "[";
  for (size_t i = 0; i < s.reached_at.size(); ++i) {
    by_position += (i ? "," : "");
    by_position +=
        s.reached_at[i] ? json_number(double(s.accepted_at[i]) / s.reached_at[i]) : "null";
  }
  by_position += "]";
  std::string histogram = "[";
  for (size_t g = 0; g < s.gamma_histogram.size(); ++g) {
    histogram += (g ? "," : "") + std::to_string(s.gamma_histogram[g]);
  }
  histogram += "]";
  return "{\"iterations\":" + std::to_string(s.iterations) +
         ",\"target_passes\":" + std::to_string(s.target_passes) +
         ",\"draft_passes\":" + std::to_string(s.draft_passes) +
         ",\"drafted\":" + std::to_string(s.drafted) +
         ",\"examined\":" + std::to_string(s.examined) +
         ",\"accepted\":" + std::to_string(s.accepted) +
         ",\"generated\":" + std::to_string(s.generated) +
         ",\"acceptance_rate\":" + json_number(s.acceptance_rate()) +
         ",\"acceptance_by_position\":" + by_position +
         ",\"tokens_per_pass\":" + json_number(s.tokens_per_pass()) +
         ",\"draft_ms\":" + json_number(s.draft_ms) + ",\"target_ms\":" + json_number(s.target_ms) +
         ",\"wall_ms\":" + json_number(wall_ms) + ",\"gamma_histogram\":" + histogram +
         ",\"by_drafter\":{\"none\":" + std::to_string(s.by_drafter[0]) +
         ",\"draft\":" + std::to_string(s.by_drafter[1]) +
         ",\"lookup\":" + std::to_string(s.by_drafter[2]) +
         ",\"heads\":" + std::to_string(s.by_drafter[3]) + "}" +
         ",\"ms_per_token\":" + json_number(s.generated ? wall_ms / s.generated : 0.0) + "}";
}

// What the thread pool did: runs given to the workers or kept on the caller, and why.
std::string pool_json(const kernels::ThreadPool& pool) {
  const kernels::ThreadPool::Stats p = pool.stats();
  return "{\"threads\":" + std::to_string(pool.max_threads()) +
         ",\"runs\":" + std::to_string(p.runs) + ",\"serial\":" + std::to_string(p.serial) +
         ",\"shed\":" + std::to_string(p.shed) + ",\"busy\":" + std::to_string(p.busy) +
         ",\"losing_windows\":" + std::to_string(p.losing_windows) +
         ",\"worker_parts\":" + std::to_string(p.worker_parts) +
         ",\"caller_parts\":" + std::to_string(p.caller_parts) + "}";
}

// "3,2,1,1": a comma-separated list of integers, each in [lo, hi], or a SpecdecError naming the
// flag and the entry as given (none is clamped or cast before its range is checked).
std::vector<int> int_list(const char* flag, const std::string& t, const char* example, int lo,
                          int hi) {
  std::vector<int> values;
  size_t at = 0;
  while (at <= t.size()) {
    const size_t comma = std::min(t.find(',', at), t.size());
    const std::string part = t.substr(at, comma - at);
    long long v = 0;
    bool fits = true;
    if (!parse_integer(part, &v, &fits)) {
      fail("--", flag, ": expected ", example, ", got '", t, "'");
    }
    values.push_back(static_cast<int>(integer_in(flag, part, lo, hi)));
    at = comma + 1;
  }
  return values;
}

// The decoder's options from the flags (each flag is the JS option of the same meaning).
DecoderOptions decoder_options(const Args& args) {
  DecoderOptions options;
  options.plain = args.has("plain");
  options.lookup = args.has("lookup");
  if (options.plain && (args.has("draft") || args.has("heads") || options.lookup)) {
    fail("--plain: decodes without a drafter; drop --draft, --heads and --lookup");
  }
  if (!options.plain && !args.has("draft") && !args.has("heads") && !options.lookup) {
    fail("--draft: required unless --plain, --lookup or --heads");
  }
  if (args.has("draft") && args.has("heads")) fail("--heads: give either --draft or --heads");
  const std::string gamma = args.str("gamma", std::to_string(kDefaultGamma));
  if (gamma == "auto" || gamma == "heuristic") {
    options.gamma_mode = gamma == "auto" ? GammaMode::kAuto : GammaMode::kHeuristic;
  } else {
    options.gamma =
        static_cast<int>(args.integer("gamma", kDefaultGamma, 1, kMaxGamma,
                                      "auto, heuristic or in 1.." + std::to_string(kMaxGamma)));
  }
  options.gamma_max = static_cast<int>(args.integer("gamma-max", kDefaultGammaMax, 1, kMaxGamma));
  options.lookup_options.min_ngram =
      static_cast<int>(args.integer("min-ngram", kDefaultMinNgram, 1, kMaxNgram));
  options.lookup_options.max_ngram =
      static_cast<int>(args.integer("max-ngram", kDefaultMaxNgram, 1, kMaxNgram));
  if (args.has("tree")) {
    // --tree "3,2,1,1": children per node at each depth.
    options.tree_branches =
        int_list("tree", args.str("tree", ""), "counts like 3,2,1,1", 1, kMaxTreeBranches);
    if (args.has("gamma") && gamma != std::to_string(options.tree_branches.size())) {
      fail("--gamma: a tree's depth is the length of --tree (", options.tree_branches.size(), ")");
    }
  }
  options.tree_without_replacement = !args.has("with-replacement");
  options.sampling.temperature = static_cast<float>(args.num("temperature", 1.0));
  options.sampling.top_k = static_cast<int>(args.integer("top-k", 0, 0, 1000000));
  options.sampling.top_p = static_cast<float>(args.num("top-p", 1.0));
  // At most 2^53 - 1, as maxTokens in JS.
  options.max_new_tokens = static_cast<size_t>(args.integer("max-tokens", 200, 1, kMaxSafeInteger));
  // --stop 2,32000: token ids that end generation (e.g. the tokenizer's EOS).
  if (args.has("stop")) {
    const std::string stop = args.str("stop", "");
    options.stop_tokens = int_list("stop", stop, "token ids like 2,32000", 0, 0x7fffffff);
  }
  return options;
}

}  // namespace

namespace {

// --threads N: the models' passes split over N threads (the same tokens for any N).
int threads_option(const Args& args) {
  return static_cast<int>(args.integer("threads", 1, 1, kernels::ThreadPool::kMaxThreads));
}

// Byte-level models print text; a Hugging Face folder's model (its tokenizer lives in JS) prints
// token ids, "[id]" each (the prompt's bytes are its ids).
std::string tokens_text(const std::vector<int>& tokens, bool bytes) {
  if (bytes) return decode(tokens);
  std::string s;
  for (int t : tokens) s += "[" + std::to_string(t) + "]";
  return s;
}

}  // namespace

int cmd_generate(const std::vector<std::string>& argv) {
  const Args args(
      argv,
      {"target", "draft", "heads", "prompt", "gamma", "gamma-max", "tree", "min-ngram", "max-ngram",
       "temperature", "top-k", "top-p", "seed", "max-tokens", "threads", "weights", "stop"},
      {"plain", "json", "lookup", "with-replacement"});
  if (!args.has("target")) fail("--target: required (a .safetensors model)");
  if (!args.has("prompt")) fail("--prompt: required");
  const DecoderOptions options = decoder_options(args);
  const uint64_t seed = args.seed("seed", 0);
  const std::string prompt = args.str("prompt", "");
  const bool json = args.has("json");

  kernels::ThreadPool pool(threads_option(args));
  Weights weights;
  const Weights* want = weights_option(args, weights);
  GPTModel target_model = GPTModel::from_path(args.str("target", ""), want);
  target_model.set_thread_pool(&pool);
  ModelSource target(target_model);
  // The draft model exists only for speculative decoding.
  std::unique_ptr<GPTModel> draft_model;
  std::unique_ptr<ModelSource> draft;
  if (!options.plain && args.has("draft")) {
    draft_model = std::make_unique<GPTModel>(GPTModel::from_path(args.str("draft", ""), want));
    draft_model->set_thread_pool(&pool);
    draft = std::make_unique<ModelSource>(*draft_model);
  }
  // Heads draft from the target's own hidden states.
  std::unique_ptr<MedusaHeads> heads;
  std::unique_ptr<HeadsProposer> heads_proposer;
  if (!options.plain && args.has("heads")) {
    heads =
        std::make_unique<MedusaHeads>(MedusaHeads::from_file(args.str("heads", ""), target_model));
    heads_proposer = std::make_unique<HeadsProposer>(*heads, target);
  }
  std::unique_ptr<DraftModelProposer> draft_proposer;
  if (draft) draft_proposer = std::make_unique<DraftModelProposer>(*draft);
  SpeculativeDecoder decoder(target, drafters({draft_proposer.get(), heads_proposer.get()}),
                             encode(prompt), options);
  Rng rng(seed);

  const bool bytes = target_model.config().vocab_size == kByteVocabSize;
  auto text_of = [bytes](const std::vector<int>& tokens) { return tokens_text(tokens, bytes); };
  std::vector<IterationRecord> records;
  const auto t0 = std::chrono::steady_clock::now();
  while (!decoder.done()) {
    records.push_back(decoder.step(rng));
    if (!json) {  // stream the text as it comes
      const std::string piece = text_of(records.back().emitted);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  }
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const DecoderStats& stats = decoder.stats();

  if (json) {
    const std::vector<int> generated = decoder.generated();
    std::printf(
        "{\"prompt\":%s,\"text\":%s,\"tokens\":%s,\"settings\":%s,\"trace\":%s,\"stats\":%s,"
        "\"pool\":%s}\n",
        json_escape(prompt).c_str(), json_escape(text_of(generated)).c_str(),
        json_array(generated).c_str(), settings_json(args, options, seed).c_str(),
        trace_json(records).c_str(), stats_json(stats, wall_ms).c_str(), pool_json(pool).c_str());
    return 0;
  }
  std::printf("\n");
  std::fprintf(
      stderr,
      "%zu tokens in %zu target passes (%.2f tokens/pass), acceptance %.3f, %.3f ms/token\n",
      stats.generated, stats.target_passes, stats.tokens_per_pass(), stats.acceptance_rate(),
      stats.generated ? wall_ms / stats.generated : 0.0);
  return 0;
}

}  // namespace specdec::cli
