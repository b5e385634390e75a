// specdec generate: speculative (or, with --plain, autoregressive) decoding with two GPT
// models from safetensors files. Text mode streams the generated text to stdout and a summary
// to stderr; --json prints one object with the settings, the per-iteration trace and stats.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "model/gpt_model.h"
#include "model/model_source.h"
#include "model/tokenizer.h"
#include "sampling/rng.h"
#include "specdec/decoder.h"
#include "specdec/errors.h"

namespace specdec::cli {
namespace {

// A JSON number; JSON has no NaN or infinity.
std::string json_number(double v) {
  if (v != v || v - v != 0.0) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string settings_json(const Args& args, const DecoderOptions& options, long long seed) {
  const bool plain = options.plain;
  return "{\"target\":" + json_escape(args.str("target", "")) +
         ",\"draft\":" + (plain ? "null" : json_escape(args.str("draft", ""))) +
         ",\"plain\":" + (plain ? "true" : "false") +
         ",\"gamma\":" + std::to_string(options.gamma) +
         ",\"temperature\":" + json_number(options.sampling.temperature) +
         ",\"top_k\":" + std::to_string(options.sampling.top_k) +
         ",\"top_p\":" + json_number(options.sampling.top_p) + ",\"seed\":" + std::to_string(seed) +
         ",\"max_tokens\":" + std::to_string(options.max_new_tokens) + "}";
}

std::string trace_json(const std::vector<IterationRecord>& records) {
  std::string out = "[";
  for (size_t i = 0; i < records.size(); ++i) {
    const IterationRecord& r = records[i];
    out += std::string(i ? "," : "") + "{\"proposed\":" + json_array(r.proposed) +
           ",\"n_accepted\":" + std::to_string(r.verify.n_accepted) +
           ",\"emitted\":" + json_array(r.emitted) +
           ",\"bonus\":" + (r.verify.bonus ? "true" : "false") + "}";
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
         ",\"wall_ms\":" + json_number(wall_ms) +
         ",\"ms_per_token\":" + json_number(s.generated ? wall_ms / s.generated : 0.0) + "}";
}

}  // namespace

int cmd_generate(const std::vector<std::string>& argv) {
  const Args args(
      argv,
      {"target", "draft", "prompt", "gamma", "temperature", "top-k", "top-p", "seed", "max-tokens"},
      {"plain", "json"});
  if (!args.has("target")) fail("--target: required (a .safetensors model)");
  if (!args.has("prompt")) fail("--prompt: required");
  DecoderOptions options;
  options.plain = args.has("plain");
  if (!options.plain && !args.has("draft")) fail("--draft: required unless --plain");
  const long long gamma = args.integer("gamma", 4);
  if (gamma < 1 || gamma > kMaxGamma) fail("--gamma: must be in 1..", kMaxGamma, ", got ", gamma);
  options.gamma = static_cast<int>(gamma);
  options.sampling.temperature = static_cast<float>(args.num("temperature", 1.0));
  const long long top_k = args.integer("top-k", 0);
  if (top_k < 0 || top_k > 1000000) fail("--top-k: must be in 0..1000000, got ", top_k);
  options.sampling.top_k = static_cast<int>(top_k);
  options.sampling.top_p = static_cast<float>(args.num("top-p", 1.0));
  const long long max_tokens = args.integer("max-tokens", 200);
  if (max_tokens < 1) fail("--max-tokens: must be >= 1, got ", max_tokens);
  options.max_new_tokens = static_cast<size_t>(max_tokens);
  const long long seed = args.integer("seed", 0);
  if (seed < 0) fail("--seed: must be >= 0, got ", seed);
  const std::string prompt = args.str("prompt", "");
  const bool json = args.has("json");

  const GPTModel target_model = GPTModel::from_file(args.str("target", ""));
  ModelSource target(target_model);
  // The draft model exists only for speculative decoding.
  std::unique_ptr<GPTModel> draft_model;
  std::unique_ptr<ModelSource> draft;
  if (!options.plain) {
    draft_model = std::make_unique<GPTModel>(GPTModel::from_file(args.str("draft", "")));
    draft = std::make_unique<ModelSource>(*draft_model);
  }
  SpeculativeDecoder decoder(target, draft.get(), encode(prompt), options);
  Rng rng(static_cast<uint64_t>(seed));

  std::vector<IterationRecord> records;
  const auto t0 = std::chrono::steady_clock::now();
  while (!decoder.done()) {
    records.push_back(decoder.step(rng));
    if (!json) {  // stream the text as it comes
      const std::string piece = decode(records.back().emitted);
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
        "{\"prompt\":%s,\"text\":%s,\"tokens\":%s,\"settings\":%s,\"trace\":%s,\"stats\":%s}\n",
        json_escape(prompt).c_str(), json_escape(decode(generated)).c_str(),
        json_array(generated).c_str(), settings_json(args, options, seed).c_str(),
        trace_json(records).c_str(), stats_json(stats, wall_ms).c_str());
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
