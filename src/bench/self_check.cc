// kernel_self_check(): also linked into the shipped WASM module (tests/js/kernels.test.mjs runs
// it there, so that the kernels are checked as shipped).
#include <cstring>
#include <sstream>
#include <utility>
#include <vector>

#include "bench/bench.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "sampling/rng.h"

namespace specdec::bench {
namespace {

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// matmul, matmul_vec4 against matmul_reference for W (n, k) and M = 1 .. max_m.
std::string check_matmul(Rng& rng, size_t k, size_t n, size_t max_m) {
  const std::vector<float> w = random_floats(rng, n * k), bias = random_floats(rng, n);
  std::vector<float> packed(kernels::packed_size(n, k));
  kernels::pack_weights(w.data(), n, k, packed.data());
  for (size_t m = 1; m <= max_m; ++m) {
    const std::vector<float> x = random_floats(rng, m * k);
    std::vector<float> want(m * n), got(m * n), got4(m * n);
    kernels::matmul_reference(x.data(), m, k, w.data(), n, bias.data(), want.data());
    kernels::matmul(x.data(), m, k, packed.data(), n, bias.data(), got.data());
    kernels::matmul_vec4(x.data(), m, k, packed.data(), n, bias.data(), got4.data());
    if (!same(got, want) || !same(got4, want)) {
      std::ostringstream err;
      err << "matmul M=" << m << " K=" << k << " N=" << n
          << (kernels::packed_striped(n, k) ? " (striped)" : "");
      return err.str();
    }
  }
  return "";
}

}  // namespace

std::string kernel_self_check() {
  Rng rng(7);
  std::ostringstream err;
  for (size_t k : {1, 3, 4, 7, 8, 9, 17, 64, 100, 256}) {
    for (size_t n : {1, 3, 4, 5, 8, 13, 16, 24, 33}) {
      const std::string e = check_matmul(rng, k, n, 9);
      if (!e.empty()) return e;
    }
  }
  // Striped packings (kernels/matmul.h): at and past the size threshold, partial last panels,
  // one round per panel (K = 32); and a large K % 32 != 0 one (unstriped).
  for (const std::pair<size_t, size_t>& kn : {std::pair<size_t, size_t>{256, 256},
                                              {256, 260},
                                              {96, 1000},
                                              {2048, 33},
                                              {1024, 64},
                                              {32, 2049},
                                              {68, 1000}}) {
    const std::string e = check_matmul(rng, kn.first, kn.second, 9);
    if (!e.empty()) return e;
  }
  for (size_t hs : {1, 3, 4, 17, 32, 36, 64}) {
    for (size_t n_keys : {1, 3, 4, 5, 9, 17, 70, 255}) {
      const std::vector<float> q = random_floats(rng, hs), keys = random_floats(rng, n_keys * hs),
                               values = random_floats(rng, n_keys * hs);
      std::vector<float> scores(n_keys), got(hs), want(hs);
      kernels::attend(q.data(), keys.data(), values.data(), n_keys, hs, scores.data(), got.data());
      kernels::attend_reference(q.data(), keys.data(), values.data(), n_keys, hs, scores.data(),
                                want.data());
      if (!same(got, want)) {
        err << "attend hs=" << hs << " n_keys=" << n_keys;
        return err.str();
      }
    }
  }
  for (size_t n : {1, 3, 4, 7, 16, 17, 256, 1024}) {
    std::vector<float> a = random_floats(rng, n), b = random_floats(rng, n);
    for (float& v : a) v *= 200.0f;  // logits-sized values for softmax
    const float d = kernels::dot(a.data(), b.data(), n),
                dr = kernels::dot_reference(a.data(), b.data(), n);
    std::vector<float> s1 = a, s2 = a, g1 = b, g2 = b, l1(n), l2(n);
    kernels::softmax(s1.data(), n);
    kernels::softmax_reference(s2.data(), n);
    for (float& v : g1) v *= 100.0f;
    g2 = g1;
    kernels::gelu(g1.data(), n);
    kernels::gelu_reference(g2.data(), n);
    std::vector<float> si1 = g1, si2 = g1;  // SiLU on GELU outputs: wide range, no NaN
    kernels::silu(si1.data(), n);
    kernels::silu_reference(si2.data(), n);
    kernels::layernorm(a.data(), b.data(), a.data(), n, l1.data());
    kernels::layernorm_reference(a.data(), b.data(), a.data(), n, l2.data());
    if (std::memcmp(&d, &dr, sizeof d) != 0)
      err << "dot n=" << n;
    else if (!same(s1, s2))
      err << "softmax n=" << n;
    else if (!same(g1, g2))
      err << "gelu n=" << n;
    else if (!same(l1, l2))
      err << "layernorm n=" << n;
    else if (!same(si1, si2))
      err << "silu n=" << n;
    if (!err.str().empty()) return err.str();
  }
  return "";
}

}  // namespace specdec::bench
