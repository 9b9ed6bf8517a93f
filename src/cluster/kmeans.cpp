// KMeans: validation, the dispatch to a backend, and the whole algorithm (n_init restarts,
// k-means++ and k-means|| seeding, Lloyd iterations, empty-cluster relocation), written once on
// top of the KMeansBackend<T> primitives. It follows scikit-learn's KMeans(algorithm="lloyd").
// Sparse X (CPU, one rank) runs the same algorithm through Rows<T>: distances from the sparse
// products.
//
// Distributed (SPMD): every rank of the context's communicator calls fit with its own rows.
// The fit is that of one process on all rows in rank order, with the same seed: the column
// means, the variance, the per-cluster sums and weights, the inertia and the k-means++
// potentials are summed over ranks; k-means++ and "random" draw global rows (the draw is
// answered by the rank that holds the row, and the row is shared with everyone); k-means||
// draws each row by its global index and gathers the chosen rows to every rank; empty-cluster
// relocation takes the farthest rows over all ranks. Every rank ends with the same centers,
// inertia and n_iter; labels_ are those of the rank's own rows. Without a communicator the
// context's local one (1 rank) makes every collective the identity: the same code path, and
// the same bits as before distribution existed.
#include "gpuml/cluster/kmeans.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "cluster/kmeans_backend.hpp"
#include "core/device_ops.hpp"
#include "core/magnitudes.hpp"
#include "core/distributed.hpp"
#include "core/param_table.hpp"
#include "core/parallel.hpp"
#include "core/random.hpp"
#include "core/registry.hpp"
#include "core/sparse_backend.hpp"
#include "core/staging.hpp"
#include "core/trace.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"
#include "gpuml/core/progress.hpp"

namespace gpuml {

namespace {

// distinct_clusters_ (not scikit-learn's): how many clusters hold a row, over all ranks; the
// Python fit warns as scikit-learn does when fewer than n_clusters do, without reading labels_.
const char* const kAttributeNames[] = {"cluster_centers_", "labels_", "inertia_", "n_iter_", "n_features_in_",
                                       "distinct_clusters_"};

// KMeans's parameters, declared once (core/param_table.hpp), in scikit-learn's order.
const detail::ParamTable<KMeansParams>& params_table() {
  using namespace detail;
  using P = KMeansParams;
  static const ParamTable<P> table(
      "kmeans",
      {
          field("n_clusters", &P::n_clusters, {integer_in(1)}, "The number of clusters, and of centers."),
          ParamRow<P>{"init", {one_of({"k-means++", "k-means||", "random"}), matrix()},
                      "How the first centers are chosen: \"k-means++\" seeding, \"k-means||\" (scalable "
                      "k-means++: a few passes over X oversample candidates, which k-means++ reduces to "
                      "n_clusters), \"random\" rows of X, or the centers themselves (n_clusters rows of "
                      "n_features).",
                      [](P& p, const nlohmann::json& v) {
                        p.init_array.clear();
                        if (v.is_string()) {
                          p.init = v.get<std::string>();
                          return;
                        }
                        p.init = "array";
                        // n_clusters is read first (the table's order): the rows must match it.
                        GPUML_EXPECT(static_cast<int64_t>(v.size()) == p.n_clusters,
                                     "kmeans parameter 'init' has " + std::to_string(v.size()) +
                                         " rows but n_clusters is " + std::to_string(p.n_clusters));
                        for (const auto& row : v)
                          for (const auto& x : row) p.init_array.push_back(x.get<double>());
                      },
                      [](const P& p) -> nlohmann::json {
                        if (p.init != "array") return p.init;
                        const std::size_t k = p.n_clusters > 0 ? static_cast<std::size_t>(p.n_clusters) : 1;
                        const std::size_t d = p.init_array.size() / k;
                        if (d == 0 || d * k != p.init_array.size()) return p.init_array;  // not a matrix: refused
                        nlohmann::json rows = nlohmann::json::array();
                        for (std::size_t c = 0; c < k; ++c)
                          rows.push_back(std::vector<double>(p.init_array.begin() + c * d, p.init_array.begin() + (c + 1) * d));
                        return rows;
                      }},
          ParamRow<P>{"n_init", {one_of({"auto"}), integer_in(1)},
                      "Runs from different seeds, the one of least inertia kept; \"auto\": 10 for \"random\", "
                      "else 1 (a given init always runs once).",
                      [](P& p, const nlohmann::json& v) {
                        if (v.is_string()) {
                          p.n_init = 0;
                          return;
                        }
                        const int64_t n = field_from_json<int64_t>(v);
                        if (n > std::numeric_limits<int>::max()) fail_narrow("n_init", v);
                        p.n_init = static_cast<int>(n);
                      },
                      [](const P& p) { return p.n_init == 0 ? nlohmann::json("auto") : nlohmann::json(p.n_init); }},
          field("max_iter", &P::max_iter, {integer_in(1)}, "The most Lloyd iterations of a run."),
          field("tol", &P::tol, {number_in(0)},
                "Convergence: the centers' squared shift, relative to the mean per-feature variance of X."),
          field("verbose", &P::verbose, {verbose()}, "Above 0, progress on stdout as scikit-learn prints it.")
              .per_rank(),
          field("random_state", &P::random_state, {seed()},
                "The seed of k-means++, k-means|| and \"random\"; null: the context's seed."),
          field("copy_x", &P::copy_x, {boolean()}, "Accepted, without effect: gpuml never writes to X.").per_rank(),
          field("algorithm", &P::algorithm, {one_of({"lloyd", "elkan"})},
                "Accepted: Elkan's algorithm gives Lloyd's result, so both run Lloyd's."),
      },
      [](const P& p) {
        if (p.init != "array") {
          GPUML_EXPECT(p.init_array.empty(), "kmeans parameter 'init' is \"" + p.init + "\" but init_array is set");
          return;
        }
        const std::size_t k = static_cast<std::size_t>(p.n_clusters);
        GPUML_EXPECT(p.init_array.size() % k == 0 && p.init_array.size() / k >= 1,
                     "kmeans parameter 'init' has " + std::to_string(p.init_array.size()) +
                         " values, not n_clusters=" + std::to_string(k) + " rows");
      });
  return table;
}

// The single dispatch point between the backends.
template <typename T>
std::unique_ptr<detail::KMeansBackend<T>> make_backend(const Context& ctx) {
  return ctx.is_cuda() ? detail::make_kmeans_cuda_backend<T>(ctx) : detail::make_kmeans_cpu_backend<T>(ctx);
}

using detail::check_matrix_shape;
using detail::float_dtype_for;
using detail::with_float_type;

// Sample weights in the backend's memory, with a host copy for the host-side steps.
template <typename T>
struct Weights {
  detail::Staged staged;  // what backends read
  HostArray host_copy;    // the copy of device weights
  const T* host = nullptr;  // nullptr: every weight is 1 (no sample_weight on a device: no host copy made)
  bool unit = false;        // no sample_weight: every weight is 1
  double total = 0.0;
  const T* device() const { return staged.view.as<const T>(); }
  T at(int64_t i) const { return host ? host[i] : T(1); }
};

template <typename T>
Weights<T> prepare_weights(Context& ctx, const ArrayView* sample_weight, int64_t n) {
  Weights<T> w;
  HostArray& host_copy = w.host_copy;
  detail::Staged& staged = w.staged;
  if (sample_weight == nullptr) {  // ones, filled where the backend reads them
    staged = detail::stage_filled(ctx, dtype_of<T>::value, n, 1.0);
    if (!ctx.is_cuda()) w.host = staged.view.as<const T>();
    w.unit = true;
    w.total = static_cast<double>(n);
    return w;
  }
  const ArrayView& sw = *sample_weight;
  GPUML_EXPECT(sw.ndim == 1, "sample_weight must be a 1-d array, got " + std::to_string(sw.ndim) + " dimension(s)");
  GPUML_EXPECT(sw.shape[0] == n, "sample_weight has " + std::to_string(sw.shape[0]) + " entries but X has " +
                                     std::to_string(n) + " samples");
  staged = detail::stage(ctx, sw, dtype_of<T>::value, "sample_weight");
  detail::require_finite(ctx, staged.view, "sample_weight");
  if (staged.view.device.is_cuda()) {
    host_copy = detail::to_host(ctx, staged.view);
    w.host = host_copy.as<T>();
  } else {
    w.host = staged.view.as<const T>();
  }
  for (int64_t i = 0; i < n; ++i) {
    GPUML_EXPECT(w.host[i] >= 0, "sample_weight must be non-negative, got " + std::to_string(static_cast<double>(w.host[i])) +
                                     " at index " + std::to_string(i));
    w.total += static_cast<double>(w.host[i]);
  }
  return w;  // the sum over all ranks must be positive: checked by the caller
}

// Rows over the ranks of a communicator: rank r holds rows [offset[r], offset[r] + rows[r]) of
// the union, in rank order.
struct RowLayout {
  Comm* comm = nullptr;
  std::vector<int64_t> rows, offset;
  int64_t total = 0;
  int rank() const { return comm->rank(); }
  int size() const { return comm->size(); }
};

// The checks before the first data collective (core/distributed.hpp), with KMeans's name.
template <typename F>
void check_on_every_rank(Comm& comm, const char* what, F&& check) {
  detail::check_on_every_rank(comm, "KMeans", what, std::forward<F>(check));
}

template <typename T>
std::vector<T> host_centers_as(const HostArray& centers) {
  const int64_t count = centers.spec().shape[0] * centers.spec().shape[1];
  std::vector<T> out(static_cast<std::size_t>(count));
  if (centers.dtype() == DType::float32)
    std::copy(centers.as<const float>(), centers.as<const float>() + count, out.begin());
  else
    std::copy(centers.as<const double>(), centers.as<const double>() + count, out.begin());
  return out;
}

// Extreme magnitudes at prediction: when the centers' squares leave T's comfortable range, the
// squared distances overflow, or underflow until every distance ties (or is 0). X and the centers
// are then scaled by the power of two e that brings the centers near 1 (exact; the nearest center
// is the same, and distances are 2^e times the true ones). Returns e (0: nothing scaled); read X
// from `copy` when it is not 0.
template <typename T>
int rescale_for_distances(Context& ctx, const detail::Staged& staged, detail::ScaledCopy& copy,
                          std::vector<T>& centers, int64_t d) {
  double top = 0.0;
  for (T c : centers) top = std::max(top, std::abs(static_cast<double>(c)));
  if (top == 0.0 || detail::squares_in_range<T>(top * top * static_cast<double>(d))) return 0;
  const int exponent = -(std::ilogb(top) + 1);
  copy = detail::scaled_copy(ctx, staged.view, exponent);
  for (T& c : centers) c = std::ldexp(c, exponent);
  return exponent;
}

// X as the algorithm reads it: every step that touches the rows, for dense X (the backend's
// primitives on the rows themselves) and for sparse X (the backend's primitives from the
// products X Cᵀ, with |x - c|² = |x|² - 2 x·c + |c|²: X is never made dense). n x d rows.
template <typename T>
class Rows {
 public:
  virtual ~Rows() = default;
  virtual int64_t assign(const T* centers_host, int64_t k, int32_t* labels, T* dist2, bool count_changes) = 0;
  // KMeansBackend::refine_distances on these rows (sparse rows keep the distances of their products).
  virtual void refine_distances(const T* /*centers_host*/, int64_t /*k*/, const int32_t* /*labels*/, T* /*dist2*/) {}
  virtual void gather_rows(const int64_t* idx_host, int64_t m, T* out_host) = 0;
  // KMeansBackend::lloyd_sums on these rows: centers and sums in the backend's memory.
  virtual void lloyd_sums(const T* weights, const T* centers, int64_t k, int32_t* labels, T* dist2, bool count_changes,
                          double* sums) = 0;
  virtual void candidate_potentials(const T* weights, const T* closest, const detail::NearestCenters<T>& known,
                                    const T* candidates_host, int64_t m, double* potentials_host) = 0;
  virtual void update_closest(const T* center_host, T* closest, const detail::NearestCenters<T>& known, bool reset) = 0;
  virtual void distances(const T* centers_host, int64_t k, T* out) = 0;
  // KMeansBackend::plusplus_steps on these rows; false where there is no such path.
  virtual bool plusplus_steps(const T* /*weights*/, T* /*closest*/, int32_t* /*nearest*/, double /*potential*/,
                              const double* /*uniforms_host*/, int64_t /*trials*/, int64_t /*from*/, int64_t /*k*/,
                              T* /*centers_host*/) {
    return false;
  }
  // Whether k-means++ may skip rows through their nearest centers (detail::NearestCenters):
  // the distances are sums of squared differences. reads_gaps: whether the fine primitives
  // (the driver's loop) use the gaps, which the driver then computes.
  virtual bool skips_rows() const { return false; }
  virtual bool reads_gaps() const { return false; }
  // The most candidates k-means|| assigns these rows to in one pass (given k clusters): sparse
  // rows take their products, n x batch, so no more than a Lloyd iteration's.
  virtual int64_t candidate_batch(int64_t k) const { return k; }
};

template <typename T>
class DenseRows final : public Rows<T> {
 public:
  // unit_weights: the weights passed to accumulate are all 1, and the backend is told so (nullptr)
  // rather than reading them (a gather of n scattered values on the GPU).
  DenseRows(detail::KMeansBackend<T>& backend, const T* X, int64_t n, int64_t d, bool unit_weights = false)
      : backend_(backend), X_(X), n_(n), d_(d), unit_weights_(unit_weights) {}
  int64_t assign(const T* centers_host, int64_t k, int32_t* labels, T* dist2, bool count_changes) override {
    return backend_.assign(X_, n_, d_, centers_host, k, labels, dist2, count_changes);
  }
  void refine_distances(const T* centers_host, int64_t k, const int32_t* labels, T* dist2) override {
    backend_.refine_distances(X_, n_, d_, centers_host, k, labels, dist2);
  }
  void gather_rows(const int64_t* idx_host, int64_t m, T* out_host) override {
    backend_.gather_rows(X_, n_, d_, idx_host, m, out_host);
  }
  void lloyd_sums(const T* weights, const T* centers, int64_t k, int32_t* labels, T* dist2, bool count_changes,
                  double* sums) override {
    backend_.lloyd_sums(X_, unit_weights_ ? nullptr : weights, n_, d_, centers, k, labels, dist2, count_changes, sums);
  }
  void candidate_potentials(const T* weights, const T* closest, const detail::NearestCenters<T>& known,
                            const T* candidates_host, int64_t m, double* potentials_host) override {
    backend_.candidate_potentials(X_, weights, closest, known, n_, d_, candidates_host, m, potentials_host);
  }
  void update_closest(const T* center_host, T* closest, const detail::NearestCenters<T>& known, bool reset) override {
    backend_.update_closest(X_, n_, d_, center_host, closest, known, reset);
  }
  void distances(const T* centers_host, int64_t k, T* out) override { backend_.distances(X_, n_, d_, centers_host, k, out); }
  bool plusplus_steps(const T* weights, T* closest, int32_t* nearest, double potential, const double* uniforms_host,
                      int64_t trials, int64_t from, int64_t k, T* centers_host) override {
    return backend_.plusplus_steps(X_, weights, n_, d_, closest, nearest, potential, uniforms_host, trials, from, k,
                                   centers_host);
  }
  bool skips_rows() const override { return true; }
  bool reads_gaps() const override { return backend_.reads_gaps(); }
  // Dense rows: a round's candidates (about 2k) in one pass over X where they number at most 8192
  // (or k): one pass instead of two saves reading X and settling its rows again.
  int64_t candidate_batch(int64_t k) const override { return std::max<int64_t>(k, 8192); }

 private:
  detail::KMeansBackend<T>& backend_;
  const T* X_;
  int64_t n_, d_;
  bool unit_weights_;
};

template <typename T>
class SparseRows final : public Rows<T> {
 public:
  SparseRows(Context& ctx, detail::KMeansBackend<T>& backend, detail::SparseMatrix<T>& X)
      : ctx_(ctx), backend_(backend), X_(X), n_(X.rows()), d_(X.cols()),
        row_norms_(ctx, static_cast<std::size_t>(X.rows()) * sizeof(T)) {
    X_.row_squared_norms(row_norms_.as<T>());
  }
  int64_t assign(const T* centers_host, int64_t k, int32_t* labels, T* dist2, bool count_changes) override {
    const T* products = times(centers_host, k);
    return backend_.assign_from_products(products, row_norms_.as<const T>(), n_, squared_norms(centers_host, k).data(), k,
                                         labels, dist2, count_changes);
  }
  void gather_rows(const int64_t* idx_host, int64_t m, T* out_host) override { X_.dense_rows(idx_host, m, out_host); }
  // Through the host: the products need the centers there, and the sums come back there.
  void lloyd_sums(const T* weights, const T* centers, int64_t k, int32_t* labels, T* dist2, bool count_changes,
                  double* sums) override {
    std::vector<T> centers_host(static_cast<std::size_t>(k * d_));
    detail::copy_bytes(ctx_, centers_host.data(), Device{}, centers, ctx_.device(), centers_host.size() * sizeof(T));
    const int64_t changed = assign(centers_host.data(), k, labels, dist2, count_changes);
    std::vector<double> feature_sums(static_cast<std::size_t>(k * d_)), weight_sums(static_cast<std::size_t>(k));
    X_.grouped_row_sums(labels, weights, k, feature_sums.data(), weight_sums.data());
    std::vector<double> packed(static_cast<std::size_t>(detail::lloyd_sums_size(k, d_)));
    detail::pack_lloyd_sums(feature_sums.data(), weight_sums.data(), k, d_, static_cast<double>(changed), packed.data());
    detail::copy_bytes(ctx_, sums, ctx_.device(), packed.data(), Device{}, packed.size() * sizeof(double));
  }
  void candidate_potentials(const T* weights, const T* closest, const detail::NearestCenters<T>& /*known*/,
                            const T* candidates_host, int64_t m, double* potentials_host) override {
    const T* products = times(candidates_host, m);
    backend_.candidate_potentials_from_products(products, row_norms_.as<const T>(), weights, closest, n_,
                                                squared_norms(candidates_host, m).data(), m, potentials_host);
  }
  void update_closest(const T* center_host, T* closest, const detail::NearestCenters<T>& /*known*/, bool reset) override {
    const T* products = times(center_host, 1);
    backend_.update_closest_from_products(products, row_norms_.as<const T>(), n_, squared_norms(center_host, 1)[0],
                                          closest, reset);
  }
  void distances(const T* centers_host, int64_t k, T* out) override {
    detail::times_rows(ctx_, X_, d_, centers_host, k, out);
    backend_.distances_from_products(out, row_norms_.as<const T>(), n_, squared_norms(centers_host, k).data(), k);
  }

 private:
  // X Mᵀ for m dense rows M (host) into a scratch buffer kept between calls.
  const T* times(const T* rows_host, int64_t m) {
    const std::size_t bytes = static_cast<std::size_t>(n_ * m) * sizeof(T);
    if (products_.bytes() < bytes) products_ = Buffer(ctx_, bytes);
    detail::times_rows(ctx_, X_, d_, rows_host, m, products_.as<T>());
    return products_.as<const T>();
  }
  // |c|² of m dense rows, summed in double and rounded to T.
  std::vector<T> squared_norms(const T* rows_host, int64_t m) const {
    std::vector<T> norms(static_cast<std::size_t>(m));
    for (int64_t c = 0; c < m; ++c) {
      double sum = 0.0;
      for (int64_t j = 0; j < d_; ++j) sum += static_cast<double>(rows_host[c * d_ + j]) * static_cast<double>(rows_host[c * d_ + j]);
      norms[c] = static_cast<T>(sum);
    }
    return norms;
  }

  Context& ctx_;
  detail::KMeansBackend<T>& backend_;
  detail::SparseMatrix<T>& X_;
  int64_t n_, d_;
  Buffer row_norms_;  // |x_i|², n values
  Buffer products_;   // X Cᵀ, n x (centers or candidates)
};

// Sparse X times 2^exponent: its canonical host copy with the values scaled (exact, but for
// values below 2^-1000 of the largest). exponent == 0 when X is all zeros.
struct ScaledSparse {
  SparseHostMatrix matrix;
  int exponent = 0;
};

// X scaled so that max |value| lies in [1/2, 1), or by the given exponent.
ScaledSparse scaled_sparse(Context& ctx, const SparseView& X, std::optional<int> exponent = std::nullopt) {
  ScaledSparse out;
  out.matrix = canonicalize(ctx, X, "X");
  const SparseView v = out.matrix.view();
  with_float_type(v.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(out.matrix.values());
    if (exponent) {
      out.exponent = *exponent;
    } else {
      double top = 0.0;
      for (int64_t e = 0; e < v.nnz; ++e) top = std::max(top, std::abs(static_cast<double>(values[e])));
      out.exponent = top == 0.0 ? 0 : -(std::ilogb(top) + 1);
    }
    for (int64_t e = 0; e < v.nnz; ++e) values[e] = std::ldexp(values[e], out.exponent);
  });
  return out;
}

// The random choices of rows, over the rows of every rank of `comm` (rank r's local row i is row
// offset + i of the union, in rank order): k-means++ and the draws behind "random" and k-means||.
// A fit seeds from X's rows; k-means|| also runs k-means++ on its weighted candidates (one rank,
// the host's CPU backend).
template <typename T>
class Seeder {
 public:
  Seeder(Context& ctx, detail::KMeansBackend<T>& backend, Rows<T>& rows, Comm& comm, int64_t n, int64_t d, int64_t offset)
      : ctx_(ctx), backend_(backend), rows_(rows), comm_(comm), n_(n), d_(d), offset_(offset) {}

  // Greedy k-means++, as scikit-learn's _kmeans_plusplus: each new center is the best of
  // 2 + floor(ln k) candidates drawn with probability proportional to weight * distance^2.
  // weights: in the backend's memory; local_total: their sum on this rank. centers: k x d.
  void kmeans_plusplus(detail::Random& rng, const T* weights, double local_total, int64_t k, T* centers) {
    Buffer closest_buffer(ctx_, static_cast<std::size_t>(n_) * sizeof(T));
    T* closest = closest_buffer.as<T>();
    // Each row's nearest center: what lets the steps skip rows (detail::NearestCenters).
    // GPUML_KMEANS_SKIP_ROWS=0 reads every row (for comparison: the same bits either way).
    const char* skip = std::getenv("GPUML_KMEANS_SKIP_ROWS");
    Buffer nearest_buffer;
    if (rows_.skips_rows() && !(skip && std::strcmp(skip, "0") == 0)) nearest_buffer = Buffer(ctx_, static_cast<std::size_t>(n_) * sizeof(int32_t));
    int32_t* nearest = nearest_buffer.as<int32_t>();
    std::vector<double> prefix;  // the cumulative sums of the ranks' totals
    double threshold = rng.uniform() * rank_prefix(local_total, prefix);
    search_rows(weights, nullptr, prefix, &threshold, 1, centers);
    rows_.update_closest(centers, closest, detail::NearestCenters<T>{nearest, nullptr, 0}, /*reset=*/true);
    plusplus_steps(rng, weights, closest, nearest, 1, k, centers);
  }

  // The k-means++ steps that choose centers[from, k) when centers[0, from) are chosen and
  // closest (the backend's memory) holds every local row's squared distance to the nearest of
  // them; nearest (or null: no row is skipped) the index of that center.
  void plusplus_steps(detail::Random& rng, const T* weights, T* closest, int32_t* nearest, int64_t from, int64_t k,
                      T* centers) {
    const int64_t trials = 2 + static_cast<int64_t>(std::floor(std::log(static_cast<double>(k))));
    double local_potential = backend_.weighted_sum(weights, closest, n_);
    // Every step's draws, in the order the steps take them (the same on every rank).
    std::vector<double> uniforms(static_cast<std::size_t>(std::max<int64_t>(k - from, 0) * trials));
    for (double& u : uniforms) u = rng.uniform();
    // One process: the backend may run all the steps in its own memory (the GPU: no host round
    // trip per center).
    if (comm_.size() == 1 &&
        rows_.plusplus_steps(weights, closest, nearest, local_potential, uniforms.data(), trials, from, k, centers))
      return;
    std::vector<double> prefix;
    std::vector<double> thresholds(static_cast<std::size_t>(trials)), potentials(static_cast<std::size_t>(trials));
    std::vector<T> candidate_rows(static_cast<std::size_t>(trials * d_));
    std::vector<T> gaps, chosen_gaps;  // |candidate - center|², centers x trials; the chosen one's column
    const bool with_gaps = nearest != nullptr && rows_.reads_gaps();
    for (int64_t c = from; c < k; ++c) {
      const double potential = rank_prefix(local_potential, prefix);
      for (int64_t t = 0; t < trials; ++t) thresholds[t] = uniforms[(c - from) * trials + t] * potential;
      search_rows(weights, closest, prefix, thresholds.data(), trials, candidate_rows.data());
      if (with_gaps) center_gaps(centers, c, candidate_rows.data(), trials, gaps);
      const detail::NearestCenters<T> known{nearest, with_gaps ? gaps.data() : nullptr, c};
      rows_.candidate_potentials(weights, closest, known, candidate_rows.data(), trials, potentials.data());
      const std::vector<double> local_potentials = potentials;
      comm_.allreduce_sum(potentials.data(), trials);
      const int64_t best = std::min_element(potentials.begin(), potentials.end()) - potentials.begin();
      std::copy_n(candidate_rows.begin() + best * d_, d_, centers + c * d_);
      if (with_gaps) {
        chosen_gaps.resize(static_cast<std::size_t>(c));
        for (int64_t a = 0; a < c; ++a) chosen_gaps[a] = gaps[a * trials + best];
      }
      const detail::NearestCenters<T> chosen{nearest, with_gaps ? chosen_gaps.data() : nullptr, c};
      rows_.update_closest(centers + c * d_, closest, chosen, /*reset=*/false);
      local_potential = local_potentials[best];
    }
  }

  // gaps[a * m + q] = |candidate q - center a|² for the centers [0, count), summed in feature
  // order (any order keeps detail::PlusPlusBound's margin).
  void center_gaps(const T* centers, int64_t count, const T* candidates, int64_t m, std::vector<T>& gaps) const {
    gaps.resize(static_cast<std::size_t>(count * m));
#pragma omp parallel for num_threads(count * m * d_ < (int64_t{1} << 18) ? 1 : ctx_.n_threads()) schedule(static)
    for (int64_t a = 0; a < count; ++a)
      for (int64_t q = 0; q < m; ++q) {
        T sum = 0;
        for (int64_t j = 0; j < d_; ++j) {
          const T diff = candidates[q * d_ + j] - centers[a * d_ + j];
          sum += diff * diff;
        }
        gaps[a * m + q] = sum;
      }
  }

  // Every rank's `local` gathered in rank order; prefix[r] = the sum of ranks before r (size+1
  // entries); returns the sum over all ranks, the same bits on every rank.
  double rank_prefix(double local, std::vector<double>& prefix) {
    const std::vector<double> all = comm_.allgather(local);
    prefix.assign(all.size() + 1, 0.0);
    for (std::size_t r = 0; r < all.size(); ++r) prefix[r + 1] = r == 0 ? all[0] : prefix[r] + all[r];
    return prefix.back();
  }

  // search_cumsum over the rows of all ranks (prefix from rank_prefix of the ranks' sums of
  // weights * values): each threshold is answered by the first rank whose cumulative sum
  // passes it (the last rank when none does), which searches its rows for the rest of it.
  // The m chosen rows go into out_host (m x d) on every rank.
  void search_rows(const T* weights, const T* values, const std::vector<double>& prefix, const double* thresholds,
                   int64_t m, T* out_host) {
    const int size = comm_.size(), rank = comm_.rank();
    std::vector<int64_t> mine, slot;  // local thresholds' positions
    std::vector<double> local_thresholds;
    for (int64_t q = 0; q < m; ++q) {
      int owner = size - 1;
      for (int r = 0; r < size; ++r)
        if (prefix[r + 1] > thresholds[q]) {
          owner = r;
          break;
        }
      if (owner != rank) continue;
      slot.push_back(q);
      local_thresholds.push_back(thresholds[q] - prefix[rank]);
    }
    mine.resize(slot.size());
    if (!slot.empty())
      backend_.search_cumsum(weights, values, n_, local_thresholds.data(), static_cast<int64_t>(slot.size()), mine.data());
    share_local_rows(mine, slot, m, out_host);
  }

  // Rows given by global index (rows of the union, in rank order) into out_host on every rank.
  void share_rows(const std::vector<int64_t>& global_rows, T* out_host) {
    const int64_t begin = offset_;
    std::vector<int64_t> mine, slot;
    for (std::size_t e = 0; e < global_rows.size(); ++e)
      if (global_rows[e] >= begin && global_rows[e] < begin + n_) {
        mine.push_back(global_rows[e] - begin);
        slot.push_back(static_cast<int64_t>(e));
      }
    share_local_rows(mine, slot, static_cast<int64_t>(global_rows.size()), out_host);
  }

  // Each rank contributes its local rows `mine` to the slots `slot` of an m x d result that
  // every rank receives (every slot is filled by exactly one rank). The rows cross as doubles
  // (exact for T) and are summed with the zeros of the other ranks, which leaves them unchanged.
  void share_local_rows(const std::vector<int64_t>& mine, const std::vector<int64_t>& slot, int64_t m, T* out_host) {
    std::vector<T> rows(mine.size() * static_cast<std::size_t>(d_));
    if (!mine.empty()) rows_.gather_rows(mine.data(), static_cast<int64_t>(mine.size()), rows.data());
    std::vector<double> shared(static_cast<std::size_t>(m * d_), 0.0);
    for (std::size_t e = 0; e < slot.size(); ++e)
      for (int64_t j = 0; j < d_; ++j) shared[slot[e] * d_ + j] = static_cast<double>(rows[e * d_ + j]);
    comm_.allreduce_sum(shared.data(), m * d_);
    for (int64_t i = 0; i < m * d_; ++i) out_host[i] = static_cast<T>(shared[i]);
  }

 private:
  Context& ctx_;
  detail::KMeansBackend<T>& backend_;
  Rows<T>& rows_;
  Comm& comm_;
  int64_t n_, d_, offset_;
};

// One fit: the data, the weights and a backend, and the algorithm on top of them.
//
// As scikit-learn's KMeans.fit, the algorithm runs on X minus its column means, and the means
// are added back to the final centers. The GPU computes squared distances as
// |x|^2 + |c|^2 - 2 x.c, whose rounding error is about eps * |x|^2: on data far from the origin
// relative to its spread (float32 values ~1e3 spread ~10, say) that error is larger than the
// distances themselves. Centering makes |x| the size of the data's spread around its mean.
// Labels and inertia come from the centered fit (the same distances, up to rounding), as in
// scikit-learn. Sparse X, as in scikit-learn, is not centered (that would make it dense): its
// distances come from the products (SparseRows).
template <typename T>
class Fitter {
 public:
  struct Run {
    std::vector<T> centers;  // in X's original coordinates once fit() returns
    double inertia = 0.0;
    int64_t n_iter = 0;
    int64_t distinct_clusters = 0;  // of the kept run, over all ranks (set by fit())
  };

  // X is the staged input; it is centered in place when staging made a private copy of it.
  // layout: the rows of every rank; seed: the same on every rank.
  Fitter(Context& ctx, const KMeansParams& params, detail::Staged& X, int64_t n, int64_t d, const Weights<T>& weights,
         const RowLayout& layout, uint64_t seed)
      : ctx_(ctx), params_(params), backend_(make_backend<T>(ctx)), n_(n), d_(d), k_(params.n_clusters), weights_(weights),
        means_(static_cast<std::size_t>(d)), comm_(*layout.comm), layout_(layout), seed_(seed) {
    const T* original = X.view.as<const T>();
    backend_->column_means(original, n_, d_, means_.data());
    // The means of all rows: each rank's means weighted by its share of the rows, summed.
    // (One rank: its share is exactly 1 and the means are unchanged.)
    const double share = static_cast<double>(n_) / static_cast<double>(layout_.total);
    for (double& m : means_) m *= share;
    comm_.allreduce_sum(means_.data(), d_);
    T* centered = nullptr;
    if (X.owned.data() != nullptr && X.owned.data() == X.view.data) {
      centered = X.owned.as<T>();  // our own copy (converted or moved): no second copy needed
    } else {
      // The caller's memory is read-only to us: the centered copy doubles X's memory (on the
      // device for CUDA) for the duration of the fit.
      centered_copy_ = Buffer(ctx, static_cast<std::size_t>(n_ * d_) * sizeof(T));
      centered = centered_copy_.as<T>();
    }
    // The rank's rows' variance about the global means, in the pass that centers them.
    local_variance_ = backend_->center_columns(original, n_, d_, means_.data(), centered);
    backend_->keep_rows(centered, n_, d_);  // fixed from here on: every Lloyd assign reads these rows
    rows_ = std::make_unique<DenseRows<T>>(*backend_, centered, n_, d_, weights_.unit);
    centered_ = true;
  }

  // Sparse X on one rank: used as it is, through its products.
  Fitter(Context& ctx, const KMeansParams& params, detail::SparseMatrix<T>& X, const Weights<T>& weights,
         const RowLayout& layout, uint64_t seed)
      : ctx_(ctx), params_(params), backend_(make_backend<T>(ctx)), n_(X.rows()), d_(X.cols()), k_(params.n_clusters),
        weights_(weights), means_(static_cast<std::size_t>(X.cols())), comm_(*layout.comm), layout_(layout), seed_(seed) {
    std::vector<double> squares(static_cast<std::size_t>(d_));
    X.column_moments(means_.data(), squares.data());
    // The population variance of each column, E[x²] - E[x]² (sparse columns are rarely far
    // from 0 relative to their spread; the tolerance is all it scales).
    double variance = 0.0;
    for (int64_t j = 0; j < d_; ++j) {
      means_[j] /= static_cast<double>(n_);
      variance += std::max(0.0, squares[j] / static_cast<double>(n_) - means_[j] * means_[j]);
    }
    local_variance_ = variance / static_cast<double>(d_);
    // Uncentered distances: |x|² itself must stay in range (the mean row norm; the sums catch
    // values whose squares underflow to 0).
    double mean_row_norm = 0.0;
    bool nonzero = false;
    for (int64_t j = 0; j < d_; ++j) {
      mean_row_norm += squares[j] / static_cast<double>(n_);
      nonzero = nonzero || squares[j] != 0.0 || means_[j] != 0.0;
    }
    uncentered_in_range_ = !nonzero || detail::squares_in_range<T>(mean_row_norm);
    rows_ = std::make_unique<SparseRows<T>>(ctx, *backend_, X);
  }

  // Runs n_init restarts and keeps the one with the lowest inertia (the first on ties).
  // Labels of the kept run are left in `labels`.
  // `rescalable`: a variance whose squares leave T's comfortable range throws BadlyScaled (the
  // squared distances would overflow, or underflow and tie; least_squares.hpp).
  Run fit(Buffer& labels, bool rescalable) {
    const double variance = mean_column_variance();
    if (rescalable && (!uncentered_in_range_ || !detail::squares_in_range<T>(variance * static_cast<double>(d_))))
      throw detail::BadlyScaled{};
    const double tol_abs = params_.tol * variance;
    int n_runs = params_.n_init;
    if (params_.init == "array") n_runs = 1;  // a given init is deterministic: one run is enough
    else if (n_runs == 0) n_runs = params_.init == "random" ? 10 : 1;

    Buffer run_labels(ctx_, static_cast<std::size_t>(n_) * sizeof(int32_t));
    Buffer dist2(ctx_, static_cast<std::size_t>(n_) * sizeof(T));
    detail::Random runs(seed_);
    Run best;
    detail::Trace trace(ctx_, "kmeans fit");
    trace.mark("variance, buffers");
    for (int r = 0; r < n_runs; ++r) {
      detail::Random rng(runs.next());
      std::vector<T> start = initial_centers(rng);
      trace.mark("init");
      progress("Initialization complete\n");
      Run run = lloyd(start, run_labels.as<int32_t>(), dist2.as<T>(), tol_abs);
      trace.mark("lloyd");
      if (r == 0 || run.inertia < best.inertia) {
        best = std::move(run);
        std::swap(labels, run_labels);
      }
    }
    best.distinct_clusters = distinct_clusters(labels.as<const int32_t>());
    if (centered_)
      for (int64_t c = 0; c < k_; ++c)
        for (int64_t j = 0; j < d_; ++j) {
          T& v = best.centers[c * d_ + j];
          v = static_cast<T>(static_cast<double>(v) + means_[j]);
        }
    return best;
  }

  // Lloyd iterations from `start`, as scikit-learn's _kmeans_single_lloyd. The centers and each
  // step's sums stay in the backend's memory: a step reads back only its CenterMoves (on CUDA,
  // one wait for the device a step), unless a cluster empties and the host relocates it. With one
  // rank and no progress lines, the next step's first half (to the moved centers) is queued
  // before a step's report is read, so that the device does not wait for the host between steps;
  // where the fit then stops, its labels and dist2 are the final ones. A step that empties a
  // cluster assigns its own centers again before relocating (the queued step overwrote them).
  Run lloyd(const std::vector<T>& start, int32_t* labels, T* dist2, double tol_abs) {
    const int64_t kd = k_ * d_, sums_size = detail::lloyd_sums_size(k_, d_);
    Buffer centers(ctx_, static_cast<std::size_t>(kd) * sizeof(T)), next(ctx_, static_cast<std::size_t>(kd) * sizeof(T));
    Buffer sums(ctx_, static_cast<std::size_t>(sums_size) * sizeof(double));
    const bool queue_ahead = comm_.size() == 1 && params_.verbose <= 0 && queue_ahead_asked();  // (ranks add the sums first; verbose reads dist2)
    Buffer queued_sums = queue_ahead ? Buffer(ctx_, sums.bytes()) : Buffer();
    detail::copy_bytes(ctx_, centers.data(), ctx_.device(), start.data(), Device{}, centers.bytes());
    bool strict_convergence = false, queued = false;  // queued: this step's first half ran with the last step
    double shift = 0.0;
    int64_t iter = 0;
    detail::Trace trace(ctx_, "kmeans lloyd");
    while (iter < params_.max_iter) {
      // The first assignment has no previous labels to compare with: it always "changes".
      if (!queued) rows_->lloyd_sums(weights_.device(), centers.as<const T>(), k_, labels, dist2, iter > 0, sums.as<double>());
      queued = false;
      if (params_.verbose > 0) {  // the inertia of the previous centers, as scikit-learn prints it
        double inertia = backend_->weighted_sum(weights_.device(), dist2, n_);
        comm_.allreduce_sum(&inertia, 1);
        progress("Iteration " + std::to_string(iter) + ", inertia " + nlohmann::json(inertia).dump() + ".\n");
      }
      comm_.allreduce_sum_on(ctx_, sums.data(), sums_size, DType::float64);
      backend_->start_move_centers(sums.as<const double>(), k_, d_, centers.as<const T>(), next.as<T>());
      const bool ahead = queue_ahead && iter + 1 < params_.max_iter;
      if (ahead) rows_->lloyd_sums(weights_.device(), next.as<const T>(), k_, labels, dist2, true, queued_sums.as<double>());
      detail::CenterMoves moves = backend_->finish_move_centers();
      if (moves.empty) {
        if (ahead) rows_->lloyd_sums(weights_.device(), centers.as<const T>(), k_, labels, dist2, false, sums.as<double>());
        moves.shift = relocate_and_move(labels, dist2, centers, sums, next);
      } else if (ahead) {
        queued = true;
        std::swap(sums, queued_sums);
      }
      trace.mark("step");
      std::swap(centers, next);
      shift = moves.shift;
      ++iter;
      if (iter > 1 && moves.changed == 0.0) {
        strict_convergence = true;
        progress("Converged at iteration " + std::to_string(iter - 1) + ": strict convergence.\n");
        break;
      }
      if (shift <= tol_abs) {
        progress("Converged at iteration " + std::to_string(iter - 1) + ": center shift " + nlohmann::json(shift).dump() +
                 " within tolerance " + nlohmann::json(tol_abs).dump() + ".\n");
        break;
      }
    }
    Run run;
    run.centers.resize(static_cast<std::size_t>(kd));
    detail::copy_bytes(ctx_, run.centers.data(), Device{}, centers.data(), ctx_.device(), centers.bytes());
    // Labels and dist2 must belong to the final centers: the queued step's are; after a strict
    // convergence they are too, unless a relocation moved a center in that last iteration.
    if (!queued && (!strict_convergence || shift != 0.0)) rows_->assign(run.centers.data(), k_, labels, dist2, false);
    rows_->refine_distances(run.centers.data(), k_, labels, dist2);
    run.inertia = backend_->weighted_sum(weights_.device(), dist2, n_);
    comm_.allreduce_sum(&run.inertia, 1);
    trace.mark("final assign, inertia");
    run.n_iter = iter;
    return run;
  }

 private:
  // Queuing the next step is off unless GPUML_KMEANS_QUEUE_AHEAD=1 (the tests run it; the fit is
  // the same either way). Measured on an H200 (given init, 20 steps), it did not pay on CUDA
  // either: the host's wait between steps already left the device no measurable gap, and a step
  // that empties a cluster throws the queued step away and assigns again (two assigns more):
  // 10M x 64, k = 1024: 15.5 -> 14.2 ms a step without it; 1M x 64, k = 256: 19.4 -> 18.3 ms a fit.
  static bool queue_ahead_asked() {
    const char* v = std::getenv("GPUML_KMEANS_QUEUE_AHEAD");
    return v != nullptr && v[0] == '1' && v[1] == '\0';
  }

  // verbose > 0: scikit-learn's progress lines (gpuml/core/progress.hpp), from rank 0 only.
  void progress(const std::string& line) const {
    if (params_.verbose > 0 && comm_.rank() == 0) write_progress(line);
  }

  std::vector<T> initial_centers(detail::Random& rng) {
    std::vector<T> centers(static_cast<std::size_t>(k_ * d_));
    if (params_.init == "array") {
      // Given in X's coordinates: moved to the centered ones. Chosen rows need nothing.
      for (int64_t c = 0; c < k_; ++c)
        for (int64_t j = 0; j < d_; ++j)
          centers[c * d_ + j] = static_cast<T>(params_.init_array[c * d_ + j] - (centered_ ? means_[j] : 0.0));
    } else if (params_.init == "random") {
      const std::vector<int64_t> rows = rng.sample_without_replacement(layout_.total, k_);  // global rows
      seeder().share_rows(rows, centers.data());
    } else if (params_.init == "k-means||") {
      kmeans_parallel(rng, centers);
    } else {
      seeder().kmeans_plusplus(rng, weights_.device(), weights_.total, k_, centers.data());
    }
    return centers;
  }

  Seeder<T> seeder() { return Seeder<T>(ctx_, *backend_, *rows_, comm_, n_, d_, layout_.offset[comm_.rank()]); }

  // k-means|| (Bahmani et al., "Scalable K-Means++", 2012): one row drawn by weight, then
  // kParallelRounds rounds that each keep every row independently with probability
  // min(1, l w D² / φ), l = 2k, D² the row's squared distance to the candidates so far and
  // φ = Σ w D² over all ranks: one pass over X a round (assign to that round's new candidates)
  // instead of k-means++'s pass per center. The candidates, each weighted by the weight of the
  // rows nearest to it, are then reduced to k centers by k-means++ on the host.
  //
  // A row's draw is counter_uniform(run key, round, global row): the same choices on every
  // backend, thread count and split of the rows over ranks. Chosen rows join the candidates in
  // (round, global row) order. Candidates of zero weight (a copy of an earlier candidate, which
  // takes all the ties) are dropped; when fewer than k remain (fewer distinct rows than k, or a
  // small X), they are all centers and k-means++ steps on X choose the rest, as k-means++ would.
  void kmeans_parallel(detail::Random& rng, std::vector<T>& centers) {
    constexpr int kParallelRounds = 5;
    const double oversampling = 2.0 * static_cast<double>(k_);
    const uint64_t key = rng.next();
    Seeder<T> seeding = seeder();
    const int rank = comm_.rank();
    const int64_t offset = layout_.offset[rank];
    detail::Trace trace(ctx_, "kmeans||");

    std::vector<T> candidates(static_cast<std::size_t>(d_));  // m x d
    std::vector<double> prefix;
    double threshold = rng.uniform() * seeding.rank_prefix(weights_.total, prefix);
    seeding.search_rows(weights_.device(), nullptr, prefix, &threshold, 1, candidates.data());

    // Each local row's D² and nearest candidate, in the backend's memory, merged batch by batch;
    // the rounds draw from them there (oversampling_potential, oversample).
    Buffer closest_buffer(ctx_, static_cast<std::size_t>(n_) * sizeof(T));
    Buffer nearest_buffer(ctx_, static_cast<std::size_t>(n_) * sizeof(int32_t));
    Buffer labels_buffer(ctx_, static_cast<std::size_t>(n_) * sizeof(int32_t));
    Buffer dist2_buffer(ctx_, static_cast<std::size_t>(n_) * sizeof(T));
    // D² to candidates [first, first + m) (rows_host), kept where lower (ties: the earlier
    // candidate), in batches of at most candidate_batch; then the rows just chosen, `chosen`, sit on a candidate (itself,
    // or an equal row chosen before it, which takes the tie): exactly 0, though the backend's D²
    // may round above it, so they are never drawn again.
    auto merge_nearest = [&](const T* rows_host, int64_t m, int64_t first, const std::vector<int64_t>& chosen) {
      const int64_t most = rows_->candidate_batch(k_);
      for (int64_t b = 0; b < m && n_ > 0; b += most) {
        const int64_t batch = std::min(most, m - b);
        rows_->assign(rows_host + b * d_, batch, labels_buffer.as<int32_t>(), dist2_buffer.as<T>(), false);
        const bool last = b + most >= m;
        backend_->merge_nearest(labels_buffer.as<int32_t>(), dist2_buffer.as<T>(), n_, first + b, closest_buffer.as<T>(),
                                nearest_buffer.as<int32_t>(), last ? chosen.data() : nullptr,
                                last ? static_cast<int64_t>(chosen.size()) : 0);
      }
    };
    merge_nearest(candidates.data(), 1, 0, {});

    for (int round = 0; round < kParallelRounds; ++round) {
      double phi = n_ > 0 ? backend_->oversampling_potential(weights_.device(), closest_buffer.as<const T>(), n_) : 0.0;
      comm_.allreduce_sum(&phi, 1);
      if (!(phi > 0.0)) break;  // every row of positive weight sits on a candidate
      const std::vector<int64_t> chosen =
          n_ > 0 ? backend_->oversample(weights_.device(), closest_buffer.as<const T>(), n_, oversampling, phi, key,
                                        static_cast<uint64_t>(round), offset)
                 : std::vector<int64_t>{};
      // Every rank's chosen rows, in rank order: the union's rows in global order.
      const int64_t local_m = static_cast<int64_t>(chosen.size());
      std::vector<int64_t> counts = comm_.allgather(local_m * d_);
      int64_t added = 0;
      for (int64_t c : counts) added += c / d_;
      if (added == 0) continue;
      std::vector<T> mine(static_cast<std::size_t>(local_m * d_));
      if (local_m > 0) rows_->gather_rows(chosen.data(), local_m, mine.data());
      const int64_t first = static_cast<int64_t>(candidates.size()) / d_;
      candidates.resize(static_cast<std::size_t>((first + added) * d_));
      comm_.allgatherv(mine.data(), local_m * d_, candidates.data() + first * d_, counts.data(), dtype_of<T>::value);
      merge_nearest(candidates.data() + first * d_, added, first, chosen);
    }

    trace.mark("rounds");
    const int64_t m = static_cast<int64_t>(candidates.size()) / d_;
    std::vector<double> candidate_weights(static_cast<std::size_t>(m), 0.0);
    if (n_ > 0)
      backend_->nearest_weights(weights_.unit ? nullptr : weights_.device(), nearest_buffer.as<const int32_t>(), n_, m,
                                candidate_weights.data());
    comm_.allreduce_sum(candidate_weights.data(), m);
    std::vector<T> kept, kept_weights;
    for (int64_t c = 0; c < m; ++c)
      if (candidate_weights[c] > 0.0) {
        kept.insert(kept.end(), candidates.begin() + c * d_, candidates.begin() + (c + 1) * d_);
        kept_weights.push_back(static_cast<T>(candidate_weights[c]));
      }
    const int64_t n_kept = static_cast<int64_t>(kept_weights.size());
    trace.mark("candidate weights");
    if (n_kept <= k_) {
      std::copy(kept.begin(), kept.end(), centers.begin());
      if (n_kept == k_) return;
      seeding.plusplus_steps(rng, weights_.device(), closest_buffer.as<T>(), nullptr, n_kept, k_, centers.data());
      return;
    }
    // k-means++ on the weighted candidates (about 1 + 2k * rounds of them) on rank 0, the centers
    // broadcast, so that every rank holds the same bits. A CUDA fit runs it on the device
    // (plusplus_steps: no host round trip a center); its choices may then differ from a CPU fit's
    // where float sums round differently.
    if (rank == 0) {
      std::shared_ptr<Comm> alone = Comm::local();
      double total = 0.0;
      for (T v : kept_weights) total += static_cast<double>(v);
      if (ctx_.is_cuda()) {
        // On the device: the CUDA backend's plusplus_steps (no host round trip a center).
        Buffer rows_device(ctx_, static_cast<std::size_t>(n_kept * d_) * sizeof(T));
        Buffer weights_device(ctx_, static_cast<std::size_t>(n_kept) * sizeof(T));
        detail::copy_bytes(ctx_, rows_device.data(), ctx_.device(), kept.data(), Device{}, kept.size() * sizeof(T));
        detail::copy_bytes(ctx_, weights_device.data(), ctx_.device(), kept_weights.data(), Device{}, kept_weights.size() * sizeof(T));
        DenseRows<T> rows(*backend_, rows_device.as<T>(), n_kept, d_);
        Seeder<T>(ctx_, *backend_, rows, *alone, n_kept, d_, 0)
            .kmeans_plusplus(rng, weights_device.as<T>(), total, k_, centers.data());
      } else {
        Context host = Context::cpu(ctx_.n_threads());
        auto backend = detail::make_kmeans_cpu_backend<T>(host);
        DenseRows<T> rows(*backend, kept.data(), n_kept, d_);
        Seeder<T>(host, *backend, rows, *alone, n_kept, d_, 0).kmeans_plusplus(rng, kept_weights.data(), total, k_, centers.data());
      }
    }
    comm_.broadcast(centers.data(), k_ * d_, 0);
    trace.mark("k-means++ on the candidates");
  }

  // Mean over features of the variance of all rows about the global means: each rank's
  // (local_variance_, about those means), weighted by its share of the rows and summed.
  // (One rank: the share is exactly 1.)
  double mean_column_variance() {
    double variance = static_cast<double>(n_) / static_cast<double>(layout_.total) * local_variance_;
    comm_.allreduce_sum(&variance, 1);
    return variance;
  }

  // How many clusters hold at least one of the rows (all ranks'), from their labels.
  int64_t distinct_clusters(const int32_t* labels) {
    std::vector<double> counts(static_cast<std::size_t>(k_), 0.0);
    if (n_ > 0) backend_->nearest_weights(nullptr, labels, n_, k_, counts.data());
    comm_.allreduce_sum(counts.data(), k_);
    return std::count_if(counts.begin(), counts.end(), [](double c) { return c > 0.0; });
  }

  // A step with a cluster of weight 0, on the host: the sums and centers fetched, the empty
  // clusters relocated (relocate_empty_clusters), the next centers written to `next` (the
  // backend's memory); returns the shift, summed as move_centers sums it. A cluster still empty
  // after relocation (every row sits on its center: fewer distinct rows than clusters) is put on
  // the heaviest cluster's center (the first on ties), as scikit-learn does: on a data point, not
  // at the origin. Its rows tie there and go to the lower index, so the labels settle and the fit
  // converges.
  double relocate_and_move(const int32_t* labels, const T* dist2, const Buffer& centers, const Buffer& sums, Buffer& next) {
    const int64_t kd = k_ * d_, stride = d_ + 1;
    std::vector<double> packed(static_cast<std::size_t>(detail::lloyd_sums_size(k_, d_)));
    std::vector<T> old(static_cast<std::size_t>(kd)), moved(static_cast<std::size_t>(kd));
    detail::copy_bytes(ctx_, packed.data(), Device{}, sums.data(), ctx_.device(), packed.size() * sizeof(double));
    detail::copy_bytes(ctx_, old.data(), Device{}, centers.data(), ctx_.device(), old.size() * sizeof(T));
    std::vector<double> feature_sums(static_cast<std::size_t>(kd)), weight_sums(static_cast<std::size_t>(k_));
    for (int64_t c = 0; c < k_; ++c) {
      std::copy(packed.begin() + c * stride, packed.begin() + c * stride + d_, feature_sums.begin() + c * d_);
      weight_sums[c] = packed[c * stride + d_];
    }
    relocate_empty_clusters(labels, dist2, old, feature_sums, weight_sums);
    detail::pack_lloyd_sums(feature_sums.data(), weight_sums.data(), k_, d_, packed.back(), packed.data());
    const int64_t heaviest = std::max_element(weight_sums.begin(), weight_sums.end()) - weight_sums.begin();
    std::vector<double> center_moves(static_cast<std::size_t>(k_), 0.0);
    for (int64_t c = 0; c < k_; ++c)
      if (weight_sums[c] > 0)
        center_moves[c] = detail::move_center(packed.data() + c * stride, old.data() + c * d_, d_, moved.data() + c * d_);
    for (int64_t c = 0; c < k_; ++c) {
      if (weight_sums[c] > 0) continue;
      for (int64_t j = 0; j < d_; ++j) {
        moved[c * d_ + j] = moved[heaviest * d_ + j];
        center_moves[c] = detail::add_square(center_moves[c], static_cast<double>(moved[c * d_ + j]) - static_cast<double>(old[c * d_ + j]));
      }
    }
    double shift = 0.0;
    for (double m : center_moves) shift += m;
    detail::copy_bytes(ctx_, next.data(), ctx_.device(), moved.data(), Device{}, moved.size() * sizeof(T));
    return shift;
  }

  // Gives every cluster of zero weight the row farthest from its center (the j-th empty
  // cluster gets the j-th farthest row), moving that row's weight out of its own cluster,
  // as scikit-learn's _relocate_empty_clusters_dense. Labels are left as they are. `centers`
  // are the ones the labels were assigned to.
  void relocate_empty_clusters(const int32_t* labels, const T* dist2, const std::vector<T>& centers,
                               std::vector<double>& sums, std::vector<double>& weight_sums) {
    std::vector<int64_t> empty;
    for (int64_t c = 0; c < k_; ++c)
      if (weight_sums[c] == 0) empty.push_back(c);
    if (empty.empty()) return;
    const int64_t m = std::min<int64_t>(static_cast<int64_t>(empty.size()), layout_.total);
    // Each rank's m farthest rows as records (dist2, global row, label, weight, the row), all
    // gathered; the m farthest of those (ties: the lower global row) are the single-process choice.
    const int64_t width = 4 + d_;
    const int size = comm_.size(), rank = comm_.rank();
    std::vector<int64_t> counts(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) counts[r] = std::min(m, layout_.rows[r]) * width;
    const int64_t local_m = std::min(m, n_);
    std::vector<int64_t> far(static_cast<std::size_t>(local_m));
    std::vector<T> local_rows(static_cast<std::size_t>(local_m * d_));
    backend_->largest(dist2, n_, local_m, far.data());
    rows_->gather_rows(far.data(), local_m, local_rows.data());
    std::vector<double> records(static_cast<std::size_t>(local_m * width));
    for (int64_t e = 0; e < local_m; ++e) {
      const int64_t row = far[e];
      T distance = 0;
      int32_t label = 0;
      detail::copy_bytes(ctx_, &distance, Device{}, dist2 + row, ctx_.device(), sizeof(T));
      detail::copy_bytes(ctx_, &label, Device{}, labels + row, ctx_.device(), sizeof(int32_t));
      double* record = records.data() + e * width;
      record[0] = static_cast<double>(distance);
      record[1] = static_cast<double>(layout_.offset[rank] + row);
      record[2] = static_cast<double>(label);
      record[3] = static_cast<double>(weights_.at(row));
      for (int64_t j = 0; j < d_; ++j) record[4 + j] = static_cast<double>(local_rows[e * d_ + j]);
    }
    int64_t n_records = 0;
    for (int64_t c : counts) n_records += c / width;
    std::vector<double> all(static_cast<std::size_t>(n_records * width));
    comm_.allgatherv(records.data(), local_m * width, all.data(), counts.data(), DType::float64);
    std::vector<int64_t> order(static_cast<std::size_t>(n_records));
    for (int64_t i = 0; i < n_records; ++i) order[i] = i;
    // As scikit-learn: no relocation when every row sits on its center (more clusters than
    // distinct rows). Moving a center onto a duplicate row would only pull that row's copies out
    // of another cluster, emptying it, and so on every iteration until max_iter. The farthest
    // rows decide, by their coordinates (on CUDA, dist2 = |x|^2 + |c|^2 - 2 x.c leaves rows on
    // their centers with tiny values). "On" allows the rounding of a mean of equal rows: the sums
    // are in double over at most n rows (n eps / 2 relative at worst), then rounded to T. Exact
    // equality failed there with float64 data: a mean of 39 equal rows came back an ulp off, the
    // row was moved to an empty cluster, its copies followed it, and its mean was an ulp off
    // again, every step (123 of 300 small problems ran to max_iter; scikit-learn's 4).
    const double on_center = 4.0 * static_cast<double>(layout_.total) * std::numeric_limits<double>::epsilon() +
                             static_cast<double>(std::numeric_limits<T>::epsilon());
    bool any_off_center = false;
    for (int64_t e = 0; e < n_records && !any_off_center; ++e) {
      const double* record = all.data() + e * width;
      const T* center = centers.data() + static_cast<int64_t>(record[2]) * d_;
      for (int64_t j = 0; j < d_; ++j) {
        const double x = record[4 + j], c = static_cast<double>(center[j]);
        if (std::abs(x - c) > on_center * std::max(std::abs(x), std::abs(c))) any_off_center = true;
      }
    }
    if (!any_off_center) return;
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const double* ra = all.data() + a * width;
      const double* rb = all.data() + b * width;
      return ra[0] > rb[0] || (ra[0] == rb[0] && ra[1] < rb[1]);
    });
    std::vector<T> rows(static_cast<std::size_t>(m * d_));
    for (int64_t e = 0; e < m; ++e)
      for (int64_t j = 0; j < d_; ++j) rows[e * d_ + j] = static_cast<T>(all[order[e] * width + 4 + j]);
    const std::vector<double> weight_before = weight_sums;
    for (int64_t e = 0; e < m; ++e) {
      const int64_t to = empty[e];
      const int32_t from = static_cast<int32_t>(all[order[e] * width + 2]);
      const double w = all[order[e] * width + 3];
      for (int64_t j = 0; j < d_; ++j) {
        const double contribution = static_cast<double>(rows[e * d_ + j]) * w;
        sums[from * d_ + j] -= contribution;
        sums[to * d_ + j] = contribution;
      }
      weight_sums[to] = w;
      weight_sums[from] -= w;
    }
    // A cluster whose every row moved out keeps the rounding of its weights' differences
    // (~1e-16 of them, not 0), and its center would be that rounding's quotient, far from any
    // row: it is empty, and the caller puts it where empty clusters go.
    for (int64_t c = 0; c < k_; ++c)
      if (weight_before[c] > 0 && weight_sums[c] <= 1e-12 * weight_before[c]) {
        weight_sums[c] = 0.0;
        std::fill(sums.begin() + c * d_, sums.begin() + (c + 1) * d_, 0.0);
      }
  }

  Context& ctx_;
  const KMeansParams& params_;
  std::unique_ptr<detail::KMeansBackend<T>> backend_;
  int64_t n_, d_, k_;
  const Weights<T>& weights_;
  std::vector<double> means_;  // X's column means (over all ranks)
  Comm& comm_;
  const RowLayout& layout_;
  uint64_t seed_;
  Buffer centered_copy_;       // dense X - means_, unless X was centered in place
  std::unique_ptr<Rows<T>> rows_;  // the centered dense rows, or sparse X: everything in the fit reads these
  bool centered_ = false;      // dense: the means are added back to the centers
  double local_variance_ = 0.0;  // this rank's mean column variance about the global means
  bool uncentered_in_range_ = true;  // sparse X: its rows' squared norms are within squares_in_range
};

// The best run's centers as the fitted attribute, once checked for overflow.
template <typename Run>
HostArray finished_centers(const Run& best, int64_t k, int64_t d) {
  using T = typename decltype(best.centers)::value_type;
  const DType dtype = dtype_of<T>::value;
  GPUML_EXPECT(std::isfinite(best.inertia) &&
                   std::all_of(best.centers.begin(), best.centers.end(), [](T v) { return std::isfinite(v); }),
               std::string("KMeans: inertia_ or cluster_centers_ overflow ") + dtype_name(dtype) +
                   ": X's values are too large");
  HostArray centers(dtype, k, d);
  std::copy(best.centers.begin(), best.centers.end(), centers.as<T>());
  return centers;
}

HostArray scalar_f64(double v) {
  HostArray a = HostArray::scalar(DType::float64);
  *a.as<double>() = v;
  return a;
}
HostArray scalar_i64(int64_t v) {
  HostArray a = HostArray::scalar(DType::int64);
  *a.as<int64_t>() = v;
  return a;
}

}  // namespace

KMeans::KMeans(KMeansParams params) : params_(std::move(params)) { params_table().check(params_); }

KMeans& KMeans::fit(Context& ctx, const ArrayView& X, const ArrayView* sample_weight) {
  Comm& comm = ctx.comm();
  detail::Trace trace(ctx, "kmeans");
  const int64_t k = params_.n_clusters;
  int64_t n = 0, d = 0;
  DType dtype = DType::float64;
  detail::Staged staged;
  check_on_every_rank(comm, "checking X", [&] {
    check_matrix_shape(X);
    n = X.shape[0];
    d = X.shape[1];
    if (params_.init == "array")
      GPUML_EXPECT(static_cast<int64_t>(params_.init_array.size()) == k * d,
                   "KMeans: init_array has shape (" + std::to_string(k) + ", " +
                       std::to_string(params_.init_array.size() / static_cast<std::size_t>(k)) +
                       ") but it must be (n_clusters, n_features) = (" + std::to_string(k) + ", " + std::to_string(d) + ")");
    dtype = float_dtype_for(X.dtype);
    staged = detail::stage(ctx, X, dtype, "X");
    detail::require_finite(ctx, staged.view, "X");
  });

  // Every rank must fit the same estimator on rows of the same width and dtype.
  std::vector<detail::RankField> fields = {{"n_features", d}, {"dtype (0 float32, 1 float64)", static_cast<int64_t>(dtype)}};
  if (comm.size() > 1)  // (one rank agrees with itself; a given init's fields cost ~0.3 ms)
    for (const detail::RankField& f : params_table().rank_fields(params_)) fields.push_back(f);
  const detail::RowCounts counts = detail::agree_on_every_rank(comm, "KMeans", n, fields);
  RowLayout layout;
  layout.comm = &comm;
  layout.rows = counts.rows;
  layout.total = counts.total;
  for (int64_t r = 0, offset = 0; r < comm.size(); offset += counts.rows[r], ++r) layout.offset.push_back(offset);
  GPUML_EXPECT(layout.total >= k, "KMeans: n_samples=" + std::to_string(layout.total) +
                                      (comm.size() > 1 ? " (over " + std::to_string(comm.size()) + " ranks)" : std::string()) +
                                      " should be >= n_clusters=" + std::to_string(k));
  // Rank 0's seed for all (the same as random_state's when set: every rank checked it above).
  int64_t seed = static_cast<int64_t>(params_.random_state.value_or(ctx.seed()));
  comm.broadcast(&seed, 1, 0);
  trace.mark("stage and check X");

  with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    std::optional<Weights<T>> weights;
    check_on_every_rank(comm, "checking sample_weight", [&] { weights.emplace(prepare_weights<T>(ctx, sample_weight, n)); });
    double total_weight = weights->total;
    comm.allreduce_sum(&total_weight, 1);
    GPUML_EXPECT(total_weight > 0, "sample_weight must have a positive sum");
    Buffer labels(ctx, static_cast<std::size_t>(n) * sizeof(int32_t));
    typename Fitter<T>::Run best;
    int exponent = 0;
    try {
      Fitter<T> fitter(ctx, params_, staged, n, d, *weights, layout, static_cast<uint64_t>(seed));
      trace.mark("weights, means, centered copy");
      best = fitter.fit(labels, true);
      trace.mark("fit");
    } catch (const detail::BadlyScaled&) {
      // Extreme magnitudes: fit 2^e X (and init) from the caller's X (the fitter may have centered
      // the staged copy in place), then centers times 2^-e, inertia times 4^-e.
      detail::Staged original = detail::stage(ctx, X, dtype, "X");
      exponent = detail::scale_exponent(ctx, original.view);
      detail::ScaledCopy scaled = detail::scaled_copy(ctx, original.view, exponent);
      KMeansParams scaled_params = params_;
      for (double& v : scaled_params.init_array) v = std::ldexp(v, exponent);
      Fitter<T> fitter(ctx, scaled_params, scaled.staged, n, d, *weights, layout, static_cast<uint64_t>(seed));
      best = fitter.fit(labels, false);
      for (T& v : best.centers) v = std::ldexp(v, -exponent);
      best.inertia = std::ldexp(best.inertia, -2 * exponent);
    }
    trace.mark("release the fit's buffers");
    adopt(ctx, finished_centers(best, k, d), best.inertia, best.n_iter, best.distinct_clusters, labels, n);
    trace.mark("adopt");
  });
  return *this;
}

void KMeans::fit(Context& ctx, const ArrayView& X, const ArrayView*, const ArrayView* sample_weight) {
  fit(ctx, X, sample_weight);  // y is ignored, as in scikit-learn
}

KMeans& KMeans::fit(Context& ctx, const SparseView& X, const ArrayView* sample_weight) {
  if (ctx.comm().size() > 1) throw_error(ErrorCode::unsupported, "KMeans: sparse X over several ranks is not written yet");
  const int64_t k = params_.n_clusters, n = X.rows(), d = X.cols();
  GPUML_EXPECT(n >= 1 && d >= 1, "X (sparse matrix) has shape (" + std::to_string(n) + ", " + std::to_string(d) +
                                     "): at least 1 sample and 1 feature are required");
  if (params_.init == "array")
    GPUML_EXPECT(static_cast<int64_t>(params_.init_array.size()) == k * d,
                 "KMeans: init_array has shape (" + std::to_string(k) + ", " +
                     std::to_string(params_.init_array.size() / static_cast<std::size_t>(k)) +
                     ") but it must be (n_clusters, n_features) = (" + std::to_string(k) + ", " + std::to_string(d) + ")");
  GPUML_EXPECT(n >= k, "KMeans: n_samples=" + std::to_string(n) + " should be >= n_clusters=" + std::to_string(k));
  const DType dtype = X.dtype == DType::float32 ? DType::float32 : DType::float64;
  RowLayout layout;
  layout.comm = &ctx.comm();
  layout.rows = {n};
  layout.offset = {0};
  layout.total = n;
  const uint64_t seed = params_.random_state.value_or(ctx.seed());
  with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto A = detail::make_sparse_matrix<T>(ctx, X, "X");  // checked first: its errors before sample_weight's
    const Weights<T> weights = prepare_weights<T>(ctx, sample_weight, n);
    GPUML_EXPECT(weights.total > 0, "sample_weight must have a positive sum");
    Buffer labels(ctx, static_cast<std::size_t>(n) * sizeof(int32_t));
    typename Fitter<T>::Run best;
    try {
      Fitter<T> fitter(ctx, params_, *A, weights, layout, seed);
      best = fitter.fit(labels, true);
    } catch (const detail::BadlyScaled&) {
      // Extreme magnitudes (|x|² or the variance out of range): fit 2^e X and 2^e init, then
      // centers times 2^-e, inertia times 4^-e, as for dense X.
      const ScaledSparse scaled = scaled_sparse(ctx, X);
      A = detail::make_sparse_matrix<T>(ctx, scaled.matrix.view(), "X");
      KMeansParams scaled_params = params_;
      for (double& v : scaled_params.init_array) v = std::ldexp(v, scaled.exponent);
      Fitter<T> fitter(ctx, scaled_params, *A, weights, layout, seed);
      best = fitter.fit(labels, false);
      for (T& v : best.centers) v = std::ldexp(v, -scaled.exponent);
      best.inertia = std::ldexp(best.inertia, -2 * scaled.exponent);
    }
    adopt(ctx, finished_centers(best, k, d), best.inertia, best.n_iter, best.distinct_clusters, labels, n);
  });
  return *this;
}

void KMeans::fit_sparse(Context& ctx, const SparseView& X, const ArrayView*, const ArrayView* sample_weight) {
  fit(ctx, X, sample_weight);
}

void KMeans::adopt(Context& ctx, HostArray centers, double inertia, int64_t n_iter, int64_t distinct_clusters,
                   const Buffer& labels, int64_t n) {
  // Replace the fitted state only once everything has succeeded.
  const int64_t d = centers.spec().shape[1];
  labels_ = detail::to_host(ctx, make_view(labels.data(), DType::int32, ctx.device(), n));
  centers_ = std::move(centers);
  inertia_ = scalar_f64(inertia);
  n_iter_ = scalar_i64(n_iter);
  n_features_in_ = scalar_i64(d);
  distinct_clusters_ = scalar_i64(distinct_clusters);
}

namespace {

// X for predict/transform/score: checked against the fitted width and staged in its float dtype.
detail::Staged stage_for_inference(Context& ctx, const ArrayView& X, int64_t n_features) {
  check_matrix_shape(X);
  GPUML_EXPECT(X.shape[1] == n_features, "X has " + std::to_string(X.shape[1]) +
                                             " features, but KMeans was fitted with " + std::to_string(n_features) +
                                             " features");
  detail::Staged staged = detail::stage(ctx, X, float_dtype_for(X.dtype), "X");
  detail::require_finite(ctx, staged.view, "X");
  return staged;
}

}  // namespace

ArraySpec KMeans::output_spec(const std::string& method, int64_t n_rows) const {
  GPUML_EXPECT(n_rows >= 0, "n_rows must be >= 0, got " + std::to_string(n_rows));
  if (method == "predict") return ArraySpec{DType::int32, 1, {n_rows, 0}};
  if (method == "transform") {
    require_fitted();
    return ArraySpec{centers_.dtype(), 2, {n_rows, params_.n_clusters}};
  }
  return Estimator::output_spec(method, n_rows);
}

void KMeans::predict(Context& ctx, const ArrayView& X, const ArrayView& labels) const {
  require_fitted();
  detail::Staged staged = stage_for_inference(ctx, X, n_features_in());
  const int64_t n = X.shape[0], d = X.shape[1], k = params_.n_clusters;
  with_float_type(staged.view.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> centers = host_centers_as<T>(centers_);
    detail::ScaledCopy copy;
    const ArrayView& rows = rescale_for_distances(ctx, staged, copy, centers, d) != 0 ? copy.view() : staged.view;
    Buffer out(ctx, static_cast<std::size_t>(n) * sizeof(int32_t));
    Buffer dist2(ctx, static_cast<std::size_t>(n) * sizeof(T));
    make_backend<T>(ctx)->assign(rows.as<const T>(), n, d, centers.data(), k, out.as<int32_t>(), dist2.as<T>(), false);
    detail::write_output(ctx, make_view(out.data(), DType::int32, ctx.device(), n), labels, "labels");
  });
}

void KMeans::transform(Context& ctx, const ArrayView& X, const ArrayView& distances) const {
  require_fitted();
  detail::Staged staged = stage_for_inference(ctx, X, n_features_in());
  const int64_t n = X.shape[0], d = X.shape[1], k = params_.n_clusters;
  with_float_type(staged.view.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> centers = host_centers_as<T>(centers_);
    detail::ScaledCopy copy;
    const int exponent = rescale_for_distances(ctx, staged, copy, centers, d);
    const ArrayView& rows = exponent != 0 ? copy.view() : staged.view;
    Buffer out(ctx, static_cast<std::size_t>(n * k) * sizeof(T));
    make_backend<T>(ctx)->distances(rows.as<const T>(), n, d, centers.data(), k, out.as<T>());
    const ArrayView scaled = make_view(out.data(), dtype_of<T>::value, ctx.device(), n, k);
    if (exponent == 0) {
      detail::write_output(ctx, scaled, distances, "distances");
    } else {
      // Back to X's units (a rare path: a host round trip is fine).
      const detail::ScaledCopy back = detail::scaled_copy(ctx, scaled, -exponent);
      detail::write_output(ctx, back.view(), distances, "distances");
    }
  });
}

double KMeans::score(Context& ctx, const ArrayView& X, const ArrayView* sample_weight) const {
  require_fitted();
  detail::Staged staged = stage_for_inference(ctx, X, n_features_in());
  const int64_t n = X.shape[0], d = X.shape[1], k = params_.n_clusters;
  return with_float_type(staged.view.dtype, [&](auto tag) {
    using T = decltype(tag);
    const Weights<T> weights = prepare_weights<T>(ctx, sample_weight, n);
    const std::vector<T> centers = host_centers_as<T>(centers_);
    Buffer labels(ctx, static_cast<std::size_t>(n) * sizeof(int32_t));
    Buffer dist2(ctx, static_cast<std::size_t>(n) * sizeof(T));
    auto backend = make_backend<T>(ctx);
    backend->assign(staged.view.as<const T>(), n, d, centers.data(), k, labels.as<int32_t>(), dist2.as<T>(), false);
    backend->refine_distances(staged.view.as<const T>(), n, d, centers.data(), k, labels.as<const int32_t>(), dist2.as<T>());
    return -backend->weighted_sum(weights.device(), dist2.as<const T>(), n);
  });
}

void KMeans::fit_predict(Context& ctx, const ArrayView& X, const ArrayView& labels, const ArrayView* sample_weight) {
  fit(ctx, X, sample_weight);
  detail::Staged staged = detail::stage_host(ctx, labels_);
  detail::write_output(ctx, staged.view, labels, "labels");
}

namespace {

// Sparse X for predict/transform/score: checked against the fitted width, then f(rows, centers,
// e) with X seen through its products in its own float type (as dense X is) and the centers in
// it, both times 2^e (e != 0 only for extreme magnitudes: distances are then 2^e times the true ones).
template <typename F>
void with_sparse_rows(Context& ctx, const SparseView& X, const HostArray& fitted_centers, int64_t n_features, F&& f) {
  GPUML_EXPECT(X.cols() == n_features, "X has " + std::to_string(X.cols()) + " features, but KMeans was fitted with " +
                                           std::to_string(n_features) + " features");
  const DType dtype = X.dtype == DType::float32 ? DType::float32 : DType::float64;
  with_float_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto A = detail::make_sparse_matrix<T>(ctx, X, "X");
    std::vector<T> centers = host_centers_as<T>(fitted_centers);
    // Extreme magnitudes, as rescale_for_distances: X and the centers times 2^e, centers near 1.
    double top = 0.0;
    for (T c : centers) top = std::max(top, std::abs(static_cast<double>(c)));
    int exponent = 0;
    ScaledSparse scaled;
    if (top != 0.0 && !detail::squares_in_range<T>(top * top * static_cast<double>(n_features))) {
      exponent = -(std::ilogb(top) + 1);
      scaled = scaled_sparse(ctx, X, exponent);
      A = detail::make_sparse_matrix<T>(ctx, scaled.matrix.view(), "X");
      for (T& c : centers) c = std::ldexp(c, exponent);
    }
    auto backend = make_backend<T>(ctx);
    SparseRows<T> rows(ctx, *backend, *A);
    f(rows, centers, exponent);
  });
}

}  // namespace

bool KMeans::accepts_sparse() const { return true; }

void KMeans::predict_sparse(Context& ctx, const SparseView& X, const ArrayView& labels) const {
  require_fitted();
  const int64_t n = X.rows(), k = params_.n_clusters;
  with_sparse_rows(ctx, X, centers_, n_features_in(), [&](auto& rows, const auto& centers, int) {
    using T = typename std::decay_t<decltype(centers)>::value_type;
    Buffer out(ctx, static_cast<std::size_t>(n) * sizeof(int32_t));
    Buffer dist2(ctx, static_cast<std::size_t>(n) * sizeof(T));
    rows.assign(centers.data(), k, out.as<int32_t>(), dist2.as<T>(), false);
    detail::write_output(ctx, make_view(out.data(), DType::int32, ctx.device(), n), labels, "labels");
  });
}

void KMeans::transform_sparse(Context& ctx, const SparseView& X, const ArrayView& distances) const {
  require_fitted();
  const int64_t n = X.rows(), k = params_.n_clusters;
  with_sparse_rows(ctx, X, centers_, n_features_in(), [&](auto& rows, const auto& centers, int exponent) {
    using T = typename std::decay_t<decltype(centers)>::value_type;
    Buffer out(ctx, static_cast<std::size_t>(std::max<int64_t>(n * k, 1)) * sizeof(T));
    rows.distances(centers.data(), k, out.as<T>());
    const ArrayView scaled = make_view(out.data(), dtype_of<T>::value, ctx.device(), n, k);
    if (exponent == 0) {
      detail::write_output(ctx, scaled, distances, "distances");
    } else {
      const detail::ScaledCopy back = detail::scaled_copy(ctx, scaled, -exponent);  // back to X's units
      detail::write_output(ctx, back.view(), distances, "distances");
    }
  });
}

double KMeans::score(Context& ctx, const SparseView& X, const ArrayView* sample_weight) const {
  require_fitted();
  const int64_t n = X.rows(), k = params_.n_clusters;
  double inertia = 0.0;
  with_sparse_rows(ctx, X, centers_, n_features_in(), [&](auto& rows, const auto& centers, int exponent) {
    using T = typename std::decay_t<decltype(centers)>::value_type;
    const Weights<T> weights = prepare_weights<T>(ctx, sample_weight, n);
    Buffer labels(ctx, static_cast<std::size_t>(n) * sizeof(int32_t));
    Buffer dist2(ctx, static_cast<std::size_t>(n) * sizeof(T));
    rows.assign(centers.data(), k, labels.as<int32_t>(), dist2.as<T>(), false);
    inertia = std::ldexp(make_backend<T>(ctx)->weighted_sum(weights.device(), dist2.as<const T>(), n), -2 * exponent);
  });
  return -inertia;
}

void KMeans::fit_predict(Context& ctx, const SparseView& X, const ArrayView& labels, const ArrayView* sample_weight) {
  fit(ctx, X, sample_weight);
  detail::Staged staged = detail::stage_host(ctx, labels_);
  detail::write_output(ctx, staged.view, labels, "labels");
}

const HostArray& KMeans::cluster_centers() const {
  require_fitted();
  return centers_;
}
const HostArray& KMeans::labels() const {
  require_fitted();
  return labels_;
}
double KMeans::inertia() const {
  require_fitted();
  return *inertia_.as<const double>();
}
int64_t KMeans::n_iter() const {
  require_fitted();
  return *n_iter_.as<const int64_t>();
}
int64_t KMeans::n_features_in() const {
  require_fitted();
  return *n_features_in_.as<const int64_t>();
}

std::vector<std::string> KMeans::attribute_names() const {
  return std::vector<std::string>(std::begin(kAttributeNames), std::end(kAttributeNames));
}

const HostArray& KMeans::attribute(const std::string& name) const {
  if (name == "cluster_centers_") return cluster_centers();
  if (name == "labels_") return labels();
  if (name == "inertia_" || name == "n_iter_" || name == "n_features_in_" || name == "distinct_clusters_") {
    require_fitted();
    return name == "inertia_" ? inertia_ : name == "n_iter_" ? n_iter_ : name == "n_features_in_" ? n_features_in_ : distinct_clusters_;
  }
  throw_error(ErrorCode::invalid_argument,
              "kmeans has no attribute '" + name +
                  "' (known: cluster_centers_, labels_, inertia_, n_iter_, n_features_in_, distinct_clusters_)");
}

void KMeans::restore(std::map<std::string, HostArray> attributes) {
  const std::string where = "kmeans model: ";
  for (const auto& entry : attributes)
    GPUML_EXPECT(std::find(std::begin(kAttributeNames), std::end(kAttributeNames), entry.first) != std::end(kAttributeNames),
                 where + "unknown attribute '" + entry.first + "'");
  for (const char* name : kAttributeNames)
    GPUML_EXPECT(std::strcmp(name, "distinct_clusters_") == 0 || (attributes.count(name) && !attributes.at(name).empty()),
                 where + "attribute '" + name + "' is missing");

  auto is_shape = [](const HostArray& a, DType dtype, int32_t ndim) { return a.dtype() == dtype && a.spec().ndim == ndim; };
  const HostArray& centers = attributes.at("cluster_centers_");
  const int64_t k = params_.n_clusters;
  GPUML_EXPECT(is_floating(centers.dtype()) && centers.spec().ndim == 2 && centers.spec().shape[0] == k &&
                   centers.spec().shape[1] >= 1,
               where + "cluster_centers_ must be a float32/float64 array of shape (n_clusters=" + std::to_string(k) +
                   ", n_features)");
  const int64_t d = centers.spec().shape[1];
  with_float_type(centers.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* c = centers.as<const T>();
    GPUML_EXPECT(std::all_of(c, c + k * d, [](T v) { return std::isfinite(v); }),
                 where + "cluster_centers_ contains NaN or infinity");
  });

  const HostArray& n_features = attributes.at("n_features_in_");
  GPUML_EXPECT(is_shape(n_features, DType::int64, 0) && *n_features.as<const int64_t>() == d,
               where + "n_features_in_ must be an int64 scalar equal to the width of cluster_centers_");

  const HostArray& labels = attributes.at("labels_");
  GPUML_EXPECT(is_shape(labels, DType::int32, 1) && labels.spec().shape[0] >= k,
               where + "labels_ must be an int32 vector with at least n_clusters entries");
  const int32_t* l = labels.as<const int32_t>();
  GPUML_EXPECT(std::all_of(l, l + labels.spec().shape[0], [k](int32_t v) { return v >= 0 && v < k; }),
               where + "labels_ has values outside [0, n_clusters)");

  const HostArray& inertia = attributes.at("inertia_");
  GPUML_EXPECT(is_shape(inertia, DType::float64, 0) && std::isfinite(*inertia.as<const double>()) &&
                   *inertia.as<const double>() >= 0,
               where + "inertia_ must be a finite, non-negative float64 scalar");
  const HostArray& n_iter = attributes.at("n_iter_");
  GPUML_EXPECT(is_shape(n_iter, DType::int64, 0) && *n_iter.as<const int64_t>() >= 1,
               where + "n_iter_ must be a positive int64 scalar");

  centers_ = std::move(attributes.at("cluster_centers_"));
  labels_ = std::move(attributes.at("labels_"));
  inertia_ = std::move(attributes.at("inertia_"));
  n_iter_ = std::move(attributes.at("n_iter_"));
  n_features_in_ = std::move(attributes.at("n_features_in_"));
  // Models saved before distinct_clusters_ have none: counted from their labels.
  auto distinct = attributes.find("distinct_clusters_");
  if (distinct == attributes.end()) {
    std::vector<char> held(static_cast<std::size_t>(k), 0);
    const int32_t* saved = labels_.as<const int32_t>();
    for (int64_t i = 0; i < labels_.spec().shape[0]; ++i) held[saved[i]] = 1;
    distinct_clusters_ = scalar_i64(std::count(held.begin(), held.end(), char(1)));
  } else {
    GPUML_EXPECT(is_shape(distinct->second, DType::int64, 0) && *distinct->second.as<const int64_t>() >= 1 &&
                     *distinct->second.as<const int64_t>() <= k,
                 where + "distinct_clusters_ must be an int64 scalar in [1, n_clusters]");
    distinct_clusters_ = std::move(distinct->second);
  }
}

// ---- parameters as JSON ----------------------------------------------------------------------

std::string KMeans::get_params_json() const { return params_table().write(params_).dump(); }

void KMeans::set_param_array(Context& ctx, const std::string& name, const ArrayView& value) {
  GPUML_EXPECT(name == "init", "kmeans has no array-valued parameter '" + name + "' (it has 'init': the initial centers)");
  GPUML_EXPECT(value.ndim == 2 && value.shape[1] >= 1,
               "kmeans parameter 'init' must be a 2-d array (n_clusters, n_features), got " + std::to_string(value.ndim) +
                   " dimension(s)");
  GPUML_EXPECT(value.shape[0] == params_.n_clusters, "kmeans parameter 'init' has " + std::to_string(value.shape[0]) +
                                                         " rows but n_clusters is " + std::to_string(params_.n_clusters));
  // Centers given in host memory are converted there: a CUDA context would round-trip them through the device.
  const Context host = Context::cpu(1);
  const Context& where = value.device.is_cuda() ? ctx : host;
  const detail::Staged staged = detail::stage(where, value, DType::float64, "init");
  detail::require_finite(where, staged.view, "init");
  const HostArray centers = detail::to_host(where, staged.view);
  KMeansParams next = params_;
  next.init = "array";
  next.init_array.assign(centers.as<double>(), centers.as<double>() + value.shape[0] * value.shape[1]);
  params_table().check_relations(next);  // (the array was checked above: 2-d, n_clusters rows, finite)
  params_ = std::move(next);
}

namespace detail {

std::unique_ptr<Estimator> kmeans_from_params(const nlohmann::json& params) {
  return std::make_unique<KMeans>(params_table().read(params));
}

nlohmann::json kmeans_params_schema() { return params_table().schema(); }

}  // namespace detail

}  // namespace gpuml
