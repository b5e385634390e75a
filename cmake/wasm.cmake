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
