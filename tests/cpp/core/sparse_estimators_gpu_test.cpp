// Sparse X on a CUDA context against the CPU backend, estimator by estimator (skipped without a
// GPU): the same fresh random CSR / CSC matrix (duplicates, unsorted indices, empty lines, both
// index widths, host or device memory) fitted on both, every fitted attribute compared, then the
// outputs of predict / transform / predict_proba on it. float64, so the two differ only by the
// order of their sums (and, for the iterative solvers, by where that lets them stop).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../backend_test_util.hpp"
#include "../random_sparse.hpp"
#include "gpuml/gpuml.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

std::vector<double> values_of(const HostArray& a) {
  const int64_t count = static_cast<int64_t>(a.bytes() / dtype_size(a.dtype()));
  std::vector<double> out(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    switch (a.dtype()) {
      case DType::float32: out[i] = a.as<float>()[i]; break;
      case DType::float64: out[i] = a.as<double>()[i]; break;
      case DType::int32: out[i] = a.as<int32_t>()[i]; break;
      case DType::int64: out[i] = a.as<int64_t>()[i]; break;
      default: ADD_FAILURE() << "unexpected dtype";
    }
  }
  return out;
}

// b within `rtol` of a's largest magnitude (at least 1). `squares`: values that are square roots
// of computed quantities (singular values from a Gram matrix's eigenvalues, distances from
// |x|² − 2x·c + |c|²), whose error near 0 is the square root of the quantity's: compared squared.
void expect_near_all(const std::vector<double>& a, const std::vector<double>& b, double rtol, bool squares,
                     const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 1.0;
  for (double v : a) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (squares)
      EXPECT_NEAR(b[i] * b[i], a[i] * a[i], rtol * scale * scale) << what << "[" << i << "] squared";
    else
      EXPECT_NEAR(b[i], a[i], rtol * scale) << what << "[" << i << "]";
  }
}

// Every fitted attribute, save `skipped`.
void expect_same_attributes(const Estimator& cpu, const Estimator& gpu, double rtol,
                            const std::set<std::string>& skipped = {}) {
  ASSERT_EQ(cpu.attribute_names(), gpu.attribute_names());
  for (const std::string& name : cpu.attribute_names()) {
    if (skipped.count(name)) continue;
    expect_near_all(values_of(cpu.attribute(name)), values_of(gpu.attribute(name)), rtol, name == "singular_values_", name);
  }
}

// `method`'s output for sparse X, by `estimator` on `ctx`, as host doubles.
std::vector<double> output(Context& ctx, const Estimator& estimator, const std::string& method, const SparseView& X) {
  const ArraySpec spec = estimator.output_spec(method, X.rows());
  const int64_t cols = spec.ndim == 2 ? spec.shape[1] : 1;
  std::vector<double> out(static_cast<std::size_t>(X.rows() * cols));
  const ArrayView view = spec.ndim == 2 ? host_view(out.data(), X.rows(), cols) : host_view(out.data(), X.rows());
  if (method == "predict") estimator.predict_sparse(ctx, X, view);
  else if (method == "transform") estimator.transform_sparse(ctx, X, view);
  else estimator.predict_proba_sparse(ctx, X, view);
  return out;
}

// X's three arrays copied to the GPU: the same matrix in device memory.
template <typename I>
struct DeviceSparse {
  Buffer indptr, indices, values;
  SparseView view;
  DeviceSparse(Context& gpu, const test::RandomSparse<I>& X) {
    indptr = test::to_device(gpu, X.indptr);
    indices = test::to_device(gpu, X.indices);
    values = test::to_device(gpu, X.values);
    view = X.view();
    view.device = gpu.device();
    view.indptr = indptr.data();
    view.indices = indices.data();
    view.values = values.data();
  }
};

struct Case {
  std::string kind, params;
  std::vector<std::string> methods;
  double rtol;                      // attributes and outputs, relative to their largest entry
  std::set<std::string> skipped{};  // attributes the two may differ in (iteration counts)
  bool needs_labels = false;
  bool narrow_only = false;  // full-rank X only (the least-squares solutions are unique there)
};

template <typename I>
void expect_gpu_fit_matches_cpu(Context& gpu, const Case& c, const test::RandomSparse<I>& X, bool device_input,
                                const std::vector<double>& y) {
  SCOPED_TRACE(c.kind + " " + c.params + (device_input ? " (device X)" : " (host X)") +
               (X.format == SparseFormat::csr ? " CSR" : " CSC") + (sizeof(I) == 4 ? " int32" : " int64"));
  Context cpu = Context::cpu();
  const ArrayView labels = host_view(y.data(), static_cast<int64_t>(y.size()));
  const ArrayView* target = c.needs_labels ? &labels : nullptr;
  auto on_cpu = make_estimator(c.kind, c.params), on_gpu = make_estimator(c.kind, c.params);
  on_cpu->fit_sparse(cpu, X.view(), target, nullptr);
  std::unique_ptr<DeviceSparse<I>> on_device;
  if (device_input) on_device = std::make_unique<DeviceSparse<I>>(gpu, X);
  const SparseView gpu_X = device_input ? on_device->view : X.view();
  on_gpu->fit_sparse(gpu, gpu_X, target, nullptr);
  expect_same_attributes(*on_cpu, *on_gpu, c.rtol, c.skipped);
  for (const std::string& method : c.methods) {
    SCOPED_TRACE(method);
    const bool distances = c.kind == "kmeans" && method == "transform";
    expect_near_all(output(cpu, *on_cpu, method, X.view()), output(gpu, *on_gpu, method, gpu_X), c.rtol, distances, method);
  }
}

// Labels of a random linear rule of the dense matrix: classes 0 .. k-1 by the largest of k scores.
std::vector<double> linear_labels(std::mt19937_64& rng, const std::vector<double>& dense, int64_t n, int64_t d, int k) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> W(static_cast<std::size_t>(d * k));
  for (double& w : W) w = normal(rng);
  std::vector<double> y(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int best = 0;
    double best_score = -INFINITY;
    for (int c = 0; c < k; ++c) {
      double s = 0.3 * normal(rng);  // label noise: the classes overlap, the optimum is finite
      for (int64_t j = 0; j < d; ++j) s += dense[i * d + j] * W[j * k + c];
      if (s > best_score) best_score = s, best = c;
    }
    y[i] = best;
  }
  return y;
}

// Tolerances: the SVDs and KMeans repeat the same steps from the same draws, the sums in another
// order (1e-9 of the largest entry in float64). LogisticRegression runs L-BFGS to tol = 1e-10, where
// both stop within ~1e-9 of the optimum in the gradient; coefficients within 1e-6 of the largest.
TEST(SparseEstimatorsGpu, MatchCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const std::vector<Case> cases = {
      {"truncated_svd", R"({"n_components": 5, "algorithm": "randomized", "random_state": 3})", {"transform"}, 1e-9},
      {"truncated_svd", R"({"n_components": 5, "algorithm": "arpack", "random_state": 3})", {"transform"}, 1e-8},
      {"pca", R"({"n_components": 4, "svd_solver": "covariance_eigh"})", {"transform"}, 1e-9},
      {"pca", R"({"n_components": 4, "svd_solver": "arpack", "random_state": 3})", {"transform"}, 1e-8},
      {"kmeans", R"({"n_clusters": 4, "random_state": 5, "n_init": 2})", {"predict", "transform"}, 1e-9},
      {"logistic_regression", R"({"tol": 1e-10, "max_iter": 1000})", {"predict", "predict_proba"}, 1e-6,
       {"n_iter_"}, true},
      // The least-squares fits: a Gram system formed on each backend, solved on the host (1e-9).
      {"linear_regression", "{}", {"predict"}, 1e-9, {}, true, true},
      {"ridge", R"({"alpha": 0.5})", {"predict"}, 1e-9, {}, true, true},
      // Coordinate descent to tol = 1e-12 on Gram systems equal to ~1e-15: 1e-8.
      {"lasso", R"({"alpha": 0.01, "tol": 1e-12, "max_iter": 100000})", {"predict"}, 1e-8, {"n_iter_"}, true, true},
      {"elastic_net", R"({"alpha": 0.01, "l1_ratio": 0.5, "tol": 1e-12, "max_iter": 100000})", {"predict"}, 1e-8,
       {"n_iter_"}, true, true},
  };
  for (SparseFormat format : {SparseFormat::csr, SparseFormat::csc}) {
    const auto narrow = test::random_sparse<int32_t>(rng, 300, 25, 0.2, format, 0.05);
    const auto wide = test::random_sparse<int64_t>(rng, 120, 400, 0.03, format, 0.05);
    const std::vector<double> y2 = linear_labels(rng, narrow.dense, narrow.rows, narrow.cols, 2);
    const std::vector<double> y3 = linear_labels(rng, wide.dense, wide.rows, wide.cols, 3);
    for (const Case& c : cases) {
      expect_gpu_fit_matches_cpu(gpu, c, narrow, format == SparseFormat::csr, y2);
      if (!c.narrow_only) expect_gpu_fit_matches_cpu(gpu, c, wide, format == SparseFormat::csc, y3);
    }
  }
}

// float32 X on the GPU: the same fit as the CPU's to float32's precision (TruncatedSVD's default
// solver, and LogisticRegression's, the two the benchmarks time).
TEST(SparseEstimatorsGpu, Float32MatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const auto X = test::random_sparse<int32_t>(rng, 2000, 300, 0.02, SparseFormat::csr);
  const std::vector<float> values32(X.values.begin(), X.values.end());
  SparseView view = X.view();
  view.dtype = DType::float32;
  view.values = values32.data();
  Context cpu = Context::cpu();
  auto a = make_estimator("truncated_svd", R"({"n_components": 10, "random_state": 1})");
  auto b = make_estimator("truncated_svd", R"({"n_components": 10, "random_state": 1})");
  a->fit_sparse(cpu, view, nullptr, nullptr);
  b->fit_sparse(gpu, view, nullptr, nullptr);
  // Leading singular values: float32 products summed in another order, ~1e-5 relative.
  const std::vector<double> sa = values_of(a->attribute("singular_values_")), sb = values_of(b->attribute("singular_values_"));
  for (std::size_t i = 0; i < sa.size(); ++i) EXPECT_NEAR(sb[i], sa[i], 1e-4 * sa[0]) << i;
  const std::vector<double> y = linear_labels(rng, X.dense, X.rows, X.cols, 2);
  const ArrayView labels = host_view(y.data(), X.rows);
  auto la = make_estimator("logistic_regression", "{}"), lb = make_estimator("logistic_regression", "{}");
  la->fit_sparse(cpu, view, &labels, nullptr);
  lb->fit_sparse(gpu, view, &labels, nullptr);
  // Default tol 1e-4: both stop near the optimum; predictions agree on all but near-ties (<= 1%).
  const std::vector<double> pa = output(cpu, *la, "predict", view), pb = output(gpu, *lb, "predict", view);
  int64_t differ = 0;
  for (std::size_t i = 0; i < pa.size(); ++i) differ += pa[i] != pb[i];
  EXPECT_LE(differ, X.rows / 100);
}

// Bad structure in device memory gets the CPU's named error, not a crash.
TEST(SparseEstimatorsGpu, BadDeviceStructureIsNamed) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  auto X = test::random_sparse<int32_t>(rng, 40, 10, 0.3, SparseFormat::csr);
  X.indices[3] = 10;  // out of range
  Context cpu = Context::cpu();
  auto a = make_estimator("truncated_svd", R"({"n_components": 2})"), b = make_estimator("truncated_svd", R"({"n_components": 2})");
  std::string cpu_message, gpu_message;
  try {
    a->fit_sparse(cpu, X.view(), nullptr, nullptr);
  } catch (const Error& e) {
    cpu_message = e.what();
  }
  DeviceSparse<int32_t> on_device(gpu, X);
  try {
    b->fit_sparse(gpu, on_device.view, nullptr, nullptr);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    gpu_message = e.what();
  }
  EXPECT_FALSE(cpu_message.empty());
  EXPECT_EQ(gpu_message, cpu_message);
}

}  // namespace
}  // namespace gpuml
