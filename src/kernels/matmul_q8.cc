// 8-bit weights (kernels/matmul_q8.h): the quantizers, packing, the portable kernel, the
// reference and the dispatch. The SIMD kernels live in matmul_q8_wasm.cc and matmul_q8_avx2.cc.
#include "kernels/matmul_q8.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "base/errors.h"
#include "kernels/half.h"
#include "kernels/matmul.h"

namespace specdec::kernels {

// The SIMD kernels (same contract as matmul_q8_panels), where compiled in.
void matmul_q8_wasm_panels(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* q,
                           const float* s, size_t n, const float* bias, float* out, size_t p_begin,
                           size_t p_end) noexcept;
void matmul_q8_avx2_panels(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* q,
                           const float* s, size_t n, const float* bias, float* out, size_t p_begin,
                           size_t p_end) noexcept;

namespace {

size_t panels_of(size_t n) { return (n + kPanelRows - 1) / kPanelRows; }

// round_half_even(v) clamped to [-127, 127]; NaN gives 0.
int8_t round_clamp(float v) {
  if (!(v == v)) return 0;
  v = std::min(127.0f, std::max(-127.0f, v));
  return static_cast<int8_t>(std::nearbyint(v));
}

// max |v| over a block of 32 floats (a NaN is never greater: ignored).
float block_amax(const float* v) {
  float amax = 0.0f;
  for (size_t j = 0; j < kQ8Block; ++j) {
    const float a = std::fabs(v[j]);
    if (a > amax) amax = a;
  }
  return amax;
}

// The loop both quantizers share: x (rows, k) block by block, block(src, dst) writing the
// block's 32 quants at dst and returning its scale (scales: (rows, k / 32) row-major).
template <typename T, typename Block>
void quantize_blocks(const float* x, size_t rows, size_t k, T* q, float* scales, Block block) {
  const size_t blocks = k / kQ8Block;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < blocks; ++b) {
      scales[r * blocks + b] = block(x + r * k + b * kQ8Block, q + r * k + b * kQ8Block);
    }
  }
}

size_t q8_pieces(size_t n, size_t k) { return panels_of(n) * (k / kQ8Block); }
size_t q8_stripe_bytes(size_t n, size_t k) {
  return q8_pieces(n, k) / kQ8Stripes * kQ8PieceBytes + kQ8StripePad;
}

}  // namespace

bool q8_striped(size_t n, size_t k) {
  return (k / kQ8Block) % kQ8Stripes == 0 && q8_pieces(n, k) * kQ8PieceBytes >= kQ8MinStripedBytes;
}

detail::Q8Reader::Q8Reader(const int8_t* q, size_t n, size_t k)
    : data(q + static_cast<uint8_t>(q[0])),
      stripe(q8_striped(n, k) ? q8_stripe_bytes(n, k) : 0),
      blocks(k / kQ8Block) {}

size_t q8_packed_bytes(size_t n, size_t k) {
  return kQ8HeaderBytes +
         (q8_striped(n, k) ? kQ8Stripes * q8_stripe_bytes(n, k) : q8_pieces(n, k) * kQ8PieceBytes);
}

size_t q8_packed_scales(size_t n, size_t k) { return panels_of(n) * kPanelRows * (k / kQ8Block); }

void quantize_weights_q8(const float* w, size_t n, size_t k, int8_t* w8, float* scales) {
  quantize_blocks(w, n, k, w8, scales, [](const float* src, int8_t* dst) {
    // The binary16 scale, widened back (exact): what the file stores.
    const float d = f16_to_f32(f32_to_f16(block_amax(src) / 127.0f));
    if (d == 0.0f) {
      std::fill(dst, dst + kQ8Block, int8_t{0});
      return 1.0f;
    }
    for (size_t j = 0; j < kQ8Block; ++j) dst[j] = round_clamp(src[j] / d);
    return d;
  });
}

void pack_weights_q8(const int8_t* w8, const float* scales, size_t n, size_t k, int8_t* q,
                     float* s) {
  pack_weights_q8_begin(n, k, q);
  pack_weights_q8_rows(w8, scales, 0, n, n, k, q, s);
}

void pack_weights_q8_begin(size_t n, size_t k, int8_t* q) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(q + 1);
  const size_t offset = 1 + (64 - address % 64) % 64;
  // Zeros where no piece goes (q may be uninitialised: every other byte is written by
  // pack_weights_q8_rows once): the header, each stripe's pad, the bytes after the data.
  const size_t total = q8_packed_bytes(n, k);
  const size_t pieces = q8_pieces(n, k) * kQ8PieceBytes;
  std::fill(q, q + offset, int8_t{0});
  if (q8_striped(n, k)) {
    const size_t stripe = q8_stripe_bytes(n, k);
    for (size_t i = 1; i <= kQ8Stripes; ++i) {
      std::fill_n(q + offset + i * stripe - kQ8StripePad, kQ8StripePad, int8_t{0});
    }
    std::fill(q + offset + kQ8Stripes * stripe, q + total, int8_t{0});
  } else {
    std::fill(q + offset + pieces, q + total, int8_t{0});
  }
  q[0] = static_cast<int8_t>(offset);
}

void pack_weights_q8_rows(const int8_t* w8_rows, const float* scale_rows, size_t first,
                          size_t count, size_t n, size_t k, int8_t* q, float* s) {
  if (first % kPanelRows != 0 || first + count > n ||
      (count % kPanelRows != 0 && first + count != n)) {
    fail("pack_weights_q8_rows: rows [", first, ", ", first + count, ") of ", n,
         " do not start and end on panels of ", kPanelRows);
  }
  const detail::Q8Reader rd(q, n, k);
  const size_t blocks = k / kQ8Block;
  const int8_t* w8 = w8_rows - first * k;             // row r's quants at w8 + r * k
  const float* scales = scale_rows - first * blocks;  // and its scales at scales + r * blocks
  // Piece by piece (each written front to back), every row of the block's panels: the rows past
  // n as zeros (quants and scales).
  for (size_t p = first / kPanelRows; p < panels_of(first + count); ++p) {
    for (size_t b = 0; b < blocks; ++b) {
      int8_t* piece = const_cast<int8_t*>(rd.at(p, b));
      for (size_t row = 0; row < kPanelRows; ++row) {
        const size_t r = p * kPanelRows + row;
        float& scale = s[(p * blocks + b) * kPanelRows + row];
        if (r < n) {
          std::memcpy(piece + row * kQ8Block, w8 + r * k + b * kQ8Block, kQ8Block);
          scale = scales[r * blocks + b];
        } else {
          std::fill_n(piece + row * kQ8Block, kQ8Block, int8_t{0});
          scale = 0.0f;
        }
      }
    }
  }
}

void unpack_row_q8(const int8_t* q, const float* s, size_t n, size_t k, size_t row, float* out) {
  const detail::Q8Reader rd(q, n, k);
  const size_t blocks = k / kQ8Block, p = row / kPanelRows, r = row % kPanelRows;
  for (size_t b = 0; b < blocks; ++b) {
    const int8_t* src = rd.at(p, b) + r * kQ8Block;
    const float d = s[(p * blocks + b) * kPanelRows + r];
    for (size_t j = 0; j < kQ8Block; ++j) out[b * kQ8Block + j] = d * static_cast<float>(src[j]);
  }
}

void quantize_rows_q8(const float* x, size_t m, size_t k, int16_t* x8, float* sx) {
  quantize_blocks(x, m, k, x8, sx, [](const float* src, int16_t* dst) {
    const float amax = block_amax(src);
    if (amax == 0.0f) {
      std::fill(dst, dst + kQ8Block, int16_t{0});
      return 0.0f;
    }
    const float inv = 127.0f / amax;
    for (size_t j = 0; j < kQ8Block; ++j) dst[j] = round_clamp(src[j] * inv);
    return amax / 127.0f;
  });
}

void matmul_q8_scalar_panels(const int16_t* x8, const float* sx, size_t m, size_t k,
                             const int8_t* q, const float* s, size_t n, const float* bias,
                             float* out, size_t p_begin, size_t p_end) noexcept {
  // One input row against panel p: its four sums, in the canonical order.
  const auto row = [](const detail::Q8Reader& rd, size_t p, const int16_t* xi, const float* si,
                      const float* ps, float* acc) {
    for (size_t r = 0; r < kPanelRows; ++r) acc[r] = 0.0f;
    for (size_t b = 0; b < rd.blocks; ++b) {
      const int16_t* xb = xi + b * kQ8Block;
      for (size_t r = 0; r < kPanelRows; ++r) {
        const int8_t* wb = rd.at(p, b) + r * kQ8Block;
        int32_t isum = 0;
        for (size_t j = 0; j < kQ8Block; ++j) isum += int32_t{xb[j]} * int32_t{wb[j]};
        acc[r] = acc[r] + (ps[b * kPanelRows + r] * si[b]) * static_cast<float>(isum);
      }
    }
  };
  detail::for_panel_rows(x8, sx, m, k, q, s, n, bias, out, p_begin, p_end, row);
}

void matmul_q8_reference(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* w8,
                         const float* scales, size_t n, const float* bias, float* out) {
  const size_t blocks = k / kQ8Block;
  for (size_t i = 0; i < m; ++i) {
    for (size_t col = 0; col < n; ++col) {
      float acc = 0.0f;
      for (size_t b = 0; b < blocks; ++b) {
        int32_t isum = 0;
        for (size_t j = 0; j < kQ8Block; ++j) {
          isum += int32_t{x8[i * k + b * kQ8Block + j]} * int32_t{w8[col * k + b * kQ8Block + j]};
        }
        acc = acc + (scales[col * blocks + b] * sx[i * blocks + b]) * static_cast<float>(isum);
      }
      out[i * n + col] = bias ? acc + bias[col] : acc;
    }
  }
}

void matmul_q8_panels(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* q,
                      const float* s, size_t n, const float* bias, float* out, size_t p_begin,
                      size_t p_end) noexcept {
#if defined(__wasm_simd128__)
  matmul_q8_wasm_panels(x8, sx, m, k, q, s, n, bias, out, p_begin, p_end);
#elif defined(__AVX2__)
  matmul_q8_avx2_panels(x8, sx, m, k, q, s, n, bias, out, p_begin, p_end);
#else
  matmul_q8_scalar_panels(x8, sx, m, k, q, s, n, bias, out, p_begin, p_end);
#endif
}

void matmul_q8(const int16_t* x8, const float* sx, size_t m, size_t k, const int8_t* q,
               const float* s, size_t n, const float* bias, float* out) {
  MatmulTimer* timer = matmul_timer_installed();
  const auto start =
      timer ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  matmul_q8_panels(x8, sx, m, k, q, s, n, bias, out, 0, panels_of(n));
  if (timer) {
    timer->ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ++timer->calls;
  }
}

}  // namespace specdec::kernels
