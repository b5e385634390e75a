// Distribution math of speculative sampling (lesson: "The Math: Speculative Sampling").
// Pure functions: probability vectors in, numbers or vectors out. Sums are taken in double.
#pragma once

#include <cstddef>
#include <vector>
#include <xtensor/xtensor.hpp>

namespace specdec {

using Distribution = xt::xtensor<float, 1>;  // (V,) next-token probabilities
using ProbMatrix = xt::xtensor<float, 2>;    // (rows, V): one distribution per row

// A probability vector must be finite, non-negative and sum to 1 within this tolerance
// (float rows of up to ~1e5 entries accumulate rounding well below it).
constexpr double kProbSumTolerance = 1e-3;

// Throws specdec::Error naming `name` when p is empty, holds a negative/NaN/inf entry, or
// does not sum to 1 within kProbSumTolerance.
void check_distribution(const float* p, size_t n, const char* name);
void check_distribution(const Distribution& p, const char* name);

// alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q): the probability a draft token x ~ q is accepted.
double acceptance_rate(const Distribution& p, const Distribution& q);

// TV(p, q) = 1/2 sum_x |p(x) - q(x)|.
double total_variation(const Distribution& p, const Distribution& q);

// p'(x) = (p(x) - q(x))+ / sum_x' (p(x') - q(x'))+ over the FULL vocabulary (no truncation).
// When (p - q)+ is zero everywhere (p == q, or p <= q everywhere through rounding) the
// residual is never needed for exactness (a rejection has probability TV(p, q) = 0): the
// function then returns p itself (renormalised), so that it is total, always a valid
// distribution, and min(p, q) + p' * (1 - alpha) == p still holds.
Distribution residual_distribution(const Distribution& p, const Distribution& q);
// Raw-pointer form used by the verifier: writes n values to out.
void residual_distribution(const float* p, const float* q, size_t n, float* out);

// Inverse-CDF sample: the first index i whose cumulative mass exceeds u * total (u in [0, 1)).
// Entries with zero mass are never returned. requires: sum > 0.
int sample_index(const float* probs, size_t n, double u);

// Index of the largest entry; the lowest index wins ties.
int argmax(const float* probs, size_t n);

}  // namespace specdec
