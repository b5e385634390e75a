// The module's one thread pool (kernels/thread_pool.h): every model this module loads runs on
// it, so all decoders and models alive at once share the same threads. Made by setupThreads()
// once, right after instantiation (web/lib/core.js), with the count loadSpecdec chose; absent
// (null) in the single-threaded build or with one thread.
#pragma once

#include <emscripten/val.h>

#include <cstddef>

#include "bench/bench.h"
#include "kernels/thread_pool.h"

namespace specdec::bindings {

// The pool, or null when the module runs on one thread.
kernels::ThreadPool* module_pool();

// bench::read_gbs with `threads` threads of the pool reading at once (1..max threads; throws
// specdec::Error otherwise); the count in use is restored after.
bench::Stats read_gbs_with_threads(size_t bytes, int repeats, double min_ms, int streams,
                                   int threads);

// A measurement as JS: { median, min, max, runs }.
emscripten::val stats_js(const bench::Stats& s);

}  // namespace specdec::bindings
