// Byte-level tokenizer: a token id is one byte of the UTF-8 text (vocabulary 256), as in
// models/data.py. Decoding may split a multi-byte character between calls; the bytes are
// returned as they are.
#pragma once

#include <string>
#include <vector>

#include "base/errors.h"

namespace specdec {

inline std::vector<int> encode(const std::string& text) {
  std::vector<int> tokens;
  tokens.reserve(text.size());
  for (unsigned char c : text) tokens.push_back(c);
  return tokens;
}

// Throws specdec::Error on an id outside [0, 256).
inline std::string decode(const std::vector<int>& tokens) {
  std::string text;
  text.reserve(tokens.size());
  for (int t : tokens) {
    if (t < 0 || t > 255) fail("decode: token ", t, " is not a byte (0..255)");
    text += static_cast<char>(static_cast<unsigned char>(t));
  }
  return text;
}

}  // namespace specdec
