// A pool of persistent worker threads for the forward pass: the caller hands it one task split
// into parts and returns when every part is done (fork-join).
//
// Parts are taken, not given: the caller publishes the task and a counter, then it and every
// woken worker claim parts from the counter until none is left. A worker the OS has not
// scheduled (a busy machine: other programs, other tabs) claims nothing, and the caller runs
// its parts itself, so a pass never waits for a thread that is not running: it waits only for
// parts a running worker has already begun. On an idle machine the parts spread over all
// threads as before.
//
// Waiting: a worker between parts spins for a short while (spin_micros, back-to-back regions of
// one pass never sleep), then sleeps on a condition variable (a futex natively,
// Atomics.wait in WebAssembly), so an idle pool costs no CPU. The caller, once no part is left
// to claim, spins briefly for the parts still running and then sleeps too, woken by the last
// one: a core is never burnt waiting for a thread that needs that very core.
//
// Never slower than one thread: on a busy machine a worker is often not running when a run
// begins (the caller then takes its parts, as fast as alone, but pays for waking it), it
// takes CPU time the caller's own work needs, and preempted inside a part it holds the run
// up for a time slice (milliseconds). So the caller keeps a ledger over windows of kWindowRuns
// runs: the parts the workers took against their fair share, and the time threads saved (per
// run, the caller's own parts' time scaled to every part, minus the time taken). When the
// workers took under kMinWorkerShare of their fair share (V8's workers take too little in their
// first, baseline-compiled windows, an absent one almost none), or threads lost time, the next
// runs go serial (kMinShedRuns, doubling while windows keep failing, up to kMaxShedRuns, and
// halved, not reset, by a window won), then threads are tried again. While runs are shed the
// workers are parked: they sleep at once rather than spin out spin_micros, as a core spun on
// is the one another task is waiting for (a kernel thread woken for a moment on an idle 2-vCPU
// machine stays queued behind two spinning threads, and the next reading finds it still there).
// Idle, the workers take their share and threads save time: nothing is shed, but for a passing
// stall (a window lost after kSteadyWindows won: only kBlipShedRuns go serial, see ShedRule).
// Counts, not timings, carry most of the decision, so it holds on a machine whose timings are
// noise.
//
// Where the system says how busy it is (Linux natively: /proc/loadavg's runnable tasks), the
// caller also asks it before each window: when the other programs' runnable tasks leave no
// core for a worker, the window is not tried at all (its runs go serial: kBlipShedRuns at a first
// busy reading, which the caller checks again at once, as an idle machine's own tasks wake now
// and then; kBusyShedRuns while it stays busy, asking every kProbeMicros), and
// with cores for only some workers a run uses only those. A window tried on such a machine costs
// far more than it can save — one worker preempted inside a part holds the run up for a time slice,
// milliseconds against runs of tens of microseconds — and a process that decodes a hundred tokens
// never gets past its first probes. WebAssembly has no such count: the ledger alone decides there.
//
// Determinism: the pool only says which thread runs which part. The callers (kernels/parallel.h)
// split work by outputs — panels of a matmul's output rows, (token, head) pairs of attention —
// and a part computes the same outputs with the same operations whichever thread takes it, so
// the results are bit-identical for any thread count and any schedule.
//
// Reentrancy: run() from inside a part (nested), or from a second thread while a run is in
// flight, runs that task's parts one after another on the calling thread — correct, only not
// parallel — so models and decoders may share one pool freely.
//
// Builds without threads (WebAssembly without -pthread) have no workers: a pool of any size
// then runs everything on the caller, and has_threads() says so.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "base/clock.h"

namespace specdec::kernels {

class ThreadPool {
 public:
  static constexpr int kMaxThreads = 64;
  static constexpr int kMaxParts = 0xFFFF;
  static constexpr int kDefaultSpinMicros = 1000;
  // How long the caller spins for parts other threads are running before it sleeps.
  static constexpr int kCallerSpinMicros = 100;
  // The ledger (see above).
  static constexpr int kWindowRuns = 64;
  static constexpr double kMinWorkerShare = 0.3;
  static constexpr int kMinShedRuns = 512;
  static constexpr int kMaxShedRuns = 8192;
  static constexpr int kProbeMicros = 4000;  // the system's load is read at most this often
  static constexpr int kBusyShedRuns = 128;  // serial runs when no core is free, then ask again
  // A first sign of load after a quiet spell (one busy reading, one losing window after
  // kSteadyWindows won) is often a passing task: only kBlipShedRuns go serial, then the pool
  // asks or tries again at once; a second sign in a row sheds as above.
  static constexpr int kBlipShedRuns = 32;
  static constexpr int kSteadyWindows = 8;

  // Whether this build can run threads at all (native; WebAssembly built with -pthread).
  static constexpr bool has_threads() {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
    return false;
#else
    return true;
#endif
  }

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

  // Calls f(part) once for every part in 0 .. parts - 1 (at most kMaxParts; more throws
  // std::invalid_argument) and returns when all have returned. Parts are claimed in order by
  // the caller and up to threads() - 1 workers, whichever comes first. f must not throw: it is
  // called through a noexcept pointer, so an exception from f (a kernel's scratch allocation
  // failing) ends the program, as it always did on a worker thread.
  template <typename F>
  void run(int parts, F&& f) {
    using Fn = std::remove_reference_t<F>;
    run_erased(
        parts, [](void* ctx, int part) noexcept { (*static_cast<Fn*>(ctx))(part); },
        const_cast<void*>(static_cast<const void*>(&f)));
  }

  // Counters for benchmarks and tests (relaxed; exact once runs have returned).
  struct Stats {
    uint64_t runs = 0;            // runs that went to the workers
    uint64_t serial = 0;          // runs done on the caller alone (nested, concurrent or 1 part)
    uint64_t wakeups = 0;         // times a worker had to be woken from its condition variable
    uint64_t worker_parts = 0;    // parts of runs that workers took
    uint64_t caller_parts = 0;    // parts of runs that the caller took
    uint64_t caller_sleeps = 0;   // runs whose caller slept waiting for a worker's part
    uint64_t shed = 0;            // runs done serially because the ledger said threads lost
    uint64_t losing_windows = 0;  // windows in which threads lost (each sheds runs)
    uint64_t busy = 0;            // windows not tried: no core free for a worker (runs shed)
  };
  Stats stats() const;

  // For tests: while held, workers that are woken do not claim parts (as if the OS never ran
  // them); runs still complete, on the caller. Releasing lets them go on.
  void hold_workers(bool hold);
  // Whether the ledger may send runs serial (default on; benchmarks of raw threads turn it off).
  void set_adaptive(bool on) { adaptive_.store(on, std::memory_order_relaxed); }
  bool adaptive() const { return adaptive_.load(std::memory_order_relaxed); }

  // What the system says of its load: the cores this process may use and the tasks runnable
  // on the machine now (this thread included); runnable < 0 where it does not say.
  struct MachineLoad {
    int cores = 0;
    int runnable = -1;
  };
  using LoadProbe = MachineLoad (*)();
  static MachineLoad system_load();  // the default probe
  // How many of max_threads threads the machine has cores for: its cores minus the runnable
  // tasks that are not ours (`ours` of them are this pool's threads awake), at least 1;
  // max_threads where the load is unknown.
  static int threads_with_a_core(MachineLoad load, int ours, int max_threads) noexcept;
  // For tests: another probe, or null to let the ledger alone decide. Call before runs begin.
  void set_load_probe(LoadProbe probe) { probe_ = probe; }

  // The ledger's rule for how many runs go serial after each sign of load (public for tests).
  class ShedRule {
   public:
    // After a window of kWindowRuns runs, won or lost: the runs to shed (0 when won).
    int after_window(bool lost) noexcept;
    // After a reading of the system's load (busy: no core free for a worker): the runs to shed,
    // and whether to read again before the next window rather than kProbeMicros later.
    int after_reading(bool busy, bool* ask_again) noexcept;

   private:
    int shed_next_ = kMinShedRuns;
    int windows_won_ = 0;    // windows won in a row
    bool was_busy_ = false;  // the latest reading said no core was free
  };

 private:
  // noexcept, as are the helpers a run calls below: in the threaded WebAssembly build
  // (JavaScript exceptions), a call that might throw, made where a destructor is in scope, goes
  // out to a JavaScript trampoline and back, several of them a fork-join.
  using Call = void (*)(void*, int) noexcept;
  void run_erased(int parts, Call call, void* ctx);
  void worker_loop(int id);
  // Claims and runs parts of run `gen` until none is left; returns how many it ran. Each part is
  // added to *taken (when given) before it is counted done, so that a run's parts are in
  // stats() once it returns.
  int take_parts(uint32_t gen, std::atomic<uint64_t>* taken) noexcept;
  void wait_for_parts(int parts) noexcept;
  // The ledger after a parallel run: the parts workers took, their fair share, time saved.
  void account(int worker_parts, double fair_parts, double saved_us) noexcept;
  // Before a window: how many threads the machine has cores for now (1 .. max_threads_).
  int threads_with_a_core_now() const noexcept;
  // Sets window_threads_ from the system's load; sheds kBusyShedRuns runs if it is 1.
  void begin_window() noexcept;

  // One per worker, on its own cache line: the caller bumps `go` of exactly the workers a run
  // may use, so a worker wakes only for runs it may take part in.
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

  // The current run: its generation, part count and next unclaimed part in one word
  // (gen << 32 | parts << 16 | next), so that a worker woken late can tell a finished run from
  // the current one before it reads the task. call_ and ctx_ are read only after a claim
  // succeeds: the run cannot end before that part is done, so they are still this run's.
  alignas(64) std::atomic<uint64_t> ticket_{0};
  alignas(64) std::atomic<int> done_{0};  // parts of the current run finished
  std::atomic<bool> caller_sleeping_{false};
  std::mutex caller_mu_;
  std::condition_variable caller_cv_;
  Call call_ = nullptr;
  void* ctx_ = nullptr;
  uint32_t gen_ = 0;  // written by the caller under run_mu_
  std::atomic<bool> stop_{false};
  std::atomic<bool> park_{false};  // runs go serial for a while: workers sleep, not spin
  std::atomic<bool> hold_{false};
  std::mutex hold_mu_;
  std::condition_variable hold_cv_;
  std::mutex run_mu_;  // one run at a time; others run serially

  // The ledger (read and written under run_mu_ only).
  std::atomic<bool> adaptive_{true};
  int window_runs_ = 0;
  int window_worker_parts_ = 0;
  double window_fair_parts_ = 0.0;
  double window_saved_us_ = 0.0;
  int shed_left_ = 0;  // runs still to do serially
  ShedRule rule_;
  int window_threads_ = kMaxThreads;  // threads this window may use (the machine's free cores)
  Clock::time_point last_probe_{};
  bool ask_again_ = false;  // read the system's load before the next window
  LoadProbe probe_ = &ThreadPool::system_load;

  std::atomic<uint64_t> runs_{0}, serial_{0}, wakeups_{0}, worker_parts_{0}, caller_parts_{0},
      caller_sleeps_{0}, shed_{0}, losing_windows_{0}, busy_{0};
};

}  // namespace specdec::kernels
