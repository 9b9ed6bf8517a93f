// libFuzzer target for the C ABI's sparse descriptor (gpuml_sparse_t) and the *_sparse entry
// points. The input describes a small CSR / CSC matrix — header bytes pick the estimator kind,
// format, value and index types, shape and nnz; the rest fills indptr, indices and values (raw
// bytes: unsorted, duplicated, out of range, decreasing, NaN or huge values all occur). Every
// buffer has the length the descriptor declares (what a caller owes the library). Rules: a call
// either succeeds or returns a named status with a message; a fit that succeeds gives a model
// whose predict / transform / predict_proba on the same X succeed or fail by name, and write
// finite numbers when they succeed (never a NaN result from finite input).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_util.hpp"

using namespace gpuml_fuzz;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OMP_NUM_THREADS", "1", 0);
  return 0;
}

namespace {

// Small, fast parameters: the fuzzer is after the input checks and the sparse paths, not accuracy.
struct Case {
  const char* kind;
  const char* params;
  bool supervised;
};
const Case kCases[] = {
    {"kmeans", R"({"n_clusters": 2, "n_init": 1, "max_iter": 5})", false},
    {"truncated_svd", R"({"n_components": 1, "n_iter": 2})", false},
    {"truncated_svd", R"({"n_components": 1, "algorithm": "arpack"})", false},
    {"pca", R"({"n_components": 1, "svd_solver": "arpack"})", false},
    {"linear_regression", "{}", true},
    {"ridge", R"({"alpha": 0.5})", true},
    {"lasso", R"({"alpha": 0.1, "max_iter": 20})", true},
    {"elastic_net", R"({"alpha": 0.1, "max_iter": 20})", true},
    {"logistic_regression", R"({"max_iter": 10})", true},
    {"random_forest_classifier", R"({"n_estimators": 2, "max_depth": 3})", true},
    {"random_forest_regressor", R"({"n_estimators": 2, "max_depth": 3})", true},
};

// Reads the input's bytes in order; 0 once they run out.
struct Bytes {
  const uint8_t* p;
  std::size_t left;
  uint8_t next() {
    if (left == 0) return 0;
    --left;
    return *p++;
  }
  template <typename T>
  T next_as() {
    unsigned char raw[sizeof(T)];
    for (unsigned char& b : raw) b = next();
    T v;
    std::memcpy(&v, raw, sizeof(T));
    return v;
  }
};

// Index-typed buffer: each entry a small number near `typical` most of the time, raw bytes otherwise.
template <typename I>
std::vector<I> indices_of(Bytes& in, std::size_t count, int64_t typical_bound) {
  std::vector<I> out(count);
  for (I& v : out) {
    const uint8_t mode = in.next();
    if (mode < 240)
      v = static_cast<I>(typical_bound > 0 ? mode % typical_bound : mode);
    else
      v = in.next_as<I>();  // anything: negative, huge
  }
  return out;
}

template <typename T>
std::vector<T> values_of(Bytes& in, std::size_t count) {
  std::vector<T> out(count);
  for (T& v : out) {
    const uint8_t mode = in.next();
    if (mode < 248)
      v = static_cast<T>(static_cast<int8_t>(in.next())) / T(8);
    else
      v = in.next_as<T>();  // any bit pattern: NaN, infinity, 1e300, subnormal
  }
  return out;
}

// Float outputs hold finite numbers (integer outputs always do).
bool all_finite(const std::vector<double>& out, int32_t dtype, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const double x = dtype == GPUML_FLOAT64   ? out[i]
                     : dtype == GPUML_FLOAT32 ? reinterpret_cast<const float*>(out.data())[i]
                                              : 0.0;
    if (!std::isfinite(x)) return false;
  }
  return true;
}

template <typename I, typename T>
void run_one(gpuml_context_t ctx, const Case& c, Bytes& in, int32_t format, int64_t rows, int64_t cols) {
  const bool csr = format == GPUML_SPARSE_CSR;
  const int64_t major = csr ? rows : cols, minor = csr ? cols : rows;
  const int64_t major_len = std::max<int64_t>(major, 0);  // at most 127: shapes come from a byte
  // indptr: a running sum of small steps (so most inputs are valid), now and then a raw entry.
  std::vector<I> indptr(static_cast<std::size_t>(major_len + 1));
  int64_t total = 0;
  for (std::size_t i = 1; i < indptr.size(); ++i) {
    const uint8_t step = in.next();
    if (step < 250) {
      total += step % 6;
      indptr[i] = static_cast<I>(total);
    } else {
      indptr[i] = in.next_as<I>();
    }
  }
  if (in.next() >= 250) indptr[0] = static_cast<I>(1);
  // nnz as declared: usually indptr's last entry, sometimes off by one either way.
  const uint8_t nnz_mode = in.next();
  int64_t nnz = static_cast<int64_t>(indptr.back());
  if (nnz_mode >= 250) nnz += (nnz_mode & 1) ? 1 : -1;
  const std::size_t stored = nnz >= 0 && nnz <= 512 ? static_cast<std::size_t>(nnz) : 0;
  if (nnz < 0 || nnz > 512) nnz = static_cast<int64_t>(stored);  // the buffers must hold what is declared
  std::vector<I> indices = indices_of<I>(in, stored, minor);
  std::vector<T> values = values_of<T>(in, stored);

  gpuml_sparse_t X{};
  X.format = format;
  X.dtype = sizeof(T) == 4 ? GPUML_FLOAT32 : GPUML_FLOAT64;
  X.index_dtype = sizeof(I) == 4 ? GPUML_INT32 : GPUML_INT64;
  X.device_type = GPUML_DEVICE_CPU;
  X.shape[0] = rows;
  X.shape[1] = cols;
  X.nnz = nnz;
  X.indptr = indptr.data();
  X.indices = indices.data();
  X.values = values.data();

  // y: small class labels or targets, one per row.
  const int64_t n = std::max<int64_t>(rows, 1);
  std::vector<double> y(static_cast<std::size_t>(n));
  for (double& v : y) v = static_cast<double>(in.next() % 3);
  gpuml_array_t y_view{y.data(), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 1, {n, 0}, {1, 0}};

  gpuml_estimator_t est = nullptr;
  if (gpuml_estimator_create(c.kind, c.params, &est) != GPUML_OK) fail("create failed for", c.kind);
  const gpuml_status_t fit = gpuml_estimator_fit_sparse(ctx, est, &X, c.supervised ? &y_view : nullptr, nullptr);
  expect_named_error(fit, "gpuml_estimator_fit_sparse");
  if (fit == GPUML_OK && rows > 0) {
    for (const char* method : {"predict", "transform", "predict_proba"}) {
      int32_t dtype = 0, ndim = 0;
      int64_t shape[2] = {0, 0};
      if (gpuml_estimator_output_shape(est, method, rows, &dtype, &ndim, shape) != GPUML_OK) continue;
      const int64_t count = shape[0] * (ndim == 2 ? shape[1] : 1);
      std::vector<double> out(static_cast<std::size_t>(count));  // 8 bytes an entry: room for any dtype
      gpuml_array_t out_view{out.data(), dtype, GPUML_DEVICE_CPU, 0, ndim, {shape[0], shape[1]},
                             {ndim == 2 ? shape[1] : 1, 1}};
      const std::string m = method;
      const gpuml_status_t st = m == "predict"     ? gpuml_estimator_predict_sparse(ctx, est, &X, &out_view)
                                : m == "transform" ? gpuml_estimator_transform_sparse(ctx, est, &X, &out_view)
                                                   : gpuml_estimator_predict_proba_sparse(ctx, est, &X, &out_view);
      expect_named_error(st, ("gpuml_estimator_" + m + "_sparse").c_str());
      if (st == GPUML_OK && !all_finite(out, dtype, count)) fail("a sparse fit and", (m + " of " + c.kind + " wrote NaN or infinity").c_str());
    }
  }
  gpuml_estimator_free(est);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static gpuml_context_t ctx = [] {
    gpuml_context_t c = nullptr;
    if (gpuml_context_create("cpu", &c) != GPUML_OK) fail("gpuml_context_create(cpu) failed");
    return c;
  }();
  Bytes in{data, size};
  const Case& c = kCases[in.next() % (sizeof(kCases) / sizeof(kCases[0]))];
  const uint8_t flags = in.next();
  const int32_t format = (flags & 1) ? GPUML_SPARSE_CSC : GPUML_SPARSE_CSR;
  // Shapes: mostly 1..16, sometimes anything a signed byte holds (0 and negative included).
  const int64_t rows = (flags & 8) ? static_cast<int8_t>(in.next()) : 1 + in.next() % 16;
  const int64_t cols = (flags & 16) ? static_cast<int8_t>(in.next()) : 1 + in.next() % 16;
  if ((flags & 2) && (flags & 4)) run_one<int64_t, double>(ctx, c, in, format, rows, cols);
  else if (flags & 2) run_one<int32_t, double>(ctx, c, in, format, rows, cols);
  else if (flags & 4) run_one<int64_t, float>(ctx, c, in, format, rows, cols);
  else run_one<int32_t, float>(ctx, c, in, format, rows, cols);
  return 0;
}
