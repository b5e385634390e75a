// The forward pass's operations split over a ThreadPool (kernels/thread_pool.h), each output
// computed by one thread exactly as on one thread, so results are bit-identical for any thread
// count:
//   matmul: by panels of output rows (4 outputs each, kernels/matmul.h), contiguous ranges per
//           thread, so every thread streams its own part of each stripe;
//   gelu, gelu_tanh: by element ranges (element-wise); swiglu: by column ranges of every row;
//   for_ranges: any loop of independent items (attention: (token, head) pairs).
// Work too small to gain stays on the calling thread: a part must hold at least
// kMinMacsPerPart multiply-adds (~2 us of a matmul streaming its weights; an idle fork-join
// costs ~0.5 us: `specdec bench --only threads`), so a 256-wide layer's 256 x 256 matmul splits
// in two and a draft's smallest ones stay whole. (2^16 left a 6x256 target's attention output
// projection, head and attention on one thread: two threads ran 4-10% slower, issue 38.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/thread_pool.h"

namespace specdec::kernels {

constexpr size_t kMinMacsPerPart = size_t{1} << 15;

// How many parts `work` units split into when a part needs at least min_per_part of them:
// 1 .. pool->threads() (1 without a pool).
inline int parts_for(const ThreadPool* pool, size_t work, size_t min_per_part) {
  // A build without threads knows it at compile time: its split paths compile away.
  if (!ThreadPool::has_threads() || !pool || pool->threads() <= 1) return 1;
  const size_t by_work = std::max<size_t>(1, work / std::max<size_t>(1, min_per_part));
  return static_cast<int>(std::min<size_t>(by_work, static_cast<size_t>(pool->threads())));
}

// f(begin, end) over [0, n) in `parts` contiguous ranges whose boundaries are multiples of
// `align` (the last range takes the rest); ranges may be empty.
template <typename F>
void for_ranges(ThreadPool* pool, int parts, size_t n, size_t align, F&& f) {
  if (parts <= 1 || !pool) {
    f(size_t{0}, n);
    return;
  }
  const size_t units = (n + align - 1) / align;
  pool->run(parts, [&](int part) {
    const size_t u0 = units * part / parts, u1 = units * (part + 1) / parts;
    const size_t begin = std::min(n, u0 * align), end = std::min(n, u1 * align);
    if (begin < end) f(begin, end);
  });
}

// out = x W^T + bias as kernels::matmul(), split by panels over pool (may be null) into as
// many parts as the work pays for.
void matmul(ThreadPool* pool, const float* x, size_t m, size_t k, const float* w_packed, size_t n,
            const float* bias, float* out);
// The same in exactly `parts` panel ranges (tests, benchmarks), whatever the size.
void matmul_parts(ThreadPool* pool, int parts, const float* x, size_t m, size_t k,
                  const float* w_packed, size_t n, const float* bias, float* out);

// out = x W^T + bias with 8-bit weights (kernels/matmul_q8.h) from the quantized rows of x,
// split by panels as matmul() above.
void matmul_q8(ThreadPool* pool, const int16_t* x8, const float* sx, size_t m, size_t k,
               const int8_t* q, const float* s, size_t n, const float* bias, float* out);
// The same in exactly `parts` panel ranges.
void matmul_q8_parts(ThreadPool* pool, int parts, const int16_t* x8, const float* sx, size_t m,
                     size_t k, const int8_t* q, const float* s, size_t n, const float* bias,
                     float* out);

// kernels::gelu, gelu_tanh and swiglu over pool, each element computed as on one thread.
void gelu(ThreadPool* pool, float* x, size_t n);
void gelu_tanh(ThreadPool* pool, float* x, size_t n);
void swiglu(ThreadPool* pool, const float* gate_up, size_t rows, size_t n_ff, float* out);

}  // namespace specdec::kernels
