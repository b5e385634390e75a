#include "kernels/thread_pool.h"

#include <chrono>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#define SPECDEC_CPU_RELAX() _mm_pause()
#else
#define SPECDEC_CPU_RELAX() ((void)0)
#endif

namespace specdec::kernels {

namespace {

// Set while this thread runs a part: a nested run() goes serial instead of deadlocking.
thread_local bool in_part = false;

struct PartScope {
  PartScope() { in_part = true; }
  ~PartScope() { in_part = false; }
};

// Spins until ready() or until spin_us microseconds have passed; the clock is read every 256
// polls (in WebAssembly it is a call into JS). Returns ready().
template <typename Ready>
bool spin_until(Ready ready, int spin_us) {
  if (ready()) return true;
  if (spin_us <= 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (;;) {
    for (int i = 0; i < 256; ++i) {
      if (ready()) return true;
      SPECDEC_CPU_RELAX();
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

}  // namespace

bool ThreadPool::has_threads() {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  return false;
#else
  return true;
#endif
}

ThreadPool::ThreadPool(int threads) {
  if (threads < 1 || threads > kMaxThreads) {
    throw std::invalid_argument("threads: must be an integer in 1.." + std::to_string(kMaxThreads) +
                                ", got " + std::to_string(threads));
  }
  max_threads_ = has_threads() ? threads : 1;
  active_.store(max_threads_);
  slots_ = std::make_unique<Slot[]>(max_threads_);
  workers_.reserve(max_threads_ - 1);
  for (int id = 1; id < max_threads_; ++id) workers_.emplace_back([this, id] { worker_loop(id); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  for (int id = 1; id < max_threads_; ++id) {
    Slot& s = slots_[id];
    std::lock_guard<std::mutex> lock(s.mu);
    s.go.fetch_add(1, std::memory_order_seq_cst);
    s.cv.notify_one();
  }
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::set_threads(int n) {
  if (n < 1 || n > max_threads_) {
    throw std::invalid_argument("threads: must be an integer in 1.." +
                                std::to_string(max_threads_) + " (the pool's size), got " +
                                std::to_string(n));
  }
  active_.store(n, std::memory_order_relaxed);
}

ThreadPool::Stats ThreadPool::stats() const {
  return {runs_.load(std::memory_order_relaxed), serial_.load(std::memory_order_relaxed),
          wakeups_.load(std::memory_order_relaxed)};
}

void ThreadPool::run_erased(int parts, Call call, void* ctx) {
  if (parts <= 0) return;
  const int usable = threads();
  std::unique_lock<std::mutex> lock(run_mu_, std::defer_lock);
  if (parts == 1 || usable == 1 || in_part || !lock.try_lock()) {
    serial_.fetch_add(1, std::memory_order_relaxed);
    PartScope scope;
    for (int p = 0; p < parts; ++p) call(ctx, p);
    return;
  }
  const int used = parts < usable ? parts : usable;  // more parts than threads: taken in turns
  runs_.fetch_add(1, std::memory_order_relaxed);
  call_ = call;
  ctx_ = ctx;
  parts_ = parts;
  used_ = used;
  remaining_.store(used - 1, std::memory_order_relaxed);
  for (int id = 1; id < used; ++id) {
    Slot& s = slots_[id];
    // seq_cst pairs with the worker's store of `sleeping` before it re-reads `go`: either it
    // sees the new value, or we see it asleep and wake it.
    s.go.fetch_add(1, std::memory_order_seq_cst);
    if (s.sleeping.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> guard(s.mu);
      s.cv.notify_one();
    }
  }
  {
    PartScope scope;
    for (int p = 0; p < parts; p += used) call(ctx, p);
  }
  // The workers' parts: spin (they are short), yielding now and then in case this machine has
  // fewer free cores than threads.
  const auto done = [&] { return remaining_.load(std::memory_order_acquire) == 0; };
  while (!spin_until(done, 50)) std::this_thread::yield();
}

void ThreadPool::worker_loop(int id) {
  Slot& s = slots_[id];
  uint32_t seen = 0;  // go starts at 0: a run posted before this thread started is not missed
  for (;;) {
    const auto changed = [&] { return s.go.load(std::memory_order_acquire) != seen; };
    if (!spin_until(changed, spin_micros_.load(std::memory_order_relaxed))) {
      std::unique_lock<std::mutex> lock(s.mu);
      s.sleeping.store(true, std::memory_order_seq_cst);
      if (s.go.load(std::memory_order_seq_cst) == seen) {
        wakeups_.fetch_add(1, std::memory_order_relaxed);
        s.cv.wait(lock, [&] { return s.go.load(std::memory_order_seq_cst) != seen; });
      }
      s.sleeping.store(false, std::memory_order_relaxed);
    }
    seen = s.go.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    {
      PartScope scope;
      for (int p = id; p < parts_; p += used_) call_(ctx_, p);
    }
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace specdec::kernels
