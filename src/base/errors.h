// The one error type of the library: bad input from a caller. Messages name the argument
// and the offending value, e.g. "draft_probs: expected 4 rows (gamma), got 3". In base/, under
// every folder (kernels -> sampling -> specdec -> model -> bench -> cli/bindings), so that each
// can throw it without including a folder above its own.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace specdec {

class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& what) : std::invalid_argument(what) {}
};

// fail("gamma", ": must be >= 1, got ", g) builds the message from its pieces and throws.
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(os.str());
}

}  // namespace specdec
