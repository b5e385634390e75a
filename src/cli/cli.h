// The `specdec` command line: one function per subcommand, registered in main.cc.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace specdec::cli {

// --name value / --flag arguments after the subcommand. Unknown or malformed options throw
// specdec::Error with a message naming the option.
class Args {
 public:
  Args(const std::vector<std::string>& argv, const std::vector<std::string>& value_options,
       const std::vector<std::string>& flag_options);
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string str(const std::string& name, const std::string& fallback) const;
  double num(const std::string& name, double fallback) const;
  // An integer in [lo, hi] (fallback when absent); anything else is refused naming the option
  // and the value as given (integer_in below).
  long long integer(const std::string& name, long long fallback, long long lo, long long hi,
                    const std::string& expected = "") const;
  // A seed: an integer in [0, 2^64), the range of the JS API's seeds (a bigint there).
  uint64_t seed(const std::string& name, uint64_t fallback) const;

 private:
  std::map<std::string, std::string> values_;
};

// 2^53 - 1: the largest count the JS API takes (Number.MAX_SAFE_INTEGER), e.g. maxTokens.
constexpr long long kMaxSafeInteger = (1LL << 53) - 1;

// Parses all of `text` as a base-10 integer: false if it is not one; *fits false when it is one
// that long long cannot hold.
bool parse_integer(const std::string& text, long long* v, bool* fits);
// `text`, the value of --name, as an integer in [lo, hi], or a specdec::Error naming the option
// and the text as given: "--name: must be in lo..hi, got text" ("must be " + expected, when
// given), or "--name: not an integer: 'text'". Every integer option goes through it: none is
// cast to a narrower type or clamped before its range is checked.
long long integer_in(const std::string& name, const std::string& text, long long lo, long long hi,
                     const std::string& expected = "");

// Each returns the process exit code.
int cmd_analytics(const std::vector<std::string>& argv);
int cmd_toy_demo(const std::vector<std::string>& argv);
int cmd_generate(const std::vector<std::string>& argv);
int cmd_logits(const std::vector<std::string>& argv);
int cmd_bench(const std::vector<std::string>& argv);
int cmd_quantize(const std::vector<std::string>& argv);

}  // namespace specdec::cli

namespace specdec {
class GPTModel;
class MedusaHeads;
enum class Weights;
}  // namespace specdec

namespace specdec::cli {

// `specdec bench --only modes` (bench_modes.cc): the decoding modes' tables; heads may be null.
int bench_modes(const GPTModel& target, const GPTModel& draft, const MedusaHeads* heads, int tokens,
                int repeats, int gamma_max);

// --weights f32|int8 (how to hold the Linear weights, model/gpt_model.h): null when absent
// (the file's own layout), else &storage set to the choice.
const Weights* weights_option(const Args& args, Weights& storage);

// Minimal JSON writing helpers shared by subcommands. json_escape keeps well-formed UTF-8 and
// replaces each ill-formed part by U+FFFD exactly as TextDecoder does in JS.
std::string json_escape(const std::string& s);
std::string json_array(const std::vector<int>& v);

}  // namespace specdec::cli
