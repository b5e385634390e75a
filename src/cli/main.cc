// specdec: command-line front end of the library (native build only).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>&);
  const char* usage;
};

const Command kCommands[] = {
    {"analytics", specdec::cli::cmd_analytics,
     "analytics --alpha A --cost C --gamma-max N [--json]   tokens/pass and speedup by gamma"},
    {"toy-demo", specdec::cli::cmd_toy_demo,
     "toy-demo [--seed S] [--gamma G] [--max-tokens N] [--json]   the lesson's toy decode"},
    {"generate", specdec::cli::cmd_generate,
     "generate --target T (--draft D | --heads H | --lookup | --plain) --prompt P\n"
     "           [--gamma G|auto|heuristic] [--gamma-max G] [--tree 3,2,1,1 [--with-replacement]]\n"
     "           [--min-ngram N] [--max-ngram N] [--temperature T] [--top-k K] [--top-p P]\n"
     "           [--seed S] [--max-tokens N] [--stop ID,ID] [--threads N] [--weights f32|int8]\n"
     "           [--json]   decode text (--stop: token ids that end it, e.g. the EOS ids;\n"
     "           --weights int8 quantizes float files at load; T and D may be GGUF files or\n"
     "           Hugging Face folders: llama / qwen2 / gpt2, tokens shown as [id])"},
    {"logits", specdec::cli::cmd_logits,
     "logits --model M --prompt P [--weights f32|int8] [--json]   next-token log-probabilities\n"
     "           (M: our file, a .gguf file or a Hugging Face folder; the prompt's bytes are ids)"},
    {"quantize", specdec::cli::cmd_quantize,
     "quantize IN OUT   a float model file -> 8-bit weights (blocks of 32, F16 scales)"},
    {"bench", specdec::cli::cmd_bench,
     "bench [--target T] [--draft D] [--heads H] [--repeats N] [--max-tokens N] [--gamma-max G]\n"
     "           [--threads N [--thread-counts 1,2]]\n"
     "           [--only kernels,models,verify,breakdown,threads,spec,modes] [--quick] [--json]\n"
     "           native benchmark tables (modes: only when named; threads: with --threads > 1)"},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: specdec <command> [options]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %s\n", c.usage);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string name = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.run(rest);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "specdec %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "specdec: unknown command '%s'\n\n", name.c_str());
  usage(stderr);
  return 2;
}
