#include "kernels/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__linux__) && !defined(__EMSCRIPTEN__)
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#endif

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
  const auto deadline = Clock::now() + std::chrono::microseconds(spin_us);
  for (;;) {
    for (int i = 0; i < 256; ++i) {
      if (ready()) return true;
      SPECDEC_CPU_RELAX();
    }
    if (Clock::now() >= deadline) return ready();
  }
}

// The ticket's fields: gen << 32 | parts << 16 | next.
constexpr uint64_t kField = 0xFFFF;
uint32_t gen_of(uint64_t t) { return static_cast<uint32_t>(t >> 32); }
int parts_of(uint64_t t) { return static_cast<int>((t >> 16) & kField); }
int next_of(uint64_t t) { return static_cast<int>(t & kField); }

}  // namespace

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
  hold_workers(false);
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

void ThreadPool::hold_workers(bool hold) {
  std::lock_guard<std::mutex> lock(hold_mu_);
  hold_.store(hold, std::memory_order_seq_cst);
  if (!hold) hold_cv_.notify_all();
}

ThreadPool::Stats ThreadPool::stats() const {
  constexpr auto r = std::memory_order_relaxed;
  return {runs_.load(r),         serial_.load(r),         wakeups_.load(r),
          worker_parts_.load(r), caller_parts_.load(r),   caller_sleeps_.load(r),
          shed_.load(r),         losing_windows_.load(r), busy_.load(r)};
}

ThreadPool::MachineLoad ThreadPool::system_load() {
  MachineLoad load;
#if defined(__linux__) && !defined(__EMSCRIPTEN__)
  // Opened once and read again from its start each time (a fresh reading; ~a quarter of the
  // cost of opening it again); the cores this process may use are read once.
  static const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  static const int cores = [] {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof(set), &set) == 0
               ? CPU_COUNT(&set)
               : static_cast<int>(std::thread::hardware_concurrency());
  }();
  load.cores = cores;
  char text[128];
  const ssize_t n = fd < 0 ? -1 : pread(fd, text, sizeof(text) - 1, 0);
  if (n <= 0) return load;
  // "0.52 0.58 0.59 3/250 12345": the fourth field is runnable tasks / all tasks.
  text[n] = '\0';
  const char* slash = std::strchr(text, '/');
  const char* p = slash;
  while (p && p > text && p[-1] >= '0' && p[-1] <= '9') --p;
  if (p && p < slash) load.runnable = std::atoi(p);
#endif
  return load;
}

int ThreadPool::threads_with_a_core(MachineLoad load, int ours, int max_threads) noexcept {
  if (load.runnable < 0 || load.cores < 1) return max_threads;
  const int others = std::max(0, load.runnable - ours);
  return std::clamp(load.cores - others, 1, max_threads);
}

int ThreadPool::threads_with_a_core_now() const noexcept {
  if (!probe_) return max_threads_;
  int ours = 1;  // the caller, and the workers awake (spinning or in a part): runnable too
  for (int id = 1; id < max_threads_; ++id) {
    ours += !slots_[id].sleeping.load(std::memory_order_relaxed);
  }
  return threads_with_a_core(probe_(), ours, max_threads_);
}

void ThreadPool::run_erased(int parts, Call call, void* ctx) {
  if (parts <= 0) return;
  if (parts > kMaxParts) {
    throw std::invalid_argument("thread pool: at most " + std::to_string(kMaxParts) +
                                " parts a run, got " + std::to_string(parts));
  }
  const int usable = threads();
  std::unique_lock<std::mutex> lock(run_mu_, std::defer_lock);
  if (parts == 1 || usable == 1 || in_part || !lock.try_lock()) {
    serial_.fetch_add(1, std::memory_order_relaxed);
    PartScope scope;
    for (int p = 0; p < parts; ++p) call(ctx, p);
    return;
  }
  const bool adaptive = adaptive_.load(std::memory_order_relaxed);
  if (adaptive && shed_left_ == 0 && window_runs_ == 0) begin_window();
  if (adaptive && shed_left_ > 0) {
    --shed_left_;
    shed_.fetch_add(1, std::memory_order_relaxed);
    park_.store(true, std::memory_order_relaxed);  // the workers sleep rather than spin
    PartScope scope;
    for (int p = 0; p < parts; ++p) call(ctx, p);
    return;
  }
  const auto t0 = Clock::now();
  runs_.fetch_add(1, std::memory_order_relaxed);
  call_ = call;
  ctx_ = ctx;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t gen = ++gen_;
  // Release: a worker whose claim reads this ticket sees call_, ctx_ and done_ above.
  ticket_.store(uint64_t{gen} << 32 | uint64_t(parts) << 16, std::memory_order_release);
  const int helpers = std::min({parts, usable, adaptive ? window_threads_ : usable}) - 1;
  // Ordered before the workers' `go` below (seq_cst): a worker that sees this run sees this.
  park_.store(false, std::memory_order_relaxed);
  for (int id = 1; id <= helpers; ++id) {
    Slot& s = slots_[id];
    // seq_cst pairs with the worker's store of `sleeping` before it re-reads `go`: either it
    // sees the new value, or we see it asleep and wake it.
    s.go.store(gen, std::memory_order_seq_cst);
    if (s.sleeping.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> guard(s.mu);
      s.cv.notify_one();
    }
  }
  const int mine = take_parts(gen, nullptr);
  caller_parts_.fetch_add(mine, std::memory_order_relaxed);
  const auto t1 = Clock::now();
  wait_for_parts(parts);
  if (!adaptive) return;
  const auto us = [](Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
  };
  // What threads saved on this run: the caller's own parts' time scaled to every part, against
  // the time taken (negative: a worker's part kept the caller waiting).
  const double saved_us = mine > 0 ? us(t1 - t0) / mine * parts - us(Clock::now() - t0) : 0.0;
  account(parts - mine, parts * helpers / (helpers + 1.0), saved_us);
}

void ThreadPool::begin_window() noexcept {
  // Asks the system at most every kProbeMicros (a read costs microseconds); a window is tried
  // only if the machine has a core for a worker now.
  const auto now = Clock::now();
  if (ask_again_ || now - last_probe_ >= std::chrono::microseconds(kProbeMicros)) {
    last_probe_ = now;
    ask_again_ = false;
    window_threads_ = threads_with_a_core_now();
  }
  const bool busy = window_threads_ == 1;
  if (busy) busy_.fetch_add(1, std::memory_order_relaxed);
  const int shed = rule_.after_reading(busy, &ask_again_);
  if (shed > 0) shed_left_ = shed;
}

int ThreadPool::ShedRule::after_window(bool lost) noexcept {
  if (!lost) {
    // One window won on a busy machine does not say the load has gone (the other programs'
    // share moves from one time slice to the next): the next loss sheds half as many runs as
    // the last, not kMinShedRuns at once, so a machine that stays busy tries few windows.
    shed_next_ = std::max(shed_next_ / 2, kMinShedRuns);
    ++windows_won_;
    return 0;
  }
  // A window lost after a quiet spell is often one stall (a task that passed, the host taking
  // the vCPU for a moment): a few runs, then threads again. Windows lost one after another
  // shed kMinShedRuns, doubling up to kMaxShedRuns.
  const bool blip = windows_won_ >= kSteadyWindows;
  windows_won_ = 0;
  if (blip) return kBlipShedRuns;
  const int shed = shed_next_;
  shed_next_ = std::min(shed_next_ * 2, kMaxShedRuns);
  return shed;
}

int ThreadPool::ShedRule::after_reading(bool busy, bool* ask_again) noexcept {
  // An idle machine's own tasks wake now and then (a few percent of readings on a 2-vCPU VM
  // whose two cores this pool keeps busy): the first busy reading sheds a few runs and asks
  // again at once; a machine still busy sheds kBusyShedRuns, asked every kProbeMicros.
  const bool first = !was_busy_;
  was_busy_ = busy;
  *ask_again = busy && first;
  if (!busy) return 0;
  return first ? kBlipShedRuns : kBusyShedRuns;
}

void ThreadPool::account(int worker_parts, double fair_parts, double saved_us) noexcept {
  window_worker_parts_ += worker_parts;
  window_fair_parts_ += fair_parts;
  window_saved_us_ += saved_us;
  if (++window_runs_ < kWindowRuns) return;
  const bool absent = window_worker_parts_ < kMinWorkerShare * window_fair_parts_;
  const bool losing = window_saved_us_ < 0.0;
  window_worker_parts_ = 0;
  window_fair_parts_ = window_saved_us_ = 0.0;
  window_runs_ = 0;
  if (absent || losing) losing_windows_.fetch_add(1, std::memory_order_relaxed);
  shed_left_ = rule_.after_window(absent || losing);
}

int ThreadPool::take_parts(uint32_t gen, std::atomic<uint64_t>* taken) noexcept {
  int ran = 0;
  uint64_t t = ticket_.load(std::memory_order_acquire);
  while (gen_of(t) == gen && next_of(t) < parts_of(t)) {
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      continue;  // t now holds the current ticket
    }
    const int parts = parts_of(t);
    {
      PartScope scope;
      call_(ctx_, next_of(t));
    }
    ++ran;
    // Before done_: the caller returns once it reads every part done (acquire), and a worker
    // that added its parts after that (as it once did, after its last one) left stats() short
    // of them for a moment.
    if (taken) taken->fetch_add(1, std::memory_order_relaxed);
    // seq_cst pairs with the caller's store of caller_sleeping_ before it re-reads done_.
    if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == parts &&
        caller_sleeping_.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> guard(caller_mu_);
      caller_cv_.notify_one();
    }
    t = ticket_.load(std::memory_order_acquire);
  }
  return ran;
}

void ThreadPool::wait_for_parts(int parts) noexcept {
  // Acquire: every part's writes are visible once its count is.
  const auto all_done = [&] { return done_.load(std::memory_order_acquire) == parts; };
  if (spin_until(all_done, kCallerSpinMicros)) return;
  // A part still runs on a worker that may share this core with other programs: sleep until
  // the last part wakes us rather than take the core it needs.
  std::unique_lock<std::mutex> lock(caller_mu_);
  caller_sleeping_.store(true, std::memory_order_seq_cst);
  if (done_.load(std::memory_order_seq_cst) != parts) {
    caller_sleeps_.fetch_add(1, std::memory_order_relaxed);
    caller_cv_.wait(lock, [&] { return done_.load(std::memory_order_seq_cst) == parts; });
  }
  caller_sleeping_.store(false, std::memory_order_relaxed);
}

void ThreadPool::worker_loop(int id) {
  Slot& s = slots_[id];
  uint32_t seen = 0;  // go starts at 0: a run posted before this thread started is not missed
  for (;;) {
    const auto changed = [&] { return s.go.load(std::memory_order_acquire) != seen; };
    // A pool whose runs go serial (the ledger shed them) parks its workers at once: a core
    // spun on would keep from running the very task that made the machine look busy.
    const auto changed_or_parked = [&] {
      return changed() || park_.load(std::memory_order_relaxed);
    };
    if (!spin_until(changed_or_parked, spin_micros_.load(std::memory_order_relaxed)) ||
        !changed()) {
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
    if (hold_.load(std::memory_order_seq_cst)) {
      std::unique_lock<std::mutex> lock(hold_mu_);
      hold_cv_.wait(lock, [&] { return !hold_.load(std::memory_order_seq_cst); });
      if (stop_.load(std::memory_order_acquire)) return;
    }
    // `seen` is the generation of the latest run that asked for this worker; an older run's
    // parts are never claimed, and a finished run's ticket has none left.
    take_parts(seen, &worker_parts_);
  }
}

}  // namespace specdec::kernels
