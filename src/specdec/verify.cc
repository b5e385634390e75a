#include "specdec/verify.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/errors.h"

namespace specdec {
namespace {

// Shapes and token ids shared by both verifiers. Returns V.
size_t check_shapes(const ProbMatrix& target_probs, const ProbMatrix* draft_probs,
                    const std::vector<int>& draft_tokens) {
  const size_t gamma = draft_tokens.size();
  if (gamma < 1) fail("draftTokens: gamma must be >= 1, got ", gamma);
  if (target_probs.shape()[0] != gamma + 1) {
    fail("targetProbs: expected ", gamma + 1, " rows (gamma + 1), got ", target_probs.shape()[0]);
  }
  const size_t vocab = target_probs.shape()[1];
  if (vocab == 0) fail("targetProbs: vocabulary size is 0");
  if (draft_probs) {
    if (draft_probs->shape()[0] != gamma) {
      fail("draftProbs: expected ", gamma, " rows (gamma), got ", draft_probs->shape()[0]);
    }
    if (draft_probs->shape()[1] != vocab) {
      fail("draftProbs: vocabulary size ", draft_probs->shape()[1], " differs from targetProbs' ",
           vocab);
    }
  }
  for (size_t i = 0; i < gamma; ++i) {
    if (draft_tokens[i] < 0 || static_cast<size_t>(draft_tokens[i]) >= vocab) {
      fail("draftTokens[", i, "]: token id ", draft_tokens[i], " outside [0, ", vocab, ")");
    }
  }
  return vocab;
}

const float* row(const ProbMatrix& m, size_t i) { return m.data() + i * m.shape()[1]; }

}  // namespace

VerifyResult speculative_verify(const ProbMatrix& target_probs, const ProbMatrix& draft_probs,
                                const std::vector<int>& draft_tokens, Rng& rng) {
  const size_t vocab = check_shapes(target_probs, &draft_probs, draft_tokens);
  const size_t gamma = draft_tokens.size();
  for (size_t i = 0; i <= gamma; ++i) {
    check_distribution(row(target_probs, i), vocab,
                       ("targetProbs[" + std::to_string(i) + "]").c_str());
  }
  for (size_t i = 0; i < gamma; ++i) {
    check_distribution(row(draft_probs, i), vocab,
                       ("draftProbs[" + std::to_string(i) + "]").c_str());
    if (row(draft_probs, i)[draft_tokens[i]] <= 0.0f) {
      fail("draftTokens[", i, "]: token ", draft_tokens[i],
           " has draft probability 0 (the draft could not have proposed it)");
    }
  }

  VerifyResult r;
  for (size_t i = 0; i < gamma; ++i) {
    PositionRecord pos;
    pos.token = draft_tokens[i];
    pos.p = row(target_probs, i)[pos.token];
    pos.q = row(draft_probs, i)[pos.token];
    pos.accept_prob = std::min(1.0, double(pos.p) / double(pos.q));
    pos.u = rng.uniform();
    pos.accepted = pos.u < pos.accept_prob;
    r.positions.push_back(pos);
    if (!pos.accepted) {
      // Rejected: correct once from the residual (p - q)+ of this position, never from p.
      r.residual = xt::zeros<float>({vocab});
      residual_distribution(row(target_probs, i), row(draft_probs, i), vocab, r.residual.data());
      r.u_final = rng.uniform();
      r.emitted.push_back(sample_index(r.residual.data(), vocab, r.u_final));
      return r;
    }
    r.emitted.push_back(pos.token);
    ++r.n_accepted;
  }
  // Every draft token accepted: one free bonus token from the target's last row.
  r.bonus = true;
  r.u_final = rng.uniform();
  r.emitted.push_back(sample_index(row(target_probs, gamma), vocab, r.u_final));
  return r;
}

VerifyResult greedy_verify(const ProbMatrix& target_probs, const std::vector<int>& draft_tokens) {
  const size_t vocab = check_shapes(target_probs, nullptr, draft_tokens);
  const size_t gamma = draft_tokens.size();
  for (size_t i = 0; i < (gamma + 1) * vocab; ++i) {
    float v = target_probs.data()[i];
    if (!std::isfinite(v) || v < 0.0f) {
      fail("targetProbs[", i / vocab, "]: entry ", i % vocab, " is negative or not finite (", v,
           ")");
    }
  }
  VerifyResult r;
  for (size_t i = 0; i < gamma; ++i) {
    const float* p = row(target_probs, i);
    const int best = argmax(p, vocab);
    PositionRecord pos;
    pos.token = draft_tokens[i];
    pos.p = p[pos.token];
    pos.q = 1.0f;  // a greedy draft puts all its mass on its token
    pos.accepted = pos.token == best;
    pos.accept_prob = pos.accepted ? 1.0 : 0.0;
    r.positions.push_back(pos);
    if (!pos.accepted) {
      r.residual = xt::zeros<float>({vocab});
      r.residual[best] = 1.0f;
      r.emitted.push_back(best);
      return r;
    }
    r.emitted.push_back(pos.token);
    ++r.n_accepted;
  }
  r.bonus = true;
  r.emitted.push_back(argmax(row(target_probs, gamma), vocab));
  return r;
}

}  // namespace specdec
