#pragma once
// Shared by the C ABI reliability tests (bad_input_matrix_test, concurrency_test,
// determinism_test): how to fit and use each kind through the C ABI, and small RAII wrappers
// over the C handles. The kinds and their data (KindSpec, kind_specs, make_data) are in
// estimator_cases.hpp, shared with the C++ API's matrix. Everything goes through <gpuml/gpuml.h>
// only (plus gpuml::estimator_kinds to check the table covers every kind).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "estimator_cases.hpp"
#include "gpuml/gpuml.h"

// In a test body: a CUDA backend (anything but "cpu") without a device skips, or fails under
// GPUML_REQUIRE_CUDA=1.
#define GPUML_SKIP_UNLESS_BACKEND(backend)                                                        \
  if ((backend) != "cpu" && ::gpuml::cuda_device_count() == 0) {                                \
    if (::gpuml::test::cuda_required()) FAIL() << "no CUDA device, but GPUML_REQUIRE_CUDA=1 requires one"; \
    GTEST_SKIP() << "no CUDA device";                                                            \
  }


namespace gpuml::test::capi {

inline gpuml_array_t host_array(const void* data, int32_t dtype, int32_t ndim, int64_t rows, int64_t cols) {
  gpuml_array_t a;
  std::memset(&a, 0, sizeof a);
  a.data = const_cast<void*>(data);
  a.dtype = dtype;
  a.device_type = GPUML_DEVICE_CPU;
  a.ndim = ndim;
  a.shape[0] = rows;
  a.strides[0] = ndim == 2 ? cols : 1;
  if (ndim == 2) {
    a.shape[1] = cols;
    a.strides[1] = 1;
  }
  return a;
}
inline gpuml_array_t host_matrix(const double* data, int64_t rows, int64_t cols) {
  return host_array(data, GPUML_FLOAT64, 2, rows, cols);
}
inline gpuml_array_t host_vector(const double* data, int64_t n) { return host_array(data, GPUML_FLOAT64, 1, n, 0); }
inline gpuml_array_t host_vector(const int32_t* data, int64_t n) { return host_array(data, GPUML_INT32, 1, n, 0); }

class ContextHandle {
 public:
  explicit ContextHandle(const char* device) { status_ = gpuml_context_create(device, &h_); }
  ~ContextHandle() { gpuml_context_free(h_); }
  ContextHandle(const ContextHandle&) = delete;
  ContextHandle& operator=(const ContextHandle&) = delete;
  ContextHandle(ContextHandle&& o) noexcept : h_(o.h_), status_(o.status_) { o.h_ = nullptr; }
  gpuml_context_t get() const { return h_; }
  gpuml_status_t status() const { return status_; }

 private:
  gpuml_context_t h_ = nullptr;
  gpuml_status_t status_ = GPUML_OK;
};

class EstimatorHandle {
 public:
  EstimatorHandle() = default;
  EstimatorHandle(const std::string& kind, const std::string& params) {
    status_ = gpuml_estimator_create(kind.c_str(), params.c_str(), &h_);
  }
  explicit EstimatorHandle(const std::vector<uint8_t>& bytes) {
    status_ = gpuml_estimator_deserialize(bytes.data(), bytes.size(), &h_);
  }
  ~EstimatorHandle() { gpuml_estimator_free(h_); }
  EstimatorHandle(const EstimatorHandle&) = delete;
  EstimatorHandle& operator=(const EstimatorHandle&) = delete;
  gpuml_estimator_t get() const { return h_; }
  gpuml_status_t status() const { return status_; }

 private:
  gpuml_estimator_t h_ = nullptr;
  gpuml_status_t status_ = GPUML_OK;
};

// The C ABI's y for this kind's target (labels as int32, real targets as float64).
inline gpuml_array_t target_of(const KindSpec& spec, const Data& data) {
  return spec.target == Target::labels ? host_vector(data.labels.data(), data.n) : host_vector(data.y.data(), data.n);
}

// Fits on `data` (y when the kind has a target, the weights when asked).
inline gpuml_status_t fit(gpuml_context_t ctx, gpuml_estimator_t est, const KindSpec& spec, const Data& data,
                          bool with_weights) {
  const gpuml_array_t X = host_matrix(data.X.data(), data.n, data.d);
  const gpuml_array_t y = target_of(spec, data);
  const gpuml_array_t w = host_vector(data.w.data(), data.n);
  return gpuml_estimator_fit(ctx, est, &X, spec.target == Target::none ? nullptr : &y,
                             with_weights && spec.weights ? &w : nullptr);
}

// The output of `method` on rows X (n x d) as float64, sized by gpuml_estimator_output_shape.
struct Output {
  gpuml_status_t status = GPUML_OK;
  std::string error;
  std::vector<double> values;
};

inline gpuml_status_t call_method(const std::string& method, gpuml_context_t ctx, gpuml_estimator_t est,
                                  const gpuml_array_t* X, gpuml_array_t* out) {
  if (method == "predict") return gpuml_estimator_predict(ctx, est, X, out);
  if (method == "transform") return gpuml_estimator_transform(ctx, est, X, out);
  return gpuml_estimator_predict_proba(ctx, est, X, out);
}

inline Output apply(gpuml_context_t ctx, gpuml_estimator_t est, const std::string& method, const double* X, int64_t n,
                    int64_t d) {
  Output result;
  int32_t dtype = -1, ndim = -1;
  int64_t shape[2] = {0, 0};
  result.status = gpuml_estimator_output_shape(est, method.c_str(), n, &dtype, &ndim, shape);
  if (result.status == GPUML_OK) {
    result.values.assign(static_cast<std::size_t>(shape[0] * (ndim == 2 ? shape[1] : 1)), std::nan(""));
    gpuml_array_t out = host_array(result.values.data(), GPUML_FLOAT64, ndim, shape[0], shape[1]);
    const gpuml_array_t x = host_matrix(X, n, d);
    result.status = call_method(method, ctx, est, &x, &out);
  }
  if (result.status != GPUML_OK) {
    result.error = gpuml_last_error();
    result.values.clear();
  }
  return result;
}

inline Output apply(gpuml_context_t ctx, gpuml_estimator_t est, const std::string& method, const Data& data) {
  return apply(ctx, est, method, data.X.data(), data.n, data.d);
}

// The model's bytes (empty, with the status in *status, when serializing fails).
inline std::vector<uint8_t> serialize(gpuml_estimator_t est, gpuml_status_t* status = nullptr) {
  uint64_t size = 0;
  gpuml_status_t s = gpuml_estimator_serialized_size(est, &size);
  std::vector<uint8_t> bytes;
  if (s == GPUML_OK) {
    bytes.resize(size);
    s = gpuml_estimator_serialize(est, bytes.data(), size);
  }
  if (s != GPUML_OK) bytes.clear();
  if (status != nullptr) *status = s;
  return bytes;
}

// Bitwise equality of two double vectors (NaN payloads included).
inline bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// "cpu", plus "cuda:0" when a device is present (the tests with a backend parameter skip the
// CUDA one when it is absent, and fail instead under GPUML_REQUIRE_CUDA=1).
inline std::vector<std::string> backends() { return {"cpu", "cuda:0"}; }

}  // namespace gpuml::test::capi
