#pragma once
// A host array computed on first use, once, safely from many threads: for fitted attributes that
// cost more than the fit itself needs (LinearRegression's singular values when the solve did not
// need them). A computation that throws leaves it unset, to be tried again.
#include <functional>
#include <mutex>
#include <utility>

#include "gpuml/core/array.hpp"

namespace gpuml::detail {

class DeferredArray {
 public:
  explicit DeferredArray(HostArray ready) : value_(std::move(ready)) { std::call_once(once_, [] {}); }
  explicit DeferredArray(std::function<HostArray()> compute) : compute_(std::move(compute)) {}

  const HostArray& get() const {
    std::call_once(once_, [this] {
      value_ = compute_();
      compute_ = nullptr;  // frees what it captured
    });
    return value_;
  }

 private:
  mutable std::once_flag once_;
  mutable std::function<HostArray()> compute_;
  mutable HostArray value_;
};

}  // namespace gpuml::detail
