// out[m][n] = bias[n] + sum_k x[m][k] * W[n][k]: nn.Linear with W of shape (N, K) row-major,
// for one row (M = 1, decoding) or a few (M = 2..16, verification and prefill).
//
// Canonical order. Every implementation computes each output with the same operations:
//   K4 = K - K % 4; four partial sums from +0, lane j accumulating x[k] * W[n][k] for
//   k = j, j + 4, ... < K4 in increasing k; then s = (l0 + l2) + (l1 + l3); then
//   s += x[k] * W[n][k] for the tail k = K4 .. K - 1 in order; then s += bias[n] (skipped
//   when bias is null).
// So out[m][n] is bit-identical whatever M is and whichever row it sits in (batch invariance),
// on every backend (AVX2, WASM SIMD128, scalar), and equal to matmul_reference().
//
// Packed layout. W is repacked once at load time. Logically it is a sequence of panels of
// kPanelRows = 4 output rows (rows past N zero); panel p holds 4K floats:
//   for each k-block b < K4 / 4:  W[4p][4b..4b+3], W[4p+1][4b..4b+3], W[4p+2][..], W[4p+3][..]
//   then for each tail k >= K4:   W[4p][k], W[4p+1][k], W[4p+2][k], W[4p+3][k]
// Every kernel reads this logical sequence once, front to back, whatever M is (rows of x are
// applied to a panel while it is in L1).
//
// Alignment. The packed data starts on a 64-byte boundary, so that a k-block of a panel is one
// cache line and no vector load straddles two (loads that straddle lines are much slower). The
// first kHeaderFloats floats of a packed
// buffer are a header: w_packed[0] holds the offset (1..16) of the data from w_packed, chosen by
// pack_weights for the buffer's address. A packed buffer copied elsewhere stays correct (the
// offset travels with it), only possibly misaligned.
//
// Striping. One core reads memory faster from several sequential streams than from one (the
// hardware prefetchers run one stream each), and fastest when the streams take turns one cache
// line at a time (bench/results/2026-11-30-epyc-2vcpu-kernels.md). Fine-grained turns also let
// the prefetchers run 8 times further ahead of the kernel in time, so memory overlaps arithmetic
// when several rows are applied (bench/results/2026-12-01-epyc-2vcpu-line-stripes.md). So a
// large matrix (K % 32 == 0 and
// at least kMinStripedFloats) is stored striped: its logical sequence is cut into lines of
// kLineFloats (one k-block of a panel, 64 bytes) and line i is stored in stripe i % kStripes at
// slot i / kStripes. As K / 4 is a multiple of kStripes, panel p's k-block b = 8 j + s lies in
// stripe s at slot p K / 32 + j: a kernel walks a panel in rounds j of one line per stripe,
// 8 streams interleaved. Stripes are kStripePadFloats apart (zeros), so that the lines of a
// round fall in different cache sets. Small matrices (they stay in cache) and K % 32 != 0 are
// stored unstriped (the logical sequence itself).
//
// Kernels. The 128-bit kernel keeps one accumulator per (input row, panel row): input rows in
// groups of 2 (8 accumulators, under V8's ~12 live v128 registers; 3 rows spill) and 1 for an
// odd remainder; up to 4 groups each sweep the whole panel (the next re-reads it from L1/L2),
// more (long prefills) take turns on chunks of 16 k-blocks while they are in L1 (the
// accumulators wait in memory). The AVX2 kernel holds panel rows (0, 1) and (2, 3)
// in two 256-bit accumulators per input row against x blocks doubled once per call, up to 6
// input rows per sweep (more: groups taking turns as above), and prefetches a few rounds ahead.
// An unstriped matrix (in cache) with M = 1 is read two panels at a time, for twice the
// accumulator chains. Only the schedule differs: every output is still computed in the
// canonical order.
#pragma once

#include <cstddef>

namespace specdec::kernels {

constexpr size_t kPanelRows = 4;
constexpr size_t kLineFloats = 16;  // one k-block of a panel: a 64-byte cache line
constexpr size_t kStripes = 8;
constexpr size_t kMinStripedFloats = 65536;       // 256 KiB: smaller ones stay in cache
constexpr size_t kStripePadFloats = kLineFloats;  // one line between stripes (see Striping)
constexpr size_t kHeaderFloats = 16;

// Whether W (n, k) is stored striped (see above).
bool packed_striped(size_t n, size_t k);

// Floats needed for W (n, k) packed: the header, then ceil(n / 4) * 4 * k (plus kStripes *
// kStripePadFloats when striped).
size_t packed_size(size_t n, size_t k);

// Packs W (n, k) row-major into w_packed (packed_size(n, k) floats; padding is zeroed). The
// data's alignment depends on w_packed's address (see Alignment above).
void pack_weights(const float* w, size_t n, size_t k, float* w_packed);
// The same a block of rows at a time (a large matrix converted piecewise, with no full float
// copy of it): pack_weights_begin once (header, padding), then pack_weights_rows for rows
// [first, first + count) given row-major at `rows` — first a multiple of kPanelRows, and count
// too unless the block ends at n (specdec::Error otherwise); every row once.
void pack_weights_begin(size_t n, size_t k, float* w_packed);
void pack_weights_rows(const float* rows, size_t first, size_t count, size_t n, size_t k,
                       float* w_packed);

// The inverse: W (n, k) row-major from its packed form.
void unpack_weights(const float* w_packed, size_t n, size_t k, float* w);
// Row `row` (< n) of W (n, k) from its packed form: k floats into out. What a tied model's
// embedding lookup reads (the head's packed rows are the embedding).
void unpack_row(const float* w_packed, size_t n, size_t k, size_t row, float* out);

// x: (m, k) row-major; w_packed: W (n, k) packed; bias: (n,) or null; out: (m, n) row-major.
// Uses the best kernel compiled in (AVX2 natively, SIMD128 in WASM, scalar otherwise).
void matmul(const float* x, size_t m, size_t k, const float* w_packed, size_t n, const float* bias,
            float* out);

// The outputs of panels [p_begin, p_end) only (columns 4 p_begin .. 4 p_end - 1 of every row of
// out, clipped to n): the unit a thread pool splits a matmul by (kernels/parallel.h). Each output
// is computed exactly as by matmul().
void matmul_panels(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                   const float* bias, float* out, size_t p_begin, size_t p_end) noexcept;

// Benchmark instrumentation (src/bench/ only): while a timer is installed on this thread,
// matmul() adds each call's wall time to it, so that the benchmark can tell the matmuls' share
// of a real forward pass from their time alone. Off (null) by default: one predictable branch
// per call.
struct MatmulTimer {
  double ms = 0.0;
  size_t calls = 0;
};
void set_matmul_timer(MatmulTimer* timer);
MatmulTimer* matmul_timer_installed();

// The 128-bit kernel behind matmul() in WASM and scalar builds (vec4.h backends). Compiled
// everywhere so that native tests exercise the code WASM runs.
void matmul_vec4(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                 const float* bias, float* out);
void matmul_vec4_panels(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                        const float* bias, float* out, size_t p_begin, size_t p_end) noexcept;

#if defined(__AVX2__)
// The 256-bit kernel behind matmul() in native builds (matmul_avx2.cc).
void matmul_avx2(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                 const float* bias, float* out);
void matmul_avx2_panels(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                        const float* bias, float* out, size_t p_begin, size_t p_end) noexcept;
#endif

// Scalar reference in the canonical order over the unpacked W (n, k), one output at a time.
void matmul_reference(const float* x, size_t m, size_t k, const float* w, size_t n,
                      const float* bias, float* out);

namespace detail {

// Where the logical sequence of a packed W lives (shared by the kernels).
struct PackedReader {
  const float* base;  // the data: w_packed + w_packed[0]
  size_t stripe;      // floats per stripe; 0 when unstriped
  size_t k;

  PackedReader(const float* w_packed, size_t n, size_t k);
  // Address of logical float q.
  const float* at(size_t q) const {
    if (stripe == 0) return base + q;
    const size_t line = q / kLineFloats;
    return base + (line % kStripes) * stripe + line / kStripes * kLineFloats + q % kLineFloats;
  }
  // Panel p's k-blocks b = kStripes j + s (j < rounds, s < kStripes) lie at
  // first + j * round + s * step; then `rest` k-blocks (unstriped, K / 4 % 8 of them) and the
  // K % 4 tail floats follow contiguously from `after`.
  struct Panel {
    const float* first;
    size_t round, step, rounds;
    const float* after;  // the remaining k-blocks, then the tail
    size_t rest;
  };
  Panel panel(size_t p) const {
    const size_t blocks = k / 4, rounds = blocks / kStripes;
    if (stripe == 0) {
      const float* first = base + p * kPanelRows * k;
      return {first,
              kStripes * kLineFloats,
              kLineFloats,
              rounds,
              first + rounds * kStripes * kLineFloats,
              blocks % kStripes};
    }
    const float* first = base + p * kPanelRows * k / kStripes;
    return {first, kLineFloats, stripe, rounds, nullptr, 0};
  }
};

}  // namespace detail

}  // namespace specdec::kernels
