// JS entry points of the module's thread pool (bindings/threads.h):
//   hasThreads() -> whether this build has threads (the -pthread module)
//   setupThreads(n) -> threads started: n in 1..64, once per instance (n in the threaded build,
//     1 otherwise); later calls must ask for the same n
//   setThreads(n) / threadsInUse() / maxThreads(): how many of them a pass uses
//   threadStats() -> { runs, serial, wakeups, workerParts, callerParts, shed, serialWins } of the
//                    pool
//   measurePeakGflops(repeats, threads) -> { median, min, max, runs }: mul+add GFLOP/s of
//     `threads` threads at once (the page's arithmetic ceiling P(T))
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <memory>

#include "base/errors.h"
#include "bench/bench.h"
#include "bindings/interop.h"
#include "bindings/threads.h"

namespace specdec::bindings {

namespace {
std::unique_ptr<kernels::ThreadPool>& pool_slot() {
  static std::unique_ptr<kernels::ThreadPool> pool;
  return pool;
}

int checked_count(double n, const char* what, int max) {
  if (!(n >= 1 && n <= max && n == static_cast<int>(n))) {
    fail(what, ": must be an integer in 1..", max, ", got ", n);
  }
  return static_cast<int>(n);
}
}  // namespace

kernels::ThreadPool* module_pool() {
  kernels::ThreadPool* p = pool_slot().get();
  return p && p->max_threads() > 1 ? p : nullptr;
}

namespace {

bool has_threads() { return kernels::ThreadPool::has_threads(); }

int setup_threads(double n) {
  return guard([&] {
    const int want = checked_count(n, "threads", kernels::ThreadPool::kMaxThreads);
    auto& slot = pool_slot();
    if (slot) {
      const int have = has_threads() ? want : 1;
      if (slot->max_threads() != have) {
        fail("threads: this instance already runs ", slot->max_threads(), " threads");
      }
      return slot->max_threads();
    }
    slot = std::make_unique<kernels::ThreadPool>(want);
    return slot->max_threads();
  });
}

int max_threads() { return pool_slot() ? pool_slot()->max_threads() : 1; }
int threads_in_use() { return pool_slot() ? pool_slot()->threads() : 1; }

void set_threads(double n) {
  guard([&] {
    const int count = checked_count(n, "threads", max_threads());
    if (pool_slot()) pool_slot()->set_threads(count);
  });
}

// Internal (benchmarks): how long workers spin before they sleep.
void set_spin_micros(double us) {
  if (pool_slot()) pool_slot()->set_spin_micros(static_cast<int>(us));
}

val thread_stats() {
  val o = val::object();
  const kernels::ThreadPool::Stats s =
      pool_slot() ? pool_slot()->stats() : kernels::ThreadPool::Stats{};
  o.set("runs", static_cast<double>(s.runs));
  o.set("serial", static_cast<double>(s.serial));
  o.set("wakeups", static_cast<double>(s.wakeups));
  o.set("workerParts", static_cast<double>(s.worker_parts));
  o.set("callerParts", static_cast<double>(s.caller_parts));
  o.set("shed", static_cast<double>(s.shed));
  o.set("serialWins", static_cast<double>(s.losing_windows));
  return o;
}

// Runs f with the pool set to `threads` threads, then restores the count in use. The physics
// (B(T), P(T)) is of raw threads: the pool's serial probes are off meanwhile.
template <typename F>
auto with_threads(int threads, F f) {
  kernels::ThreadPool* pool = pool_slot().get();
  if (!pool || threads == 1) return f(static_cast<kernels::ThreadPool*>(nullptr));
  struct Restore {
    kernels::ThreadPool* p;
    int n;
    bool adaptive;
    ~Restore() {
      p->set_threads(n);
      p->set_adaptive(adaptive);
    }
  } restore{pool, pool->threads(), pool->adaptive()};
  pool->set_threads(threads);
  pool->set_adaptive(false);
  return f(pool);
}

// A peak measured with `threads` threads: bench::muladd_gflops or bench::int_dot_gops.
val measure_peak(double repeats, double threads,
                 bench::Stats (*measure)(int, double, kernels::ThreadPool*)) {
  return guard([&] {
    const int r = checked_count(repeats, "repeats", 1000);
    const int t = checked_count(threads, "threads", max_threads());
    return stats_js(with_threads(t, [&](kernels::ThreadPool* p) { return measure(r, 20.0, p); }));
  });
}
val measure_peak_gflops(double repeats, double threads) {
  return measure_peak(repeats, threads, &bench::muladd_gflops);
}
val measure_peak_int_gops(double repeats, double threads) {
  return measure_peak(repeats, threads, &bench::int_dot_gops);
}

}  // namespace

val stats_js(const bench::Stats& s) {
  val o = val::object();
  o.set("median", s.median);
  o.set("min", s.min);
  o.set("max", s.max);
  o.set("runs", s.runs);
  return o;
}

// Used by diagnostics_bindings.cc: read bandwidth of `threads` threads at once.
bench::Stats read_gbs_with_threads(size_t bytes, int repeats, double min_ms, int streams,
                                   int threads) {
  if (threads < 1 || threads > max_threads()) {
    fail("threads: must be an integer in 1..", max_threads(), ", got ", threads);
  }
  return with_threads(threads, [&](kernels::ThreadPool* p) {
    return bench::read_gbs(bytes, repeats, min_ms, streams, p);
  });
}

EMSCRIPTEN_BINDINGS(specdec_threads) {
  emscripten::function("hasThreads", &has_threads);
  emscripten::function("setupThreads", &setup_threads);
  emscripten::function("maxThreads", &max_threads);
  emscripten::function("threadsInUse", &threads_in_use);
  emscripten::function("setThreads", &set_threads);
  emscripten::function("threadStats", &thread_stats);
  emscripten::function("setSpinMicros", &set_spin_micros);
  emscripten::function("measurePeakGflops", &measure_peak_gflops);
  emscripten::function("measurePeakIntGops", &measure_peak_int_gops);
}

}  // namespace specdec::bindings
