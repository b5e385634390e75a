# The WebAssembly module of the npm package (included by CMakeLists.txt under emcmake).
# scripts/build-wasm builds the target `specdec_wasm` and copies specdec-core.{js,wasm} into
# web/lib/wasm/.
#
# Exceptions: bad input makes the core throw specdec::Error; the bindings catch it and throw a
# JS Error instead, so the instance keeps working. We use native WebAssembly exception handling
# (-fwasm-exceptions: try/catch instructions, no cost until something throws; Node >= 17,
# Chrome 95, Firefox 100, Safari 15.2) rather than -fexceptions, whose JS-based scheme routes
# every call that may throw through an `invoke_*` JS trampoline. It must be set on every
# object file, the core's included, and at link time. Measured with Emscripten 3.1.6 / Node 20
# (tiny fixture model, medians): speculative decoding 0.120 vs 0.161 ms/token, .wasm 298 KB vs
# 377 KB (101 vs 112 KB gzip), and a JS exception thrown by a step function leaks ~190 bytes per
# throw under -fexceptions (no C++ destructor runs) but nothing with wasm exceptions.

# SPECDEC_WASM_EXCEPTIONS=js selects -fexceptions instead, for comparison only (slower, larger,
# and a JS exception from a step function then skips C++ destructors).
set(SPECDEC_WASM_EXCEPTIONS wasm CACHE STRING "C++ exceptions in WebAssembly: wasm (native) or js")
if(SPECDEC_WASM_EXCEPTIONS STREQUAL "js")
  set(SPECDEC_EH_FLAG -fexceptions)
else()
  set(SPECDEC_EH_FLAG -fwasm-exceptions)
endif()
target_compile_options(specdec_core PUBLIC ${SPECDEC_EH_FLAG})

# The model files' frontends, checks and plan run once per load, not per token: compiled for size
# (-Oz) in the WebAssembly modules, so that the one loader costs the lite module (the explorer's
# first-visit budget, tests/e2e/embed-cost) little; the tensors' conversion loops
# (family_convert.cc) stay at -O3, as do the kernels, the forward pass and the heads.
foreach(f checkpoint family_loader family_plan specdec_file load hf_config hf_folder gguf gguf_checkpoint
          gguf_metadata json quantize safetensors)
  set_source_files_properties(${CMAKE_SOURCE_DIR}/src/model/${f}.cc PROPERTIES COMPILE_OPTIONS -Oz)
endforeach()
# So are the decoder's bookkeeping that runs once per iteration beside passes of a millisecond
# or more (the decoder's plan, the gamma policy and its ledger, options, analytics, records; the
# passes, sampling, verification and drafters stay -O3) and the Embind glue.
# The kernels' self-check (bench/self_check.cc: correctness, not speed) is compiled for size too.
foreach(f specdec/policy specdec/ledger specdec/options specdec/analytics specdec/lookup_rates
          specdec/record specdec/decode specdec/decoder specdec/decoder_passes bench/self_check)
  set_source_files_properties(${CMAKE_SOURCE_DIR}/src/${f}.cc PROPERTIES COMPILE_OPTIONS -Oz)
endforeach()
file(GLOB SPECDEC_GLUE_SOURCES ${CMAKE_SOURCE_DIR}/src/bindings/*.cc
     ${CMAKE_SOURCE_DIR}/src/bindings/lite/*.cc)
set_source_files_properties(${SPECDEC_GLUE_SOURCES} PROPERTIES COMPILE_OPTIONS -Oz)

# The shipped module: the library's bindings and its one diagnostics file. The benchmark's
# timing entry points (src/bindings/bench_bindings.cc) go only into specdec_bench_wasm below.
file(GLOB BINDING_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/bindings/*.cc)
list(FILTER BINDING_SOURCES EXCLUDE REGEX "/bench_bindings\\.cc$")
add_executable(specdec_wasm ${BINDING_SOURCES})
set_target_properties(specdec_wasm PROPERTIES OUTPUT_NAME specdec-core)
target_link_libraries(specdec_wasm PRIVATE specdec_core)

set(SPECDEC_WASM_LINK_OPTIONS
  -O3
  -msimd128
  ${SPECDEC_EH_FLAG}
  -lembind
  -sMODULARIZE=1
  -sEXPORT_ES6=1
  -sEXPORT_NAME=createSpecdecModule
  -sALLOW_MEMORY_GROWTH=1
  # Up to 4 GiB of wasm memory (the default stops at 2): a 360M-parameter model in float32, a
  # 1.1B one in 8-bit (kMaxFamilyParamBytes, 3 GiB of weights, plus a KV cache).
  -sMAXIMUM_MEMORY=4GB
  # No eval / new Function in the glue: pages can use a CSP without 'unsafe-eval'.
  -sDYNAMIC_EXECUTION=0
  # Nothing reads files: models arrive as bytes.
  -sFILESYSTEM=0
)
target_link_options(specdec_wasm PRIVATE
  ${SPECDEC_WASM_LINK_OPTIONS}
  # Browser page and workers only; Node gets the bytes through `wasmBinary` (web/lib/node.js).
  -sENVIRONMENT=web,worker
)

# The lite module (specdec/lite: specdec-lite.{js,wasm}): the same library and bindings without
# the checkpoint frontends (GGUF, Hugging Face folders: bindings/lite/no_checkpoints.cc refuses
# them), for pages that need the lesson's functions and our own models only — the explorer page's
# main thread, whose #only=explorer embed has a first-visit budget (tests/e2e/embed-cost).
set(LITE_BINDING_SOURCES ${BINDING_SOURCES})
list(FILTER LITE_BINDING_SOURCES EXCLUDE REGEX "/checkpoints\\.cc$")
add_executable(specdec_wasm_lite ${LITE_BINDING_SOURCES}
  ${CMAKE_SOURCE_DIR}/src/bindings/lite/no_checkpoints.cc)
set_target_properties(specdec_wasm_lite PROPERTIES OUTPUT_NAME specdec-lite)
target_link_libraries(specdec_wasm_lite PRIVATE specdec_core)
target_link_options(specdec_wasm_lite PRIVATE ${SPECDEC_WASM_LINK_OPTIONS} -sENVIRONMENT=web,worker)

# The benchmark's module (bench/run.mjs; scripts/build-wasm --bench): the same library and
# bindings plus the timing entry points, built only when the benchmark asks for it
# (EXCLUDE_FROM_ALL). Node only: bench/run.mjs passes the bytes as `wasmBinary`.
add_executable(specdec_bench_wasm EXCLUDE_FROM_ALL ${BINDING_SOURCES}
  ${CMAKE_SOURCE_DIR}/src/bindings/bench_bindings.cc)
set_target_properties(specdec_bench_wasm PROPERTIES OUTPUT_NAME specdec-bench)
target_link_libraries(specdec_bench_wasm PRIVATE specdec_core)
target_link_options(specdec_bench_wasm PRIVATE
  ${SPECDEC_WASM_LINK_OPTIONS}
  -sENVIRONMENT=web,worker
)

# ---------------------------------------------------------------------------- threaded module
# The same library and bindings built with -pthread (specdec-core-mt.*), beside the
# single-threaded module; web/lib picks it when SharedArrayBuffer is usable (crossOriginIsolated
# pages and workers, Node). Differences, each for a reason measured or hit in this toolchain:
# - -fexceptions (JS-based C++ exceptions), not -fwasm-exceptions: with -pthread, Debian's
#   Emscripten 3.1.6 (clang 14) stores the landing-pad context in a plain global while its
#   libunwind reads a thread-local one, so no typed catch clause ever matches and every
#   specdec::Error would reach JS as an opaque WebAssembly.Exception.
# - the pool size is chosen at run time (Module.specdecPoolSize: workers made before main()
#   runs; a std::thread beyond them would only start after the caller yields to the event loop,
#   which a synchronous fork-join never does). At least 1: with 0 the module never gets ready.
# - two glues over one .wasm (the bytes do not depend on -sENVIRONMENT): an ES module for
#   browsers and workers (specdec-core-mt.js + specdec-core-mt.worker.js), and one for Node
#   (specdec-core-mt-node.mjs + its CommonJS worker, renamed .cjs by scripts/build-wasm because
#   the package is "type": "module"); NODEJS_CATCH_*=0: a library must not install
#   process-wide handlers.
file(GLOB SPECDEC_MT_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/src/kernels/*.cc ${CMAKE_SOURCE_DIR}/src/model/*.cc
  ${CMAKE_SOURCE_DIR}/src/sampling/*.cc ${CMAKE_SOURCE_DIR}/src/specdec/*.cc
  ${CMAKE_SOURCE_DIR}/src/bench/*.cc)
add_library(specdec_core_mt STATIC ${SPECDEC_MT_SOURCES})
target_include_directories(specdec_core_mt PUBLIC ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(specdec_core_mt PUBLIC xtensor_headers)
target_compile_options(specdec_core_mt PUBLIC -msimd128 -pthread -fexceptions)

set(SPECDEC_WASM_MT_LINK_OPTIONS
  -O3 -msimd128 -pthread -fexceptions -lembind
  -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createSpecdecModule
  -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sDYNAMIC_EXECUTION=0 -sFILESYSTEM=0
  "-sPTHREAD_POOL_SIZE=Math.max(1,Module['specdecPoolSize']|0)"
)
set(SPECDEC_NODE_LINK_OPTIONS
  -sENVIRONMENT=node -sNODEJS_CATCH_EXIT=0 -sNODEJS_CATCH_REJECTION=0
  --extern-pre-js ${CMAKE_SOURCE_DIR}/cmake/node-esm-pre.js
)

add_executable(specdec_wasm_mt ${BINDING_SOURCES})
set_target_properties(specdec_wasm_mt PROPERTIES OUTPUT_NAME specdec-core-mt)
target_link_libraries(specdec_wasm_mt PRIVATE specdec_core_mt)
target_link_options(specdec_wasm_mt PRIVATE ${SPECDEC_WASM_MT_LINK_OPTIONS} -sENVIRONMENT=web,worker)

add_executable(specdec_wasm_mt_node ${BINDING_SOURCES})
set_target_properties(specdec_wasm_mt_node PROPERTIES OUTPUT_NAME specdec-core-mt-node SUFFIX .mjs)
target_link_libraries(specdec_wasm_mt_node PRIVATE specdec_core_mt)
target_link_options(specdec_wasm_mt_node PRIVATE ${SPECDEC_WASM_MT_LINK_OPTIONS}
  ${SPECDEC_NODE_LINK_OPTIONS})

# The benchmark's threaded module (Node): bench/run.mjs measures 1..T threads with it.
add_executable(specdec_bench_wasm_mt EXCLUDE_FROM_ALL ${BINDING_SOURCES}
  ${CMAKE_SOURCE_DIR}/src/bindings/bench_bindings.cc)
set_target_properties(specdec_bench_wasm_mt PROPERTIES OUTPUT_NAME specdec-bench-mt SUFFIX .mjs)
target_link_libraries(specdec_bench_wasm_mt PRIVATE specdec_core_mt)
target_link_options(specdec_bench_wasm_mt PRIVATE ${SPECDEC_WASM_MT_LINK_OPTIONS}
  ${SPECDEC_NODE_LINK_OPTIONS})
