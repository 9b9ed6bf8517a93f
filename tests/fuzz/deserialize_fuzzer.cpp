// libFuzzer target for gpuml_estimator_deserialize (the C ABI), seeded with real saved models of
// every estimator kind (make_seeds). Each input is read twice: as given (the header, size and
// checksum checks) and with its size and checksum fields repaired (everything behind them). A
// model that loads must then be usable: parameters, serialize -> deserialize -> serialize giving
// the same bytes, attributes, and predict / transform / predict_proba on a small matrix, where
// any failure must be a named status with a message. A crash, leak or UB is a finding.
#include <cmath>
#include <cstdlib>

#include "fuzz_util.hpp"

using namespace gpuml_fuzz;

namespace {

gpuml_context_t g_ctx = nullptr;

gpuml_array_t matrix(double* data, int64_t rows, int64_t cols) {
  gpuml_array_t a{};
  a.data = data;
  a.dtype = GPUML_FLOAT64;
  a.device_type = GPUML_DEVICE_CPU;
  a.ndim = 2;
  a.shape[0] = rows;
  a.shape[1] = cols;
  a.strides[0] = cols;
  a.strides[1] = 1;
  return a;
}

// The number of features the model expects, from its attributes; -1 when none says.
int64_t n_features(gpuml_estimator_t est) {
  int32_t dtype = 0, ndim = 0;
  int64_t shape[2] = {0, 0};
  if (gpuml_estimator_attribute_shape(est, "n_features_in_", &dtype, &ndim, shape) == GPUML_OK && ndim == 0) {
    int64_t d = -1;
    gpuml_array_t out{};
    out.data = &d;
    out.dtype = GPUML_INT64;
    out.device_type = GPUML_DEVICE_CPU;
    out.ndim = 0;
    if (gpuml_estimator_get_attribute(g_ctx, est, "n_features_in_", &out) == GPUML_OK) return d;
  }
  for (const char* name : {"cluster_centers_", "coef_", "components_"})
    if (gpuml_estimator_attribute_shape(est, name, &dtype, &ndim, shape) == GPUML_OK && ndim >= 1)
      return shape[ndim - 1];
  return -1;
}

// Reads the attributes the estimators have (the C ABI has no list of names: try the usual ones;
// a name the kind lacks must be a named error).
void read_attributes(gpuml_estimator_t est) {
  static const char* names[] = {"cluster_centers_", "labels_", "inertia_", "n_iter_", "coef_", "intercept_",
                                "components_", "explained_variance_", "singular_values_", "mean_", "classes_",
                                "feature_importances_", "nodes_value_", "estimator_node_offsets_", "n_features_in_",
                                "oob_score_", "no_such_attribute"};
  for (const char* name : names) {
    int32_t dtype = 0, ndim = 0;
    int64_t shape[2] = {0, 0};
    gpuml_status_t st = gpuml_estimator_attribute_shape(est, name, &dtype, &ndim, shape);
    expect_named_error(st, "gpuml_estimator_attribute_shape");
    if (st != GPUML_OK) continue;
    const int64_t elems = ndim == 0 ? 1 : ndim == 1 ? shape[0] : shape[0] * shape[1];
    if (elems < 0 || elems > (int64_t(1) << 22)) fail("attribute_shape gave an impossible shape", name);
    std::vector<double> buf(static_cast<std::size_t>(elems) + 1);
    gpuml_array_t out{};
    out.data = buf.data();
    out.dtype = dtype;  // 8 bytes per element above: room for any dtype
    out.device_type = GPUML_DEVICE_CPU;
    out.ndim = ndim;
    out.shape[0] = shape[0];
    out.shape[1] = shape[1];
    out.strides[0] = ndim == 2 ? shape[1] : 1;
    out.strides[1] = 1;
    expect_named_error(gpuml_estimator_get_attribute(g_ctx, est, name, &out), "gpuml_estimator_get_attribute");
  }
}

void run_methods(gpuml_estimator_t est) {
  const int64_t d = n_features(est);
  if (d < 1 || d > 512) return;
  const int64_t n = 5;
  for (int64_t width : {d, d + 1}) {
    std::vector<double> X(static_cast<std::size_t>(n * width));
    for (std::size_t i = 0; i < X.size(); ++i) X[i] = std::sin(0.7 * static_cast<double>(i)) * 3.0;
    X[1] = 0.0;
    gpuml_array_t x = matrix(X.data(), n, width);
    for (const char* method : {"predict", "transform", "predict_proba"}) {
      int32_t dtype = 0, ndim = 0;
      int64_t shape[2] = {0, 0};
      gpuml_status_t st = gpuml_estimator_output_shape(est, method, n, &dtype, &ndim, shape);
      expect_named_error(st, "gpuml_estimator_output_shape");
      if (st != GPUML_OK) continue;
      if (ndim < 1 || ndim > 2 || shape[0] != n || (ndim == 2 && (shape[1] < 0 || shape[1] > (int64_t(1) << 20))))
        fail("output_shape gave an impossible shape", method);
      const int64_t cols = ndim == 2 ? shape[1] : 1;
      std::vector<double> out(static_cast<std::size_t>(n * cols) + 1);
      gpuml_array_t o{};
      o.data = out.data();
      o.dtype = GPUML_FLOAT64;
      o.device_type = GPUML_DEVICE_CPU;
      o.ndim = ndim;
      o.shape[0] = n;
      o.shape[1] = cols;
      o.strides[0] = ndim == 2 ? cols : 1;
      o.strides[1] = 1;
      const std::string m = method;
      st = m == "predict"     ? gpuml_estimator_predict(g_ctx, est, &x, &o)
           : m == "transform" ? gpuml_estimator_transform(g_ctx, est, &x, &o)
                              : gpuml_estimator_predict_proba(g_ctx, est, &x, &o);
      expect_named_error(st, method);
      if (width != d && st == GPUML_OK) fail("a method accepted X of the wrong width", method);
    }
  }
}

void load(const uint8_t* data, std::size_t size) {
  gpuml_estimator_t est = reinterpret_cast<gpuml_estimator_t>(&g_ctx);  // must be set to NULL on failure
  gpuml_status_t st = gpuml_estimator_deserialize(data, size, &est);
  expect_named_error(st, "gpuml_estimator_deserialize");
  if (st != GPUML_OK) {
    if (est != nullptr) fail("gpuml_estimator_deserialize failed but left *out non-NULL");
    return;
  }
  if (est == nullptr) fail("gpuml_estimator_deserialize succeeded with a NULL handle");

  const std::string params = params_or_fail(est);
  // What the library writes it must read back, and write again the same.
  const std::vector<uint8_t> once = serialize_or_fail(est);
  gpuml_estimator_t again = nullptr;
  if (gpuml_estimator_deserialize(once.data(), once.size(), &again) != GPUML_OK)
    fail("a model serialized by the library does not load");
  if (serialize_or_fail(again) != once) fail("serialize -> deserialize -> serialize changed the bytes");
  if (params_or_fail(again) != params) fail("the parameters changed through serialization");
  gpuml_estimator_free(again);

  read_attributes(est);
  run_methods(est);
  gpuml_estimator_free(est);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OMP_NUM_THREADS", "1", 0);  // one thread: faster, and the same path for every input
  if (gpuml_context_create("cpu", &g_ctx) != GPUML_OK) fail("gpuml_context_create(\"cpu\") failed");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  load(size ? data : nullptr, size);
  if (size >= kModelHeaderBytes + 8) {
    std::vector<uint8_t> repaired(data, data + size);
    repair_model(repaired);
    load(repaired.data(), repaired.size());
  }
  return 0;
}
