#include "kernels/parallel.h"

#include <chrono>

#include "kernels/matmul.h"
#include "kernels/matmul_q8.h"
#include "kernels/ops.h"

namespace specdec::kernels {

namespace {
// Panels per range boundary: 4 panels = 16 outputs = one 64-byte line of each output row, so
// two threads never write the same cache line; a multiple of 2 keeps the M = 1 in-cache kernel
// on its two-panel path.
constexpr size_t kPanelAlign = 4;
// An element-wise function's cost per element in multiply-adds of a matmul streaming its
// weights (~0.05 ns each natively): GELU's erf 6-11 ns an element, the tanh GELU ~5, SwiGLU
// ~2 (AMD EPYC Zen 5, one core). (GELU counted as 16 kept it on one thread for a 256-wide
// model's 1024 activations, ~10% of a two-thread pass.)
constexpr size_t kGeluMacsPerElement = 128;
constexpr size_t kGeluTanhMacsPerElement = 96;
constexpr size_t kSwigluMacsPerElement = 32;
}  // namespace

void matmul(ThreadPool* pool, const float* x, size_t m, size_t k, const float* w_packed, size_t n,
            const float* bias, float* out) {
  const size_t panels = (n + kPanelRows - 1) / kPanelRows;
  int parts = parts_for(pool, m * k * n, kMinMacsPerPart);
  parts = std::min<int>(parts, static_cast<int>((panels + kPanelAlign - 1) / kPanelAlign));
  if (parts <= 1) {
    kernels::matmul(x, m, k, w_packed, n, bias, out);
    return;
  }
  matmul_parts(pool, parts, x, m, k, w_packed, n, bias, out);
}

void matmul_parts(ThreadPool* pool, int parts, const float* x, size_t m, size_t k,
                  const float* w_packed, size_t n, const float* bias, float* out) {
  const size_t panels = (n + kPanelRows - 1) / kPanelRows;
  MatmulTimer* timer = matmul_timer_installed();
  const auto start =
      timer ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  const size_t align = panels >= kPanelAlign * static_cast<size_t>(parts) ? kPanelAlign : 1;
  for_ranges(pool, parts, panels, align,
             [&](size_t p0, size_t p1) { matmul_panels(x, m, k, w_packed, n, bias, out, p0, p1); });
  if (timer) {
    timer->ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ++timer->calls;
  }
}

void matmul_q8(ThreadPool* pool, const int16_t* x8, const float* sx, size_t m, size_t k,
               const int8_t* q, const float* s, size_t n, const float* bias, float* out) {
  const size_t panels = (n + kPanelRows - 1) / kPanelRows;
  int parts = parts_for(pool, m * k * n, kMinMacsPerPart);
  parts = std::min<int>(parts, static_cast<int>((panels + kPanelAlign - 1) / kPanelAlign));
  if (parts <= 1) {
    kernels::matmul_q8(x8, sx, m, k, q, s, n, bias, out);
    return;
  }
  matmul_q8_parts(pool, parts, x8, sx, m, k, q, s, n, bias, out);
}

void matmul_q8_parts(ThreadPool* pool, int parts, const int16_t* x8, const float* sx, size_t m,
                     size_t k, const int8_t* q, const float* s, size_t n, const float* bias,
                     float* out) {
  const size_t panels = (n + kPanelRows - 1) / kPanelRows;
  MatmulTimer* timer = matmul_timer_installed();
  const auto start =
      timer ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  const size_t align = panels >= kPanelAlign * static_cast<size_t>(parts) ? kPanelAlign : 1;
  for_ranges(pool, parts, panels, align, [&](size_t p0, size_t p1) {
    matmul_q8_panels(x8, sx, m, k, q, s, n, bias, out, p0, p1);
  });
  if (timer) {
    timer->ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ++timer->calls;
  }
}

namespace {
// f(begin, end) over [0, n) in ranges of whole 4-element blocks (so that each element takes the
// same vector path as on one thread), as many as `work` multiply-adds pay for.
template <typename F>
void split_blocks(ThreadPool* pool, size_t work, size_t n, F&& f) {
  for_ranges(pool, parts_for(pool, work, kMinMacsPerPart), n, 4, f);
}
}  // namespace

void gelu(ThreadPool* pool, float* x, size_t n) {
  split_blocks(pool, n * kGeluMacsPerElement, n,
               [&](size_t b, size_t e) { kernels::gelu(x + b, e - b); });
}

void gelu_tanh(ThreadPool* pool, float* x, size_t n) {
  split_blocks(pool, n * kGeluTanhMacsPerElement, n,
               [&](size_t b, size_t e) { kernels::gelu_tanh(x + b, e - b); });
}

void swiglu(ThreadPool* pool, const float* gate_up, size_t rows, size_t n_ff, float* out) {
  // Each part takes the same columns of every row.
  split_blocks(pool, rows * n_ff * kSwigluMacsPerElement, n_ff, [&](size_t b, size_t e) {
    for (size_t t = 0; t < rows; ++t) {
      const float* g = gate_up + t * 2 * n_ff;
      swiglu_span(g + b, g + n_ff + b, e - b, out + t * n_ff + b);
    }
  });
}

}  // namespace specdec::kernels
