// The thread pool (kernels/thread_pool.h) and the forward pass split over it
// (kernels/parallel.h): every part runs once, nested and concurrent runs stay correct, and every
// output is bit-identical to one thread's for any thread count — matmuls of every shape split
// into 1..5 parts, and the shipped models' logits for prefill, decode and tree passes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fixture_models.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "kernels/thread_pool.h"
#include "model/gpt_model.h"
#include "model/heads.h"
#include "sampling/rng.h"

namespace specdec {
namespace {

using kernels::ThreadPool;

using testing::repo;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> random_floats(Rng& rng, size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(2.0 * rng.uniform() - 1.0);
  return v;
}

// Polls ready() until it holds or `seconds` pass; returns ready(). For what a thread is promised
// to do eventually: when the scheduler runs it is its business (a loaded machine: milliseconds
// to seconds late), so no test asserts how soon, only that it happens.
template <typename Ready>
bool wait_until(Ready ready, int seconds = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return ready();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

// Runs `runs` runs of `parts` parts on pool: success when each run ran every part exactly once.
::testing::AssertionResult runs_every_part_once(ThreadPool& pool, int runs, int parts) {
  for (int rep = 0; rep < runs; ++rep) {
    std::vector<std::atomic<int>> hits(parts);
    pool.run(parts, [&](int p) { hits[p].fetch_add(1); });
    for (int p = 0; p < parts; ++p) {
      if (hits[p].load() != 1) {
        return ::testing::AssertionFailure() << "run " << rep << ", part " << p << " of " << parts
                                             << " ran " << hits[p].load() << " times";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// ------------------------------------------------------------------ the pool

TEST(ThreadPool, RunsEveryPartOnce) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.max_threads(), threads);
    for (int parts = 1; parts <= 10; ++parts) {
      ASSERT_TRUE(runs_every_part_once(pool, 50, parts)) << threads << " threads";
    }
  }
}

TEST(ThreadPool, PartsSpreadOverTheThreadsInUse) {
  ThreadPool pool(3);
  pool.set_load_probe(nullptr);  // a busy test machine must not send these runs serial
  pool.set_adaptive(false);
  const std::thread::id caller = std::this_thread::get_id();
  uint64_t by_workers = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::thread::id ids[3];
    // Each part waits for every part to have begun: only three threads can get there, so the
    // run completes only if both workers take a part. How soon they run is the scheduler's
    // business (a busy machine: late), so the wait is long; that they do is the pool's.
    std::atomic<int> begun{0};
    std::atomic<bool> all_began{true};
    pool.run(3, [&](int p) {
      ids[p] = std::this_thread::get_id();
      begun.fetch_add(1);
      if (!wait_until([&] { return begun.load() == 3; })) all_began = false;
    });
    ASSERT_TRUE(all_began.load()) << "rep " << rep << ": a worker never took its part";
    EXPECT_TRUE(ids[0] != ids[1] && ids[0] != ids[2] && ids[1] != ids[2]) << "rep " << rep;
    for (const auto& id : ids) by_workers += id != caller;
  }
  EXPECT_EQ(by_workers, 10u);  // two parts of every run on the workers
  EXPECT_EQ(pool.stats().worker_parts, by_workers);
  EXPECT_EQ(pool.stats().caller_parts + pool.stats().worker_parts, 15u);
}

TEST(ThreadPool, FewerThreadsInUseAfterSetThreads) {
  ThreadPool pool(3);
  pool.set_threads(1);
  EXPECT_EQ(pool.threads(), 1);
  std::thread::id ids[3];
  pool.run(3, [&](int p) { ids[p] = std::this_thread::get_id(); });
  for (const auto& id : ids) EXPECT_EQ(id, std::this_thread::get_id());
  pool.set_threads(2);
  for (int rep = 0; rep < 20; ++rep) {
    pool.run(3, [&](int p) {
      ids[p] = std::this_thread::get_id();
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    });
    // Two threads at most: no part on the third.
    EXPECT_TRUE(ids[0] == ids[1] || ids[0] == ids[2] || ids[1] == ids[2]);
  }
  EXPECT_THROW(pool.set_threads(0), std::invalid_argument);
  EXPECT_THROW(pool.set_threads(4), std::invalid_argument);
}

// The property that keeps threads from losing to one thread on a busy machine: a worker the OS
// does not run holds nothing up. Held workers (woken, never claiming) stand for threads that
// other programs keep off the cores; runs complete on the caller, and workers released later
// find nothing stale to run.
TEST(ThreadPool, AWorkerThatNeverRunsDoesNotStopARun) {
  ThreadPool pool(2);
  pool.set_adaptive(false);  // every run offered to the workers (the ledger: below)
  pool.hold_workers(true);
  ASSERT_TRUE(runs_every_part_once(pool, 100, 5));
  EXPECT_EQ(pool.stats().runs, 100u);
  EXPECT_EQ(pool.stats().caller_parts, 500u);
  EXPECT_EQ(pool.stats().shed, 0u);
  pool.hold_workers(false);
  std::atomic<int> sum{0};
  pool.run(4, [&](int p) { sum.fetch_add(p + 1); });
  EXPECT_EQ(sum.load(), 10);
  EXPECT_EQ(pool.stats().caller_parts + pool.stats().worker_parts, 504u);
}

// With the ledger on, a worker that never runs gets its runs shed after one window: the worker
// sleeps instead of being woken for runs it never takes.
TEST(ThreadPool, RunsGoSerialWhileAWorkerIsAbsent) {
  ThreadPool pool(2);
  pool.set_load_probe(nullptr);
  pool.hold_workers(true);
  for (int rep = 0; rep < ThreadPool::kWindowRuns + 10; ++rep) pool.run(2, [](int) {});
  EXPECT_EQ(pool.stats().runs, static_cast<uint64_t>(ThreadPool::kWindowRuns));
  EXPECT_EQ(pool.stats().shed, 10u);
  EXPECT_EQ(pool.stats().losing_windows, 1u);
  pool.hold_workers(false);
}

// A worker that stalls inside a part (preempted) holds up only that part: the caller takes
// every part not yet claimed. The worker's first part stalls until the caller has run every
// other part (or a long deadline): it ends early only if the caller took them all.
TEST(ThreadPool, TheCallerTakesThePartsAStalledWorkerHasNotClaimed) {
  ThreadPool pool(2);
  pool.set_load_probe(nullptr);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> on_caller{0}, on_worker{0};
  std::atomic<bool> stall_timed_out{false};
  pool.run(8, [&](int) {
    if (std::this_thread::get_id() == caller) {
      on_caller.fetch_add(1);
    } else if (on_worker.fetch_add(1) == 0) {
      if (!wait_until([&] { return on_caller.load() == 7; })) stall_timed_out = true;
    }
  });
  // The worker took one part (it stalled in it while the caller took the other seven), or
  // none (it ran after the caller had taken all eight): either is the scheduler's choice.
  EXPECT_FALSE(stall_timed_out.load()) << "the caller left parts to a stalled worker";
  EXPECT_LE(on_worker.load(), 1);
  EXPECT_EQ(on_caller.load() + on_worker.load(), 8);
  EXPECT_EQ(pool.stats().worker_parts, static_cast<uint64_t>(on_worker.load()));
  EXPECT_EQ(pool.stats().caller_parts, static_cast<uint64_t>(on_caller.load()));
}

// The ledger: a worker that takes its share of parts but keeps the caller waiting (it stalls
// 3 ms in every part it takes) loses time; after a window the next runs go serial, and with the
// ledger off they do not. (A worker that takes no parts at all: AWorkerThatNeverRuns... above.)
TEST(ThreadPool, RunsGoSerialWhileThreadsLose) {
  const auto stalling = [](ThreadPool& pool, int runs) {
    const std::thread::id caller = std::this_thread::get_id();
    for (int r = 0; r < runs; ++r) {
      pool.run(2, [&](int) {
        if (std::this_thread::get_id() != caller) {
          std::this_thread::sleep_for(std::chrono::milliseconds(3));
        }
      });
    }
  };
  ThreadPool pool(2);
  pool.set_load_probe(nullptr);
  stalling(pool, ThreadPool::kWindowRuns + 8);
  EXPECT_GE(pool.stats().losing_windows, 1u);
  EXPECT_GE(pool.stats().shed, 1u);  // runs after the window ran on the caller alone
  ThreadPool fixed(2);
  fixed.set_adaptive(false);
  stalling(fixed, ThreadPool::kWindowRuns + 8);
  EXPECT_EQ(fixed.stats().shed, 0u);
}

// What the system says of its load decides before any window is tried: with no core free for a
// worker (other programs' runnable tasks fill the cores) every run goes serial, on the caller,
// and is still complete; with a free core the workers are asked as before.
ThreadPool::MachineLoad full_machine() { return {2, 64}; }
ThreadPool::MachineLoad idle_machine() { return {2, 1}; }

TEST(ThreadPool, NoFreeCoreSendsRunsSerialBeforeAnyWindow) {
  ThreadPool pool(2);
  pool.set_load_probe(&full_machine);
  ASSERT_TRUE(runs_every_part_once(pool, 100, 4));
  EXPECT_EQ(pool.stats().runs, 0u);
  EXPECT_EQ(pool.stats().shed, 100u);
  // Two looks: the first sheds kBlipShedRuns and asks again, the second kBusyShedRuns.
  static_assert(ThreadPool::kBlipShedRuns < 100 &&
                100 < ThreadPool::kBlipShedRuns + ThreadPool::kBusyShedRuns);
  EXPECT_EQ(pool.stats().busy, 2u);
  EXPECT_EQ(pool.stats().worker_parts, 0u);
  ThreadPool idle(2);
  idle.set_load_probe(&idle_machine);
  for (int rep = 0; rep < ThreadPool::kWindowRuns; ++rep) idle.run(4, [](int) {});
  EXPECT_EQ(idle.stats().runs, static_cast<uint64_t>(ThreadPool::kWindowRuns));  // one window
  EXPECT_EQ(idle.stats().busy, 0u);
}

// A machine busy for one reading only (a task of its own that passed): a few runs go serial,
// the pool asks again at once and the next window is tried with threads.
std::atomic<int> busy_once_readings{0};
ThreadPool::MachineLoad busy_once() {
  return busy_once_readings.fetch_add(1) == 0 ? full_machine() : idle_machine();
}

TEST(ThreadPool, ABusyReadingThatPassesShedsAFewRuns) {
  busy_once_readings = 0;  // (--gtest_repeat)
  ThreadPool pool(2);
  pool.set_load_probe(&busy_once);
  const int runs = ThreadPool::kBlipShedRuns + ThreadPool::kWindowRuns;
  for (int rep = 0; rep < runs; ++rep) pool.run(2, [](int) {});
  EXPECT_EQ(pool.stats().busy, 1u);
  EXPECT_EQ(pool.stats().shed, static_cast<uint64_t>(ThreadPool::kBlipShedRuns));
  EXPECT_EQ(pool.stats().runs, static_cast<uint64_t>(ThreadPool::kWindowRuns));
}

// While runs are shed the workers sleep at once instead of spinning for the next part: on a
// 2-vCPU machine a spinning worker holds the very core that a task woken for a moment (a kernel
// thread) waits for, and the pool's next reading finds that task still queued (idle, 2-25% of a
// small model's runs went serial that way). Workers told to spin for a minute must still fall
// asleep once a busy reading sheds runs.
std::atomic<bool> machine_busy{false};
ThreadPool::MachineLoad busy_when_told() {
  return machine_busy.load() ? full_machine() : idle_machine();
}

TEST(ThreadPool, ShedRunsPutTheWorkersToSleep) {
  ThreadPool pool(2);
  pool.set_spin_micros(60'000'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past a first default spin
  pool.set_load_probe(&busy_when_told);
  pool.set_adaptive(false);  // threads, no windows yet: the worker spins between runs
  for (int rep = 0; rep < 10; ++rep) pool.run(2, [](int) {});
  const uint64_t sleeps = pool.stats().wakeups;
  machine_busy = true;
  pool.set_adaptive(true);  // the first window reads the machine: busy, runs shed
  pool.run(2, [](int) {});
  EXPECT_EQ(pool.stats().shed, 1u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pool.stats().wakeups == sleeps && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(pool.stats().wakeups, sleeps) << "the worker still spins while runs are shed";
  machine_busy = false;
}

// The ledger's rule, one sequence of signs per line: W a window won, L lost, B a busy reading,
// I an idle one; the runs each sign sheds.
TEST(ThreadPool, ShedRule) {
  using P = ThreadPool;
  struct Case {
    const char* signs;
    std::vector<int> shed;
  };
  const Case kCases[] = {
      {"L", {P::kMinShedRuns}},
      {"LLL", {P::kMinShedRuns, 2 * P::kMinShedRuns, 4 * P::kMinShedRuns}},
      {"LWL", {P::kMinShedRuns, 0, P::kMinShedRuns}},
      {"LLLLWL", {512, 1024, 2048, 4096, 0, 4096}},  // a win halves the next shed, no more
      {"LLLLLWWWWL", {512, 1024, 2048, 4096, 8192, 0, 0, 0, 0, 512}},
      {"WWWWWWWL", {0, 0, 0, 0, 0, 0, 0, P::kMinShedRuns}},       // 7 wins: not a quiet spell
      {"WWWWWWWWL", {0, 0, 0, 0, 0, 0, 0, 0, P::kBlipShedRuns}},  // 8: a passing stall
      {"WWWWWWWWLL", {0, 0, 0, 0, 0, 0, 0, 0, P::kBlipShedRuns, P::kMinShedRuns}},
      {"LLLLLLLL", {512, 1024, 2048, 4096, 8192, 8192, 8192, 8192}},
      {"I", {0}},
      {"B", {P::kBlipShedRuns}},
      {"BB", {P::kBlipShedRuns, P::kBusyShedRuns}},
      {"BBB", {P::kBlipShedRuns, P::kBusyShedRuns, P::kBusyShedRuns}},
      {"BIB", {P::kBlipShedRuns, 0, P::kBlipShedRuns}},
  };
  static_assert(P::kMinShedRuns == 512 && P::kMaxShedRuns == 8192);
  for (const Case& c : kCases) {
    P::ShedRule rule;
    std::vector<int> got;
    for (const char* s = c.signs; *s; ++s) {
      bool ask_again = false;
      if (*s == 'W' || *s == 'L') got.push_back(rule.after_window(*s == 'L'));
      if (*s == 'B' || *s == 'I') {
        got.push_back(rule.after_reading(*s == 'B', &ask_again));
        // A first busy reading is read again at once; later ones wait kProbeMicros.
        const bool first_busy = *s == 'B' && (s == c.signs || s[-1] != 'B');
        EXPECT_EQ(ask_again, first_busy) << c.signs << " at " << (s - c.signs);
      }
    }
    EXPECT_EQ(got, c.shed) << c.signs;
  }
}

TEST(ThreadPool, ThreadsWithACore) {
  struct Case {
    int cores, runnable, ours, max_threads, want;
  };
  const Case kCases[] = {
      {2, 1, 1, 2, 2},   // idle: only the caller runs
      {2, 2, 2, 2, 2},   // idle, the worker awake
      {2, 2, 1, 2, 1},   // one other task: no core for a worker
      {2, 3, 2, 2, 1},   // one other task, the worker awake
      {2, 99, 1, 2, 1},  // a full machine: the caller alone
      {8, 3, 1, 8, 6},   // two others on eight cores: six threads
      {8, 9, 8, 8, 7},   // one other, all ours awake
      {16, 1, 1, 4, 4},  // more cores than threads
      {4, -1, 1, 4, 4},  // the system does not say: every thread
      {0, 5, 1, 3, 3},   // nor here
  };
  for (const Case& c : kCases) {
    EXPECT_EQ(ThreadPool::threads_with_a_core({c.cores, c.runnable}, c.ours, c.max_threads), c.want)
        << c.cores << " cores, " << c.runnable << " runnable, " << c.ours << " ours";
  }
}

TEST(ThreadPool, TheSystemSaysItsLoadOnLinux) {
  const ThreadPool::MachineLoad load = ThreadPool::system_load();
#if defined(__linux__)
  EXPECT_GE(load.cores, 1);
  EXPECT_GE(load.runnable, 1);  // this thread runs
#else
  EXPECT_EQ(load.runnable, -1);
#endif
}

TEST(ThreadPool, RejectsBadSizes) {
  for (int bad : {0, -1, ThreadPool::kMaxThreads + 1}) {
    try {
      ThreadPool pool(bad);
      FAIL() << bad << " threads accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos) << e.what();
    }
  }
}

TEST(ThreadPool, NestedRunGoesSerial) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.run(2, [&](int) { pool.run(3, [&](int) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 6);
  EXPECT_GE(pool.stats().serial, 2u);
}

TEST(ThreadPool, ConcurrentCallersShareOnePool) {
  ThreadPool pool(2);
  std::atomic<long> sum{0};
  auto caller = [&] {
    for (int i = 0; i < 2000; ++i) pool.run(2, [&](int p) { sum.fetch_add(p + 1); });
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(sum.load(), 2 * 2000 * 3);
}

// A worker asleep on its condition variable is woken by the next run and takes part in it.
// What the pool promises is the wake-up, not that the woken worker beats the caller to a part
// (on a busy machine the caller takes every part first: issue 57, item 7). So the workers are
// first seen asleep (wakeups counts each time one goes to sleep), and the caller's part then
// waits for a worker to take one: without the wake-up it would wait out the deadline.
TEST(ThreadPool, WakesWorkersThatWentToSleep) {
  ThreadPool pool(3);
  pool.set_load_probe(nullptr);
  pool.set_adaptive(false);
  pool.set_spin_micros(0);  // sleep at once
  const std::thread::id caller = std::this_thread::get_id();
  for (int rep = 0; rep < 5; ++rep) {
    // Both workers asleep: each went to sleep once at start and once after each run.
    const uint64_t asleep = 2u * (rep + 1);
    ASSERT_TRUE(wait_until([&] { return pool.stats().wakeups >= asleep; }))
        << "rep " << rep << ": the workers never went to sleep";
    const uint64_t before = pool.stats().worker_parts;
    std::atomic<int> hits{0}, on_workers{0};
    std::atomic<bool> woken{true};
    pool.run(3, [&](int) {
      hits.fetch_add(1);
      if (std::this_thread::get_id() != caller) {
        on_workers.fetch_add(1);
      } else if (woken && !wait_until([&] { return on_workers.load() > 0; })) {
        woken = false;
      }
    });
    ASSERT_EQ(hits.load(), 3);
    ASSERT_TRUE(woken.load()) << "rep " << rep << ": no sleeping worker was woken for the run";
    EXPECT_EQ(pool.stats().worker_parts - before, static_cast<uint64_t>(on_workers.load()));
  }
}

TEST(ThreadPool, IdleWorkersSleepInsteadOfSpinning) {
  ThreadPool pool(2);
  pool.run(2, [](int) {});
  // After the spin window the worker blocks: the process's CPU time stops growing.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::clock_t c0 = std::clock();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double cpu_ms = 1000.0 * double(std::clock() - c0) / CLOCKS_PER_SEC;
  EXPECT_LT(cpu_ms, 50.0) << "an idle pool used " << cpu_ms << " ms of CPU in 200 ms";
}

// ------------------------------------------------------------------ split matmuls

TEST(ParallelMatmul, AnySplitIsBitIdentical) {
  Rng rng(7);
  ThreadPool pool(3);
  // Unstriped (in cache) and striped shapes, partial last panels, the models' shapes.
  const std::pair<size_t, size_t> kShapes[] = {{5, 7},      {8, 16},     {33, 64},    {100, 256},
                                               {768, 256},  {256, 1024}, {1024, 256}, {256, 128},
                                               {1536, 512}, {2050, 512}, {13, 1024}};
  for (const auto& [n, k] : kShapes) {
    const std::vector<float> w = random_floats(rng, n * k), bias = random_floats(rng, n);
    std::vector<float> packed(kernels::packed_size(n, k));
    kernels::pack_weights(w.data(), n, k, packed.data());
    for (size_t m : {1, 2, 3, 5, 8, 9}) {
      const std::vector<float> x = random_floats(rng, m * k);
      std::vector<float> one(m * n);
      kernels::matmul(x.data(), m, k, packed.data(), n, bias.data(), one.data());
      for (int parts = 1; parts <= 5; ++parts) {
        std::vector<float> got(m * n, -1.0f);
        kernels::matmul_parts(&pool, parts, x.data(), m, k, packed.data(), n, bias.data(),
                              got.data());
        ASSERT_TRUE(same_bits(got, one))
            << "N=" << n << " K=" << k << " M=" << m << " parts " << parts;
      }
      std::vector<float> got(m * n, -1.0f);
      kernels::matmul(&pool, x.data(), m, k, packed.data(), n, bias.data(), got.data());
      ASSERT_TRUE(same_bits(got, one)) << "N=" << n << " K=" << k << " M=" << m;
    }
  }
}

TEST(ParallelMatmul, SmallMatricesStayOnOneThread) {
  ThreadPool pool(2);
  pool.set_load_probe(nullptr);
  Rng rng(3);
  const size_t n = 256, k = 128;  // the small draft's LM head: 32k multiply-adds
  const std::vector<float> w = random_floats(rng, n * k), x = random_floats(rng, k);
  std::vector<float> packed(kernels::packed_size(n, k)), out(n);
  kernels::pack_weights(w.data(), n, k, packed.data());
  kernels::matmul(&pool, x.data(), 1, k, packed.data(), n, nullptr, out.data());
  EXPECT_EQ(pool.stats().runs, 0u);
  const size_t big_n = 1024, big_k = 512;  // a large target's MLP: 512k
  const std::vector<float> bw = random_floats(rng, big_n * big_k), bx = random_floats(rng, big_k);
  std::vector<float> bpacked(kernels::packed_size(big_n, big_k)), bout(big_n);
  kernels::pack_weights(bw.data(), big_n, big_k, bpacked.data());
  kernels::matmul(&pool, bx.data(), 1, big_k, bpacked.data(), big_n, nullptr, bout.data());
  EXPECT_EQ(pool.stats().runs, 1u);
}

// Element-wise functions split over threads give one thread's values bit for bit, and a
// 256-wide model's 1024 activations are split (GELU's erf costs ~128 matmul multiply-adds an
// element: on one thread it was ~10% of a two-thread pass).
TEST(ParallelElementwise, SplitsAreBitIdenticalAndSmallModelsSplit) {
  Rng rng(11);
  ThreadPool pool(3);
  pool.set_load_probe(nullptr);
  pool.set_adaptive(false);
  for (size_t n : {1024, 1027, 4099}) {
    const std::vector<float> x = random_floats(rng, n), gu = random_floats(rng, 3 * 2 * n);
    std::vector<float> one = x, got = x;
    kernels::gelu(one.data(), n);
    kernels::gelu(&pool, got.data(), n);
    EXPECT_TRUE(same_bits(got, one)) << "gelu, n=" << n;
    one = got = x;
    kernels::gelu_tanh(one.data(), n);
    kernels::gelu_tanh(&pool, got.data(), n);
    EXPECT_TRUE(same_bits(got, one)) << "gelu_tanh, n=" << n;
    std::vector<float> sw_one(3 * n), sw_got(3 * n, -1.0f);
    kernels::swiglu(gu.data(), 3, n, sw_one.data());
    kernels::swiglu(&pool, gu.data(), 3, n, sw_got.data());
    EXPECT_TRUE(same_bits(sw_got, sw_one)) << "swiglu, n=" << n;
  }
  EXPECT_EQ(pool.stats().runs, 9u);  // every call above was split
}

// ------------------------------------------------------------------ the forward pass

struct PassOutputs {
  std::vector<std::vector<float>> logits, hidden;
};

// Prefill of 37 tokens, 3 one-token steps, a 5-token verify pass, a rollback, and a 4-node
// tree pass: the passes a decoder makes.
PassOutputs run_passes(const GPTModel& model) {
  PassOutputs out;
  KVCache cache(model.config());
  std::vector<int> prompt;
  for (int i = 0; i < 37; ++i) prompt.push_back((i * 37 + 11) % 256);
  auto pass = [&](const std::vector<int>& tokens, const std::vector<int>* parents = nullptr) {
    std::vector<float> hidden;
    out.logits.push_back(model.forward(tokens, cache, parents, &hidden));
    out.hidden.push_back(std::move(hidden));
  };
  pass(prompt);
  for (int t : {65, 66, 67}) pass({t});
  pass({32, 116, 104, 101, 32});
  cache.truncate(cache.size() - 3);
  const std::vector<int> parents = {KVCache::kTreeRoot, static_cast<int>(cache.size()),
                                    KVCache::kTreeRoot, static_cast<int>(cache.size() + 2)};
  pass({97, 98, 99, 100}, &parents);
  return out;
}

class ForwardThreads : public ::testing::TestWithParam<const char*> {};

TEST_P(ForwardThreads, LogitsBitIdenticalAt1To3Threads) {
  GPTModel model = GPTModel::from_file(repo(GetParam()));
  const PassOutputs one = run_passes(model);
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    pool.set_load_probe(nullptr);
    model.set_thread_pool(&pool);
    const PassOutputs got = run_passes(model);
    ASSERT_EQ(got.logits.size(), one.logits.size());
    for (size_t i = 0; i < one.logits.size(); ++i) {
      EXPECT_TRUE(same_bits(got.logits[i], one.logits[i])) << threads << " threads, pass " << i;
      EXPECT_TRUE(same_bits(got.hidden[i], one.hidden[i])) << threads << " threads, pass " << i;
    }
    if (model.config().n_embd >= 256) {  // the targets: the pool really ran parts
      EXPECT_GT(pool.stats().runs, 0u) << threads << " threads";
    }
    model.set_thread_pool(nullptr);
  }
  // A worker that never runs (a busy machine): the same logits, every part on the caller.
  ThreadPool held(2);
  held.hold_workers(true);
  model.set_thread_pool(&held);
  const PassOutputs got = run_passes(model);
  for (size_t i = 0; i < one.logits.size(); ++i) {
    EXPECT_TRUE(same_bits(got.logits[i], one.logits[i])) << "held worker, pass " << i;
  }
  EXPECT_EQ(held.stats().worker_parts, 0u);
  model.set_thread_pool(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Models, ForwardThreads,
                         ::testing::Values("tests/fixtures/tiny_f32.safetensors",
                                           "models/target.safetensors", "models/draft.safetensors",
                                           "models/large-target.safetensors",
                                           "models/large-draft.safetensors"));

}  // namespace
}  // namespace specdec
