// 8-bit weights (kernels/matmul_q8.h): the half-float conversions, the two quantizers, every
// kernel bit for bit against the reference at sizes around the block and panel widths and at
// any split over threads, and the model on top (load-time quantization == the quantized file,
// batch invariance, thread counts, closeness to float32, hostile quantized files).
#include "kernels/matmul_q8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kernels/half.h"
#include "kernels/matmul.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"
#include "model/gpt_model.h"
#include "model/json.h"
#include "model/quantize.h"
#include "model/safetensors.h"
#include "sampling/rng.h"
#include "test_util.h"

namespace specdec {
namespace {

using kernels::kQ8Block;
using testing::error_of;

std::vector<float> random_floats(Rng& rng, size_t n, float scale = 1.0f) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>((2.0 * rng.uniform() - 1.0) * scale);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string fixture(const std::string& name) {
  return std::string(SPECDEC_SOURCE_DIR) + "/tests/fixtures/" + name;
}

// ------------------------------------------------------------------ half floats

TEST(Half, EveryFiniteHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = kernels::f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(kernels::f16_to_f32(kernels::f32_to_f16(f)))) << h;
      continue;
    }
    ASSERT_EQ(kernels::f32_to_f16(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(Half, RoundsToNearestEven) {
  struct Case {
    float in;
    uint16_t want;
  };
  const Case cases[] = {
      {1.0f + 1.0f / 2048, 0x3c00},          // halfway between 1 and next: even (1)
      {1.0f + 3.0f / 2048, 0x3c02},          // halfway, odd below: up
      {1.0f + 1.0f / 2048 + 1e-7f, 0x3c01},  // just above halfway: up
      {65504.0f, 0x7bff},                    // the largest half
      {65520.0f, 0x7c00},                    // rounds to infinity
      {std::ldexp(1.0f, -24), 0x0001},       // the smallest subnormal
      {std::ldexp(1.0f, -25), 0x0000},       // half of it: ties to even (0)
      {std::ldexp(1.5f, -25), 0x0001},       // above half: up
      {-std::ldexp(3.0f, -25), 0x8002},      // 1.5 ulp of subnormals: even (2)
      {std::ldexp(1023.5f, -24), 0x0400},    // carries into the smallest normal
      {std::numeric_limits<float>::infinity(), 0x7c00},
  };
  for (const Case& c : cases) EXPECT_EQ(kernels::f32_to_f16(c.in), c.want) << c.in;
}

// ------------------------------------------------------------------ quantizers

TEST(QuantizeWeights, BlocksScalesAndZeros) {
  Rng rng(3);
  const size_t n = 5, k = 96;
  std::vector<float> w = random_floats(rng, n * k, 0.2f);
  std::fill(w.begin() + 32, w.begin() + 64, 0.0f);  // row 0, block 1: all zero
  w[2 * k + 5] = 40.0f;                             // row 2, block 0: one large value
  std::vector<int8_t> w8(n * k);
  std::vector<float> s(n * k / kQ8Block);
  kernels::quantize_weights_q8(w.data(), n, k, w8.data(), s.data());
  EXPECT_EQ(s[1], 1.0f);  // an all-zero block: scale 1, zeros
  for (size_t j = 32; j < 64; ++j) EXPECT_EQ(w8[j], 0);
  EXPECT_EQ(w8[2 * k + 5], 127);
  for (size_t r = 0; r < n; ++r) {
    for (size_t b = 0; b < k / kQ8Block; ++b) {
      const float d = s[r * (k / kQ8Block) + b];
      ASSERT_GT(d, 0.0f);
      EXPECT_EQ(kernels::f16_to_f32(kernels::f32_to_f16(d)), d);  // a binary16 value
      for (size_t j = 0; j < kQ8Block; ++j) {
        const size_t i = r * k + b * kQ8Block + j;
        ASSERT_GE(w8[i], -127);
        // Half a step, plus the scale's binary16 rounding at the block's largest value.
        EXPECT_LE(std::fabs(d * w8[i] - w[i]), 0.5f * d + 0.004f * std::fabs(w[i])) << i;
      }
    }
  }
}

TEST(QuantizeRows, ZeroNanAndInfinity) {
  std::vector<float> x(3 * 32, 0.5f);
  std::fill(x.begin(), x.begin() + 32, 0.0f);           // row 0: zero
  x[32 + 3] = std::numeric_limits<float>::quiet_NaN();  // row 1: NaN ignored
  x[32 + 4] = -2.0f;                                    // row 1's amax
  x[64 + 7] = std::numeric_limits<float>::infinity();   // row 2: infinity
  std::vector<int16_t> x8(x.size());
  std::vector<float> sx(3);
  kernels::quantize_rows_q8(x.data(), 3, 32, x8.data(), sx.data());
  EXPECT_EQ(sx[0], 0.0f);
  for (size_t j = 0; j < 32; ++j) EXPECT_EQ(x8[j], 0);
  EXPECT_EQ(sx[1], 2.0f / 127.0f);
  EXPECT_EQ(x8[32 + 3], 0);
  EXPECT_EQ(x8[32 + 4], -127);
  EXPECT_EQ(x8[32 + 0], static_cast<int16_t>(std::nearbyint(0.5f * (127.0f / 2.0f))));  // 32
  EXPECT_TRUE(std::isinf(sx[2]));
  for (size_t j = 64; j < 96; ++j) EXPECT_EQ(x8[j], 0);
}

// ------------------------------------------------------------------ kernels

struct Q8Case {
  std::vector<float> x;
  std::vector<int16_t> x8;
  std::vector<float> sx, w, s, bias;
  std::vector<int8_t> w8, q;
  std::vector<float> ps;
};

Q8Case make_case(Rng& rng, size_t m, size_t k, size_t n) {
  Q8Case c;
  c.x = random_floats(rng, m * k, 3.0f);
  c.w = random_floats(rng, n * k, 0.1f);
  c.bias = random_floats(rng, n);
  c.x8.resize(m * k);
  c.sx.resize(m * k / kQ8Block);
  kernels::quantize_rows_q8(c.x.data(), m, k, c.x8.data(), c.sx.data());
  c.w8.resize(n * k);
  c.s.resize(n * k / kQ8Block);
  kernels::quantize_weights_q8(c.w.data(), n, k, c.w8.data(), c.s.data());
  c.q.resize(kernels::q8_packed_bytes(n, k) + 64);  // room to misalign below
  c.ps.resize(kernels::q8_packed_scales(n, k));
  kernels::pack_weights_q8(c.w8.data(), c.s.data(), n, k, c.q.data(), c.ps.data());
  return c;
}

TEST(MatmulQ8, EveryKernelEqualsTheReferenceBitForBit) {
  Rng rng(11);
  for (size_t m : {1, 2, 3, 5, 8, 16}) {
    for (size_t k : {32, 64, 96, 512}) {
      for (size_t n : {1, 3, 4, 5, 8, 17, 64}) {
        const Q8Case c = make_case(rng, m, k, n);
        std::vector<float> want(m * n), got(m * n), scalar(m * n), nobias(m * n), ref_nb(m * n);
        kernels::matmul_q8_reference(c.x8.data(), c.sx.data(), m, k, c.w8.data(), c.s.data(), n,
                                     c.bias.data(), want.data());
        kernels::matmul_q8(c.x8.data(), c.sx.data(), m, k, c.q.data(), c.ps.data(), n,
                           c.bias.data(), got.data());
        kernels::matmul_q8_scalar_panels(c.x8.data(), c.sx.data(), m, k, c.q.data(), c.ps.data(), n,
                                         c.bias.data(), scalar.data(), 0, (n + 3) / 4);
        kernels::matmul_q8(c.x8.data(), c.sx.data(), m, k, c.q.data(), c.ps.data(), n, nullptr,
                           nobias.data());
        kernels::matmul_q8_reference(c.x8.data(), c.sx.data(), m, k, c.w8.data(), c.s.data(), n,
                                     nullptr, ref_nb.data());
        const std::string where =
            "m " + std::to_string(m) + " k " + std::to_string(k) + " n " + std::to_string(n);
        ASSERT_TRUE(same_bits(got, want)) << where;
        ASSERT_TRUE(same_bits(scalar, want)) << where;
        ASSERT_TRUE(same_bits(nobias, ref_nb)) << where;
      }
    }
  }
}

// Large matrices are stored in 8 stripes (matmul_q8.h, Striping): same outputs, same rows.
TEST(MatmulQ8, StripedMatricesEqualTheReference) {
  Rng rng(15);
  struct Shape {
    size_t m, k, n;
    bool striped;
  };
  for (const Shape& sh : {Shape{1, 256, 1024, true}, Shape{3, 512, 513, true},
                          Shape{2, 256, 1000, false}, Shape{1, 224, 2048, false}}) {
    ASSERT_EQ(kernels::q8_striped(sh.n, sh.k), sh.striped) << sh.k << " x " << sh.n;
    const Q8Case c = make_case(rng, sh.m, sh.k, sh.n);
    std::vector<float> want(sh.m * sh.n), got(sh.m * sh.n), scalar(sh.m * sh.n);
    kernels::matmul_q8_reference(c.x8.data(), c.sx.data(), sh.m, sh.k, c.w8.data(), c.s.data(),
                                 sh.n, c.bias.data(), want.data());
    kernels::matmul_q8(c.x8.data(), c.sx.data(), sh.m, sh.k, c.q.data(), c.ps.data(), sh.n,
                       c.bias.data(), got.data());
    kernels::matmul_q8_scalar_panels(c.x8.data(), c.sx.data(), sh.m, sh.k, c.q.data(), c.ps.data(),
                                     sh.n, c.bias.data(), scalar.data(), 0, (sh.n + 3) / 4);
    EXPECT_TRUE(same_bits(got, want)) << sh.k << " x " << sh.n;
    EXPECT_TRUE(same_bits(scalar, want)) << sh.k << " x " << sh.n;
    std::vector<float> row(sh.k);
    for (size_t r : {size_t{0}, sh.n / 2, sh.n - 1}) {
      kernels::unpack_row_q8(c.q.data(), c.ps.data(), sh.n, sh.k, r, row.data());
      for (size_t j = 0; j < sh.k; ++j) {
        ASSERT_EQ(row[j], c.s[r * (sh.k / 32) + j / 32] * c.w8[r * sh.k + j]) << r << " " << j;
      }
    }
  }
}

TEST(MatmulQ8, RowsAreBatchInvariantAndCloseToFloat) {
  Rng rng(12);
  const size_t m = 7, k = 256, n = 40;
  const Q8Case c = make_case(rng, m, k, n);
  std::vector<float> all(m * n), one(n);
  kernels::matmul_q8(c.x8.data(), c.sx.data(), m, k, c.q.data(), c.ps.data(), n, c.bias.data(),
                     all.data());
  double err = 0.0, mag = 0.0;
  for (size_t i = 0; i < m; ++i) {
    kernels::matmul_q8(c.x8.data() + i * k, c.sx.data() + i * k / kQ8Block, 1, k, c.q.data(),
                       c.ps.data(), n, c.bias.data(), one.data());
    ASSERT_EQ(std::memcmp(one.data(), all.data() + i * n, n * sizeof(float)), 0) << "row " << i;
    for (size_t j = 0; j < n; ++j) {
      double exact = c.bias[j];
      for (size_t t = 0; t < k; ++t) exact += double(c.x[i * k + t]) * c.w[j * k + t];
      err = std::max(err, std::fabs(exact - all[i * n + j]));
      mag = std::max(mag, std::fabs(exact));
    }
  }
  EXPECT_LT(err / mag, 0.02) << "8-bit error relative to the largest output";
}

TEST(MatmulQ8, AnySplitOverThreadsIsBitIdentical) {
  Rng rng(13);
  const size_t m = 5, k = 512, n = 300;
  const Q8Case c = make_case(rng, m, k, n);
  std::vector<float> want(m * n);
  kernels::matmul_q8(c.x8.data(), c.sx.data(), m, k, c.q.data(), c.ps.data(), n, c.bias.data(),
                     want.data());
  for (int threads : {1, 2, 3}) {
    kernels::ThreadPool pool(threads);
    for (int parts = 1; parts <= 5; ++parts) {
      std::vector<float> got(m * n, -1.0f);
      kernels::matmul_q8_parts(&pool, parts, c.x8.data(), c.sx.data(), m, k, c.q.data(),
                               c.ps.data(), n, c.bias.data(), got.data());
      ASSERT_TRUE(same_bits(got, want)) << threads << " threads, " << parts << " parts";
    }
  }
}

TEST(MatmulQ8, PackingIsAlignedAndUnpacksExactly) {
  Rng rng(14);
  const size_t n = 9, k = 64;
  Q8Case c = make_case(rng, 1, k, n);
  for (size_t shift = 0; shift < 3; ++shift) {  // any start address
    int8_t* q = c.q.data() + shift;
    kernels::pack_weights_q8(c.w8.data(), c.s.data(), n, k, q, c.ps.data());
    const uint8_t offset = static_cast<uint8_t>(q[0]);
    EXPECT_GE(offset, 1);
    EXPECT_LE(offset, 64);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(q + offset) % 64, 0u);
    std::vector<float> row(k);
    for (size_t r = 0; r < n; ++r) {
      kernels::unpack_row_q8(q, c.ps.data(), n, k, r, row.data());
      for (size_t j = 0; j < k; ++j) {
        ASSERT_EQ(row[j], c.s[r * 2 + j / 32] * c.w8[r * k + j]) << r << " " << j;
      }
    }
  }
}

// ------------------------------------------------------------------ NumPy golden

// tests/fixtures/q8_matmul_golden.json (tests/fixtures/makers/write.py q8, an independent NumPy
// implementation of the same arithmetic, models/tools/q8.py): float32 values as their bit patterns.
TEST(MatmulQ8, EqualsTheNumPyGoldenBitForBit) {
  const std::vector<uint8_t> bytes = read_file(fixture("q8_matmul_golden.json"), 16 << 20);
  const json::Value doc = json::parse(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto floats = [](const json::Value* v) {
    std::vector<float> out;
    if (!v || v->type != json::Value::Type::kArray) return out;
    for (const json::Value& e : v->items) {
      const uint32_t bits = static_cast<uint32_t>(json::to_double(e));
      float f;
      std::memcpy(&f, &bits, 4);
      out.push_back(f);
    }
    return out;
  };
  auto ints = [](const json::Value* v) {
    std::vector<int> out;
    for (const json::Value& e : v->items) out.push_back(static_cast<int>(json::to_double(e)));
    return out;
  };
  const json::Value* cases = doc.find("cases");
  ASSERT_TRUE(cases && cases->items.size() >= 6);
  for (const json::Value& c : cases->items) {
    const std::string name = c.find("name")->text;
    const size_t m = json::to_double(*c.find("m")), k = json::to_double(*c.find("k")),
                 n = json::to_double(*c.find("n"));
    const std::vector<float> x = floats(c.find("x")), w = floats(c.find("w")),
                             bias = floats(c.find("bias")), want_sx = floats(c.find("sx")),
                             want_s = floats(c.find("scales")), want = floats(c.find("out"));
    const std::vector<int> want_x8 = ints(c.find("x8")), want_w8 = ints(c.find("w8"));
    std::vector<int16_t> x8(m * k);
    std::vector<float> sx(m * k / kQ8Block);
    kernels::quantize_rows_q8(x.data(), m, k, x8.data(), sx.data());
    std::vector<int8_t> w8(n * k);
    std::vector<float> s(n * k / kQ8Block);
    kernels::quantize_weights_q8(w.data(), n, k, w8.data(), s.data());
    EXPECT_EQ(std::vector<int>(x8.begin(), x8.end()), want_x8) << name;
    EXPECT_EQ(std::vector<int>(w8.begin(), w8.end()), want_w8) << name;
    EXPECT_EQ(std::memcmp(sx.data(), want_sx.data(), sx.size() * 4), 0) << name;
    EXPECT_TRUE(same_bits(s, want_s)) << name;
    std::vector<int8_t> q(kernels::q8_packed_bytes(n, k));
    std::vector<float> ps(kernels::q8_packed_scales(n, k)), got(m * n), ref(m * n);
    kernels::pack_weights_q8(w8.data(), s.data(), n, k, q.data(), ps.data());
    const float* b = bias.empty() ? nullptr : bias.data();
    kernels::matmul_q8(x8.data(), sx.data(), m, k, q.data(), ps.data(), n, b, got.data());
    kernels::matmul_q8_reference(x8.data(), sx.data(), m, k, w8.data(), s.data(), n, b, ref.data());
    // NaN outputs compare by bits too: the golden holds the canonical NaN the arithmetic makes.
    EXPECT_TRUE(same_bits(got, want)) << name;
    EXPECT_TRUE(same_bits(ref, want)) << name;
  }
}

// Packing writes every byte of q and s (the loader hands it uninitialised memory): the same
// buffers packed after being filled with zeros and with a pattern come out byte-identical.
// Shapes: rows past n in the last panel, unstriped and striped (k / 32 a multiple of 8, over
// 256 KiB of quants).
TEST(MatmulQ8, PackingWritesEveryByte) {
  struct Shape {
    size_t n, k;
  };
  for (const Shape& sh : {Shape{5, 32}, Shape{4, 64}, Shape{257, 1024}, Shape{1030, 256}}) {
    const size_t n = sh.n, k = sh.k;
    Rng rng(3);
    std::vector<int8_t> w8(n * k);
    std::vector<float> sc(n * k / kQ8Block);
    for (int8_t& v : w8) v = static_cast<int8_t>(static_cast<int>(rng.next_u32() % 255) - 127);
    for (float& v : sc) v = 0.5f + static_cast<float>(rng.next_u32() % 100) / 64.0f;
    std::vector<int8_t> q(kernels::q8_packed_bytes(n, k));
    std::vector<float> ps(kernels::q8_packed_scales(n, k));
    kernels::pack_weights_q8(w8.data(), sc.data(), n, k, q.data(), ps.data());
    const std::vector<int8_t> q0 = q;
    const std::vector<float> ps0 = ps;
    std::fill(q.begin(), q.end(), int8_t{0x5a});
    std::fill(ps.begin(), ps.end(), -7.0f);
    kernels::pack_weights_q8(w8.data(), sc.data(), n, k, q.data(), ps.data());
    EXPECT_EQ(q, q0) << n << "x" << k;
    EXPECT_EQ(std::memcmp(ps.data(), ps0.data(), ps.size() * 4), 0) << n << "x" << k;
    // A block of rows at a time (8 rows, the last block short): the same bytes.
    std::fill(q.begin(), q.end(), int8_t{-0x33});
    std::fill(ps.begin(), ps.end(), 9.0f);
    kernels::pack_weights_q8_begin(n, k, q.data());
    for (size_t r = 0; r < n; r += 8) {
      const size_t rows = std::min<size_t>(8, n - r);
      kernels::pack_weights_q8_rows(&w8[r * k], &sc[r * k / kQ8Block], r, rows, n, k, q.data(),
                                    ps.data());
    }
    EXPECT_EQ(q, q0) << n << "x" << k << " by blocks of rows";
    EXPECT_EQ(std::memcmp(ps.data(), ps0.data(), ps.size() * 4), 0) << n << "x" << k;
  }
  // A block that does not start on a panel is refused.
  std::vector<int8_t> q(kernels::q8_packed_bytes(8, 32)), w8(8 * 32);
  std::vector<float> ps(kernels::q8_packed_scales(8, 32)), sc(8);
  EXPECT_THROW(
      kernels::pack_weights_q8_rows(w8.data(), sc.data(), 2, 4, 8, 32, q.data(), ps.data()), Error);
}

// ------------------------------------------------------------------ the model

std::vector<uint8_t> tiny_bytes() { return read_file(fixture("tiny_f32.safetensors"), 1 << 24); }

std::vector<float> run(const GPTModel& model, const std::vector<int>& tokens) {
  KVCache cache(model.config());
  return model.forward(tokens, cache);
}

const std::vector<int> kPrompt = {72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100};

TEST(ModelQ8, LoadTimeQuantizationEqualsTheQuantizedFile) {
  const std::vector<uint8_t> f32 = tiny_bytes();
  const std::vector<uint8_t> q8 = quantize_model_file(f32.data(), f32.size());
  const Weights int8 = Weights::kInt8;
  const GPTModel a = GPTModel::from_safetensors(f32.data(), f32.size(), &int8);
  const GPTModel b = GPTModel::from_safetensors(q8.data(), q8.size());
  const GPTModel fl = GPTModel::from_safetensors(f32.data(), f32.size());
  EXPECT_EQ(a.weight_type(), Weights::kInt8);
  EXPECT_EQ(b.weight_type(), Weights::kInt8);
  EXPECT_EQ(fl.weight_type(), Weights::kF32);
  EXPECT_EQ(a.weight_bytes(), b.weight_bytes());
  EXPECT_LT(a.weight_bytes(), fl.weight_bytes());
  // A Linear weight: 32 int8 + one float scale per 32 floats (+ the 64-byte header).
  const LinearWeights& fc8 = a.weights().layers[0].c_fc;
  const LinearWeights& fc32 = fl.weights().layers[0].c_fc;
  EXPECT_TRUE(fc8.int8());
  EXPECT_FALSE(fc32.int8());
  EXPECT_EQ(fc8.bytes(), 64 + 128 * 32 + 128 * 4);
  EXPECT_LT(fc8.bytes() * 3, fc32.bytes());
  EXPECT_LT(q8.size(), f32.size());
  const std::vector<float> la = run(a, kPrompt), lb = run(b, kPrompt), lf = run(fl, kPrompt);
  EXPECT_TRUE(same_bits(la, lb));
  double err = 0.0, mag = 0.0;
  for (size_t i = 0; i < la.size(); ++i) {
    err = std::max(err, double(std::fabs(la[i] - lf[i])));
    mag = std::max(mag, double(std::fabs(lf[i])));
  }
  EXPECT_LT(err / mag, 0.05);
  EXPECT_GT(err, 0.0);  // it is not the float model
}

TEST(ModelQ8, BatchInvariantAndThreadCountInvariant) {
  const std::vector<uint8_t> f32 = tiny_bytes();
  const Weights int8 = Weights::kInt8;
  GPTModel model = GPTModel::from_safetensors(f32.data(), f32.size(), &int8);
  const std::vector<float> all = run(model, kPrompt);
  KVCache cache(model.config());
  const size_t V = model.config().vocab_size;
  for (size_t t = 0; t < kPrompt.size(); ++t) {
    const std::vector<float> one = model.forward({kPrompt[t]}, cache);
    ASSERT_EQ(std::memcmp(one.data(), all.data() + t * V, V * sizeof(float)), 0) << "token " << t;
  }
  for (int threads : {2, 3}) {
    kernels::ThreadPool pool(threads);
    model.set_thread_pool(&pool);
    EXPECT_TRUE(same_bits(run(model, kPrompt), all)) << threads << " threads";
    model.set_thread_pool(nullptr);
  }
}

// A quantized tiny model with one edit, as a file.
std::vector<uint8_t> edited(const std::function<void(std::map<std::string, std::string>&,
                                                     std::vector<TensorData>&)>& edit) {
  const std::vector<uint8_t> f32 = tiny_bytes();
  const std::vector<uint8_t> q8 = quantize_model_file(f32.data(), f32.size());
  const SafetensorsView view = parse_safetensors(q8.data(), q8.size());
  std::map<std::string, std::string> meta = view.metadata;
  std::vector<TensorData> tensors;
  for (const auto& [name, t] : view.tensors) {
    tensors.push_back({name, t.dtype, t.shape,
                       std::vector<uint8_t>(t.data, t.data + t.numel * dtype_size(t.dtype))});
  }
  edit(meta, tensors);
  return write_safetensors(meta, tensors);
}

TensorData& find(std::vector<TensorData>& ts, const std::string& name) {
  for (TensorData& t : ts) {
    if (t.name == name) return t;
  }
  throw std::runtime_error("no tensor " + name);
}

const std::string kQkv = "transformer.h.0.attn.c_attn.weight";

void set_half(TensorData& t, size_t i, uint16_t h) {
  t.data[2 * i] = static_cast<uint8_t>(h & 0xff);
  t.data[2 * i + 1] = static_cast<uint8_t>(h >> 8);
}

struct Hostile {
  const char* what;
  std::function<void(std::map<std::string, std::string>&, std::vector<TensorData>&)> edit;
  const char* message;
};

TEST(ModelQ8, HostileQuantizedFilesAreRefusedByName) {
  using Meta = std::map<std::string, std::string>;
  using Ts = std::vector<TensorData>;
  const Hostile cases[] = {
      {"a NaN scale", [](Meta&, Ts& t) { set_half(find(t, kQkv + ".scale"), 3, 0x7e00); },
       "tensor 'transformer.h.0.attn.c_attn.weight.scale' holds the block scale nan at index 3"},
      {"a zero scale", [](Meta&, Ts& t) { set_half(find(t, kQkv + ".scale"), 0, 0x0000); },
       "holds the block scale 0 at index 0 (scales must be finite and > 0)"},
      {"a negative scale", [](Meta&, Ts& t) { set_half(find(t, kQkv + ".scale"), 1, 0xbc00); },
       "holds the block scale -1 at index 1"},
      {"an infinite scale", [](Meta&, Ts& t) { set_half(find(t, kQkv + ".scale"), 2, 0x7c00); },
       "holds the block scale inf at index 2"},
      {"-128", [](Meta&, Ts& t) { find(t, kQkv + ".q8").data[7] = 0x80; },
       "tensor 'transformer.h.0.attn.c_attn.weight.q8' holds -128 at index 7"},
      {"wrong block count",
       [](Meta&, Ts& t) {
         TensorData& s = find(t, kQkv + ".scale");
         s.shape = {96, 2};
         s.data.resize(96 * 2 * 2);
       },
       "tensor 'transformer.h.0.attn.c_attn.weight.scale' has shape [96, 2], expected [96, 1] "
       "(one scale per block of 32 weights)"},
      {"scales as F32",
       [](Meta&, Ts& t) {
         TensorData& s = find(t, kQkv + ".scale");
         s.dtype = DType::kF32;
         s.data.assign(96 * 4, 0);
       },
       "tensor 'transformer.h.0.attn.c_attn.weight.scale' has dtype F32, expected F16"},
      {"quants as F16",
       [](Meta&, Ts& t) {
         TensorData& q = find(t, kQkv + ".q8");
         q.dtype = DType::kF16;
         q.data.resize(q.data.size() * 2);
       },
       "tensor 'transformer.h.0.attn.c_attn.weight.q8' has dtype F16, expected I8"},
      {"a float weight beside its quants",
       [](Meta&, Ts& t) {
         t.push_back({kQkv, DType::kF32, {96, 32}, std::vector<uint8_t>(96 * 32 * 4)});
       },
       "tensor 'transformer.h.0.attn.c_attn.weight' is float beside its 8-bit "
       "'transformer.h.0.attn.c_attn.weight.q8' (mixed layouts"},
      {"quants in a float file", [](Meta& m, Ts&) { m.erase("weights"); },
       "is part of an 8-bit weight, but __metadata__ 'weights' is not 'int8' (mixed layouts)"},
      {"a missing scale",
       [](Meta&, Ts& t) {
         for (size_t i = 0; i < t.size(); ++i) {
           if (t[i].name == kQkv + ".scale") t.erase(t.begin() + i);
         }
       },
       "missing tensor 'transformer.h.0.attn.c_attn.weight.scale'"},
      {"an I8 layer norm",
       [](Meta&, Ts& t) {
         TensorData& ln = find(t, "transformer.h.0.ln_1.weight");
         ln.dtype = DType::kI8;
         ln.data.resize(32);
       },
       "tensor 'transformer.h.0.ln_1.weight' has dtype I8; only 8-bit Linear weights (.q8) may"},
      {"an unknown weights value", [](Meta& m, Ts&) { m["weights"] = "int4"; },
       "__metadata__ 'weights' = 'int4', expected 'f32' or 'int8'"},
  };
  for (const Hostile& c : cases) {
    const std::vector<uint8_t> bytes = edited(c.edit);
    const std::string err =
        error_of([&] { GPTModel::from_safetensors(bytes.data(), bytes.size()); });
    EXPECT_NE(err.find(c.message), std::string::npos) << c.what << ": " << err;
    EXPECT_EQ(err.rfind("model file: ", 0), 0u) << c.what << ": " << err;
  }
}

TEST(ModelQ8, RefusalsOfRequests) {
  const std::vector<uint8_t> f32 = tiny_bytes();
  const std::vector<uint8_t> q8 = quantize_model_file(f32.data(), f32.size());
  // One loader: an 8-bit file asked for as float32 widens its blocks (exact), as a GGUF file's.
  const Weights as_float = Weights::kF32;
  EXPECT_EQ(GPTModel::from_safetensors(q8.data(), q8.size(), &as_float).weight_type(),
            Weights::kF32);
  EXPECT_NE(error_of([&] {
              quantize_model_file(q8.data(), q8.size());
            }).find("stores 8-bit weights already (__metadata__ 'weights' = 'int8')"),
            std::string::npos);
  // n_embd 24: not a multiple of the 32-weight block.
  std::map<std::string, std::string> meta;
  const std::vector<uint8_t> odd = [&] {
    const SafetensorsView view = parse_safetensors(f32.data(), f32.size());
    meta = view.metadata;
    meta["n_embd"] = "24";
    meta["n_head"] = "4";
    return write_safetensors(meta, {});
  }();
  const Weights int8 = Weights::kInt8;
  EXPECT_NE(error_of([&] {
              GPTModel::from_safetensors(odd.data(), odd.size(), &int8);
            }).find("8-bit weights need every Linear input width (n_embd 24"),
            std::string::npos);
}

}  // namespace
}  // namespace specdec
