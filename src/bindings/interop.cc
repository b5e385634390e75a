#include "bindings/interop.h"

#include <emscripten/emscripten.h>

#include <cmath>
#include <cstdint>

#include "base/errors.h"

// Throws from JS (at global scope: EM_JS declares an extern "C" import). The caller keeps the
// message in a static, so no C++ destructor is pending when the JS exception unwinds.
EM_JS(void, specdec_throw_js_error, (const char* message), {
  var ErrorClass = Module["SpecdecError"] || Error;
  throw new ErrorClass(UTF8ToString(message));
});

namespace specdec::bindings {
namespace {

template <typename T>
void copy_into(const val& array, T* out, size_t n) {
  if (n == 0) return;
  // typed_memory_view: a JS view of wasm memory valid until the next allocation; set() copies
  // (and converts number[] / other typed arrays) in one call.
  val(emscripten::typed_memory_view(n, out)).call<void>("set", array);
}

// new Xxx(view) copies the view's contents into a fresh buffer.
// The JS typed array classes, each looked up once.
struct Float32Array {
  static constexpr const char* kName = "Float32Array";
};
struct Float64Array {
  static constexpr const char* kName = "Float64Array";
};
struct Int32Array {
  static constexpr const char* kName = "Int32Array";
};
struct Uint8Array {
  static constexpr const char* kName = "Uint8Array";
};

// A copy of data[0, n) as a new JS typed array of class Class.
template <typename Class, typename T>
val typed_copy(const T* data, size_t n) {
  static const val cls = val::global(Class::kName);
  return cls.new_(emscripten::typed_memory_view(n, data));
}

}  // namespace

void throw_js_error(const std::string& message) {
  // Kept in a static so that no C++ destructor is pending in this frame.
  static std::string pending;
  pending = message;
  specdec_throw_js_error(pending.c_str());
  __builtin_unreachable();
}

uint64_t js_size(const val& bytes, const char* what) {
  const double n = bytes["length"].as<double>();
  if (!(n >= 0 && n <= 9007199254740992.0) || n != std::floor(n)) {
    fail(what, ": length ", n, " is not a byte count");
  }
  return static_cast<uint64_t>(n);
}

size_t js_length(const val& array) {
  const uint64_t n = js_size(array, "array");
  if (n > SIZE_MAX) fail("array: ", n, " entries exceed the ", SIZE_MAX, " that wasm32 addresses");
  return static_cast<size_t>(n);
}

void copy_from_js(const val& array, float* out, size_t n) { copy_into(array, out, n); }
void copy_from_js(const val& array, int32_t* out, size_t n) { copy_into(array, out, n); }

std::vector<int> int_vector_from_js(const val& array) {
  std::vector<int> v(js_length(array));
  static_assert(sizeof(int) == sizeof(int32_t), "wasm32 int is 32 bits");
  copy_into(array, reinterpret_cast<int32_t*>(v.data()), v.size());
  return v;
}

Distribution distribution_from_js(const val& array) {
  const size_t n = js_length(array);
  Distribution d = xt::empty<float>({n});
  copy_into(array, d.data(), n);
  return d;
}

ProbMatrix matrix_from_js(const val& flat, size_t rows, size_t cols) {
  const size_t n = js_length(flat);
  if (n != rows * cols) fail("internal: matrix of ", rows, "x", cols, " from ", n, " values");
  ProbMatrix m = xt::empty<float>({rows, cols});
  copy_into(flat, m.data(), n);
  return m;
}

val float32_array(const float* data, size_t n) { return typed_copy<Float32Array>(data, n); }
val float64_array(const double* data, size_t n) { return typed_copy<Float64Array>(data, n); }
val int32_array(const int* data, size_t n) { return typed_copy<Int32Array>(data, n); }
val uint8_array(const uint8_t* data, size_t n) { return typed_copy<Uint8Array>(data, n); }

uint64_t seed_from_halves(double high, double low) {
  auto valid = [](double h) { return h >= 0 && h < 4294967296.0 && std::floor(h) == h; };
  if (!valid(high) || !valid(low)) fail("seed: must be an integer in [0, 2^64)");
  return (static_cast<uint64_t>(high) << 32) | static_cast<uint64_t>(low);
}

}  // namespace specdec::bindings
