// One core's read bandwidth (read_gbs): also linked into the shipped WASM module, whose
// measureReadBandwidth (src/bindings/diagnostics_bindings.cc) lets the page draw the memory
// floor of the machine it runs on.
#include <algorithm>
#include <vector>

#if defined(__AVX2__) && !defined(__wasm_simd128__)
#include <immintrin.h>
#endif

#include "base/errors.h"
#include "bench/bench.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "kernels/vec4.h"

namespace specdec::bench {
namespace {

using namespace kernels::simd;

constexpr size_t kPiece = kernels::kLineFloats;  // floats read from one stream in turn
constexpr size_t kPrefetchPieces = 4;            // native: lines prefetched ahead per stream

// The sum of `pieces` lines (64 bytes) from each of `streams` regions `stride` floats apart,
// region by region in turn: the access order of a striped weight matrix (kernels/matmul.h). A
// function of its own so that V8 tiers it up after the warm-up calls (it has no on-stack
// replacement for WASM loops). Each of 4 accumulators adds one vector per line, front to back;
// the loop over the streams stays rolled (unrolled, the compilers hoist the lines' loads ahead
// of their adds: GCC reorders the reads, V8 spills them; either halves the bandwidth measured).
[[gnu::noinline]] F4 sum_pieces(const float* p, size_t pieces, size_t stride, int streams) {
  F4 a0 = zero(), a1 = zero(), a2 = zero(), a3 = zero();
  for (size_t i = 0; i < pieces; ++i) {
    const float* q = p + i * kPiece;
#if defined(__clang__)
#pragma clang loop unroll(disable)
#elif defined(__GNUC__)
#pragma GCC unroll 1
#endif
    for (int s = 0; s < streams; ++s, q += stride) {
#if defined(__AVX2__) && !defined(__wasm_simd128__)
      // As the native matmul kernel does (matmul_avx2.cc): a few rounds ahead in software.
      _mm_prefetch(reinterpret_cast<const char*>(q + kPrefetchPieces * kPiece), _MM_HINT_T0);
#endif
      a0 = add(a0, load(q));
      a1 = add(a1, load(q + 4));
      a2 = add(a2, load(q + 8));
      a3 = add(a3, load(q + 12));
    }
  }
  return add(add(a0, a1), add(a2, a3));
}

}  // namespace

Stats read_gbs(size_t bytes, int repeats, double min_ms, int streams, kernels::ThreadPool* pool) {
  if (streams < 1 || streams > 64) fail("read_gbs: streams must be in 1..64, got ", streams);
  if (repeats < 1) fail("read_gbs: repeats must be >= 1, got ", repeats);
  const int threads = pool ? pool->threads() : 1;
  // Each thread reads its own contiguous part, in the striped order: as a matmul split by panels
  // over the pool reads its weights (kernels/parallel.h).
  const size_t per_stream = std::max<size_t>(1, bytes / sizeof(float) / kPiece / streams / threads);
  // Streams (and threads' parts) one line apart beyond their length, as the stripes of a packed
  // matrix are (kernels/matmul.h, kStripePadFloats): without it, sizes with large power-of-two
  // factors put every stream in the same cache sets, and the reads slow down.
  const size_t stride = per_stream * kPiece + kPiece, part = stride * streams + kPiece;
  const size_t n = part * threads;
  std::vector<float> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<float>(i % 1000);
  std::vector<float> sinks(threads * 16, 0.0f);  // one cache line per thread
  auto once = [&] {
    if (threads == 1) {
      sinks[0] += first(sum_pieces(buf.data(), per_stream, stride, streams));
      return;
    }
    pool->run(threads, [&](int t) {
      sinks[t * 16] += first(sum_pieces(buf.data() + t * part, per_stream, stride, streams));
    });
  };
  const double read = static_cast<double>(per_stream * kPiece * streams * threads * sizeof(float));
  Stats s = rate_of(once, read, repeats, min_ms);
  for (int t = 0; t < threads; ++t) {
    if (sinks[t * 16] < 0.0f) s.runs = -1;  // keeps the sums observable (never: sums of >= 0)
  }
  return s;
}

ReadBandwidth best_read_gbs(size_t bytes, int repeats, double min_ms, kernels::ThreadPool* pool) {
  ReadBandwidth best;
  for (int streams : {1, 2, 4, 8, 16}) {
    const Stats s = read_gbs(bytes, repeats, min_ms, streams, pool);
    best.by_streams.push_back(s);
    if (s.median > best.gbs.median) {
      best.gbs = s;
      best.streams = streams;
    }
  }
  return best;
}

}  // namespace specdec::bench
