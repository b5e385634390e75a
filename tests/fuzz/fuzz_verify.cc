// libFuzzer target: arbitrary bytes -> distributions, tokens, gamma, sampling settings, draft
// trees -> the verification entry points (chains and trees). Bad input must end in specdec::Error,
// never in a crash, UB or a result that breaks the contract (checked below).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/errors.h"
#include "fuzz_check.h"
#include "sampling/rng.h"
#include "sampling/sampling.h"
#include "specdec/distribution.h"
#include "specdec/tree.h"
#include "specdec/verify.h"

namespace {

struct Reader {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
  template <typename T>
  T take() {
    T v{};
    if (pos + sizeof(T) <= size) std::memcpy(&v, data + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specdec;
  Reader r{data, size};
  const size_t gamma = r.take<uint8_t>() % 9;       // 0..8 (0 must be rejected)
  const size_t vocab = 1 + r.take<uint8_t>() % 16;  // 1..16
  const uint8_t mode = r.take<uint8_t>();
  // Rows: either raw floats from the input (NaN, inf, negative, unnormalised...) or normalised
  // non-negative values, so that the accepting paths are reached too.
  auto row = [&](std::vector<float>& out) {
    out.resize(vocab);
    double sum = 0.0;
    for (float& v : out) {
      if (mode & 1) {
        v = r.take<float>();
      } else {
        v = static_cast<float>(r.take<uint8_t>());
        sum += v;
      }
    }
    if (!(mode & 1) && sum > 0) {
      for (float& v : out) v = static_cast<float>(v / sum);
    }
  };
  ProbMatrix target = xt::zeros<float>({gamma + 1, vocab});
  ProbMatrix draft = xt::zeros<float>({gamma, vocab});
  std::vector<float> tmp;
  for (size_t i = 0; i <= gamma; ++i) {
    row(tmp);
    std::copy(tmp.begin(), tmp.end(), &target(i, 0));
  }
  for (size_t i = 0; i < gamma; ++i) {
    row(tmp);
    std::copy(tmp.begin(), tmp.end(), &draft(i, 0));
  }
  std::vector<int> tokens(gamma);
  for (int& t : tokens) t = static_cast<int8_t>(r.take<uint8_t>()) % 20;  // some out of range
  Rng rng(r.take<uint64_t>());

  try {
    VerifyResult v =
        (mode & 2) ? greedy_verify(target, tokens) : speculative_verify(target, draft, tokens, rng);
    check(v.n_accepted >= 0 && size_t(v.n_accepted) <= gamma);
    check(v.emitted.size() == size_t(v.n_accepted) + 1);
    for (int t : v.emitted) check(t >= 0 && size_t(t) < vocab);
    for (int i = 0; i < v.n_accepted; ++i) check(v.emitted[i] == tokens[i]);
    check(v.bonus == (size_t(v.n_accepted) == gamma));
  } catch (const Error&) {
  }

  // A draft tree: up to 12 nodes with arbitrary parents and tokens, a q row per node (some
  // missing), rows for the root and every node.
  {
    DraftTree tree;
    const size_t n = r.take<uint8_t>() % 13;
    tree.without_replacement = r.take<uint8_t>() & 1;
    for (size_t i = 0; i < n; ++i) {
      const int parent = static_cast<int>(r.take<uint8_t>() % (i + 1)) - 1;
      tree.add(parent, static_cast<int8_t>(r.take<uint8_t>()) % 20);
    }
    if (tree.q.empty()) tree.q.resize(1);
    for (Distribution& q : tree.q) {
      if (r.take<uint8_t>() % 5 == 0) continue;  // a node without a draft row
      row(tmp);
      q = xt::zeros<float>({vocab});
      std::copy(tmp.begin(), tmp.end(), q.data());
    }
    ProbMatrix rows = xt::zeros<float>({n + 1, vocab});
    for (size_t i = 0; i <= n; ++i) {
      row(tmp);
      std::copy(tmp.begin(), tmp.end(), &rows(i, 0));
    }
    try {
      TreeVerifyResult v =
          (mode & 4) ? greedy_verify_tree(tree, rows) : verify_tree(tree, rows, rng);
      check(v.emitted.size() == v.path.size() + 1);
      int parent = -1;
      for (size_t d = 0; d < v.path.size(); ++d) {
        const int node = v.path[d];
        check(node >= 0 && size_t(node) < n && tree.parent[node] == parent);
        check(v.nodes[node].status == NodeStatus::kAccepted);
        check(v.emitted[d] == tree.token[node]);
        parent = node;
      }
      for (int t : v.emitted) check(t >= 0 && size_t(t) < vocab);
      check(v.bonus == (!v.path.empty() && tree.children(v.path.back()).empty()));
      check(v.bonus == (v.residual.size() == 0) || v.path.empty());
    } catch (const Error&) {
    }
  }

  // The sampling filters on a valid row, with arbitrary settings.
  SamplingParams sp{r.take<float>(), static_cast<int>(r.take<int8_t>()), r.take<float>()};
  try {
    check_sampling_params(sp);
    std::vector<float> p(target.data(), target.data() + vocab);
    check_distribution(p.data(), p.size(), "p");
    apply_sampling(p.data(), p.size(), sp);
    double sum = 0.0;
    for (float v : p) {
      check(v >= 0.0f && v <= 1.0f);
      sum += v;
    }
    check(sum > 0.999 && sum < 1.001);
  } catch (const Error&) {
  }
  return 0;
}
