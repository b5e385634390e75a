#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/errors.h"
#include "cli/cli.h"

namespace specdec::cli {

Args::Args(const std::vector<std::string>& argv, const std::vector<std::string>& value_options,
           const std::vector<std::string>& flag_options) {
  auto known = [](const std::vector<std::string>& list, const std::string& s) {
    return std::find(list.begin(), list.end(), s) != list.end();
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0) fail("unexpected argument '", a, "'");
    std::string name = a.substr(2), value;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      if (!known(value_options, name)) fail("unknown option --", name);
    } else if (known(flag_options, name)) {
      value = "1";
    } else if (known(value_options, name)) {
      if (i + 1 >= argv.size()) fail("option --", name, " needs a value");
      value = argv[++i];
    } else {
      fail("unknown option --", name);
    }
    values_[name] = value;
  }
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

double Args::num(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end != '\0' || !std::isfinite(v)) {
    fail("--", name, ": not a number: '", it->second, "'");
  }
  return v;
}

bool parse_integer(const std::string& text, long long* v, bool* fits) {
  char* end = nullptr;
  errno = 0;
  *v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0') return false;
  // strtoll clamps what does not fit to LLONG_MIN / LLONG_MAX: out of every range below.
  *fits = errno != ERANGE;
  return true;
}

long long integer_in(const std::string& name, const std::string& text, long long lo, long long hi,
                     const std::string& expected) {
  long long v = 0;
  bool fits = true;
  if (!parse_integer(text, &v, &fits)) fail("--", name, ": not an integer: '", text, "'");
  if (!fits || v < lo || v > hi) {
    // The value as given: what was cast to an int or clamped would name another number.
    if (expected.empty()) fail("--", name, ": must be in ", lo, "..", hi, ", got ", text);
    fail("--", name, ": must be ", expected, ", got ", text);
  }
  return v;
}

long long Args::integer(const std::string& name, long long fallback, long long lo, long long hi,
                        const std::string& expected) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : integer_in(name, it->second, lo, hi, expected);
}

uint64_t Args::seed(const std::string& name, uint64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  // Digits only: strtoull would take a sign (and negate), spaces, and clamp overflow to 2^64 - 1.
  const bool digits =
      !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  errno = 0;
  const unsigned long long v = digits ? std::strtoull(s.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE) {
    fail("--", name, ": must be an integer in [0, 2^64), got '", s, "'");
  }
  return static_cast<uint64_t>(v);
}

namespace {

// The WHATWG UTF-8 decoder (what TextDecoder does in JS), one step: at s[i], returns the
// number of bytes consumed and whether they formed a character. Ill-formed input consumes its
// "maximal subpart" (the lead byte and the continuation bytes that fit), replaced by one U+FFFD.
struct Utf8Step {
  size_t length;
  bool ok;
};

Utf8Step utf8_step(const std::string& s, size_t i) {
  const unsigned c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return {1, true};
  const size_t need = c >= 0xC2 && c <= 0xDF   ? 2
                      : c >= 0xE0 && c <= 0xEF ? 3
                      : c >= 0xF0 && c <= 0xF4 ? 4
                                               : 0;
  if (need == 0) return {1, false};
  unsigned lo = 0x80, hi = 0xBF;  // range of the second byte: no overlongs, surrogates, > U+10FFFF
  if (c == 0xE0) lo = 0xA0;
  if (c == 0xED) hi = 0x9F;
  if (c == 0xF0) lo = 0x90;
  if (c == 0xF4) hi = 0x8F;
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= s.size()) return {k, false};
    const unsigned b = static_cast<unsigned char>(s[i + k]);
    if (b < lo || b > hi) return {k, false};
    lo = 0x80;
    hi = 0xBF;
  }
  return {need, true};
}

}  // namespace

std::string json_escape(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const Utf8Step step = utf8_step(s, i);
    if (!step.ok) {
      out += "\\ufffd";  // e.g. a character cut by the token budget
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.append(s, i, step.length);
    }
    i += step.length;
  }
  return out + "\"";
}

std::string json_array(const std::vector<int>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

}  // namespace specdec::cli
