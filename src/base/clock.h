// A monotonic clock for timings read on hot paths: the thread pool reads it three times a
// fork-join and while it spins (the decoder's per-pass timings, a few an iteration, keep
// std::chrono::steady_clock). A std::chrono clock: durations and time points work as with
// steady_clock, which it is natively.
//
// In WebAssembly, steady_clock::now() is a chain of calls: libc++ into musl's clock_gettime,
// out to JavaScript, a Node hrtime (or performance.now()) written back into wasm memory
// through a check that the memory did not grow, and, in a function with a destructor in scope,
// all of it through an `invoke_` trampoline of the JavaScript exceptions that the threaded
// build uses. Measured in the threaded build under Node (AMD EPYC Zen 4, plain decoding at two
// threads), it took 10.6% of the calling thread's time. emscripten_get_now() is the same time
// source (performance.now(), in milliseconds), one import call away; declared here as not
// throwing, its calls need no trampoline.
#pragma once

#include <chrono>
#include <cstdint>

#ifdef __EMSCRIPTEN__
extern "C" double emscripten_get_now(void) __attribute__((nothrow));
#endif

namespace specdec {

#ifdef __EMSCRIPTEN__
struct Clock {
  using rep = int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Clock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept {
    return time_point(duration(static_cast<rep>(emscripten_get_now() * 1e6)));
  }
};
#else
using Clock = std::chrono::steady_clock;
#endif

}  // namespace specdec
