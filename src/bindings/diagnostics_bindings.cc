// The diagnostics of the shipped module (the only measurement code in it; every other timing
// entry point lives in the benchmark's own module, src/bindings/bench_bindings.cc):
//   measureReadBandwidth(bytes, repeats, threads) -> { median, min, max, runs, streams }: GB/s
//     at which `threads` cores together read a buffer of `bytes` (src/bench/bandwidth.cc, with
//     the kernels' 8 streams each),
//     for the page's memory floor (bytes of weights / bandwidth = the least time of a pass).
//   kernelSelfCheck() -> "" or the first kernel whose SIMD128 output differs from its scalar
//     reference (tests/js/kernels.test.mjs checks the kernels as shipped).
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <string>

#include "base/errors.h"
#include "bench/bench.h"
#include "bindings/interop.h"
#include "bindings/threads.h"
#include "kernels/matmul.h"

namespace specdec::bindings {
namespace {

constexpr double kMaxBytes = 1 << 30;  // 1 GiB: a buffer of this size is allocated
constexpr double kMinMsPerRepeat = 20.0;

val measure_read_bandwidth(double bytes, double repeats, double threads) {
  return guard([&] {
    if (!(bytes >= 4096 && bytes <= kMaxBytes)) {
      fail("bytes: must be in [4096, ", kMaxBytes, "], got ", bytes);
    }
    if (!(repeats >= 1 && repeats <= 1000 && repeats == static_cast<int>(repeats))) {
      fail("repeats: must be an integer in [1, 1000], got ", repeats);
    }
    if (!(threads >= 1 && threads == static_cast<int>(threads))) {
      fail("threads: must be an integer >= 1, got ", threads);
    }
    const int streams = static_cast<int>(kernels::kStripes);
    const bench::Stats s =
        read_gbs_with_threads(static_cast<size_t>(bytes), static_cast<int>(repeats),
                              kMinMsPerRepeat, streams, static_cast<int>(threads));
    val o = val::object();
    o.set("median", s.median);
    o.set("min", s.min);
    o.set("max", s.max);
    o.set("runs", s.runs);
    o.set("streams", streams);
    return o;
  });
}

std::string kernel_self_check() {
  return guard([] { return bench::kernel_self_check(); });
}

}  // namespace

EMSCRIPTEN_BINDINGS(specdec_diagnostics) {
  emscripten::function("measureReadBandwidth", &measure_read_bandwidth);
  emscripten::function("kernelSelfCheck", &kernel_self_check);
}

}  // namespace specdec::bindings
