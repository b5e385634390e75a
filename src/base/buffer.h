// Buffer<T>: a std::vector whose resize() leaves new trivially-constructible elements
// uninitialised (default-init instead of value-init). For storage that is written whole right
// after it is sized — packed weights, a tensor's bytes fetched from a file — so that loading a
// model touches each byte once instead of zeroing it first (a memset of the whole model).
#pragma once

#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace specdec {

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() noexcept = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}

  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible<U>::value) {
    ::new (static_cast<void*>(p)) U;  // default-init: no zeroing for scalars
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T, typename U>
bool operator==(const DefaultInitAllocator<T>&, const DefaultInitAllocator<U>&) noexcept {
  return true;
}
template <typename T, typename U>
bool operator!=(const DefaultInitAllocator<T>&, const DefaultInitAllocator<U>&) noexcept {
  return false;
}

template <typename T>
using Buffer = std::vector<T, DefaultInitAllocator<T>>;

// b sized n, uninitialised, for scratch reused across calls: a larger size frees the old block
// first (nothing is copied, and no hole is left beside the new block).
template <typename T>
void resize_scratch(Buffer<T>& b, size_t n) {
  if (n > b.capacity()) Buffer<T>().swap(b);
  b.resize(n);
}

}  // namespace specdec
