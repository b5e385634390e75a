// A pool of persistent worker threads for the forward pass: the caller hands it one task split
// into parts, runs part 0 itself, and returns when every part is done (fork-join).
//
// Why persistent workers and a spinning barrier: a decoding step of the shipped targets is
// 0.5-5 ms and holds ~31 parallel regions (4 matmuls and attention per layer, the LM head), so a
// region must start and end in microseconds. Workers that finish a part spin on an atomic
// generation counter for a short while (kDefaultSpinMicros) before they block on a condition
// variable: back-to-back regions of one pass never sleep, and an idle pool costs no CPU.
//
// Determinism: the pool only says which thread runs which part. The callers (kernels/parallel.h)
// split work by outputs — panels of a matmul's output rows, (token, head) pairs of attention —
// and every output is computed by one thread with the operations it has on one thread, so the
// results are bit-identical for any thread count.
//
// Reentrancy: run() from inside a part (nested), or from a second thread while a run is in
// flight, runs that task's parts one after another on the calling thread — correct, only not
// parallel — so models and decoders may share one pool freely.
//
// Builds without threads (WebAssembly without -pthread) have no workers: a pool of any size
// then runs everything on the caller, and has_threads() says so.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace specdec::kernels {

class ThreadPool {
 public:
  static constexpr int kMaxThreads = 64;
  static constexpr int kDefaultSpinMicros = 1000;

  // Whether this build can run threads at all (native; WebAssembly built with -pthread).
  static bool has_threads();

  // threads in 1 .. kMaxThreads (throws std::invalid_argument otherwise): the caller plus
  // threads - 1 workers, started here. In a build without threads the pool has 1 thread
  // whatever is asked.
  explicit ThreadPool(int threads);
  ~ThreadPool();  // stops and joins the workers
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads started (the caller included).
  int max_threads() const { return max_threads_; }
  // Threads a run uses: 1 .. max_threads(), max_threads() unless lowered by set_threads().
  int threads() const { return active_.load(std::memory_order_relaxed); }
  // Throws std::invalid_argument outside 1 .. max_threads().
  void set_threads(int n);
  // How long a worker spins for the next part before it sleeps (0: sleep at once).
  void set_spin_micros(int us) { spin_micros_.store(us < 0 ? 0 : us, std::memory_order_relaxed); }

  // Calls f(part) for every part in 0 .. parts - 1 and returns when all have returned: part 0
  // on the calling thread and part i on worker i (with more parts than threads(), thread t
  // takes parts t, t + threads(), ...). f must not throw.
  template <typename F>
  void run(int parts, F&& f) {
    using Fn = std::remove_reference_t<F>;
    run_erased(
        parts, [](void* ctx, int part) { (*static_cast<Fn*>(ctx))(part); },
        const_cast<void*>(static_cast<const void*>(&f)));
  }

  // Counters for benchmarks and tests (relaxed; exact once runs have returned).
  struct Stats {
    uint64_t runs = 0;     // runs that went to the workers
    uint64_t serial = 0;   // runs done on the caller alone (nested, concurrent or 1 part)
    uint64_t wakeups = 0;  // times a worker had to be woken from its condition variable
  };
  Stats stats() const;

 private:
  using Call = void (*)(void*, int);
  void run_erased(int parts, Call call, void* ctx);
  void worker_loop(int id);

  // One per worker, on its own cache line: the caller bumps `go` of exactly the workers a run
  // uses, so a worker reads the task only for a run it takes part in, and the caller waits
  // only for those.
  struct alignas(64) Slot {
    std::atomic<uint32_t> go{0};
    std::atomic<bool> sleeping{false};
    std::mutex mu;
    std::condition_variable cv;
  };

  int max_threads_ = 1;
  std::atomic<int> active_{1};
  std::atomic<int> spin_micros_{kDefaultSpinMicros};
  std::unique_ptr<Slot[]> slots_;  // index 1 .. max_threads_ - 1
  std::vector<std::thread> workers_;

  // The task of the current run, published by each participant's `go`.
  Call call_ = nullptr;
  void* ctx_ = nullptr;
  int parts_ = 0, used_ = 0;       // thread t runs parts t, t + used_, ... < parts_
  std::atomic<int> remaining_{0};  // parts not yet finished by workers
  std::atomic<bool> stop_{false};
  std::mutex run_mu_;  // one run at a time; others run serially

  std::atomic<uint64_t> runs_{0}, serial_{0}, wakeups_{0};
};

}  // namespace specdec::kernels
