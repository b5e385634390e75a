// The safetensors loader on valid files and on every kind of malformed file: each variant is
// the tiny fixture with its bytes or its JSON header mutated, and must throw specdec::Error
// with a message that names the problem.
#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "base/errors.h"
#include "model/gpt_model.h"
#include "model/json.h"
#include "sampling/rng.h"

namespace specdec {
namespace {

using json::Value;

std::string fixture(const std::string& name) {
  return std::string(SPECDEC_SOURCE_DIR) + "/tests/fixtures/" + name;
}

// ------------------------------------------------------------------ JSON building blocks

Value str(const std::string& s) {
  Value v;
  v.type = Value::Type::kString;
  v.text = s;
  return v;
}

Value num(const std::string& literal) {
  Value v;
  v.type = Value::Type::kNumber;
  v.text = literal;
  return v;
}

Value num(uint64_t n) { return num(std::to_string(n)); }

Value arr(std::vector<Value> items) {
  Value v;
  v.type = Value::Type::kArray;
  v.items = std::move(items);
  return v;
}

std::string to_json(const Value& v) {
  switch (v.type) {
    case Value::Type::kNull:
      return "null";
    case Value::Type::kBool:
      return v.boolean ? "true" : "false";
    case Value::Type::kNumber:
      return v.text;
    case Value::Type::kString: {
      std::string out = "\"";
      for (unsigned char c : v.text) {
        if (c == '"' || c == '\\') {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
      }
      return out + "\"";
    }
    case Value::Type::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < v.items.size(); ++i) out += (i ? "," : "") + to_json(v.items[i]);
      return out + "]";
    }
    case Value::Type::kObject: {
      std::string out = "{";
      for (size_t i = 0; i < v.members.size(); ++i) {
        out +=
            (i ? "," : "") + to_json(str(v.members[i].first)) + ":" + to_json(v.members[i].second);
      }
      return out + "}";
    }
  }
  return "";
}

// Replaces the member `key` of an object, or appends it.
void set(Value& object, const std::string& key, Value v) {
  for (auto& [k, old] : object.members) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  object.members.emplace_back(key, std::move(v));
}

Value& get(Value& object, const std::string& key) {
  for (auto& [k, v] : object.members) {
    if (k == key) return v;
  }
  throw std::runtime_error("test: no member " + key);
}

void erase(Value& object, const std::string& key) {
  for (auto it = object.members.begin(); it != object.members.end(); ++it) {
    if (it->first == key) {
      object.members.erase(it);
      return;
    }
  }
  throw std::runtime_error("test: no member " + key);
}

// ------------------------------------------------------------------ an editable file

struct File {
  Value header;
  std::vector<uint8_t> data;

  static File load(const std::string& name) {
    const std::vector<uint8_t> bytes = read_file(fixture(name), 64 << 20);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
    File f;
    f.header = json::parse(reinterpret_cast<const char*>(bytes.data() + 8), n);
    f.data.assign(bytes.begin() + 8 + n, bytes.end());
    return f;
  }

  std::vector<uint8_t> bytes() const { return with_header(to_json(header)); }

  std::vector<uint8_t> with_header(const std::string& text) const {
    std::vector<uint8_t> out;
    out.reserve(8 + text.size() + data.size());
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(text.size() >> (8 * i)));
    out.insert(out.end(), text.begin(), text.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }

  Value& tensor(const std::string& name) { return get(header, name); }
  Value& metadata() { return get(header, "__metadata__"); }

  uint64_t begin_of(const std::string& name) {
    uint64_t b = 0;
    json::to_u64(get(tensor(name), "data_offsets").items[0], &b);
    return b;
  }

  // Adds a tensor whose bytes are appended to the data section.
  void add_tensor(const std::string& name, const std::string& dtype, std::vector<uint64_t> shape,
                  const std::vector<uint8_t>& bytes) {
    Value entry;
    entry.type = Value::Type::kObject;
    std::vector<Value> dims;
    for (uint64_t d : shape) dims.push_back(num(d));
    set(entry, "dtype", str(dtype));
    set(entry, "shape", arr(dims));
    set(entry, "data_offsets", arr({num(data.size()), num(data.size() + bytes.size())}));
    data.insert(data.end(), bytes.begin(), bytes.end());
    set(header, name, entry);
  }
};

GPTModel load(const std::vector<uint8_t>& bytes) {
  return GPTModel::from_safetensors(bytes.data(), bytes.size());
}

std::vector<float> logits_of(const GPTModel& model, const std::vector<int>& tokens) {
  KVCache cache(model.config());
  return model.forward(tokens, cache);
}

void put_u64(std::vector<uint8_t>& bytes, uint64_t v) {
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
}

void put_f32(File& f, const std::string& tensor, size_t index, float v) {
  std::memcpy(f.data.data() + f.begin_of(tensor) + 4 * index, &v, 4);
}

// ------------------------------------------------------------------ valid files

TEST(Safetensors, LoadsTheFixtures) {
  for (const char* name : {"tiny_f32.safetensors", "tiny_f16.safetensors"}) {
    const std::vector<uint8_t> bytes = read_file(fixture(name), 64 << 20);
    const SafetensorsView view = parse_safetensors(bytes.data(), bytes.size());
    EXPECT_EQ(view.tensors.size(), 2u + 2 * 12 + 2) << name;
    EXPECT_EQ(view.metadata.at("n_layer"), "2");
    const TensorView* wte = view.find("transformer.wte.weight");
    ASSERT_NE(wte, nullptr);
    EXPECT_EQ(wte->shape, (std::vector<uint64_t>{256, 32}));
    EXPECT_EQ(wte->numel, 256u * 32);
    EXPECT_EQ(wte->dtype,
              std::string(name).find("f16") != std::string::npos ? DType::kF16 : DType::kF32);
    EXPECT_NO_THROW(load(bytes)) << name;
  }
}

// The test's own serialiser round-trips the file: the variants below differ only where meant.
TEST(Safetensors, ReserialisedFileGivesTheSameModel) {
  const std::vector<uint8_t> original = read_file(fixture("tiny_f32.safetensors"), 64 << 20);
  const std::vector<uint8_t> copy = File::load("tiny_f32.safetensors").bytes();
  const std::vector<int> tokens = {72, 105, 33};
  EXPECT_EQ(logits_of(load(original), tokens), logits_of(load(copy), tokens));
}

// nanoGPT ties the LM head to wte; a file may instead carry lm_head.weight, which is then used.
TEST(Safetensors, UsesAnUntiedLmHead) {
  File f = File::load("tiny_f32.safetensors");
  const uint64_t wte = f.begin_of("transformer.wte.weight");
  const std::vector<uint8_t> wte_bytes(f.data.begin() + wte, f.data.begin() + wte + 256 * 32 * 4);
  const std::vector<int> tokens = {72, 105, 33};

  File same = f;
  same.add_tensor("lm_head.weight", "F32", {256, 32}, wte_bytes);
  EXPECT_EQ(logits_of(load(same.bytes()), tokens), logits_of(load(f.bytes()), tokens));

  File zero = f;
  zero.add_tensor("lm_head.weight", "F32", {256, 32}, std::vector<uint8_t>(256 * 32 * 4, 0));
  for (float v : logits_of(load(zero.bytes()), tokens)) ASSERT_EQ(v, 0.0f);
}

TEST(Safetensors, F16ToF32IsExactForAllInputs) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const bool negative = h & 0x8000;
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    if (exponent == 0x1f) {
      if (mantissa == 0) {
        EXPECT_TRUE(std::isinf(f) && std::signbit(f) == negative) << h;
      } else {
        EXPECT_TRUE(std::isnan(f)) << h;
      }
      continue;
    }
    const double magnitude =
        exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
    EXPECT_EQ(static_cast<double>(f), negative ? -magnitude : magnitude) << h;
    EXPECT_EQ(std::signbit(f), negative) << h;
  }
}

// ------------------------------------------------------------------ malformed files

struct BadCase {
  const char* what;
  std::function<std::vector<uint8_t>()> make;
  const char* message;  // must appear in the error
};

File f32() { return File::load("tiny_f32.safetensors"); }

// A copy of the F32 fixture with header edited by fn.
std::function<std::vector<uint8_t>()> edit(std::function<void(File&)> fn) {
  return [fn] {
    File f = f32();
    fn(f);
    return f.bytes();
  };
}

std::function<std::vector<uint8_t>()> header_text(const std::string& text) {
  return [text] { return f32().with_header(text); };
}

std::function<std::vector<uint8_t>()> config(const std::string& key, const std::string& value) {
  return edit([=](File& f) { set(f.metadata(), key, str(value)); });
}

const char* const kAttn = "transformer.h.0.attn.c_attn.weight";

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      // Framing.
      {"empty file", [] { return std::vector<uint8_t>(); }, "0 bytes is too short"},
      {"7 bytes",
       [] {
         std::vector<uint8_t> b = f32().bytes();
         b.resize(7);
         return b;
       },
       "7 bytes is too short"},
      {"truncated in the header",
       [] {
         std::vector<uint8_t> b = f32().bytes();
         b.resize(100);
         return b;
       },
       "exceeds the 92 bytes after the length field"},
      {"truncated in the data",
       [] {
         std::vector<uint8_t> b = f32().bytes();
         b.pop_back();
         return b;
       },
       "outside the data section"},
      {"header length over the cap",
       [] {
         std::vector<uint8_t> b = f32().bytes();
         put_u64(b, uint64_t{1} << 40);
         return b;
       },
       "header length 1099511627776 exceeds the limit of 1048576 bytes"},
      {"header length past the end",
       [] {
         std::vector<uint8_t> b = f32().bytes();
         put_u64(b, b.size() - 7);
         return b;
       },
       "(truncated file?)"},
      // JSON.
      {"not JSON", header_text("safetensors"), "header: JSON: unexpected character at byte 0"},
      {"unterminated", header_text("{\"a\": [1, 2"), "JSON: expected ',' or ']'"},
      {"trailing data", header_text("{} x"), "unexpected data after the value"},
      {"bad escape", header_text("{\"a\\q\": 1}"), "invalid escape"},
      {"lone surrogate", header_text("{\"\\ud800\": 1}"), "unpaired high surrogate"},
      {"invalid UTF-8", header_text("{\"\xff\": 1}"), "invalid UTF-8"},
      {"control character", header_text("{\"a\nb\": 1}"), "control character in string"},
      {"bad number", header_text("{\"a\": 01}"), "expected ',' or '}'"},
      {"deep nesting", header_text(std::string(100, '[') + std::string(100, ']')),
       "nesting too deep"},
      {"header is an array", header_text("[]"), "header must be a JSON object, got array"},
      {"duplicate tensor",
       edit([](File& f) { f.header.members.push_back(f.header.members.front()); }),
       "duplicate key"},
      // Tensor entries.
      {"missing tensor", edit([](File& f) { erase(f.header, "transformer.h.1.mlp.c_fc.bias"); }),
       "missing tensor 'transformer.h.1.mlp.c_fc.bias'"},
      {"extra tensor",
       edit([](File& f) { f.add_tensor("transformer.h.2.ln_1.weight", "F32", {0}, {}); }),
       "unexpected tensor 'transformer.h.2.ln_1.weight'"},
      {"entry not an object", edit([](File& f) { set(f.header, kAttn, num(5)); }),
       "entry must be an object, got number"},
      {"unknown entry key", edit([](File& f) { set(f.tensor(kAttn), "scale", num(1)); }),
       "unknown key 'scale'"},
      {"missing offsets", edit([](File& f) { erase(f.tensor(kAttn), "data_offsets"); }),
       "missing 'data_offsets'"},
      {"dtype BF16", edit([](File& f) { set(f.tensor(kAttn), "dtype", str("BF16")); }),
       "has dtype 'BF16' (supported: F32, F16, I8)"},
      {"dtype not a string", edit([](File& f) { set(f.tensor(kAttn), "dtype", num(32)); }),
       "dtype must be a string"},
      {"dtype disagrees with the data size",
       edit([](File& f) { set(f.tensor(kAttn), "dtype", str("F16")); }),
       "span 12288 bytes, but shape [96, 32] of F16 needs 6144"},
      {"wrong shape", edit([](File& f) {
         set(f.tensor(kAttn), "shape", arr({num(32), num(96)}));
       }),
       "tensor 'transformer.h.0.attn.c_attn.weight' has shape [32, 96], expected [96, 32]"},
      {"flattened shape",
       edit([](File& f) { set(f.tensor("transformer.wpe.weight"), "shape", arr({num(20480)})); }),
       "has shape [20480], expected [640, 32]"},
      {"negative dimension", edit([](File& f) {
         set(f.tensor(kAttn), "shape", arr({num("-96"), num(32)}));
       }),
       "shape must hold non-negative integers"},
      {"fractional dimension", edit([](File& f) {
         set(f.tensor(kAttn), "shape", arr({num("96.0"), num(32)}));
       }),
       "shape must hold non-negative integers"},
      {"huge shape", edit([](File& f) {
         set(f.tensor(kAttn), "shape", arr({num(uint64_t{1} << 40), num(uint64_t{1} << 40)}));
       }),
       "is too large"},
      {"rank 9",
       edit([](File& f) { set(f.tensor(kAttn), "shape", arr(std::vector<Value>(9, num(1)))); }),
       "at most 8 integers"},
      {"offsets past the data", edit([](File& f) {
         const uint64_t n = f.data.size();
         set(f.tensor(kAttn), "data_offsets", arr({num(n - 12288 + 4), num(n + 4)}));
       }),
       "outside the data section"},
      {"offsets reversed", edit([](File& f) {
         set(f.tensor(kAttn), "data_offsets", arr({num(12288), num(0)}));
       }),
       "outside the data section"},
      {"offsets overflow", edit([](File& f) {
         set(f.tensor(kAttn), "data_offsets", arr({num("0"), num("18446744073709551616")}));
       }),
       "data_offsets must be two non-negative integers"},
      {"one offset", edit([](File& f) { set(f.tensor(kAttn), "data_offsets", arr({num(0)})); }),
       "data_offsets must be two non-negative integers"},
      {"overlapping tensors", edit([](File& f) {
         set(f.tensor("transformer.h.0.ln_1.bias"), "data_offsets",
             get(f.tensor("transformer.h.0.ln_1.weight"), "data_offsets"));
       }),
       "overlap"},
      // Metadata and config.
      {"no metadata", edit([](File& f) { erase(f.header, "__metadata__"); }),
       "__metadata__ lacks 'vocab_size'"},
      {"metadata not an object", edit([](File& f) { set(f.header, "__metadata__", arr({})); }),
       "__metadata__ must be an object, got array"},
      {"config as a number", edit([](File& f) { set(f.metadata(), "n_layer", num(2)); }),
       "value of 'n_layer' must be a string, got number"},
      {"missing n_head", edit([](File& f) { erase(f.metadata(), "n_head"); }), "lacks 'n_head'"},
      {"n_layer 0", config("n_layer", "0"), "config n_layer = 0 is outside 1..128"},
      {"n_layer 129", config("n_layer", "129"), "config n_layer = 129 is outside 1..128"},
      {"n_layer 3", config("n_layer", "3"), "missing tensor 'transformer.h.2.ln_1.weight'"},
      {"n_layer 1", config("n_layer", "1"), "unexpected tensor 'transformer.h.1."},
      {"n_head 5", config("n_head", "5"), "n_head = 5 does not divide n_embd = 32"},
      {"n_head 0", config("n_head", "0"), "n_head = 0 does not divide n_embd = 32"},
      {"n_embd 8196", config("n_embd", "8196"), "config n_embd = 8196 is outside 1..8192"},
      {"n_embd 64", config("n_embd", "64"), "has shape [256, 32], expected [256, 64]"},
      {"vocab 255", config("vocab_size", "255"), "vocab_size = 255, expected 256 (byte-level"},
      {"block_size 0", config("block_size", "0"), "config max_positions = 0 is outside 1.."},
      {"block_size 8193", config("block_size", "8193"), "context 8193 is outside 1..8192"},
      {"block_size 641", config("block_size", "641"), "has shape [640, 32], expected [641, 32]"},
      {"config not a number", config("n_layer", "two"), "'n_layer' = 'two' is not a decimal"},
      {"config negative", config("n_layer", "-2"), "is not a decimal integer"},
      {"config with sign", config("n_layer", "+2"), "is not a decimal integer"},
      {"config too long", config("n_layer", "0000000002"), "is not a decimal integer"},
      {"parameters over the cap", edit([](File& f) {
         set(f.metadata(), "n_layer", str("64"));
         set(f.metadata(), "n_embd", str("4096"));
       }),
       "in memory (int8), over the limit of 3221225472"},
      {"KV cache over the cap", edit([](File& f) {
         set(f.metadata(), "n_layer", str("64"));
         set(f.metadata(), "n_embd", str("512"));
         set(f.metadata(), "block_size", str("8192"));
       }),
       "a KV cache of 64 layers x 8192 positions x 512 needs"},
      // Weights.
      {"NaN weight",
       [] {
         File f = f32();
         put_f32(f, "transformer.h.0.ln_2.bias", 3, std::numeric_limits<float>::quiet_NaN());
         return f.bytes();
       },
       "tensor 'transformer.h.0.ln_2.bias' holds a non-finite value (nan) at index 3"},
      {"infinite weight",
       [] {
         File f = f32();
         put_f32(f, "transformer.wte.weight", 100, -std::numeric_limits<float>::infinity());
         return f.bytes();
       },
       "tensor 'transformer.wte.weight' holds a non-finite value (-inf) at index 100"},
      {"F16 NaN weight",
       [] {
         File f = File::load("tiny_f16.safetensors");
         const uint64_t at = f.begin_of("transformer.ln_f.weight") + 2 * 5;
         f.data[at] = 0x00;
         f.data[at + 1] = 0x7e;
         return f.bytes();
       },
       "tensor 'transformer.ln_f.weight' holds a non-finite value (nan) at index 5"},
  };
  return cases;
}

TEST(Safetensors, RejectsMalformedFiles) {
  for (const BadCase& c : bad_cases()) {
    const std::vector<uint8_t> bytes = c.make();
    try {
      load(bytes);
      ADD_FAILURE() << c.what << ": loaded without error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("model file: ", 0), 0u) << c.what << ": " << message;
      EXPECT_NE(message.find(c.message), std::string::npos)
          << c.what << ":\n  got      " << message << "\n  expected " << c.message;
    }
  }
}

TEST(Safetensors, MissingFileIsAnError) {
  EXPECT_THROW(GPTModel::from_file(fixture("no_such_model.safetensors")), Error);
}

// Random corruption (edits in the header, random bytes anywhere, truncation) either loads or
// throws specdec::Error; never anything else (run under SPECDEC_SANITIZE for memory errors).
TEST(Safetensors, SurvivesRandomCorruption) {
  const std::vector<uint8_t> base = f32().bytes();
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | base[i];
  Rng rng(2024);
  int loaded = 0, rejected = 0;
  for (int trial = 0; trial < 600; ++trial) {
    std::vector<uint8_t> b = base;
    const int edits = 1 + static_cast<int>(rng.next_u32() % 4);
    for (int e = 0; e < edits; ++e) {
      const uint32_t kind = rng.next_u32() % 3;
      const size_t in_header = 8 + rng.next_u32() % header_len;
      if (kind == 0) {  // a bit pattern flipped in the header text
        b[in_header] ^= static_cast<uint8_t>(1 + rng.next_u32() % 255);
      } else if (kind == 1) {  // a header character replaced by a structural one
        const char pool[] = "{}[]\",:0123456789-.eE \\u";
        b[in_header] = static_cast<uint8_t>(pool[rng.next_u32() % (sizeof pool - 1)]);
      } else {  // any byte, the length field and the data included
        b[rng.next_u32() % b.size()] = static_cast<uint8_t>(rng.next_u32());
      }
    }
    if (rng.next_u32() % 4 == 0) b.resize(rng.next_u32() % b.size());  // truncation
    try {
      load(b);
      ++loaded;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 300);
  RecordProperty("loaded", loaded);
}

// ------------------------------------------------------------------ the JSON parser

TEST(Json, ParsesValidDocuments) {
  const char* text =
      " {\"a\": [1, -2.5e3, 0, true, false, null], \"o\": {}, \"e\": [],"
      " \"s\": \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\"} ";
  const Value v = json::parse(text, std::strlen(text));
  ASSERT_EQ(v.type, Value::Type::kObject);
  const Value& a = *v.find("a");
  ASSERT_EQ(a.items.size(), 6u);
  uint64_t one = 0;
  EXPECT_TRUE(json::to_u64(a.items[0], &one));
  EXPECT_EQ(one, 1u);
  EXPECT_FALSE(json::to_u64(a.items[1], &one));
  EXPECT_EQ(json::to_double(a.items[1]), -2500.0);
  EXPECT_TRUE(a.items[3].boolean);
  EXPECT_EQ(a.items[5].type, Value::Type::kNull);
  EXPECT_EQ(v.find("s")->text, "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v.find("o")->type, Value::Type::kObject);
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(Json, RejectsInvalidDocuments) {
  const char* const cases[] = {
      "",
      "{",
      "}",
      "{\"a\"}",
      "{\"a\":1,}",
      "[1,]",
      "[1 2]",
      "01",
      "1.",
      ".5",
      "1e",
      "-",
      "+1",
      "nul",
      "tru",
      "\"abc",
      "\"\\x\"",
      "\"\\u12\"",
      "\"\\udc00\"",
      "{a:1}",
      "[1]]",
      "\"\xc0\xaf\"",
      "\"\xed\xa0\x80\"",
      "\"\xf4\x90\x80\x80\"",
      "1 2",
  };
  for (const char* text : cases) {
    EXPECT_THROW(json::parse(text, std::strlen(text)), Error) << "'" << text << "'";
  }
}

TEST(Json, CapsTheNumberOfValues) {
  auto array_of_zeros = [](size_t n) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) s += i ? ",0" : "0";
    return s + "]";
  };
  const std::string ok = array_of_zeros(json::kMaxValues - 1);  // + the array itself
  EXPECT_NO_THROW(json::parse(ok.data(), ok.size()));
  const std::string too_many = array_of_zeros(json::kMaxValues);
  try {
    json::parse(too_many.data(), too_many.size());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too many values"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace specdec
