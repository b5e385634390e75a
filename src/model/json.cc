#include "model/json.h"

#include <cstdlib>
#include <set>

#include "base/errors.h"

namespace specdec::json {
namespace {

class Parser {
 public:
  Parser(const char* text, size_t size) : s_(text), n_(size) {}

  Value parse_document() {
    skip_ws();
    Value v = parse_value(0);
    skip_ws();
    if (pos_ != n_) error("unexpected data after the value");
    return v;
  }

 private:
  [[noreturn]] void error(const char* what) const { fail("JSON: ", what, " at byte ", pos_); }

  bool at_end() const { return pos_ >= n_; }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }

  void skip_ws() {
    while (!at_end() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void expect(char c, const char* what) {
    if (peek() != c || at_end()) error(what);
    ++pos_;
  }

  Value parse_value(int depth) {
    if (depth >= kMaxDepth) error("nesting too deep");
    if (++values_ > kMaxValues) error("too many values");
    if (at_end()) error("unexpected end of input");
    const char c = s_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    Value v;
    if (c == '"') {
      v.type = Value::Type::kString;
      v.text = parse_string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.type = Value::Type::kNumber;
      v.text = parse_number();
    } else if (literal("true")) {
      v.type = Value::Type::kBool;
      v.boolean = true;
    } else if (literal("false")) {
      v.type = Value::Type::kBool;
    } else if (!literal("null")) {
      error("unexpected character");
    }
    return v;
  }

  bool literal(const char* word) {
    size_t len = 0;
    while (word[len]) ++len;
    if (n_ - pos_ < len) return false;
    for (size_t i = 0; i < len; ++i) {
      if (s_[pos_ + i] != word[i]) return false;
    }
    pos_ += len;
    return true;
  }

  Value parse_object(int depth) {
    Value v;
    v.type = Value::Type::kObject;
    std::set<std::string> keys;
    parse_items('}', "expected ',' or '}'", [&] {
      if (peek() != '"' || at_end()) error("expected a string key");
      const size_t key_pos = pos_;
      std::string key = parse_string();
      if (!keys.insert(key).second) {
        pos_ = key_pos;
        error("duplicate key");
      }
      skip_ws();
      expect(':', "expected ':'");
      skip_ws();
      Value item = parse_value(depth + 1);
      v.members.emplace_back(std::move(key), std::move(item));
    });
    return v;
  }

  Value parse_array(int depth) {
    Value v;
    v.type = Value::Type::kArray;
    parse_items(']', "expected ',' or ']'", [&] { v.items.push_back(parse_value(depth + 1)); });
    return v;
  }

  // The items of an object or an array, from its opening bracket through `close`: item() parses
  // one (starting after white space), items are separated by ','.
  template <typename Item>
  void parse_items(char close, const char* expected, Item item) {
    ++pos_;  // '{' or '['
    skip_ws();
    if (peek() == close && !at_end()) {
      ++pos_;
      return;
    }
    while (true) {
      skip_ws();
      item();
      skip_ws();
      if (peek() == ',' && !at_end()) {
        ++pos_;
        continue;
      }
      expect(close, expected);
      return;
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, returned as written.
  std::string parse_number() {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (!at_end() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (peek() == '-') ++pos_;
    if (peek() == '0' && !at_end()) {
      ++pos_;
    } else if (digits() == 0) {
      error("invalid number");
    }
    if (peek() == '.' && !at_end()) {
      ++pos_;
      if (digits() == 0) error("invalid number: no digits after '.'");
    }
    if ((peek() == 'e' || peek() == 'E') && !at_end()) {
      ++pos_;
      if ((peek() == '+' || peek() == '-') && !at_end()) ++pos_;
      if (digits() == 0) error("invalid number: no digits in the exponent");
    }
    return std::string(s_ + start, pos_ - start);
  }

  unsigned hex4() {
    if (n_ - pos_ < 4) error("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        --pos_;
        error("invalid hex digit in \\u escape");
      }
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  // Length of the valid UTF-8 sequence starting at pos_ (non-ASCII lead byte), or 0.
  size_t utf8_length() const {
    const auto b = [&](size_t i) { return static_cast<unsigned char>(s_[pos_ + i]); };
    const unsigned char c = b(0);
    size_t len;
    unsigned cp;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return 0;
    }
    if (n_ - pos_ < len) return 0;
    for (size_t i = 1; i < len; ++i) {
      if ((b(i) & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (b(i) & 0x3f);
    }
    // Reject overlong forms, surrogates and code points above U+10FFFF.
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return 0;
    }
    return len;
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (at_end()) error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) error("control character in string");
      if (c >= 0x80) {
        const size_t len = utf8_length();
        if (len == 0) error("invalid UTF-8 in string");
        out.append(s_ + pos_, len);
        pos_ += len;
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (at_end()) error("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xdc00 && cp <= 0xdfff) error("unpaired low surrogate in \\u escape");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (n_ - pos_ < 2 || s_[pos_] != '\\' || s_[pos_ + 1] != 'u') {
              error("unpaired high surrogate in \\u escape");
            }
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xdc00 || low > 0xdfff) error("invalid low surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          error("invalid escape");
      }
    }
  }

  const char* s_;
  size_t n_;
  size_t pos_ = 0;
  size_t values_ = 0;  // values parsed so far (capped by kMaxValues)
};

}  // namespace

const Value* Value::find(const std::string& key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

Value parse(const char* text, size_t size) { return Parser(text, size).parse_document(); }

bool to_u64(const Value& v, uint64_t* out) {
  if (v.type != Value::Type::kNumber || v.text.empty()) return false;
  uint64_t x = 0;
  for (char c : v.text) {
    if (c < '0' || c > '9') return false;  // sign, fraction or exponent
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (x > (UINT64_MAX - d) / 10) return false;
    x = x * 10 + d;
  }
  *out = x;
  return true;
}

double to_double(const Value& v) { return std::strtod(v.text.c_str(), nullptr); }

const char* type_name(Value::Type type) {
  // In the order of Value::Type.
  static const char* const kNames[] = {"null", "boolean", "number", "string", "array", "object"};
  const auto i = static_cast<size_t>(type);
  return i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "value";
}

}  // namespace specdec::json
