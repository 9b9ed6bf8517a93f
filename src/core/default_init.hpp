#pragma once
// A std::vector whose resize leaves new elements of trivial types uninitialized (default- rather
// than value-initialized): for large buffers that are written in full right after, where the
// zero fill would be a single-threaded pass over all of their memory before the (parallel) writes.
#include <memory>
#include <utility>
#include <vector>

namespace gpuml::detail {

template <typename T, typename Base = std::allocator<T>>
struct DefaultInitAllocator : Base {
  using Base::Base;
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U, typename std::allocator_traits<Base>::template rebind_alloc<U>>;
  };
  template <typename U>
  void construct(U* p) noexcept(noexcept(::new (static_cast<void*>(p)) U)) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    std::allocator_traits<Base>::construct(static_cast<Base&>(*this), p, std::forward<Args>(args)...);
  }
};

template <typename T>
using DefaultInitVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace gpuml::detail
