#include "kernels/matmul.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "base/errors.h"
#include "kernels/vec4.h"

namespace specdec::kernels {

namespace {

size_t logical_size(size_t n, size_t k) {
  return (n + kPanelRows - 1) / kPanelRows * kPanelRows * k;
}

// Floats per stripe of a striped W (n, k): K / 4 is a multiple of kStripes, so the lines fill
// whole rounds; plus kStripePadFloats, so that the 8 lines of a round do not all map to the same
// cache set (stripe sizes are multiples of 4 KiB for the models' shapes).
size_t stripe_floats(size_t n, size_t k) {
  return logical_size(n, k) / kStripes + kStripePadFloats;
}

}  // namespace

bool packed_striped(size_t n, size_t k) {
  return k % (4 * kStripes) == 0 && logical_size(n, k) >= kMinStripedFloats;
}

size_t packed_size(size_t n, size_t k) {
  return kHeaderFloats +
         (packed_striped(n, k) ? kStripes * stripe_floats(n, k) : logical_size(n, k));
}

detail::PackedReader::PackedReader(const float* w_packed, size_t n, size_t k)
    : base(w_packed + static_cast<size_t>(w_packed[0])),
      stripe(packed_striped(n, k) ? stripe_floats(n, k) : 0),
      k(k) {}

namespace {

// Calls visit(logical position, row, column) for every float of W (n, k) in the packed logical
// order (rows past n: row >= n).
template <typename Visit>
void for_each_packed(size_t n, size_t k, Visit visit) {
  const size_t k4 = k - k % 4;
  size_t q = 0;
  for (size_t row0 = 0; row0 < n; row0 += kPanelRows) {
    for (size_t kb = 0; kb < k4; kb += 4) {
      for (size_t r = 0; r < kPanelRows; ++r) {
        for (size_t j = 0; j < 4; ++j) visit(q++, row0 + r, kb + j);
      }
    }
    for (size_t kk = k4; kk < k; ++kk) {
      for (size_t r = 0; r < kPanelRows; ++r) visit(q++, row0 + r, kk);
    }
  }
}

}  // namespace

void pack_weights(const float* w, size_t n, size_t k, float* w_packed) {
  pack_weights_begin(n, k, w_packed);
  pack_weights_rows(w, 0, n, n, k, w_packed);
}

void pack_weights_begin(size_t n, size_t k, float* w_packed) {
  // The data offset: 1 .. kHeaderFloats floats, to the first 64-byte boundary after w_packed.
  const uintptr_t address = reinterpret_cast<uintptr_t>(w_packed + 1);
  const size_t offset = 1 + (64 - address % 64) % 64 / sizeof(float);
  // Zeros where no weight goes (every float of the data is written below, a panel's rows past n
  // as zeros): the header and what follows the data, and the pad after each stripe.
  const size_t total = packed_size(n, k), data = total - kHeaderFloats;
  std::fill(w_packed, w_packed + offset, 0.0f);
  std::fill(w_packed + offset + data, w_packed + total, 0.0f);
  if (packed_striped(n, k)) {
    const size_t stripe = stripe_floats(n, k);
    for (size_t s = 1; s <= kStripes; ++s) {
      std::fill_n(w_packed + offset + s * stripe - kStripePadFloats, kStripePadFloats, 0.0f);
    }
  }
  w_packed[0] = static_cast<float>(offset);
}

void pack_weights_rows(const float* rows_in, size_t first, size_t count, size_t n, size_t k,
                       float* w_packed) {
  if (first % kPanelRows != 0 || first + count > n ||
      (count % kPanelRows != 0 && first + count != n)) {
    fail("pack_weights_rows: rows [", first, ", ", first + count, ") of ", n,
         " do not start and end on panels of ", kPanelRows);
  }
  const float* w = rows_in - first * k;  // row r of W at w + r * k
  const detail::PackedReader rd(w_packed, n, k);
  // for_each_packed's order, a k-block (4 floats of each of the panel's 4 rows, contiguous in
  // one line) at a time: one address per line instead of one per float (loading a model).
  const size_t k4 = k - k % 4;
  for (size_t row0 = first; row0 < first + count; row0 += kPanelRows) {
    const size_t rows = std::min(kPanelRows, n - row0), panel = row0 * k;
    for (size_t kb = 0; kb < k4; kb += 4) {
      float* line = const_cast<float*>(rd.at(panel + kb * kPanelRows));
      for (size_t r = 0; r < rows; ++r) std::copy_n(w + (row0 + r) * k + kb, 4, line + r * 4);
      std::fill(line + rows * 4, line + kPanelRows * 4, 0.0f);
    }
    for (size_t kk = k4; kk < k; ++kk) {
      for (size_t r = 0; r < kPanelRows; ++r) {
        *const_cast<float*>(rd.at(panel + k4 * kPanelRows + (kk - k4) * kPanelRows + r)) =
            r < rows ? w[(row0 + r) * k + kk] : 0.0f;
      }
    }
  }
}

void unpack_weights(const float* w_packed, size_t n, size_t k, float* w) {
  const detail::PackedReader rd(w_packed, n, k);
  for_each_packed(n, k, [&](size_t q, size_t row, size_t col) {
    if (row < n) w[row * k + col] = *rd.at(q);
  });
}

void unpack_row(const float* w_packed, size_t n, size_t k, size_t row, float* out) {
  const detail::PackedReader rd(w_packed, n, k);
  const size_t k4 = k - k % 4, r = row % kPanelRows;
  const size_t panel = row / kPanelRows * kPanelRows * k;  // logical start of the row's panel
  // A k-block holds 4 floats of each of the panel's rows, contiguous within one line.
  for (size_t kb = 0; kb < k4; kb += 4)
    std::copy_n(rd.at(panel + kb * kPanelRows + r * 4), 4, out + kb);
  for (size_t kk = k4; kk < k; ++kk)
    out[kk] = *rd.at(panel + k4 * kPanelRows + (kk - k4) * kPanelRows + r);
}

void matmul_reference(const float* x, size_t m, size_t k, const float* w, size_t n,
                      const float* bias, float* out) {
  const size_t k4 = k - k % 4;
  for (size_t i = 0; i < m; ++i) {
    const float* xi = x + i * k;
    for (size_t j = 0; j < n; ++j) {
      const float* wj = w + j * k;
      float lanes[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (size_t kk = 0; kk < k4; ++kk) lanes[kk % 4] += xi[kk] * wj[kk];
      float s = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
      for (size_t kk = k4; kk < k; ++kk) s += xi[kk] * wj[kk];
      if (bias) s += bias[j];
      out[i * n + j] = s;
    }
  }
}

namespace {

using namespace simd;

// Accumulators of up to 2 input rows against the 4 rows of a panel: a[i][r] holds the 4 lane
// sums of (input row i, panel row r).
struct Acc2x4 {
  F4 a[2][4];
};

// One k-block of MR input rows (xk: row 0 at the k-block, stride k) against the 4 panel rows at
// w into the accumulators a. Each loaded weight vector serves all MR rows. Live registers: 4 MR
// accumulators + MR x blocks + 1 weight block (11 for MR = 2, under V8's ~12 before it spills).
template <int MR>
inline void add_block(const float* xk, size_t k, const float* w, F4 (&a)[2][4]) {
  F4 xv[MR];
  for (int i = 0; i < MR; ++i) xv[i] = load(xk + i * k);
  for (int r = 0; r < 4; ++r) {
    const F4 wv = load(w + 4 * r);
    for (int i = 0; i < MR; ++i) a[i][r] = add(a[i][r], mul(xv[i], wv));
  }
}

// `rounds` rounds of a panel from w (see PackedReader::Panel: k-block s of a round at
// w + s * step, the next round `round` floats on), MR input rows from xk (at the first k-block).
// The loop over a round's lines is kept rolled: unrolled, clang hoists the x loads of all 8
// lines and V8 spills them (SPECDEC_NO_UNROLL, vec4.h).
template <int MR>
inline void add_blocks(const float* xk, size_t k, const float* w, size_t blocks, F4 (&a)[2][4]);

template <int MR>
inline void add_rounds(const float* xk, size_t k, const float* w, size_t round, size_t step,
                       size_t rounds, F4 (&a)[2][4]) {
  if (step == kLineFloats) {  // unstriped: one contiguous run
    add_blocks<MR>(xk, k, w, rounds * kStripes, a);
    return;
  }
  for (size_t j = 0; j < rounds; ++j, w += round) {
    const float* ws = w;
    SPECDEC_NO_UNROLL
    for (size_t s = 0; s < kStripes; ++s, ws += step, xk += 4) add_block<MR>(xk, k, ws, a);
  }
}

// `blocks` contiguous k-blocks from w.
template <int MR>
inline void add_blocks(const float* xk, size_t k, const float* w, size_t blocks, F4 (&a)[2][4]) {
  for (const float* const w_end = w + kLineFloats * blocks; w < w_end; w += kLineFloats, xk += 4) {
    add_block<MR>(xk, k, w, a);
  }
}

// One input row against the two adjacent panels p, p + 1 of an unstriped W (in cache: 8
// independent accumulator chains keep the adds' latency from limiting it).
void sweep_pair_m1(const float* x, size_t k, const float* panel, F4 result[2]) {
  const size_t k4 = k - k % 4;
  const float* w0 = panel;
  const float* w1 = panel + kPanelRows * k;
  F4 a[2][4];
  for (auto& pa : a) {
    for (F4& r : pa) r = zero();
  }
  for (size_t kb = 0; kb < k4; kb += 4, w0 += 16, w1 += 16) {
    const F4 xv = load(x + kb);
    for (int r = 0; r < 4; ++r) a[0][r] = add(a[0][r], mul(xv, load(w0 + 4 * r)));
    for (int r = 0; r < 4; ++r) a[1][r] = add(a[1][r], mul(xv, load(w1 + 4 * r)));
  }
  const float* tails[2] = {w0, w1};
  for (int p = 0; p < 2; ++p) {
    F4 s = hsum4(a[p][0], a[p][1], a[p][2], a[p][3]);
    const float* wt = tails[p];
    for (size_t kk = k4; kk < k; ++kk, wt += 4) s = add(s, mul(splat(x[kk]), load(wt)));
    result[p] = s;
  }
}

// Adds the bias (4 entries, or null) and stores lanes 0 .. count - 1 to out.
inline void finish(F4 s, const float* bias, size_t count, float* out) {
  if (count == kPanelRows) {  // every panel but perhaps the last
    if (bias) s = add(s, load(bias));
    store(out, s);
    return;
  }
  float b[4] = {0.0f, 0.0f, 0.0f, 0.0f}, v[4];
  for (size_t r = 0; r < count; ++r) b[r] = bias ? bias[r] : 0.0f;
  if (bias) s = add(s, load(b));
  store(v, s);
  for (size_t r = 0; r < count; ++r) out[r] = v[r];
}

// Rounds of a panel handled before the next group of input rows takes its turn: 2 (16 k-blocks,
// 1 KiB of weights).
constexpr size_t kChunkRounds = 2;

// MR rows (1 or 2) from xk against a whole panel pl into a.
template <int MR>
inline void add_panel(const float* xk, size_t k, const detail::PackedReader::Panel& pl,
                      F4 (&a)[2][4]) {
  add_rounds<MR>(xk, k, pl.first, pl.round, pl.step, pl.rounds, a);
  add_blocks<MR>(xk + 4 * kStripes * pl.rounds, k, pl.after, pl.rest, a);
}

// The sums of one input row's accumulators a (row xi of x), with the K % 4 tail (unstriped: it
// follows the panel's k-blocks), the bias added and the valid outputs stored.
inline void finish_row(const F4 (&a)[4], const float* xi, size_t k,
                       const detail::PackedReader::Panel& pl, const float* bias, size_t n_valid,
                       float* out) {
  F4 s = hsum4(a[0], a[1], a[2], a[3]);
  const float* wt = pl.after + kLineFloats * pl.rest;
  for (size_t kk = k - k % 4; kk < k; ++kk, wt += 4) s = add(s, mul(splat(xi[kk]), load(wt)));
  finish(s, bias, n_valid, out);
}

// Input-row groups up to which each group sweeps a striped panel on its own (the panel is then
// re-read from L1/L2 by the next group); more take turns on chunks. Own sweeps are no slower
// than turns for matrices streaming from memory and faster for in-cache ones.
constexpr size_t kMaxSweepGroups = 4;

// All m input rows against panel p, in groups of 2 (and 1 when m is odd).
// Unstriped (in cache) or up to kMaxSweepGroups groups: each group sweeps the whole panel with
// its accumulators in registers. More (long prefills): the panel is walked in chunks of
// kChunkRounds rounds and every group takes its turn on a chunk while it is in L1 (the weights
// stream at the pace of the whole pass's arithmetic, and the panel is read from memory once
// however long the prefill); the accumulators wait in `scratch` between chunks.
void panel_all_rows(const float* x, size_t m, size_t k, const detail::PackedReader& rd, size_t p,
                    const float* bias, size_t n_valid, float* out, size_t n,
                    std::vector<Acc2x4>& scratch) {
  const size_t groups = (m + 1) / 2;
  const detail::PackedReader::Panel pl = rd.panel(p);
  if (groups <= kMaxSweepGroups || rd.stripe == 0) {
    for (size_t g = 0; g < groups; ++g) {
      F4 a[2][4];
      for (auto& row : a) {
        for (F4& v : row) v = zero();
      }
      const size_t i0 = 2 * g;
      if (i0 + 1 < m) {
        add_panel<2>(x + i0 * k, k, pl, a);
        finish_row(a[0], x + i0 * k, k, pl, bias, n_valid, out + i0 * n);
        finish_row(a[1], x + (i0 + 1) * k, k, pl, bias, n_valid, out + (i0 + 1) * n);
      } else {
        add_panel<1>(x + i0 * k, k, pl, a);
        finish_row(a[0], x + i0 * k, k, pl, bias, n_valid, out + i0 * n);
      }
    }
    return;
  }
  if (scratch.size() < groups) scratch.resize(groups);
  for (size_t g = 0; g < groups; ++g) {
    for (auto& row : scratch[g].a) {
      for (F4& v : row) v = zero();
    }
  }
  for (size_t j = 0; j < pl.rounds; j += kChunkRounds) {
    const size_t rounds = std::min(kChunkRounds, pl.rounds - j);
    const float* w = pl.first + j * pl.round;
    for (size_t g = 0; g < groups; ++g) {
      const float* xk = x + 2 * g * k + 4 * kStripes * j;
      F4 a[2][4];
      for (int i = 0; i < 2; ++i) {
        for (int r = 0; r < 4; ++r) a[i][r] = scratch[g].a[i][r];
      }
      if (2 * g + 1 < m) {
        add_rounds<2>(xk, k, w, pl.round, pl.step, rounds, a);
      } else {
        add_rounds<1>(xk, k, w, pl.round, pl.step, rounds, a);
      }
      for (int i = 0; i < 2; ++i) {
        for (int r = 0; r < 4; ++r) scratch[g].a[i][r] = a[i][r];
      }
    }
  }
  for (size_t i = 0; i < m; ++i) {  // striped: no k-blocks after the rounds, no tail
    finish_row(scratch[i / 2].a[i % 2], x + i * k, k, pl, bias, n_valid, out + i * n);
  }
}

}  // namespace

// Panel by panel, in logical order (panel_all_rows). An unstriped W (in cache) with M = 1 goes
// two panels at a time for more accumulator chains.
void matmul_vec4_panels(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                        const float* bias, float* out, size_t p_begin, size_t p_end) noexcept {
  const detail::PackedReader rd(w_packed, n, k);
  const size_t panels = std::min(p_end, (n + kPanelRows - 1) / kPanelRows);
  size_t p = p_begin;
  if (m == 1 && rd.stripe == 0) {
    for (; p + 2 <= panels && (p + 2) * kPanelRows <= n; p += 2) {
      F4 s[2];
      sweep_pair_m1(x, k, rd.base + p * kPanelRows * k, s);
      for (int h = 0; h < 2; ++h) {
        const size_t row0 = (p + h) * kPanelRows;
        finish(s[h], bias ? bias + row0 : nullptr, kPanelRows, out + row0);
      }
    }
  }
  thread_local std::vector<Acc2x4> scratch;
  for (; p < panels; ++p) {
    const size_t row0 = p * kPanelRows;
    panel_all_rows(x, m, k, rd, p, bias ? bias + row0 : nullptr, std::min(kPanelRows, n - row0),
                   out + row0, n, scratch);
  }
}

void matmul_vec4(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                 const float* bias, float* out) {
  matmul_vec4_panels(x, m, k, w_packed, n, bias, out, 0, (n + kPanelRows - 1) / kPanelRows);
}

namespace {
thread_local MatmulTimer* matmul_timer = nullptr;
}  // namespace

void set_matmul_timer(MatmulTimer* timer) { matmul_timer = timer; }

MatmulTimer* matmul_timer_installed() { return matmul_timer; }

void matmul_panels(const float* x, size_t m, size_t k, const float* w_packed, size_t n,
                   const float* bias, float* out, size_t p_begin, size_t p_end) noexcept {
#if defined(__AVX2__)
  matmul_avx2_panels(x, m, k, w_packed, n, bias, out, p_begin, p_end);
#else
  matmul_vec4_panels(x, m, k, w_packed, n, bias, out, p_begin, p_end);
#endif
}

void matmul(const float* x, size_t m, size_t k, const float* w_packed, size_t n, const float* bias,
            float* out) {
  const auto start =
      matmul_timer ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  matmul_panels(x, m, k, w_packed, n, bias, out, 0, (n + kPanelRows - 1) / kPanelRows);
  if (matmul_timer) {
    matmul_timer->ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ++matmul_timer->calls;
  }
}

}  // namespace specdec::kernels
