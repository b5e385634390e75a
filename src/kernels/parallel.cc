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
// GELU's cost per element in multiply-adds of a matmul (a rational erf, ~20 operations).
constexpr size_t kGeluMacsPerElement = 16;
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

void gelu(ThreadPool* pool, float* x, size_t n) {
  const int parts = parts_for(pool, n * kGeluMacsPerElement, kMinMacsPerPart);
  // Ranges of whole 4-element blocks, so that each element takes the same (vector) path.
  for_ranges(pool, parts, n, 4, [&](size_t b, size_t e) { kernels::gelu(x + b, e - b); });
}

}  // namespace specdec::kernels
