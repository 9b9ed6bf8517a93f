// KMeans: the CPU backend against an independent reference written here, k-means|| seeding
// (against k-means++'s inertia, reproducibility, small and duplicate X, weights, sparse X), the
// error paths, and the CUDA backend against the CPU backend (skipped without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "gpuml/core/progress.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::Blobs;
using test::make_blobs;
using test::uniform_int;
using test::uniform_real;

// ---- an independent reference: scikit-learn's Lloyd, plain loops in double -----------------

struct Reference {
  std::vector<double> centers;
  std::vector<int32_t> labels;
  double inertia = 0;
  int64_t n_iter = 0;
};

double sq_dist(const double* a, const double* b, int64_t d) {
  double s = 0;
  for (int64_t j = 0; j < d; ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
  return s;
}

// Nearest center of every row (lowest index on ties) and its squared distance.
void reference_assign(const std::vector<double>& X, int64_t n, int64_t d, const std::vector<double>& centers, int64_t k,
                      std::vector<int32_t>& labels, std::vector<double>& dist) {
  labels.assign(n, 0);
  dist.assign(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < k; ++c) {
      double s = sq_dist(&X[i * d], &centers[c * d], d);
      if (s < best) {
        best = s;
        labels[i] = static_cast<int32_t>(c);
      }
    }
    dist[i] = best;
  }
}

Reference reference_lloyd(const std::vector<double>& X, int64_t n, int64_t d, const std::vector<double>& w,
                          std::vector<double> centers, int64_t k, int max_iter, double tol_abs) {
  std::vector<int32_t> labels, old_labels(n, -1);
  std::vector<double> dist;
  bool strict = false;
  int64_t iterations = 0;
  for (int it = 0; it < max_iter; ++it) {
    reference_assign(X, n, d, centers, k, labels, dist);
    std::vector<double> sums(k * d, 0.0), weight(k, 0.0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < d; ++j) sums[labels[i] * d + j] += X[i * d + j] * w[i];
      weight[labels[i]] += w[i];
    }
    // Empty clusters take the farthest rows (farthest first, lower index first on ties), unless
    // every row is on its center (fewer distinct rows than clusters).
    std::vector<int64_t> empty;
    for (int64_t c = 0; c < k; ++c)
      if (weight[c] == 0) empty.push_back(c);
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return dist[a] > dist[b]; });
    if (dist[order[0]] == 0) empty.clear();
    for (std::size_t e = 0; e < empty.size(); ++e) {
      const int64_t r = order[e], to = empty[e], from = labels[r];
      for (int64_t j = 0; j < d; ++j) {
        sums[from * d + j] -= X[r * d + j] * w[r];
        sums[to * d + j] = X[r * d + j] * w[r];
      }
      weight[to] = w[r];
      weight[from] -= w[r];
    }
    // A cluster still empty takes the center of the heaviest one (the first on ties).
    const int64_t heaviest = std::max_element(weight.begin(), weight.end()) - weight.begin();
    double shift = 0;
    for (int64_t c = 0; c < k; ++c)
      for (int64_t j = 0; j < d; ++j) {
        const int64_t from = weight[c] > 0 ? c : heaviest;
        const double next = sums[from * d + j] / weight[from];
        shift += (next - centers[c * d + j]) * (next - centers[c * d + j]);
        centers[c * d + j] = next;
      }
    iterations = it + 1;
    if (labels == old_labels) {
      strict = true;
      break;
    }
    if (shift <= tol_abs) break;
    old_labels = labels;
  }
  if (!strict) reference_assign(X, n, d, centers, k, labels, dist);
  Reference ref;
  for (int64_t i = 0; i < n; ++i) ref.inertia += w[i] * sq_dist(&X[i * d], &centers[labels[i] * d], d);
  ref.centers = std::move(centers);
  ref.labels = std::move(labels);
  ref.n_iter = iterations;
  return ref;
}

double reference_mean_variance(const std::vector<double>& X, int64_t n, int64_t d) {
  double total = 0;
  for (int64_t j = 0; j < d; ++j) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += X[i * d + j];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) var += (X[i * d + j] - mean) * (X[i * d + j] - mean);
    total += var / n;
  }
  return total / d;
}

// Relative gap between the nearest and second-nearest center of every row: rows with a tiny
// gap may legitimately get either label when two implementations round differently.
std::vector<double> nearest_gaps(const std::vector<double>& X, int64_t n, int64_t d, const std::vector<double>& centers,
                                 int64_t k) {
  std::vector<double> gaps(n, std::numeric_limits<double>::infinity());
  for (int64_t i = 0; i < n; ++i) {
    double first = std::numeric_limits<double>::infinity(), second = first;
    for (int64_t c = 0; c < k; ++c) {
      double s = sq_dist(&X[i * d], &centers[c * d], d);
      if (s < first) {
        second = first;
        first = s;
      } else if (s < second) {
        second = s;
      }
    }
    if (k > 1) gaps[i] = (second - first) / std::max(second, 1e-300);
  }
  return gaps;
}

// ---- helpers around the estimator ------------------------------------------------------------

struct Fitted {
  std::vector<double> centers;
  std::vector<int32_t> labels;
  double inertia = 0;
  int64_t n_iter = 0;
  int64_t distinct_clusters = 0;
  DType centers_dtype = DType::float64;
};

Fitted summarize(const KMeans& km) {
  Fitted f;
  const HostArray& c = km.cluster_centers();
  const int64_t count = c.spec().shape[0] * c.spec().shape[1];
  f.centers_dtype = c.dtype();
  if (c.dtype() == DType::float32)
    f.centers.assign(c.as<float>(), c.as<float>() + count);
  else
    f.centers.assign(c.as<double>(), c.as<double>() + count);
  const HostArray& l = km.labels();
  f.labels.assign(l.as<int32_t>(), l.as<int32_t>() + l.spec().shape[0]);
  f.inertia = km.inertia();
  f.n_iter = km.n_iter();
  f.distinct_clusters = *km.attribute("distinct_clusters_").as<const int64_t>();
  return f;
}

template <typename T>
Fitted fit(Context& ctx, const KMeansParams& params, const std::vector<T>& X, int64_t n, int64_t d,
           const std::vector<T>* weights = nullptr) {
  KMeans km(params);
  ArrayView w;
  if (weights) w = host_view(weights->data(), n);
  km.fit(ctx, host_view(X.data(), n, d), weights ? &w : nullptr);
  return summarize(km);
}

KMeansParams array_init(const std::vector<double>& init, int64_t k, int max_iter, double tol) {
  KMeansParams p;
  p.n_clusters = k;
  p.init = "array";
  p.init_array = init;
  p.max_iter = max_iter;
  p.tol = tol;
  return p;
}

// k distinct random rows of X.
std::vector<double> random_rows(std::mt19937_64& rng, const std::vector<double>& X, int64_t n, int64_t d, int64_t k) {
  std::vector<int64_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::shuffle(idx.begin(), idx.end(), rng);
  std::vector<double> out;
  for (int64_t c = 0; c < k; ++c) out.insert(out.end(), &X[idx[c] * d], &X[idx[c] * d] + d);
  return out;
}

// The first row of each blob (rows i % k == c): an init next to every true center.
std::vector<double> one_row_per_blob(const Blobs& b) {
  return std::vector<double>(b.X.begin(), b.X.begin() + b.k * b.d);
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// |got - want| <= rel * max(1, max|want|) elementwise: centers are compared at the data's scale.
void expect_near_scaled(const std::vector<double>& got, const std::vector<double>& want, double rel, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tol = rel * std::max(1.0, max_abs(want));
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

// The same k centers (k x d) up to their order: each of `want`'s has its own match in `got`
// within rel * max(1, max |want|) in every coordinate.
void expect_same_centers_any_order(const std::vector<double>& got, const std::vector<double>& want, int64_t k, int64_t d,
                                   double rel, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tol = rel * std::max(1.0, max_abs(want));
  std::vector<bool> taken(static_cast<std::size_t>(k), false);
  for (int64_t c = 0; c < k; ++c) {
    int64_t match = -1;
    for (int64_t g = 0; g < k && match < 0; ++g) {
      bool close = !taken[g];
      for (int64_t j = 0; j < d && close; ++j) close = std::fabs(got[g * d + j] - want[c * d + j]) <= tol;
      if (close) match = g;
    }
    ASSERT_GE(match, 0) << what << ": center " << c << " has no match within " << tol;
    taken[match] = true;
  }
}

void expect_rel_near(double got, double want, double rel, const char* what) {
  EXPECT_NEAR(got, want, rel * std::max(std::fabs(want), 1e-300)) << what;
}

// Labels equal, except rows whose two nearest centers are within `tie_gap` (relative).
void expect_labels_match(const std::vector<int32_t>& got, const std::vector<int32_t>& want, const std::vector<double>& gaps,
                         double tie_gap) {
  ASSERT_EQ(got.size(), want.size());
  int64_t mismatches = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && gaps[i] > tie_gap) {
      if (++mismatches <= 5) ADD_FAILURE() << "row " << i << ": label " << got[i] << " vs " << want[i] << ", gap " << gaps[i];
    }
  EXPECT_EQ(mismatches, 0);
}

// True when `labels` and `truth` partition the rows identically (a bijection between labels).
bool same_partition(const std::vector<int32_t>& labels, const std::vector<int32_t>& truth) {
  std::map<int32_t, int32_t> forward, backward;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    auto f = forward.emplace(labels[i], truth[i]).first;
    auto b = backward.emplace(truth[i], labels[i]).first;
    if (f->second != truth[i] || b->second != labels[i]) return false;
  }
  return true;
}

std::vector<double> random_weights(std::mt19937_64& rng, int64_t n) {
  std::vector<double> w(n);
  for (auto& v : w) v = uniform_real(rng, 0.1, 3.0);
  return w;
}

// ---- CPU: against the reference ----------------------------------------------------------

TEST(KMeansCpu, LloydMatchesReferenceFloat64) {
  GPUML_FRESH_RNG(rng);
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t n = uniform_int(rng, 50, 1500), d = uniform_int(rng, 1, 12), k = uniform_int(rng, 1, 9);
    // Overlapping blobs, with more or fewer blobs than clusters: real decision boundaries.
    Blobs b = make_blobs(rng, n, d, uniform_int(rng, 1, 8), uniform_real(rng, 0.5, 3.0), 5.0);
    const bool weighted = trial % 2 == 1;
    std::vector<double> w = weighted ? random_weights(rng, n) : std::vector<double>(n, 1.0);
    const std::vector<double> init = random_rows(rng, b.X, n, d, k);
    for (int max_iter = 1; max_iter <= 5; ++max_iter) {
      SCOPED_TRACE("n=" + std::to_string(n) + " d=" + std::to_string(d) + " k=" + std::to_string(k) +
                   " max_iter=" + std::to_string(max_iter) + (weighted ? " weighted" : ""));
      const Reference ref = reference_lloyd(b.X, n, d, w, init, k, max_iter, 0.0);
      for (int threads : {1, 3}) {
        Context ctx = Context::cpu(threads);
        Fitted got = fit(ctx, array_init(init, k, max_iter, 0.0), b.X, n, d, weighted ? &w : nullptr);
        // Only the summation order differs from the reference (double sums of double data).
        expect_near_scaled(got.centers, ref.centers, 1e-11, "centers");
        // A label flip would need two centers within ~1e-15 relative: not in random data.
        EXPECT_EQ(got.labels, ref.labels);
        expect_rel_near(got.inertia, ref.inertia, 1e-11, "inertia");
        EXPECT_EQ(got.n_iter, ref.n_iter);
        EXPECT_EQ(got.centers_dtype, DType::float64);
      }
    }
  }
}

// X (n x d, row-major) as CSR or CSC over its non-zeros, int64 indices; owns its arrays.
struct SparseCopy {
  std::vector<int64_t> indptr, indices;
  std::vector<double> values;
  SparseView view;
};

SparseCopy sparse_copy(const std::vector<double>& X, int64_t n, int64_t d, SparseFormat format) {
  SparseCopy s;
  const bool csr = format == SparseFormat::csr;
  const int64_t major = csr ? n : d, minor = csr ? d : n;
  s.indptr.push_back(0);
  for (int64_t a = 0; a < major; ++a) {
    for (int64_t b = 0; b < minor; ++b) {
      const double v = csr ? X[a * d + b] : X[b * d + a];
      if (v == 0.0) continue;
      s.indices.push_back(b);
      s.values.push_back(v);
    }
    s.indptr.push_back(static_cast<int64_t>(s.indices.size()));
  }
  s.view.format = format;
  s.view.dtype = DType::float64;
  s.view.index_dtype = DType::int64;
  s.view.shape[0] = n;
  s.view.shape[1] = d;
  s.view.nnz = static_cast<int64_t>(s.values.size());
  s.view.indptr = s.indptr.data();
  s.view.indices = s.indices.data();
  s.view.values = s.values.data();
  return s;
}

// Sparse X runs the same Lloyd iterations as the dense reference, its distances from the sparse
// products (|x|² - 2 x·c + |c|²) rather than from the centered rows.
TEST(KMeansCpu, SparseMatchesReference) {
  GPUML_FRESH_RNG(rng);
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t n = uniform_int(rng, 50, 800), d = uniform_int(rng, 2, 30), k = uniform_int(rng, 1, 6);
    Blobs b = make_blobs(rng, n, d, uniform_int(rng, 1, 6), uniform_real(rng, 0.5, 2.0), 5.0);
    const double density = uniform_real(rng, 0.05, 0.8);
    for (double& v : b.X)
      if (uniform_real(rng, 0.0, 1.0) > density) v = 0.0;
    const bool weighted = trial % 2 == 1;
    std::vector<double> w = weighted ? random_weights(rng, n) : std::vector<double>(n, 1.0);
    const std::vector<double> init = random_rows(rng, b.X, n, d, k);
    const Reference ref = reference_lloyd(b.X, n, d, w, init, k, 300, 1e-4 * reference_mean_variance(b.X, n, d));
    for (SparseFormat format : {SparseFormat::csr, SparseFormat::csc}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " d=" + std::to_string(d) + " k=" + std::to_string(k) + " density=" +
                   std::to_string(density) + (format == SparseFormat::csr ? " csr" : " csc") + (weighted ? " weighted" : ""));
      const SparseCopy X = sparse_copy(b.X, n, d, format);
      Context ctx = Context::cpu(3);
      KMeans km(array_init(init, k, 300, 1e-4));
      ArrayView wv = host_view(w.data(), n);
      km.fit(ctx, X.view, weighted ? &wv : nullptr);
      const Fitted got = summarize(km);
      // Distances through products round at eps |x|² instead of eps |x - c|²: 1e-9 at the data's scale.
      expect_near_scaled(got.centers, ref.centers, 1e-9, "centers");
      // A label flip would need two centers within ~1e-13 relative: not in random data.
      EXPECT_EQ(got.labels, ref.labels);
      expect_rel_near(got.inertia, ref.inertia, 1e-9, "inertia");
      EXPECT_EQ(got.n_iter, ref.n_iter);
      // predict / transform / score on the same sparse X agree with the fit.
      std::vector<int32_t> predicted(n, -1);
      km.predict_sparse(ctx, X.view, host_view(predicted.data(), n));
      EXPECT_EQ(predicted, got.labels);
      std::vector<double> dist(n * k, -1.0);
      km.transform_sparse(ctx, X.view, host_view(dist.data(), n, k));
      double inertia = 0.0;
      for (int64_t i = 0; i < n; ++i) inertia += w[i] * dist[i * k + got.labels[i]] * dist[i * k + got.labels[i]];
      expect_rel_near(inertia, got.inertia, 1e-9, "inertia from transform");
      expect_rel_near(-km.score(ctx, X.view, weighted ? &wv : nullptr), got.inertia, 1e-12, "score");
    }
  }
}

TEST(KMeansCpu, ConvergesLikeReferenceWithTolerance) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 300, 3000), d = uniform_int(rng, 2, 6), k = uniform_int(rng, 2, 6);
  Blobs b = make_blobs(rng, n, d, k + 1, 1.5, 6.0);
  const std::vector<double> init = random_rows(rng, b.X, n, d, k);
  const double tol = 1e-4;
  const std::vector<double> ones(n, 1.0);
  const Reference ref = reference_lloyd(b.X, n, d, ones, init, k, 300, tol * reference_mean_variance(b.X, n, d));
  Context ctx = Context::cpu(2);
  Fitted got = fit(ctx, array_init(init, k, 300, tol), b.X, n, d);
  expect_near_scaled(got.centers, ref.centers, 1e-10, "centers");
  EXPECT_EQ(got.labels, ref.labels);
  expect_rel_near(got.inertia, ref.inertia, 1e-10, "inertia");
  EXPECT_EQ(got.n_iter, ref.n_iter);
  EXPECT_LT(got.n_iter, 300);
}

// verbose > 0 writes scikit-learn's lines, one per Lloyd iteration, to the installed progress sink;
// verbose = 0 writes nothing.
TEST(KMeansCpu, VerboseWritesProgressToTheSink) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 300, 1000), d = uniform_int(rng, 2, 5), k = uniform_int(rng, 2, 5);
  Blobs b = make_blobs(rng, n, d, k, 1.5, 6.0);
  const std::vector<double> init = random_rows(rng, b.X, n, d, k);
  std::vector<std::string> lines;
  gpuml::set_progress_sink([](const char* line, void* out) { static_cast<std::vector<std::string>*>(out)->push_back(line); },
                           &lines);
  Context ctx = Context::cpu(2);
  KMeansParams p = array_init(init, k, 300, 0.0);
  const Fitted quiet = fit(ctx, p, b.X, n, d);
  EXPECT_TRUE(lines.empty());
  p.verbose = 1;
  const Fitted loud = fit(ctx, p, b.X, n, d);
  gpuml::set_progress_sink(nullptr, nullptr);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(loud.n_iter) + 2);  // start, one per iteration, the end
  EXPECT_EQ(lines.front(), "Initialization complete\n");
  EXPECT_EQ(lines[1].rfind("Iteration 0, inertia ", 0), 0u);
  EXPECT_NE(lines.back().find("strict convergence"), std::string::npos) << lines.back();  // tol 0
  EXPECT_EQ(loud.labels, quiet.labels);  // printing changes nothing
}

TEST(KMeansCpu, Float32MatchesReference) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 200, 2000), d = uniform_int(rng, 2, 10), k = uniform_int(rng, 2, 7);
  // Well separated: no row is near a boundary, so float32 rounding cannot move a label.
  Blobs b = make_blobs(rng, n, d, k, 0.3, 20.0, 6.0);
  const std::vector<double> init = one_row_per_blob(b);
  const std::vector<double> w = random_weights(rng, n);
  const std::vector<float> Xf = test::cast_vector<float>(b.X), wf = test::cast_vector<float>(w);
  // The reference runs on the float32 values, widened: only arithmetic precision differs.
  const std::vector<double> Xd = test::cast_vector<double>(Xf), wd = test::cast_vector<double>(wf);
  for (int max_iter : {1, 3, 300}) {
    const Reference ref = reference_lloyd(Xd, n, d, wd, init, k, max_iter, 0.0);
    Context ctx = Context::cpu(2);
    Fitted got = fit(ctx, array_init(init, k, max_iter, 0.0), Xf, n, d, &wf);
    EXPECT_EQ(got.centers_dtype, DType::float32);
    // float32 centers of data up to ~20 in magnitude: a few ulps of the data scale.
    expect_near_scaled(got.centers, ref.centers, 1e-5, "centers");
    EXPECT_EQ(got.labels, ref.labels);
    // float32 squared distances summed in double: ~1e-6 relative per term.
    expect_rel_near(got.inertia, ref.inertia, 1e-4, "inertia");
  }
}

// Extreme magnitudes (issue 22, item 3): X and init times 2^e give the same labels and
// iterations, centers times 2^e, inertia times 4^e, and predict the same labels; an inertia past
// float64 is an error. Before the power-of-two rescaling every squared distance underflowed to 0
// at 2^-664 (~1e-200; all rows in cluster 0) and overflowed at 2^515 (a finite, wrong inertia).
TEST(KMeansCpu, ExtremeMagnitudesFitTheUnitScaleModel) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = 600, d = 5, k = 4;
  const Blobs b = make_blobs(rng, n, d, k, 1.0, 30.0, 10.0);
  const KMeansParams p = array_init(one_row_per_blob(b), k, 300, 1e-4);
  Context ctx = Context::cpu(2);
  const Fitted unit = fit(ctx, p, b.X, n, d);
  for (int exponent : {-997, -664, -531, 400, 480}) {
    SCOPED_TRACE("at 2^" + std::to_string(exponent));
    std::vector<double> X = b.X;
    for (double& v : X) v = std::ldexp(v, exponent);
    KMeansParams scaled = p;
    for (double& v : scaled.init_array) v = std::ldexp(v, exponent);
    KMeans km(scaled);
    km.fit(ctx, host_view(X.data(), n, d));
    const Fitted f = summarize(km);
    EXPECT_EQ(f.labels, unit.labels);
    EXPECT_EQ(f.n_iter, unit.n_iter);
    for (std::size_t i = 0; i < f.centers.size(); ++i)  // the same sums, up to rounding
      EXPECT_NEAR(std::ldexp(f.centers[i], -exponent), unit.centers[i], 1e-12 * (1 + std::abs(unit.centers[i])));
    // The inertia itself underflows at the smallest scales: compared where it lies, with the
    // spacing of subnormals (2^-1074, ~1e-323) as the floor.
    const double inertia = std::ldexp(unit.inertia, 2 * exponent);
    EXPECT_NEAR(f.inertia, inertia, 1e-10 * inertia + std::ldexp(1.0, -1060));
    std::vector<int32_t> labels(n);
    km.predict(ctx, host_view(X.data(), n, d), host_view(labels.data(), n));
    EXPECT_EQ(labels, unit.labels);
  }
  std::vector<double> X = b.X;  // inertia ~ 4^515 * unit: beyond float64
  for (double& v : X) v = std::ldexp(v, 515);
  KMeansParams scaled = p;
  for (double& v : scaled.init_array) v = std::ldexp(v, 515);
  KMeans km(scaled);
  try {
    km.fit(ctx, host_view(X.data(), n, d));
    ADD_FAILURE() << "no error for an inertia beyond float64";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("inertia_"), std::string::npos) << e.what();
  }
}

// The steel plates' 27 measurements (the last 7 columns are the one-hot fault labels), standardized.
std::vector<double> standardized_steel_plates(const test::Table& table) {
  const int64_t n = table.rows, d = static_cast<int64_t>(table.columns.size()) - 7;
  EXPECT_EQ(table.column_index("Pastry_Fault"), d);
  std::vector<double> X(n * d);
  for (int64_t j = 0; j < d; ++j) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += table.values[i * table.columns.size() + j];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) var += std::pow(table.values[i * table.columns.size() + j] - mean, 2);
    const double sd = std::sqrt(var / n);
    for (int64_t i = 0; i < n; ++i) X[i * d + j] = (table.values[i * table.columns.size() + j] - mean) / (sd > 0 ? sd : 1);
  }
  return X;
}

TEST(KMeansCpu, SteelPlatesMatchesReference) {
  GPUML_DATASET_OR_SKIP(table, "steel-plates-faults/steel_plates_faults.csv");
  GPUML_FRESH_RNG(rng);
  const std::vector<double> X = standardized_steel_plates(table);
  const int64_t n = table.rows, d = static_cast<int64_t>(X.size()) / n;
  const int64_t k = 7;
  const std::vector<double> init = random_rows(rng, X, n, d, k);
  const std::vector<double> ones(n, 1.0);
  const Reference ref = reference_lloyd(X, n, d, ones, init, k, 300, 1e-4 * reference_mean_variance(X, n, d));
  Context ctx = Context::cpu(2);
  Fitted got = fit(ctx, array_init(init, k, 300, 1e-4), X, n, d);
  expect_near_scaled(got.centers, ref.centers, 1e-9, "centers");
  EXPECT_EQ(got.labels, ref.labels);
  expect_rel_near(got.inertia, ref.inertia, 1e-10, "inertia");
  EXPECT_EQ(got.n_iter, ref.n_iter);
}

TEST(KMeansCpu, RecoversWellSeparatedBlobs) {
  GPUML_FRESH_RNG(rng);
  for (const char* init : {"k-means++", "random"}) {
    SCOPED_TRACE(init);
    // Random init seeds every blob with probability k!/k^k per run, so it is checked with k = 2
    // (30 runs that all miss a blob: probability 2^-30); k-means++ finds far blobs reliably.
    const bool random_init = std::string(init) == "random";
    const int64_t k = random_init ? 2 : uniform_int(rng, 2, 8), d = uniform_int(rng, 2, 8),
                  n = k * uniform_int(rng, 20, 200);
    // Blob centers at least 20 apart, noise 0.5: 40 standard deviations between blobs.
    Blobs b = make_blobs(rng, n, d, k, 0.5, 50.0, 20.0);
    KMeansParams p;
    p.n_clusters = k;
    p.init = init;
    p.random_state = rng();
    p.n_init = random_init ? 30 : 3;
    Context ctx = Context::cpu(2);
    Fitted got = fit(ctx, p, b.X, n, d);
    EXPECT_TRUE(same_partition(got.labels, b.labels));
    // Each fitted center is the mean of its blob's rows; the true center is within noise of it.
    for (int64_t c = 0; c < k; ++c) {
      const int32_t found = got.labels[c];  // row c belongs to blob c
      for (int64_t j = 0; j < d; ++j) EXPECT_NEAR(got.centers[found * d + j], b.centers[c * d + j], 0.5);
    }
  }
}

TEST(KMeansCpu, Float32AgreesWithFloat64) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 500, 3000), d = uniform_int(rng, 2, 16), k = uniform_int(rng, 2, 10);
  Blobs b = make_blobs(rng, n, d, k, 1.0, 30.0, 10.0);
  // Both fits see the same (float32-representable) values.
  const std::vector<float> Xf = test::cast_vector<float>(b.X);
  const std::vector<double> Xd = test::cast_vector<double>(Xf);
  const KMeansParams p = array_init(one_row_per_blob(b), k, 300, 1e-4);
  Context ctx = Context::cpu(2);
  Fitted f32 = fit(ctx, p, Xf, n, d), f64 = fit(ctx, p, Xd, n, d);
  EXPECT_EQ(f32.centers_dtype, DType::float32);
  EXPECT_EQ(f64.centers_dtype, DType::float64);
  expect_near_scaled(f32.centers, f64.centers, 1e-5, "centers");  // float32 rounding at the data's scale
  expect_labels_match(f32.labels, f64.labels, nearest_gaps(Xd, n, d, f64.centers, k), 1e-4);
  expect_rel_near(f32.inertia, f64.inertia, 1e-4, "inertia");  // float32 distances: ~1e-6 relative each
}

// "Sensor" data: blobs of spread 1 and centers within +-20, shifted by ~1e4 on every feature,
// in float32 (whose spacing at 1e4 is ~1e-3), with the float32 values widened to double for
// the reference. Returns {float32 X, the same values in double}.
std::pair<std::vector<float>, std::vector<double>> far_from_origin(std::mt19937_64& rng, const Blobs& b) {
  std::vector<double> offset(b.d);
  for (auto& o : offset) o = uniform_real(rng, 0.9e4, 1.1e4);  // per feature: a per-column bug shows
  std::vector<float> Xf(b.X.size());
  for (std::size_t e = 0; e < Xf.size(); ++e) Xf[e] = static_cast<float>(b.X[e] + offset[e % b.d]);
  return {Xf, test::cast_vector<double>(Xf)};
}

TEST(KMeansCpu, Float32FarFromOriginMatchesReference) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 500, 3000), d = uniform_int(rng, 2, 10), k = uniform_int(rng, 2, 8);
  // Centers at least 8 apart, noise 1: real but rare boundary rows.
  const Blobs b = make_blobs(rng, n, d, k, 1.0, 20.0, 8.0);
  const auto [Xf, Xd] = far_from_origin(rng, b);
  const std::vector<double> init(Xd.begin(), Xd.begin() + k * d);  // one row per blob
  const std::vector<double> ones(n, 1.0);
  for (int max_iter : {1, 300}) {
    SCOPED_TRACE("n=" + std::to_string(n) + " d=" + std::to_string(d) + " k=" + std::to_string(k) +
                 " max_iter=" + std::to_string(max_iter));
    const Reference ref = reference_lloyd(Xd, n, d, ones, init, k, max_iter, 0.0);
    Context ctx = Context::cpu(2);
    const Fitted got = fit(ctx, array_init(init, k, max_iter, 0.0), Xf, n, d);
    // Centers near 1e4 in float32: the means are added back and rounded once (half a spacing,
    // ~5e-4) on top of the centered fit's ~1e-6 error: within one float32 spacing at 1e4 (~1e-3).
    expect_near_scaled(got.centers, ref.centers, 1e-7, "centers");
    // Distances of centered float32 rows are good to ~d * 6e-8 relative: only exact ties can move.
    expect_labels_match(got.labels, ref.labels, nearest_gaps(Xd, n, d, ref.centers, k), 1e-5);
    // Each squared distance ~1e-6 relative (centered float32), summed in double.
    expect_rel_near(got.inertia, ref.inertia, 1e-5, "inertia");
    EXPECT_EQ(got.n_iter, ref.n_iter);
  }
}

TEST(KMeansCpu, IntegerWeightsEqualRepeatedRows) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 100, 800), d = uniform_int(rng, 1, 8), k = uniform_int(rng, 2, 6);
  Blobs b = make_blobs(rng, n, d, k, 2.0, 4.0);
  std::vector<double> w(n), repeated;
  std::vector<int64_t> source;  // repeated row -> original row
  for (int64_t i = 0; i < n; ++i) {
    w[i] = static_cast<double>(uniform_int(rng, 1, 4));
    for (int r = 0; r < w[i]; ++r) {
      repeated.insert(repeated.end(), &b.X[i * d], &b.X[i * d] + d);
      source.push_back(i);
    }
  }
  const int64_t m = static_cast<int64_t>(source.size());
  for (int max_iter : {1, 4, 300}) {
    // tol = 0: the tolerance scales with the unweighted variance, which repeating rows changes.
    const KMeansParams p = array_init(one_row_per_blob(b), k, max_iter, 0.0);
    Context ctx = Context::cpu(2);
    Fitted weighted = fit(ctx, p, b.X, n, d, &w), expanded = fit(ctx, p, repeated, m, d);
    expect_near_scaled(weighted.centers, expanded.centers, 1e-11, "centers");  // summation order only
    expect_rel_near(weighted.inertia, expanded.inertia, 1e-11, "inertia");
    EXPECT_EQ(weighted.n_iter, expanded.n_iter);
    for (int64_t r = 0; r < m; ++r) ASSERT_EQ(expanded.labels[r], weighted.labels[source[r]]) << "repeated row " << r;
  }
}

TEST(KMeansCpu, EmptyClustersAreRelocated) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 50, 600), d = uniform_int(rng, 1, 6), k = uniform_int(rng, 3, 7);
  Blobs b = make_blobs(rng, n, d, 3, 1.0, 5.0);
  const std::vector<double> w = random_weights(rng, n);
  // Case 1: two centers far from all data. Case 2: every center at the same far point, so all
  // rows tie and go to cluster 0, and k - 1 clusters start empty.
  std::vector<double> some_far = random_rows(rng, b.X, n, d, k);
  for (int64_t j = 0; j < d; ++j) {
    some_far[1 * d + j] = 1e6;
    some_far[(k - 1) * d + j] = -1e6;
  }
  std::vector<double> all_far(k * d, 1e5);
  for (const std::vector<double>* init : {&some_far, &all_far}) {
    for (int max_iter : {1, 2, 5}) {
      SCOPED_TRACE((init == &some_far ? "two far centers" : "all centers equal and far") +
                   std::string(" max_iter=") + std::to_string(max_iter));
      const Reference ref = reference_lloyd(b.X, n, d, w, *init, k, max_iter, 0.0);
      Context ctx = Context::cpu(2);
      Fitted got = fit(ctx, array_init(*init, k, max_iter, 0.0), b.X, n, d, &w);
      for (double c : got.centers) ASSERT_TRUE(std::isfinite(c));
      // k distinct centers: relocated centers sit on distinct rows of continuous random data.
      std::set<std::vector<double>> distinct;
      for (int64_t c = 0; c < k; ++c) distinct.emplace(got.centers.begin() + c * d, got.centers.begin() + (c + 1) * d);
      EXPECT_EQ(static_cast<int64_t>(distinct.size()), k);
      expect_near_scaled(got.centers, ref.centers, 1e-10, "centers");
      EXPECT_EQ(got.labels, ref.labels);
      expect_rel_near(got.inertia, ref.inertia, 1e-10, "inertia");
      EXPECT_EQ(got.n_iter, ref.n_iter);
    }
  }
}

// `distinct` fresh random rows, each repeated `copies` times, shuffled; source[i] is the
// distinct row that row i copies.
struct Duplicates {
  std::vector<double> X, points;
  std::vector<int32_t> source;
  int64_t n = 0, d = 0;
};
Duplicates make_duplicates(std::mt19937_64& rng, int64_t distinct, int64_t copies, int64_t d) {
  Duplicates dup;
  dup.n = distinct * copies;
  dup.d = d;
  for (int64_t i = 0; i < distinct * d; ++i) dup.points.push_back(uniform_real(rng, -5.0, 5.0));
  for (int64_t i = 0; i < dup.n; ++i) dup.source.push_back(static_cast<int32_t>(i % distinct));
  std::shuffle(dup.source.begin(), dup.source.end(), rng);
  for (int32_t s : dup.source) dup.X.insert(dup.X.end(), &dup.points[s * d], &dup.points[(s + 1) * d]);
  return dup;
}

// Every center within `tol` (max norm) of one of the distinct points.
void expect_centers_on_points(const std::vector<double>& centers, const Duplicates& dup, double tol) {
  const int64_t d = dup.d, k = static_cast<int64_t>(centers.size()) / d, m = static_cast<int64_t>(dup.points.size()) / d;
  for (int64_t c = 0; c < k; ++c) {
    double nearest = std::numeric_limits<double>::infinity();
    for (int64_t p = 0; p < m; ++p) {
      double gap = 0;
      for (int64_t j = 0; j < d; ++j) gap = std::max(gap, std::fabs(centers[c * d + j] - dup.points[p * d + j]));
      nearest = std::min(nearest, gap);
    }
    EXPECT_LE(nearest, tol) << "center " << c << " is not on a data point";
  }
}
// init="random" on float64 duplicates with more clusters than distinct rows: the means of equal
// rows may come back an ulp off them (sums in double), and the relocation must still see those
// rows as on their centers, or a row moved to an empty cluster drags its copies along and the
// fit cycles to max_iter (it did in 123 of 300 such problems; scikit-learn in 4).
TEST(KMeansCpu, DuplicateRowsWithRandomInitConverge) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  int to_max_iter = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t distinct = uniform_int(rng, 2, 6), d = uniform_int(rng, 1, 6);
    const int64_t k = distinct + uniform_int(rng, 1, 5);
    const int64_t copies = uniform_int(rng, std::max<int64_t>(3, (k + distinct - 1) / distinct), 40);
    const Duplicates dup = make_duplicates(rng, distinct, copies, d);
    KMeansParams p;
    p.n_clusters = k;
    p.init = "random";
    p.n_init = 1;
    p.max_iter = 50;
    p.random_state = rng();
    const Fitted got = fit(ctx, p, dup.X, dup.n, d);
    to_max_iter += got.n_iter == p.max_iter ? 1 : 0;
  }
  EXPECT_EQ(to_max_iter, 0);  // of 40 problems
}

// A model saved before distinct_clusters_ existed (its attributes without it) loads with the
// count taken from its labels: here fewer clusters than n_clusters hold a row.
TEST(KMeansCpu, ModelsSavedWithoutDistinctClustersCountTheirLabels) {
  GPUML_FRESH_RNG(rng);
  const int64_t distinct = uniform_int(rng, 2, 5), d = uniform_int(rng, 1, 4), k = distinct + uniform_int(rng, 1, 3);
  const Duplicates dup = make_duplicates(rng, distinct, uniform_int(rng, 3, 20), d);
  KMeansParams p;
  p.n_clusters = k;
  p.random_state = rng();
  KMeans fitted(p);
  Context ctx = Context::cpu();
  fitted.fit(ctx, host_view(dup.X.data(), dup.n, d));
  std::map<std::string, HostArray> saved;
  for (const std::string& name : fitted.attribute_names()) {
    if (name == "distinct_clusters_") continue;
    const HostArray& a = fitted.attribute(name);
    HostArray copy = a.spec().ndim == 0   ? HostArray::scalar(a.dtype())
                     : a.spec().ndim == 1 ? HostArray(a.dtype(), a.spec().shape[0])
                                          : HostArray(a.dtype(), a.spec().shape[0], a.spec().shape[1]);
    std::memcpy(copy.as<char>(), a.as<char>(), a.bytes());
    saved.emplace(name, std::move(copy));
  }
  KMeans loaded(p);
  loaded.restore(std::move(saved));
  EXPECT_EQ(*loaded.attribute("distinct_clusters_").as<const int64_t>(), distinct);
  EXPECT_EQ(*fitted.attribute("distinct_clusters_").as<const int64_t>(), distinct);
}


// The Lloyd loop with the next step queued before a step's report is read (the CUDA default,
// forced here on the CPU): the same fit, bit for bit, through steps that stop by tol, by strict
// convergence, at max_iter and after relocating empty clusters.
TEST(KMeansCpu, QueuedStepsGiveTheSameFit) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 200, 900), d = uniform_int(rng, 1, 6), k = uniform_int(rng, 3, 9);
  Blobs b = make_blobs(rng, n, d, 4, 1.0, 5.0);
  std::vector<double> far = random_rows(rng, b.X, n, d, k);
  for (int64_t j = 0; j < d; ++j) far[d + j] = 1e6;  // center 1 empties at once: a relocation
  const Duplicates dup = make_duplicates(rng, 3, 40, d);  // fewer distinct rows than clusters: strict convergence
  struct Case {
    const char* name;
    KMeansParams params;
    const std::vector<double>* X;
    int64_t n;
  };
  KMeansParams plusplus;
  plusplus.n_clusters = k;
  plusplus.random_state = rng();
  KMeansParams short_run = plusplus;
  short_run.max_iter = 3;
  short_run.tol = 0.0;
  KMeansParams duplicates = plusplus;
  duplicates.n_clusters = 3 + uniform_int(rng, 1, 3);
  const std::vector<Case> cases = {{"k-means++, default tol", plusplus, &b.X, n},
                                   {"max_iter 3, tol 0", short_run, &b.X, n},
                                   {"a far center", array_init(far, k, 10, 0.0), &b.X, n},
                                   {"duplicates", duplicates, &dup.X, dup.n}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Context ctx = Context::cpu(2);
    Fitted queued, plain;
    {
      test::ScopedEnv env("GPUML_KMEANS_QUEUE_AHEAD", "1");
      queued = fit(ctx, c.params, *c.X, c.n, d);
    }
    {
      test::ScopedEnv env("GPUML_KMEANS_QUEUE_AHEAD", "0");
      plain = fit(ctx, c.params, *c.X, c.n, d);
    }
    EXPECT_EQ(queued.n_iter, plain.n_iter);
    EXPECT_EQ(queued.labels, plain.labels);
    EXPECT_EQ(queued.centers, plain.centers);  // exact: the same steps in the same order
    EXPECT_EQ(queued.inertia, plain.inertia);
  }
}

// Issue 22 item 9: with fewer distinct rows than clusters, every row sits on its center after
// the first iteration and relocating empty clusters onto duplicates only moved rows between
// clusters, every iteration until max_iter. As scikit-learn: no relocation then, the empty
// clusters on the heaviest cluster's center, strict convergence at iteration 2.
TEST(KMeansCpu, FewerDistinctRowsThanClustersConverges) {
  GPUML_FRESH_RNG(rng);
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t distinct = uniform_int(rng, 2, 6), d = uniform_int(rng, 1, 6);
    const int64_t k = distinct + uniform_int(rng, 1, 5);
    const int64_t copies = uniform_int(rng, std::max<int64_t>(3, (k + distinct - 1) / distinct), 40);  // n >= k
    const Duplicates dup = make_duplicates(rng, distinct, copies, d);
    const bool weighted = trial == 1;
    const std::vector<double> w = weighted ? random_weights(rng, dup.n) : std::vector<double>(dup.n, 1.0);
    SCOPED_TRACE("distinct=" + std::to_string(distinct) + " copies=" + std::to_string(copies) + " d=" +
                 std::to_string(d) + " k=" + std::to_string(k) + (weighted ? " weighted" : ""));
    // Centers are means of equal rows, computed on centered data: a few ulps of the data's scale.
    const double on_point = 1e-13 * 5.0;
    Context ctx = Context::cpu(2);
    KMeansParams p;
    p.n_clusters = k;
    p.random_state = rng();
    const Fitted got = fit(ctx, p, dup.X, dup.n, d, weighted ? &w : nullptr);
    // scikit-learn's count: 2 (the labels of iteration 2 equal those of 1), or 1 when the
    // first iteration moved no center by more than tol.
    EXPECT_LE(got.n_iter, 2);
    EXPECT_TRUE(same_partition(got.labels, dup.source)) << "each distinct row must be one cluster";
    EXPECT_EQ(got.distinct_clusters, distinct);  // the Python fit's warning: fewer than n_clusters
    expect_centers_on_points(got.centers, dup, on_point);
    EXPECT_LE(got.inertia, 1e-20 * static_cast<double>(dup.n));  // rows on their centers up to those ulps
    // The other inits. init="array" (the distinct points first): no cluster splits a distinct
    // row, centers on data points. init="random" can leave distinct rows without a center at
    // first and end in another local optimum, as scikit-learn's does: its KMeans(init="random",
    // n_init=1) on such data (1,500 random problems of this test's shapes, scikit-learn 1.9) ended
    // with two distinct rows in one cluster in 4% of them, and ran to max_iter in 2%. What holds
    // there: every row labelled with its nearest center, and the inertia of those labels.
    for (const char* init : {"random", "array"}) {
      SCOPED_TRACE(init);
      KMeansParams q = p;
      q.init = init;
      std::vector<double> start;
      if (q.init == "array") {  // the distinct points first, then duplicates of them
        start = dup.points;
        for (int64_t c = distinct; c < k; ++c) start.insert(start.end(), &dup.points[(c % distinct) * d],
                                                            &dup.points[(c % distinct + 1) * d]);
        q.init_array = start;
      }
      const Fitted other = fit(ctx, q, dup.X, dup.n, d, weighted ? &w : nullptr);
      if (q.init == "random") {
        double inertia = 0.0;
        for (int64_t i = 0; i < dup.n; ++i) {
          auto distance = [&](int64_t c) {
            double s = 0.0;
            for (int64_t j = 0; j < d; ++j) s += (dup.X[i * d + j] - other.centers[c * d + j]) * (dup.X[i * d + j] - other.centers[c * d + j]);
            return s;
          };
          const double own = distance(other.labels[i]);
          for (int64_t c = 0; c < k; ++c) ASSERT_LE(own, distance(c) * (1.0 + 1e-12) + 1e-12) << "row " << i << " is nearer center " << c;  // rounding
          inertia += (weighted ? w[i] : 1.0) * own;
        }
        EXPECT_NEAR(other.inertia, inertia, 1e-9 * (1.0 + inertia));  // sums of squares of the data's scale
        continue;
      }
      EXPECT_TRUE(same_partition(other.labels, dup.source)) << "each distinct row must be one cluster";
      expect_centers_on_points(other.centers, dup, on_point);
      {
        const Reference ref = reference_lloyd(dup.X, dup.n, d, w, start, k, q.max_iter,
                                              q.tol * reference_mean_variance(dup.X, dup.n, d));
        // Iteration 2 may relocate a row a few ulps from its center (the means of centered rows
        // round; the reference's, uncentered, may not) and rename that row's cluster: the same
        // partition, but labels and the empty clusters' centers are not compared exactly.
        EXPECT_LE(other.n_iter, 2);
        EXPECT_EQ(other.n_iter, ref.n_iter);
        EXPECT_TRUE(same_partition(ref.labels, dup.source));
      }
    }
  }
}

TEST(KMeansCpu, SameRandomStateIsBitIdentical) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 200, 2000), d = uniform_int(rng, 1, 8), k = uniform_int(rng, 1, 12);
  Blobs b = make_blobs(rng, n, d, 5, 2.0, 5.0);
  const std::vector<double> w = random_weights(rng, n);
  for (const char* init : {"k-means++", "random"}) {
    SCOPED_TRACE(init);
    KMeansParams p;
    p.n_clusters = k;
    p.init = init;
    p.random_state = rng();
    Context a = Context::cpu(2), c = Context::cpu(2);
    Fitted first = fit(a, p, b.X, n, d, &w), second = fit(c, p, b.X, n, d, &w);
    ASSERT_EQ(first.centers.size(), second.centers.size());
    EXPECT_EQ(std::memcmp(first.centers.data(), second.centers.data(), first.centers.size() * sizeof(double)), 0);
    EXPECT_EQ(first.labels, second.labels);
    EXPECT_EQ(first.inertia, second.inertia);
    // Unset random_state: the context's seed decides.
    p.random_state.reset();
    a.set_seed(rng());
    c.set_seed(a.seed());
    first = fit(a, p, b.X, n, d, &w);
    second = fit(c, p, b.X, n, d, &w);
    EXPECT_EQ(std::memcmp(first.centers.data(), second.centers.data(), first.centers.size() * sizeof(double)), 0);
    EXPECT_EQ(first.labels, second.labels);
  }
}

TEST(KMeansCpu, KMeansPlusPlusPicksDistinctRowsFirst) {
  GPUML_FRESH_RNG(rng);
  // With max_iter = 1 and k = n every cluster keeps exactly the row it was seeded with (each
  // seed row is at distance 0 from its own center), so the centers are the seeds themselves:
  // k-means++ must have picked k distinct rows (a picked row has zero probability after).
  const int64_t n = uniform_int(rng, 5, 40), d = uniform_int(rng, 1, 5);
  Blobs b = make_blobs(rng, n, d, 3, 1.0, 5.0);
  KMeansParams p;
  p.n_clusters = n;
  p.max_iter = 1;
  p.random_state = rng();
  Context ctx = Context::cpu(1);
  Fitted got = fit(ctx, p, b.X, n, d);
  // The fit runs on centered rows and returns (row - mean) + mean, as scikit-learn does: each
  // center equals its row up to that round trip's rounding (a few ulps of the data's scale).
  const double tol = 1e-13 * std::max(1.0, max_abs(b.X));
  std::set<int64_t> matched_rows;
  for (int64_t c = 0; c < n; ++c)
    for (int64_t i = 0; i < n; ++i) {
      double farthest = 0;
      for (int64_t j = 0; j < d; ++j) farthest = std::max(farthest, std::fabs(got.centers[c * d + j] - b.X[i * d + j]));
      if (farthest <= tol) matched_rows.insert(i);
    }
  EXPECT_EQ(static_cast<int64_t>(matched_rows.size()), n);  // every row is some center
  EXPECT_EQ(got.inertia, 0.0);  // each centered row is its own (centered) center exactly
}

// The host random stream documented in src/core/random.hpp (mt19937_64, 53-bit uniforms),
// rewritten here so that the seeding can be checked choice by choice.
class ReferenceRandom {
 public:
  explicit ReferenceRandom(uint64_t seed) : engine_(seed) {}
  double uniform() { return static_cast<double>(engine_() >> 11) * (1.0 / 9007199254740992.0); }
  uint64_t next() { return engine_(); }
  std::vector<int64_t> sample_without_replacement(int64_t n, int64_t m) {
    std::vector<int64_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = 0; i < m; ++i) {
      const uint64_t span = static_cast<uint64_t>(n - i);
      std::swap(perm[i], perm[i + static_cast<int64_t>(static_cast<uint64_t>(uniform() * span) % span)]);
    }
    perm.resize(m);
    return perm;
  }

 private:
  std::mt19937_64 engine_;
};

// First i with cumsum(terms)[i] > t, clipped to n - 1 (numpy's searchsorted, then clip).
int64_t search_cumsum(const std::vector<double>& terms, double t) {
  double cumsum = 0;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    cumsum += terms[i];
    if (cumsum > t) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(terms.size()) - 1;
}

// scikit-learn's greedy k-means++ (_kmeans_plusplus) on the reference stream.
std::vector<double> reference_kmeans_plusplus(ReferenceRandom& rng, const std::vector<double>& X, int64_t n, int64_t d,
                                              const std::vector<double>& w, int64_t k) {
  const int64_t trials = 2 + static_cast<int64_t>(std::log(static_cast<double>(k)));
  std::vector<double> centers;
  const int64_t first = search_cumsum(w, rng.uniform() * std::accumulate(w.begin(), w.end(), 0.0));
  centers.insert(centers.end(), &X[first * d], &X[first * d] + d);
  std::vector<double> closest(n), terms(n);
  double potential = 0;
  for (int64_t i = 0; i < n; ++i) {
    closest[i] = sq_dist(&X[i * d], &X[first * d], d);
    potential += w[i] * closest[i];
  }
  for (int64_t c = 1; c < k; ++c) {
    for (int64_t i = 0; i < n; ++i) terms[i] = w[i] * closest[i];
    int64_t best = -1;
    double best_potential = 0;
    std::vector<double> thresholds(trials);
    for (auto& t : thresholds) t = rng.uniform() * potential;
    for (int64_t t = 0; t < trials; ++t) {
      const int64_t candidate = search_cumsum(terms, thresholds[t]);
      double pot = 0;
      for (int64_t i = 0; i < n; ++i) pot += w[i] * std::min(closest[i], sq_dist(&X[i * d], &X[candidate * d], d));
      if (best < 0 || pot < best_potential) {
        best = candidate;
        best_potential = pot;
      }
    }
    centers.insert(centers.end(), &X[best * d], &X[best * d] + d);
    for (int64_t i = 0; i < n; ++i) closest[i] = std::min(closest[i], sq_dist(&X[i * d], &X[best * d], d));
    potential = best_potential;
  }
  return centers;
}

TEST(KMeansCpu, SeedingFollowsTheDocumentedRandomStream) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 50, 800), d = uniform_int(rng, 1, 6), k = uniform_int(rng, 1, 12);
  Blobs b = make_blobs(rng, n, d, uniform_int(rng, 1, 8), 1.5, 5.0);
  const std::vector<double> w = random_weights(rng, n);
  for (const char* init : {"k-means++", "random"}) {
    for (int n_init : {1, 3}) {
      for (int max_iter : {1, 3}) {
        SCOPED_TRACE(std::string(init) + " n_init=" + std::to_string(n_init) + " max_iter=" + std::to_string(max_iter));
        KMeansParams p;
        p.n_clusters = k;
        p.init = init;
        p.n_init = n_init;
        p.max_iter = max_iter;
        p.tol = 0;
        p.random_state = rng() >> 1;
        // Every run seeds its own stream from the next number of the random_state stream.
        ReferenceRandom runs(*p.random_state);
        Reference best;
        for (int r = 0; r < n_init; ++r) {
          ReferenceRandom run(runs.next());
          std::vector<double> seeds;
          if (std::string(init) == "random") {
            for (int64_t row : run.sample_without_replacement(n, k)) seeds.insert(seeds.end(), &b.X[row * d], &b.X[row * d] + d);
          } else {
            seeds = reference_kmeans_plusplus(run, b.X, n, d, w, k);
          }
          Reference ref = reference_lloyd(b.X, n, d, w, seeds, k, max_iter, 0.0);
          if (r == 0 || ref.inertia < best.inertia) best = ref;
        }
        // One thread: the backend then sums the k-means++ potentials in the reference's order,
        // so near-equal candidates are ranked the same way.
        Context ctx = Context::cpu(1);
        Fitted got = fit(ctx, p, b.X, n, d, &w);
        expect_near_scaled(got.centers, best.centers, 1e-11, "centers");
        EXPECT_EQ(got.labels, best.labels);
        expect_rel_near(got.inertia, best.inertia, 1e-11, "inertia");
      }
    }
  }
}

TEST(KMeansCpu, NInitKeepsTheBestRun) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 300, 1500), d = uniform_int(rng, 2, 5), k = uniform_int(rng, 4, 10);
  Blobs b = make_blobs(rng, n, d, k + 2, 1.0, 6.0);
  KMeansParams p;
  p.n_clusters = k;
  p.init = "random";
  p.random_state = rng();
  // Run r draws its seed from the same sequence whatever n_init is, so n_init = m runs the
  // first m runs of n_init = m + 1: the kept inertia can only go down as m grows.
  Context ctx = Context::cpu(2);
  double previous = std::numeric_limits<double>::infinity();
  for (int m = 1; m <= 8; ++m) {
    p.n_init = m;
    KMeans km(p);
    km.fit(ctx, host_view(b.X.data(), n, d));
    EXPECT_LE(km.inertia(), previous) << "n_init=" << m;
    previous = km.inertia();
    // The kept labels belong to the kept centers.
    EXPECT_NEAR(-km.score(ctx, host_view(b.X.data(), n, d)), km.inertia(), 1e-12 * km.inertia());
  }
  // "auto" is 10 runs for random init: at least as good as 8.
  p.n_init = 0;
  KMeans km(p);
  km.fit(ctx, host_view(b.X.data(), n, d));
  EXPECT_LE(km.inertia(), previous);
}

TEST(KMeansCpu, PredictTransformScoreAgreeWithFit) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 100, 1000), d = uniform_int(rng, 1, 10), k = uniform_int(rng, 1, 9);
  Blobs b = make_blobs(rng, n, d, 4, 2.0, 5.0);
  const std::vector<double> w = random_weights(rng, n);
  KMeansParams p;
  p.n_clusters = k;
  p.random_state = rng();
  Context ctx = Context::cpu(3);
  KMeans km(p);
  ArrayView wv = host_view(w.data(), n);
  km.fit(ctx, host_view(b.X.data(), n, d), &wv);
  const Fitted f = summarize(km);

  // predict on the training rows gives labels_, in int32 and int64 outputs.
  std::vector<int32_t> labels32(n, -7);
  std::vector<int64_t> labels64(n, -7);
  km.predict(ctx, host_view(b.X.data(), n, d), host_view(labels32.data(), n));
  km.predict(ctx, host_view(b.X.data(), n, d), host_view(labels64.data(), n));
  EXPECT_EQ(labels32, f.labels);
  EXPECT_EQ(std::vector<int32_t>(labels64.begin(), labels64.end()), f.labels);

  // New rows: transform against plain distances, predict = argmin of them.
  const int64_t m = uniform_int(rng, 1, 300);
  Blobs fresh = make_blobs(rng, m, d, 4, 3.0, 6.0);
  std::vector<double> dist(m * k, -1.0);
  std::vector<int32_t> predicted(m, -1);
  km.transform(ctx, host_view(fresh.X.data(), m, d), host_view(dist.data(), m, k));
  km.predict(ctx, host_view(fresh.X.data(), m, d), host_view(predicted.data(), m));
  std::vector<int32_t> want_labels;
  std::vector<double> want_dist2;
  reference_assign(fresh.X, m, d, f.centers, k, want_labels, want_dist2);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      const double want = std::sqrt(sq_dist(&fresh.X[i * d], &f.centers[c * d], d));
      ASSERT_NEAR(dist[i * k + c], want, 1e-12 * std::max(want, 1.0));  // double rounding only
    }
  }
  EXPECT_EQ(predicted, want_labels);

  // score = -(weighted inertia), on the training rows equal to -inertia_.
  EXPECT_NEAR(km.score(ctx, host_view(b.X.data(), n, d), &wv), -f.inertia, 1e-12 * f.inertia);
  double want_score = 0;
  for (int64_t i = 0; i < m; ++i) want_score -= want_dist2[i];
  EXPECT_NEAR(km.score(ctx, host_view(fresh.X.data(), m, d)), want_score, 1e-12 * std::fabs(want_score) + 1e-300);

  // fit_predict gives the labels of the fit.
  KMeans again(p);
  std::vector<int64_t> fp(n, -1);
  again.fit_predict(ctx, host_view(b.X.data(), n, d), host_view(fp.data(), n), &wv);
  EXPECT_EQ(std::vector<int32_t>(fp.begin(), fp.end()), f.labels);

  // float32 input to a float64 model: computed in float32, written to the caller's float32.
  const std::vector<float> fresh32 = test::cast_vector<float>(fresh.X);
  std::vector<float> dist32(m * k);
  km.transform(ctx, host_view(fresh32.data(), m, d), host_view(dist32.data(), m, k));
  for (int64_t e = 0; e < m * k; ++e) ASSERT_NEAR(dist32[e], dist[e], 1e-4 * std::max(dist[e], 1.0));  // float32 rounding

  // The shapes the C ABI asks for.
  ArraySpec ps = km.output_spec("predict", m), ts = km.output_spec("transform", m);
  EXPECT_EQ(ps.dtype, DType::int32);
  EXPECT_EQ(ps.ndim, 1);
  EXPECT_EQ(ps.shape[0], m);
  EXPECT_EQ(ts.dtype, DType::float64);
  EXPECT_EQ(ts.ndim, 2);
  EXPECT_EQ(ts.shape[0], m);
  EXPECT_EQ(ts.shape[1], k);
  GPUML_EXPECT_ERROR(km.output_spec("predict_proba", m), ErrorCode::unsupported);
}

TEST(KMeansCpu, AttributesHaveScikitLearnNamesAndShapes) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 20, 200), d = uniform_int(rng, 1, 6), k = uniform_int(rng, 1, 5);
  Blobs b = make_blobs(rng, n, d, 3, 1.0, 3.0);
  std::vector<float> X = test::cast_vector<float>(b.X);
  KMeansParams p;
  p.n_clusters = k;
  KMeans km(p);
  EXPECT_FALSE(km.fitted());
  Context ctx = Context::cpu();
  km.fit(ctx, host_view(X.data(), n, d));
  EXPECT_TRUE(km.fitted());
  EXPECT_EQ(km.attribute_names(),
            (std::vector<std::string>{"cluster_centers_", "labels_", "inertia_", "n_iter_", "n_features_in_",
                                      "distinct_clusters_"}));
  const HostArray& centers = km.attribute("cluster_centers_");
  EXPECT_EQ(centers.dtype(), DType::float32);
  EXPECT_EQ(centers.spec().ndim, 2);
  EXPECT_EQ(centers.spec().shape[0], k);
  EXPECT_EQ(centers.spec().shape[1], d);
  const HostArray& labels = km.attribute("labels_");
  EXPECT_EQ(labels.dtype(), DType::int32);
  EXPECT_EQ(labels.spec().ndim, 1);
  EXPECT_EQ(labels.spec().shape[0], n);
  for (const char* name : {"inertia_", "n_iter_", "n_features_in_"}) EXPECT_EQ(km.attribute(name).spec().ndim, 0) << name;
  EXPECT_EQ(km.attribute("inertia_").dtype(), DType::float64);
  EXPECT_EQ(km.attribute("n_iter_").dtype(), DType::int64);
  EXPECT_EQ(*km.attribute("n_features_in_").as<int64_t>(), d);
  // distinct_clusters_: the clusters the labels use, counted here from labels_.
  std::vector<char> used(static_cast<std::size_t>(k), 0);
  for (int64_t i = 0; i < n; ++i) used[labels.as<const int32_t>()[i]] = 1;
  EXPECT_EQ(km.attribute("distinct_clusters_").dtype(), DType::int64);
  EXPECT_EQ(*km.attribute("distinct_clusters_").as<int64_t>(), std::count(used.begin(), used.end(), char(1)));
  EXPECT_GE(km.n_iter(), 1);
  EXPECT_LE(km.n_iter(), p.max_iter);
  EXPECT_GE(km.inertia(), 0.0);
  GPUML_EXPECT_ERROR(km.attribute("coef_"), ErrorCode::invalid_argument);
}

TEST(KMeansCpu, RefitReplacesStateAndFailedFitKeepsIt) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = 100, d = 3;
  Blobs b = make_blobs(rng, n, d, 3, 1.0, 5.0);
  KMeansParams p;
  p.n_clusters = 3;
  p.random_state = rng();
  KMeans km(p);
  Context ctx = Context::cpu(2);
  km.fit(ctx, host_view(b.X.data(), n, d));
  const Fitted before = summarize(km);
  std::vector<double> bad = b.X;
  bad[5] = std::nan("");
  GPUML_EXPECT_ERROR(km.fit(ctx, host_view(bad.data(), n, d)), ErrorCode::invalid_argument);
  const Fitted after = summarize(km);
  EXPECT_EQ(after.centers, before.centers);
  EXPECT_EQ(after.labels, before.labels);
  // A refit on other data with another width replaces everything.
  Blobs wide = make_blobs(rng, 50, 5, 3, 1.0, 5.0);
  km.fit(ctx, host_view(wide.X.data(), 50, 5));
  EXPECT_EQ(km.n_features_in(), 5);
  EXPECT_EQ(km.labels().spec().shape[0], 50);
}

// ---- k-means|| -------------------------------------------------------------------------------

KMeansParams seeded(const char* init, int64_t k, uint64_t seed) {
  KMeansParams p;
  p.n_clusters = k;
  p.init = init;
  p.random_state = seed;
  return p;
}

// The mean inertia after Lloyd to convergence (one run per seed, scikit-learn's max_iter and tol).
// One thread: these fits are small, and a team's barriers cost more than they save on a busy machine.
template <typename T>
double mean_inertia(const char* init, const std::vector<T>& X, int64_t n, int64_t d, int64_t k,
                    const std::vector<uint64_t>& seeds) {
  Context ctx = Context::cpu(1);
  double sum = 0;
  for (uint64_t seed : seeds) sum += fit(ctx, seeded(init, k, seed), X, n, d).inertia;
  return sum / static_cast<double>(seeds.size());
}

// Gaussian rows (n x d) through a random linear map with axis scales 1 to 8: elongated, correlated.
std::vector<double> anisotropic_gaussian(std::mt19937_64& rng, int64_t n, int64_t d) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> A(d * d), X(n * d, 0.0), z(d);
  for (double& a : A) a = normal(rng);
  for (int64_t l = 0; l < d; ++l)
    for (int64_t j = 0; j < d; ++j) A[l * d + j] *= 1.0 + 7.0 * static_cast<double>(l) / static_cast<double>(std::max<int64_t>(1, d - 1));
  for (int64_t i = 0; i < n; ++i) {
    for (double& v : z) v = normal(rng);
    for (int64_t l = 0; l < d; ++l)
      for (int64_t j = 0; j < d; ++j) X[i * d + j] += z[l] * A[l * d + j];
  }
  return X;
}

// k-means|| seeds as well as k-means++: the inertia after Lloyd, averaged over 24 to 96 seeds, at
// most 1% above k-means++'s (Bahmani et al. report it equal or lower). One-sided: lower is better.
// The ratios are printed.
//
// The shapes are those whose average is steady over a few dozen seeds. On blobs a few spreads
// apart both inits sometimes (0.3% to 20% of seeds, alike for both) end in a local optimum 2 to 4
// times the best, and a 24-seed average then moves by several percent either way (the ratio's
// spread over fresh data measured 2% to 6%): a 1% bound would fail by chance alone. So: blobs far
// enough apart that both always find the optimum (ratio 1), and data without clusters or with more
// centers than clusters (steel plates at k = 25), whose local optima lie within tenths of a
// percent of each other. Spread of the ratio over 60 fresh draws with these seed counts: 0.11% to
// 0.21%, largest 1.0053 (steel plates, whose mean ratio was 1.0007).
TEST(KMeansParallel, InertiaWithinOnePercentOfKMeansPlusPlus) {
  GPUML_FRESH_RNG(rng);
  auto check = [&](const std::string& shape, const auto& X, int64_t n, int64_t d, int64_t k, int n_seeds) {
    std::vector<uint64_t> seeds(static_cast<std::size_t>(n_seeds));
    for (uint64_t& s : seeds) s = rng();
    const double parallel = mean_inertia("k-means||", X, n, d, k, seeds);
    const double plusplus = mean_inertia("k-means++", X, n, d, k, seeds);
    std::printf("k-means|| / k-means++ mean inertia over %d seeds, %s (n=%lld d=%lld k=%lld): %.4f\n", n_seeds,
                shape.c_str(), static_cast<long long>(n), static_cast<long long>(d), static_cast<long long>(k),
                parallel / plusplus);
    EXPECT_LE(parallel, 1.01 * plusplus) << shape;  // 1%: the issue's bound
  };
  {
    const int64_t n = uniform_int(rng, 1000, 3000);
    check("blobs 100 sd apart", make_blobs(rng, n, 10, 8, 0.2, 20.0, 20.0).X, n, 10, 8, 24);
  }
  {
    const int64_t n = uniform_int(rng, 3000, 5000);
    const std::vector<double> X = make_blobs(rng, n, 16, 30, 0.2, 40.0, 25.0).X;
    check("30 blobs 125 sd apart, float32", test::cast_vector<float>(X), n, 16, 30, 24);
  }
  {
    const int64_t n = uniform_int(rng, 1000, 2000);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> X(n * 6);
    for (double& v : X) v = normal(rng);
    check("one Gaussian", X, n, 6, 10, 64);
  }
  {
    const int64_t n = uniform_int(rng, 1000, 2000);
    check("anisotropic Gaussian", anisotropic_gaussian(rng, n, 5), n, 5, 10, 96);
  }
  {
    const int64_t n = uniform_int(rng, 1000, 2000), d = 3;
    std::vector<double> X(n * d);
    for (double& v : X) v = uniform_real(rng, -1.0, 1.0);
    check("uniform cube", X, n, d, 16, 96);
  }
  GPUML_DATASET_OR_SKIP(table, "steel-plates-faults/steel_plates_faults.csv");
  const std::vector<double> X = standardized_steel_plates(table);
  const int64_t n = table.rows, d = static_cast<int64_t>(X.size()) / n;
  check("steel plates, standardized", X, n, d, 25, 64);
}

// The same random_state gives the same bits; the seed changes the result; n_init > 1 keeps the
// best run. Each row's draw depends only on (seed, round, row): the thread count changes no
// choice, only the rounding of Lloyd's sums.
TEST(KMeansParallel, SameRandomStateIsReproducible) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 300, 3000), d = uniform_int(rng, 1, 8), k = uniform_int(rng, 1, 40);
  const Blobs b = make_blobs(rng, n, d, uniform_int(rng, 2, 12), 1.5, 6.0);
  const std::vector<double> w = random_weights(rng, n);
  KMeansParams p = seeded("k-means||", k, rng());
  p.max_iter = 1;  // the centers after one step still show which rows were picked
  Context two = Context::cpu(2), again = Context::cpu(2), one = Context::cpu(1);
  const Fitted first = fit(two, p, b.X, n, d, &w), second = fit(again, p, b.X, n, d, &w);
  ASSERT_EQ(first.centers.size(), static_cast<std::size_t>(k * d));
  EXPECT_EQ(std::memcmp(first.centers.data(), second.centers.data(), first.centers.size() * sizeof(double)), 0);
  EXPECT_EQ(first.labels, second.labels);
  EXPECT_EQ(first.inertia, second.inertia);
  expect_near_scaled(fit(one, p, b.X, n, d, &w).centers, first.centers, 1e-12, "centers on 1 thread");
  // Unset random_state: the context's seed decides.
  KMeansParams unseeded = p;
  unseeded.random_state.reset();
  two.set_seed(rng());
  again.set_seed(two.seed());
  EXPECT_EQ(fit(two, unseeded, b.X, n, d, &w).centers, fit(again, unseeded, b.X, n, d, &w).centers);
  if (k >= 3) {
    p.random_state = *p.random_state + 1;
    EXPECT_NE(fit(two, p, b.X, n, d, &w).centers, first.centers) << "another seed, the same centers";
  }
  // n_init = 4: the best of 4 runs, no worse than the first of them alone.
  p.max_iter = 300;
  const double single = fit(two, p, b.X, n, d, &w).inertia;
  p.n_init = 4;
  EXPECT_LE(fit(two, p, b.X, n, d, &w).inertia, single);
}

// Past 2^17 rows the rounds' host loops run on the context's threads (φ summed over fixed
// chunks): 1 and 3 threads draw the same rows (the centers after one step differ by Lloyd's
// rounding only), weighted or not.
TEST(KMeansParallel, ThreadCountChangesNoChoiceOnLargeX) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, int64_t{1} << 17, (int64_t{1} << 17) + 40000), d = 2, k = uniform_int(rng, 2, 12);
  const Blobs b = make_blobs(rng, n, d, uniform_int(rng, 2, 12), 1.5, 6.0);
  const std::vector<double> w = random_weights(rng, n);
  KMeansParams p = seeded("k-means||", k, rng());
  p.max_iter = 1;
  Context one = Context::cpu(1), three = Context::cpu(3);
  for (const std::vector<double>* weights : {static_cast<const std::vector<double>*>(nullptr), &w}) {
    const Fitted a = fit(one, p, b.X, n, d, weights), c = fit(three, p, b.X, n, d, weights);
    expect_near_scaled(c.centers, a.centers, 1e-12, weights ? "weighted centers, 3 threads" : "centers, 3 threads");
  }
}

// Fewer rows than the 1 + 5 * 2k candidates the rounds aim at, down to k == n: every row is then
// a center (max_iter = 1 leaves each center on its own row, and the inertia is 0).
TEST(KMeansParallel, SmallXAndKEqualsN) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t n = uniform_int(rng, 2, 60), d = uniform_int(rng, 1, 5), k = trial < 3 ? n : uniform_int(rng, 1, n);
    SCOPED_TRACE("n=" + std::to_string(n) + " d=" + std::to_string(d) + " k=" + std::to_string(k));
    const Blobs b = make_blobs(rng, n, d, 3, 1.0, 5.0);
    KMeansParams p = seeded("k-means||", k, rng());
    p.max_iter = 1;
    const Fitted got = fit(ctx, p, b.X, n, d);
    // k distinct centers (continuous random rows are distinct).
    std::set<std::vector<double>> distinct;
    for (int64_t c = 0; c < k; ++c) distinct.emplace(got.centers.begin() + c * d, got.centers.begin() + (c + 1) * d);
    EXPECT_EQ(static_cast<int64_t>(distinct.size()), k);
    if (k == n) {
      EXPECT_EQ(got.inertia, 0.0);
      // Each center is its row up to the centering round trip (a few ulps of the data's scale).
      const double tol = 1e-13 * std::max(1.0, max_abs(b.X));
      std::set<int64_t> matched;
      for (int64_t c = 0; c < k; ++c)
        for (int64_t i = 0; i < n; ++i) {
          double gap = 0;
          for (int64_t j = 0; j < d; ++j) gap = std::max(gap, std::fabs(got.centers[c * d + j] - b.X[i * d + j]));
          if (gap <= tol) matched.insert(i);
        }
      EXPECT_EQ(static_cast<int64_t>(matched.size()), n);
    }
    p.max_iter = 300;
    for (double c : fit(ctx, p, b.X, n, d).centers) ASSERT_TRUE(std::isfinite(c));
  }
}

// Fewer distinct rows than clusters: no crash, no endless loop, and the fit ends as k-means++'s
// does (each distinct row one cluster, centers on the points, converged by iteration 2).
TEST(KMeansParallel, FewerDistinctRowsThanClusters) {
  GPUML_FRESH_RNG(rng);
  for (int trial = 0; trial < 3; ++trial) {
    // At least 6 copies: n >= k.
    const int64_t distinct = uniform_int(rng, 1, 6), copies = uniform_int(rng, 6, 60), d = uniform_int(rng, 1, 6);
    const int64_t k = distinct + uniform_int(rng, 0, 5);
    const Duplicates dup = make_duplicates(rng, distinct, copies, d);
    const bool weighted = trial == 1;
    const std::vector<double> w = weighted ? random_weights(rng, dup.n) : std::vector<double>(dup.n, 1.0);
    SCOPED_TRACE("distinct=" + std::to_string(distinct) + " copies=" + std::to_string(copies) + " d=" +
                 std::to_string(d) + " k=" + std::to_string(k) + (weighted ? " weighted" : ""));
    Context ctx = Context::cpu(2);
    const Fitted got = fit(ctx, seeded("k-means||", k, rng()), dup.X, dup.n, d, weighted ? &w : nullptr);
    EXPECT_LE(got.n_iter, 2);
    EXPECT_TRUE(same_partition(got.labels, dup.source)) << "each distinct row must be one cluster";
    expect_centers_on_points(got.centers, dup, 1e-13 * 5.0);  // means of equal centered rows: a few ulps
    EXPECT_LE(got.inertia, 1e-20 * static_cast<double>(dup.n));
  }
}

// Rows of weight 0 are never chosen: with k equal to the count of positive-weight rows (all
// distinct), every one of those rows must be a center, so after one Lloyd step each center is
// still its row (zero-weight rows joining a cluster do not move its mean) and the inertia is 0.
// The zero-weight rows lie in the way (near and between the others), and some far away.
TEST(KMeansParallel, ZeroWeightRowsAreNeverCenters) {
  GPUML_FRESH_RNG(rng);
  Context ctx = Context::cpu(2);
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t n = uniform_int(rng, 20, 400), d = uniform_int(rng, 1, 5);
    const Blobs b = make_blobs(rng, n, d, 4, 1.0, 5.0);
    std::vector<double> X = b.X, w(n);
    int64_t positive = 0;
    for (int64_t i = 0; i < n; ++i) {
      w[i] = uniform_int(rng, 0, 3) == 0 ? uniform_real(rng, 0.5, 3.0) : 0.0;
      if (w[i] == 0 && uniform_int(rng, 0, 4) == 0)
        for (int64_t j = 0; j < d; ++j) X[i * d + j] += 100.0;
      positive += w[i] > 0;
    }
    if (positive == 0) continue;
    for (const char* init : {"k-means||", "k-means++"}) {
      SCOPED_TRACE(std::string(init) + " n=" + std::to_string(n) + " positive=" + std::to_string(positive));
      KMeansParams p = seeded(init, positive, rng());
      p.max_iter = 1;
      const Fitted got = fit(ctx, p, X, n, d, &w);
      EXPECT_LE(got.inertia, 1e-20 * static_cast<double>(n));
      for (int64_t c = 0; c < positive; ++c) {
        bool on_positive_row = false;
        for (int64_t i = 0; i < n && !on_positive_row; ++i) {
          if (w[i] == 0) continue;
          double gap = 0;
          for (int64_t j = 0; j < d; ++j) gap = std::max(gap, std::fabs(got.centers[c * d + j] - X[i * d + j]));
          on_positive_row = gap <= 1e-12 * std::max(1.0, max_abs(X));
        }
        EXPECT_TRUE(on_positive_row) << "center " << c;
      }
    }
  }
}

// Sparse X seeds through its products (|x|² - 2 x·c + |c|², not centered) and draws the same
// rows as dense X: the same fit up to the distances' rounding.
TEST(KMeansParallel, SparseMatchesDense) {
  GPUML_FRESH_RNG(rng);
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t n = uniform_int(rng, 100, 1500), d = uniform_int(rng, 2, 30), k = uniform_int(rng, 1, 12);
    Blobs b = make_blobs(rng, n, d, k, 1.0, 20.0, 8.0);
    const double density = uniform_real(rng, 0.3, 0.9);
    for (double& v : b.X)
      if (uniform_real(rng, 0.0, 1.0) > density) v = 0.0;
    const bool weighted = trial == 1;
    std::vector<double> w = weighted ? random_weights(rng, n) : std::vector<double>(n, 1.0);
    SCOPED_TRACE("n=" + std::to_string(n) + " d=" + std::to_string(d) + " k=" + std::to_string(k) +
                 (weighted ? " weighted" : ""));
    const KMeansParams p = seeded("k-means||", k, rng());
    Context ctx = Context::cpu(2);
    const Fitted dense = fit(ctx, p, b.X, n, d, weighted ? &w : nullptr);
    for (SparseFormat format : {SparseFormat::csr, SparseFormat::csc}) {
      const SparseCopy X = sparse_copy(b.X, n, d, format);
      KMeans km(p);
      ArrayView wv = host_view(w.data(), n);
      km.fit(ctx, X.view, weighted ? &wv : nullptr);
      const Fitted got = summarize(km);
      // Distances through products round at eps |x|² instead of eps |x - c|² (as SparseMatchesReference).
      expect_near_scaled(got.centers, dense.centers, 1e-9, "centers");
      expect_labels_match(got.labels, dense.labels, nearest_gaps(b.X, n, d, dense.centers, k), 1e-9);
      expect_rel_near(got.inertia, dense.inertia, 1e-9, "inertia");
    }
  }
}

// ---- errors -----------------------------------------------------------------------------------

class KMeansErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(test::fresh_seed());
    blobs = make_blobs(rng, n, d, 3, 1.0, 5.0);
    params.n_clusters = 3;
  }
  ArrayView X() { return host_view(blobs.X.data(), n, d); }
  KMeans fitted() {
    KMeans km(params);
    km.fit(ctx, X());
    return km;
  }
  const int64_t n = 40, d = 4;
  Blobs blobs;
  KMeansParams params;
  Context ctx = Context::cpu(2);
};

TEST_F(KMeansErrors, NonFiniteX) {
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    std::vector<double> x = blobs.X;
    x[x.size() / 2] = bad;
    KMeans km(params);
    GPUML_EXPECT_ERROR(km.fit(ctx, host_view(x.data(), n, d)), ErrorCode::invalid_argument);
    std::vector<float> xf = test::cast_vector<float>(x);
    GPUML_EXPECT_ERROR(km.fit(ctx, host_view(xf.data(), n, d)), ErrorCode::invalid_argument);
    KMeans good = fitted();
    std::vector<int32_t> labels(n);
    GPUML_EXPECT_ERROR(good.predict(ctx, host_view(x.data(), n, d), host_view(labels.data(), n)), ErrorCode::invalid_argument);
  }
}

TEST_F(KMeansErrors, EmptyOrMisshapenX) {
  KMeans km(params);
  GPUML_EXPECT_ERROR(km.fit(ctx, host_view(blobs.X.data(), 0, d)), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(km.fit(ctx, host_view(blobs.X.data(), n, 0)), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(km.fit(ctx, host_view(blobs.X.data(), n * d)), ErrorCode::invalid_argument);  // 1-d
  ArrayView negative = X();
  negative.strides[0] = -d;
  GPUML_EXPECT_ERROR(km.fit(ctx, negative), ErrorCode::invalid_argument);
  ArrayView null_data = X();
  null_data.data = nullptr;
  GPUML_EXPECT_ERROR(km.fit(ctx, null_data), ErrorCode::invalid_argument);
  EXPECT_FALSE(km.fitted());
}

TEST_F(KMeansErrors, MoreClustersThanSamples) {
  params.n_clusters = n + 1;
  KMeans km(params);
  try {
    km.fit(ctx, X());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(std::to_string(n)), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(n + 1)), std::string::npos) << msg;
  }
}

TEST_F(KMeansErrors, WrongDtype) {
  KMeans km(params);
  ArrayView bad = X();
  bad.dtype = static_cast<DType>(9);
  GPUML_EXPECT_ERROR(km.fit(ctx, bad), ErrorCode::invalid_argument);
  KMeans good = fitted();
  std::vector<int32_t> int_out(n * 3);
  // Distances cannot be written into integers.
  GPUML_EXPECT_ERROR(good.transform(ctx, X(), host_view(int_out.data(), n, 3)), ErrorCode::invalid_argument);
}

TEST_F(KMeansErrors, WrongWidthOrOutputShapeAtPredict) {
  KMeans km = fitted();
  std::vector<double> wide(n * (d + 1), 1.0);
  std::vector<int32_t> labels(n);
  try {
    km.predict(ctx, host_view(wide.data(), n, d + 1), host_view(labels.data(), n));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(std::to_string(d)), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(d + 1)), std::string::npos) << msg;
  }
  std::vector<double> dist(n * 3);
  GPUML_EXPECT_ERROR(km.transform(ctx, host_view(wide.data(), n, d + 1), host_view(dist.data(), n, 3)),
                     ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(km.score(ctx, host_view(wide.data(), n, d + 1)), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(km.predict(ctx, X(), host_view(labels.data(), n - 1)), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(km.transform(ctx, X(), host_view(dist.data(), n, 2)), ErrorCode::invalid_argument);
  GPUML_EXPECT_ERROR(km.predict(ctx, host_view(blobs.X.data(), 0, d), host_view(labels.data(), 0)),
                     ErrorCode::invalid_argument);
}

TEST_F(KMeansErrors, NotFitted) {
  KMeans km(params);
  std::vector<int32_t> labels(n);
  std::vector<double> dist(n * 3);
  GPUML_EXPECT_ERROR(km.predict(ctx, X(), host_view(labels.data(), n)), ErrorCode::not_fitted);
  GPUML_EXPECT_ERROR(km.transform(ctx, X(), host_view(dist.data(), n, 3)), ErrorCode::not_fitted);
  GPUML_EXPECT_ERROR(km.score(ctx, X()), ErrorCode::not_fitted);
  GPUML_EXPECT_ERROR(km.cluster_centers(), ErrorCode::not_fitted);
  GPUML_EXPECT_ERROR(km.inertia(), ErrorCode::not_fitted);
  GPUML_EXPECT_ERROR(km.attribute("labels_"), ErrorCode::not_fitted);
  GPUML_EXPECT_ERROR(km.output_spec("transform", n), ErrorCode::not_fitted);
}

TEST_F(KMeansErrors, BadSampleWeight) {
  KMeans km(params);
  auto expect_rejected = [&](std::vector<double> w, int64_t length) {
    ArrayView v = host_view(w.data(), length);
    GPUML_EXPECT_ERROR(km.fit(ctx, X(), &v), ErrorCode::invalid_argument);
  };
  std::vector<double> w(n, 1.0);
  expect_rejected(w, n - 1);  // wrong length
  w[3] = -0.5;
  expect_rejected(w, n);  // negative
  w[3] = std::nan("");
  expect_rejected(w, n);
  w[3] = std::numeric_limits<double>::infinity();
  expect_rejected(w, n);
  expect_rejected(std::vector<double>(n, 0.0), n);  // zero sum
  std::vector<double> two_d(n, 1.0);
  ArrayView v2 = host_view(two_d.data(), n, 1);
  GPUML_EXPECT_ERROR(km.fit(ctx, X(), &v2), ErrorCode::invalid_argument);
  EXPECT_FALSE(km.fitted());
  // score validates its weights the same way.
  KMeans good = fitted();
  std::vector<double> negative(n, -1.0);
  ArrayView nv = host_view(negative.data(), n);
  GPUML_EXPECT_ERROR(good.score(ctx, X(), &nv), ErrorCode::invalid_argument);
}

TEST_F(KMeansErrors, BadParams) {
  auto expect_rejected = [](KMeansParams p) { GPUML_EXPECT_ERROR(KMeans{p}, ErrorCode::invalid_argument); };
  KMeansParams p;
  p.n_clusters = 0;
  expect_rejected(p);
  p = {};
  p.max_iter = 0;
  expect_rejected(p);
  p = {};
  p.tol = -1e-3;
  expect_rejected(p);
  p.tol = std::nan("");
  expect_rejected(p);
  p = {};
  p.n_init = -1;
  expect_rejected(p);
  p = {};
  p.init = "kmeans++";
  expect_rejected(p);
  p = {};
  p.init_array = {1.0, 2.0};  // given without init = "array"
  expect_rejected(p);
  p = {};
  p.init = "array";  // without values
  expect_rejected(p);
  p.n_clusters = 3;
  p.init_array = {1, 2, 3, 4};  // not a multiple of n_clusters
  expect_rejected(p);
  p.init_array = {1, 2, std::nan(""), 4, 5, 6};
  expect_rejected(p);
  // A valid array whose width does not match X is caught at fit.
  p.init_array = {1, 2, 3, 4, 5, 6};  // 3 x 2, X has 4 features
  KMeans km(p);
  GPUML_EXPECT_ERROR(km.fit(ctx, X()), ErrorCode::invalid_argument);
}

TEST(KMeansJson, ParamsRoundTrip) {
  auto est = make_estimator("kmeans", R"({"n_clusters": 2, "init": [[1, 2.5], [-3, 4]], "n_init": 3,
                                          "max_iter": 17, "tol": 0.25, "random_state": 12345})");
  ASSERT_EQ(std::string(est->kind()), "kmeans");
  const auto& km = dynamic_cast<const KMeans&>(*est);
  EXPECT_EQ(km.params().n_clusters, 2);
  EXPECT_EQ(km.params().init, "array");
  EXPECT_EQ(km.params().init_array, (std::vector<double>{1, 2.5, -3, 4}));
  EXPECT_EQ(km.params().n_init, 3);
  EXPECT_EQ(km.params().max_iter, 17);
  EXPECT_EQ(km.params().tol, 0.25);
  ASSERT_TRUE(km.params().random_state.has_value());
  EXPECT_EQ(*km.params().random_state, 12345u);
  // get_params_json feeds make_estimator back to the same parameters.
  auto again = make_estimator("kmeans", est->get_params_json());
  EXPECT_EQ(again->get_params_json(), est->get_params_json());

  auto defaults = make_estimator("kmeans", "");
  const auto& d = dynamic_cast<const KMeans&>(*defaults);
  EXPECT_EQ(d.params().n_clusters, 8);
  EXPECT_EQ(d.params().init, "k-means++");
  EXPECT_EQ(d.params().n_init, 0);
  EXPECT_FALSE(d.params().random_state.has_value());
  auto back = make_estimator("kmeans", defaults->get_params_json());
  EXPECT_EQ(back->get_params_json(), defaults->get_params_json());
  auto random = make_estimator("kmeans", R"({"init": "random", "n_init": "auto", "random_state": null})");
  EXPECT_EQ(dynamic_cast<const KMeans&>(*random).params().init, "random");
}

TEST(KMeansJson, BadJsonIsRejected) {
  for (const char* bad : {
           "{", "[1, 2]", "3", R"({"n_cluster": 3})", R"({"n_clusters": "3"})", R"({"n_clusters": 2.5})",
           R"({"n_clusters": 0})", R"({"init": 5})", R"({"init": "kmeans"})", R"({"init": "array"})",
           R"({"init": []})", R"({"n_clusters": 2, "init": [[1, 2], [3]]})", R"({"n_clusters": 2, "init": [[1, "a"], [3, 4]]})",
           R"({"n_clusters": 2, "init": [1, 2]})", R"({"n_clusters": 3, "init": [[1, 2], [3, 4]]})",
           R"({"n_init": "many"})", R"({"n_init": 0})", R"({"n_init": -2})", R"({"max_iter": 0})",
           R"({"max_iter": 1e12})", R"({"tol": "small"})", R"({"tol": -1})", R"({"random_state": -1})",
           R"({"random_state": "seed"})", R"({"n_clusters": 3, "extra": true})"}) {
    GPUML_EXPECT_ERROR(make_estimator("kmeans", bad), ErrorCode::invalid_argument);
  }
  GPUML_EXPECT_ERROR(make_estimator("kmeanz", "{}"), ErrorCode::invalid_argument);
  const auto kinds = estimator_kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "kmeans"), kinds.end());
}

// ---- CUDA against the CPU ---------------------------------------------------------------------

// Fits the same inputs and parameters on the CPU and on the GPU.
template <typename T>
std::pair<Fitted, Fitted> fit_both(Context& gpu, const KMeansParams& p, const std::vector<T>& X, int64_t n, int64_t d,
                                   const std::vector<T>* w = nullptr) {
  Context cpu = Context::cpu();
  Fitted on_cpu = fit(cpu, p, X, n, d, w);
  Fitted on_gpu = fit(gpu, p, X, n, d, w);
  return {on_cpu, on_gpu};
}

TEST(KMeansGpu, MatchesCpuFloat64) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 1000, 20000), d = uniform_int(rng, 1, 40), k = uniform_int(rng, 1, 40);
  Blobs b = make_blobs(rng, n, d, uniform_int(rng, 2, 20), 2.0, 5.0);
  const std::vector<double> w = random_weights(rng, n);
  const KMeansParams p = array_init(random_rows(rng, b.X, n, d, k), k, 100, 1e-4);
  auto [cpu, gpu_fit] = fit_both(gpu, p, b.X, n, d, &w);
  expect_near_scaled(gpu_fit.centers, cpu.centers, 1e-9, "centers");  // float64: summation order and distance formula
  expect_labels_match(gpu_fit.labels, cpu.labels, nearest_gaps(b.X, n, d, cpu.centers, k), 1e-9);
  expect_rel_near(gpu_fit.inertia, cpu.inertia, 1e-6, "inertia");
  EXPECT_EQ(gpu_fit.n_iter, cpu.n_iter);
}

TEST(KMeansGpu, MatchesCpuFloat32) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 1000, 20000), d = uniform_int(rng, 2, 40), k = uniform_int(rng, 2, 30);
  // Well separated, seeded next to every blob: float32 rounding cannot move a row between clusters.
  Blobs b = make_blobs(rng, n, d, k, 1.0, 200.0, 15.0);
  const std::vector<float> X = test::cast_vector<float>(b.X), w = test::cast_vector<float>(random_weights(rng, n));
  const KMeansParams p = array_init(one_row_per_blob(b), k, 100, 1e-4);
  auto [cpu, gpu_fit] = fit_both(gpu, p, X, n, d, &w);
  expect_near_scaled(gpu_fit.centers, cpu.centers, 1e-4, "centers");  // float32
  expect_labels_match(gpu_fit.labels, cpu.labels, nearest_gaps(b.X, n, d, cpu.centers, k), 1e-4);
  // float32: the GPU assigns by |x|^2 + |c|^2 - 2 x.c, the CPU by sums of squared differences (the
  // inertia is such sums on both: refine_distances), and the rounding moves the centers a little
  // each iteration (1.2e-4 relative seen on an H200 before the inertia's distances were refined).
  expect_rel_near(gpu_fit.inertia, cpu.inertia, 5e-4, "inertia");
}

// The precision trap: float32 rows ~1e4 from the origin with spread ~1. Without centering the GPU's
// |x|^2 + |c|^2 - 2 x.c carries a rounding error of about eps * |x|^2 = 6e-8 * d * 1e8 ~ 6 d per
// squared distance (more after the GEMM's d additions), while the distances themselves are ~d:
// the inertia would be off by several times itself and every row whose two nearest centers are
// within ~6 d of each other could take the wrong label. Centered, |x|^2 ~ d * 20^2 / 3 and the
// error is ~1e-5 relative.
TEST(KMeansGpu, Float32FarFromOriginMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 2000, 20000), d = uniform_int(rng, 2, 40), k = uniform_int(rng, 2, 20);
  const Blobs b = make_blobs(rng, n, d, k, 1.0, 20.0, 8.0);
  const auto [Xf, Xd] = far_from_origin(rng, b);
  const std::vector<double> init(Xd.begin(), Xd.begin() + k * d);  // one row per blob
  for (int max_iter : {1, 100}) {
    SCOPED_TRACE("n=" + std::to_string(n) + " d=" + std::to_string(d) + " k=" + std::to_string(k) +
                 " max_iter=" + std::to_string(max_iter));
    auto [cpu, gpu_fit] = fit_both(gpu, array_init(init, k, max_iter, 1e-4), Xf, n, d);
    // Centered centers differ by ~1e-5; the final rounding near 1e4 may then land one float32
    // spacing (~1e-3) apart: two spacings of slack.
    expect_near_scaled(gpu_fit.centers, cpu.centers, 2e-7, "centers");
    expect_labels_match(gpu_fit.labels, cpu.labels, nearest_gaps(Xd, n, d, cpu.centers, k), 1e-4);
    // float32 distances by two formulas, as in MatchesCpuFloat32 (centered norms are smaller here).
    expect_rel_near(gpu_fit.inertia, cpu.inertia, 5e-4, "inertia");
  }
}

TEST(KMeansGpu, EmptyClusterRelocationMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 500, 5000), d = uniform_int(rng, 1, 8), k = uniform_int(rng, 3, 12);
  Blobs b = make_blobs(rng, n, d, 4, 1.0, 5.0);
  std::vector<double> init = random_rows(rng, b.X, n, d, k);
  for (int64_t j = 0; j < d; ++j) init[j] = init[(k - 1) * d + j] = 1e4;  // two far (and equal) centers
  for (int max_iter : {1, 3, 50}) {
    auto [cpu, gpu_fit] = fit_both(gpu, array_init(init, k, max_iter, 0.0), b.X, n, d);
    for (double c : gpu_fit.centers) ASSERT_TRUE(std::isfinite(c));
    expect_near_scaled(gpu_fit.centers, cpu.centers, 1e-9, "centers");
    expect_labels_match(gpu_fit.labels, cpu.labels, nearest_gaps(b.X, n, d, cpu.centers, k), 1e-9);
    expect_rel_near(gpu_fit.inertia, cpu.inertia, 1e-6, "inertia");
  }
}

// Issue 22 item 9 on CUDA: fewer distinct rows than clusters converges as on the CPU. The GPU's
// dist2 (|x|^2 + |c|^2 - 2 x.c) is not exactly 0 for a row on its center; the driver's test of
// the rows' exact distances must still see every row on its center.
TEST(KMeansGpu, FewerDistinctRowsThanClustersMatchesCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t distinct = uniform_int(rng, 3, 12), copies = uniform_int(rng, 50, 2000), d = uniform_int(rng, 1, 40);
  const int64_t k = distinct + uniform_int(rng, 1, 20);
  const Duplicates dup = make_duplicates(rng, distinct, copies, d);
  const std::vector<double> w = random_weights(rng, dup.n);
  std::vector<double> start = dup.points;  // the distinct points, then duplicates of them
  for (int64_t c = distinct; c < k; ++c) start.insert(start.end(), &dup.points[(c % distinct) * d], &dup.points[(c % distinct + 1) * d]);
  const std::vector<float> X32(dup.X.begin(), dup.X.end()), w32(w.begin(), w.end());
  for (bool float32 : {false, true}) {
    SCOPED_TRACE(float32 ? "float32" : "float64");
    // Centers are means of equal rows: within rounding of the data's scale (5).
    const double on_point = (float32 ? 1e-5 : 1e-12) * 5.0;
    KMeansParams kpp;
    kpp.n_clusters = k;
    kpp.random_state = rng();
    // The start exactly on rows of X (float32 rows are the points rounded to float).
    std::vector<double> on_rows = start;
    if (float32)
      for (double& v : on_rows) v = static_cast<float>(v);
    for (const KMeansParams& p : {kpp, array_init(on_rows, k, 300, 1e-4)}) {
      SCOPED_TRACE(p.init);
      auto [cpu, gpu_fit] = float32 ? fit_both(gpu, p, X32, dup.n, d, &w32) : fit_both(gpu, p, dup.X, dup.n, d, &w);
      EXPECT_LE(gpu_fit.n_iter, 2);
      EXPECT_LE(cpu.n_iter, 2);
      EXPECT_TRUE(same_partition(gpu_fit.labels, dup.source)) << "each distinct row must be one cluster";
      EXPECT_EQ(gpu_fit.distinct_clusters, distinct);
      expect_centers_on_points(gpu_fit.centers, dup, on_point);
      // The same start: the same iterations. (Labels may differ by a renamed cluster: a last
      // relocation onto a row a few ulps from its center picks the farthest by each backend's
      // rounding.)
      if (p.init == "array") EXPECT_EQ(gpu_fit.n_iter, cpu.n_iter);
      EXPECT_TRUE(same_partition(cpu.labels, dup.source));
    }
  }
}

// The CUDA backend runs k-means++ in device memory with each row's slice in registers where
// d fits (float64: d <= 32 or <= 128, even d), else reading the row per candidate: d covers all.
TEST(KMeansGpu, KMeansPlusPlusMakesTheSameChoices) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  for (const int64_t d : {uniform_int(rng, 1, 20), uniform_int(rng, 33, 140)}) {
    const int64_t n = uniform_int(rng, 1000, 20000), k = uniform_int(rng, 1, 32);
    Blobs b = make_blobs(rng, n, d, 10, 1.5, 8.0);
    const std::vector<double> w = random_weights(rng, n);
    for (const char* init : {"k-means++", "random"}) {
      SCOPED_TRACE(std::string(init) + ", d = " + std::to_string(d));
      KMeansParams p;
      p.n_clusters = k;
      p.init = init;
      p.random_state = rng();
      p.max_iter = 1;  // the centers after one step still show which rows were picked
      auto [cpu, gpu_fit] = fit_both(gpu, p, b.X, n, d, &w);
      expect_near_scaled(gpu_fit.centers, cpu.centers, 1e-9, "centers");
      p.max_iter = 300;
      auto [cpu_full, gpu_full] = fit_both(gpu, p, b.X, n, d, &w);
      expect_near_scaled(gpu_full.centers, cpu_full.centers, 1e-9, "centers");
      expect_rel_near(gpu_full.inertia, cpu_full.inertia, 1e-6, "inertia");
    }
  }
}

// k-means|| on CUDA draws the same rows as on the CPU: the per-row draws are keyed by (seed, round,
// row), the D² they compare with differ only by rounding, and the candidates are reduced on the
// host by the CPU backend in both fits. k up to 64: the reduction sees several hundred candidates.
TEST(KMeansGpu, KMeansParallelMakesTheSameChoices) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 1000, 20000), d = uniform_int(rng, 1, 20), k = uniform_int(rng, 1, 64);
  Blobs b = make_blobs(rng, n, d, 10, 1.5, 8.0);
  const std::vector<double> w = random_weights(rng, n);
  KMeansParams p;
  p.n_clusters = k;
  p.init = "k-means||";
  p.random_state = rng();
  p.max_iter = 1;  // the centers after one step still show which rows were picked
  auto [cpu, gpu_fit] = fit_both(gpu, p, b.X, n, d, &w);
  expect_near_scaled(gpu_fit.centers, cpu.centers, 1e-9, "centers");
  p.max_iter = 300;
  auto [cpu_full, gpu_full] = fit_both(gpu, p, b.X, n, d, &w);
  expect_near_scaled(gpu_full.centers, cpu_full.centers, 1e-9, "centers");
  expect_rel_near(gpu_full.inertia, cpu_full.inertia, 1e-6, "inertia");
  // float32, well-separated blobs (no row near a boundary, as MatchesCpuFloat32). On a line (d = 1)
  // at most 8: 30 centers 15 apart rarely fit in [-200, 200] when placed at random.
  const int64_t blobs = uniform_int(rng, 2, d == 1 ? 8 : 30);
  const Blobs sep = make_blobs(rng, n, d, blobs, 1.0, 200.0, 15.0);
  const std::vector<float> X32 = test::cast_vector<float>(sep.X), w32 = test::cast_vector<float>(w);
  p.n_clusters = blobs;
  // float32 D² round differently on the two backends (by ~eps |x|², against D² near 0 inside a
  // blob), so a few draws may differ and k-means++ on the candidates may take the blobs in
  // another order; the clustering is the same.
  auto [cpu32, gpu32] = fit_both(gpu, p, X32, n, d, &w32);
  expect_same_centers_any_order(gpu32.centers, cpu32.centers, blobs, d, 1e-4, "float32 centers");
  // As MatchesCpuFloat32. Before refine_distances the GPU's inertia summed |x|^2 + |c|^2 - 2 x.c,
  // off by 7.4e-4 here once (seed 7626765999480006769: rows ~200 from the origin, ~1 from centers).
  expect_rel_near(gpu32.inertia, cpu32.inertia, 5e-4, "float32 inertia");
}

TEST(KMeansGpu, PredictTransformScoreAgreeWithCpu) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 1000, 10000), d = uniform_int(rng, 1, 30), k = uniform_int(rng, 1, 20);
  Blobs b = make_blobs(rng, n, d, 6, 2.0, 6.0);
  KMeansParams p;
  p.n_clusters = k;
  p.random_state = rng();
  Context cpu = Context::cpu();
  KMeans km(p);
  km.fit(cpu, host_view(b.X.data(), n, d));
  const Fitted f = summarize(km);
  const std::vector<double> gaps = nearest_gaps(b.X, n, d, f.centers, k);
  double max_sq_norm = max_abs(f.centers) * max_abs(f.centers) * d;
  for (int64_t e = 0; e < n * d; ++e) max_sq_norm = std::max(max_sq_norm, b.X[e] * b.X[e] * d);

  for (bool single : {false, true}) {
    SCOPED_TRACE(single ? "float32" : "float64");
    const std::vector<float> Xf = test::cast_vector<float>(b.X);
    const ArrayView X = single ? host_view(Xf.data(), n, d) : host_view(b.X.data(), n, d);
    std::vector<int32_t> on_cpu(n), on_gpu(n);
    km.predict(cpu, X, host_view(on_cpu.data(), n));
    km.predict(gpu, X, host_view(on_gpu.data(), n));
    expect_labels_match(on_gpu, on_cpu, gaps, single ? 1e-4 : 1e-9);
    std::vector<double> dist_cpu(n * k), dist_gpu(n * k);
    km.transform(cpu, X, host_view(dist_cpu.data(), n, k));
    km.transform(gpu, X, host_view(dist_gpu.data(), n, k));
    // Squared distances may be computed as |x|^2 - 2 x.c + |c|^2 on the GPU, whose rounding error
    // scales with the norms, not with the distance: compare squared values at the norms' scale.
    const double eps = single ? 1e-5 : 1e-12;
    for (int64_t e = 0; e < n * k; ++e)
      ASSERT_NEAR(dist_gpu[e] * dist_gpu[e], dist_cpu[e] * dist_cpu[e], eps * max_sq_norm) << "element " << e;
    expect_rel_near(km.score(gpu, X), km.score(cpu, X), single ? 1e-4 : 1e-9, "score");
  }
}

TEST(KMeansGpu, LargeProblemUsesManyTiles) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const int64_t n = 200000, d = 32, k = 64;
  Blobs b = make_blobs(rng, n, d, k, 1.0, 50.0, 15.0);
  {
    // float64 from random rows: clusters split and merge, real boundaries; float64 rounding
    // is far below any gap the data has.
    const KMeansParams p = array_init(random_rows(rng, b.X, n, d, k), k, 20, 0.0);
    auto [cpu, gpu_fit] = fit_both(gpu, p, b.X, n, d);
    expect_near_scaled(gpu_fit.centers, cpu.centers, 1e-9, "centers");
    expect_labels_match(gpu_fit.labels, cpu.labels, nearest_gaps(b.X, n, d, cpu.centers, k), 1e-9);
    expect_rel_near(gpu_fit.inertia, cpu.inertia, 1e-6, "inertia");
    EXPECT_EQ(gpu_fit.n_iter, cpu.n_iter);
  }
  {
    // float32, seeded next to every blob so that no row sits near a boundary.
    const std::vector<float> X = test::cast_vector<float>(b.X);
    const KMeansParams p = array_init(one_row_per_blob(b), k, 50, 1e-4);
    auto [cpu, gpu_fit] = fit_both(gpu, p, X, n, d);
    expect_near_scaled(gpu_fit.centers, cpu.centers, 1e-4, "centers");
    expect_labels_match(gpu_fit.labels, cpu.labels, nearest_gaps(b.X, n, d, cpu.centers, k), 1e-4);
    expect_rel_near(gpu_fit.inertia, cpu.inertia, 1e-4, "inertia");
  }
}

}  // namespace
}  // namespace gpuml
