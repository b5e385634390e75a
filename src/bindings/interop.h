// Moving data and errors across the JS boundary. The only folder that includes Emscripten
// headers is src/bindings/.
//
// Errors: every bound function runs its body inside guard(). A C++ exception (specdec::Error
// for bad input) is caught there and re-thrown as a JS exception of class
// Module.SpecdecError (web/lib/core.js passes it in; plain Error otherwise). With native wasm
// exception handling the JS exception unwinds the remaining wasm frames running their
// destructors, so nothing leaks and the instance keeps working.
//
// Arrays: inputs are copied into wasm memory; outputs leave as fresh typed arrays (copies): a
// view into wasm memory dies when the memory grows.
#pragma once

#include <emscripten/val.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "specdec/distribution.h"

namespace specdec::bindings {

using emscripten::val;

// Throws Module.SpecdecError(message) into JS. Does not return.
[[noreturn]] void throw_js_error(const std::string& message);

// Runs body(); a C++ exception becomes a JS SpecdecError with the same message.
template <typename Body>
auto guard(Body&& body) -> decltype(body()) {
  // The message is moved out of the catch block first: the C++ exception object is released
  // before the JS exception starts unwinding.
  std::string message;
  try {
    return body();
  } catch (const std::bad_alloc&) {
    message = "out of memory (wasm heap)";
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "internal error: unknown C++ exception";
  }
  throw_js_error(message);
}

// Copies a JS typed array or number[] of n entries into out (n floats / ints).
void copy_from_js(const val& array, float* out, size_t n);
void copy_from_js(const val& array, int32_t* out, size_t n);
// array.length; refused (not wrapped) past wasm32's size_t, for arrays copied in whole.
size_t js_length(const val& array);
// A byte source's length as 64 bits (a file streamed from JS may pass 4 GiB, beyond wasm32's
// size_t); what: the argument, for the error when it is not a count.
uint64_t js_size(const val& bytes, const char* what);

std::vector<int> int_vector_from_js(const val& array);
Distribution distribution_from_js(const val& array);
// rows * cols entries, row-major, from one flat JS array.
ProbMatrix matrix_from_js(const val& flat, size_t rows, size_t cols);

// Fresh JS typed arrays holding copies.
val float32_array(const float* data, size_t n);
val float64_array(const double* data, size_t n);
val int32_array(const int* data, size_t n);
val uint8_array(const uint8_t* data, size_t n);
inline val int32_array(const std::vector<int>& v) { return int32_array(v.data(), v.size()); }

// A seed from JS as two uint32 halves (JS splits a number up to 2^53 or a bigint < 2^64).
uint64_t seed_from_halves(double high, double low);

}  // namespace specdec::bindings
