#pragma once
// The primitives a KMeans backend provides. The algorithm itself (n_init restarts, k-means++
// seeding, Lloyd iterations, convergence, empty-cluster relocation) is written once, in
// src/cluster/kmeans.cpp, on top of these; src/cluster/kmeans_cpu.cpp and
// cuda/cluster/kmeans.cu implement them.
//
// Pointers named X, weights, labels, dist2 and closest are in the backend's memory (host for
// the CPU, the device for CUDA), contiguous and row-major. Pointers with a `_host` suffix are
// host memory. X is n x d; centers are k x d.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "../core/host_device.hpp"  // relative: the tests include this header by path
#include "gpuml/core/context.hpp"

namespace gpuml::detail {

constexpr int64_t kOversampleChunk = 8192;  // rows per fixed chunk of k-means||'s φ

// ---- k-means++ without the rows that cannot change (the triangle inequality) ---------------
//
// A row x whose nearest chosen center is a, at squared distance D = |x - a|², is no closer to a
// candidate c than to a when |c - a| >= 2 |x - a|: then min(D, |x - c|²) = D, and the step need
// not read x. The test runs on computed values, so it keeps a margin: every squared distance is
// a sum of d rounded squares of rounded differences, within (d + 2) u of the exact value
// (relative, u the unit roundoff, any summation order, with or without FMA), and the factor
// 4 (1 + 16 (d + 2) u) makes the computed |x - c|² at least the computed D. D below `floor`,
// where underflow's absolute error could count, is never skipped (unless it is 0: min(0, .) = 0).
// A pass that skips rows therefore returns the bits it would return reading them all.
template <typename T>
struct PlusPlusBound {
  T scale;  // 4 (1 + 16 (d + 2) u), +inf where d makes the margin too wide to be of use
  T floor;
  explicit PlusPlusBound(int64_t d) {
    const double u = std::numeric_limits<T>::epsilon() / 2;
    const double margin = 16.0 * (static_cast<double>(d) + 2.0) * u;
    scale = margin < 0.25 ? static_cast<T>(4.0 * (1.0 + margin)) : std::numeric_limits<T>::infinity();
    floor = std::ldexp(std::numeric_limits<T>::min(), std::numeric_limits<T>::digits + 2);
  }
  // gap = |c - a|² (computed), closest = D (computed): true where min(closest, |x - c|²) = closest
  // is proven.
  GPUML_HOST_DEVICE bool unchanged(T gap, T closest) const {
    return closest == T(0) || (closest >= floor && gap >= scale * closest);
  }
};

// What a k-means++ pass may skip rows with. nearest[i] (the backend's memory) is the index of
// row i's nearest chosen center (update_closest keeps it); gaps_host[a * m + q] is
// |candidate q - center a|² for the `centers` centers chosen so far. gaps_host == nullptr: no
// skipping (nearest still kept); nearest == nullptr: neither. A backend may ignore the gaps (the sparse products do: their
// distances are not within the bound's margin); results are the same bits either way.
template <typename T>
struct NearestCenters {
  int32_t* nearest = nullptr;
  const T* gaps_host = nullptr;
  int64_t centers = 0;
};

// ---- Lloyd iterations with the centers in the backend's memory ------------------------------
//
// A Lloyd step's sums (lloyd_sums_size(k, d) doubles, the backend's memory): for each center c,
// sums[c (d + 1) + j] the weighted sum of its rows' feature j (j < d) and sums[c (d + 1) + d]
// their weight; then, last, the number of labels that changed. Added over the ranks as they are.
inline int64_t lloyd_sums_size(int64_t k, int64_t d) { return k * (d + 1) + 1; }

// Per-cluster sums (k x d) and weights (k), and the labels changed, in that layout (host memory).
inline void pack_lloyd_sums(const double* feature_sums, const double* weight_sums, int64_t k, int64_t d, double changed,
                            double* sums) {
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t j = 0; j < d; ++j) sums[c * (d + 1) + j] = feature_sums[c * d + j];
    sums[c * (d + 1) + d] = weight_sums[c];
  }
  sums[k * (d + 1)] = changed;
}

// What move_centers reports: one small read a step.
struct CenterMoves {
  double changed = 0.0;  // labels changed (the sums' last entry)
  double shift = 0.0;    // sum over centers, in order, of each one's squared move (move_center)
  bool empty = false;    // a center has weight 0: nothing was moved (the driver relocates)
};

// (acc + m²) rounded twice, never fused into an FMA: the same bits on the host and in kernels.
GPUML_HOST_DEVICE inline double add_square(double acc, double m) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(acc, __dmul_rn(m, m));
#else
  volatile double square = m * m;  // (a host build with -ffp-contract=fast and FMA would fuse it)
  return acc + square;
#endif
}

// Center c's next position, sums / weight rounded to T (sums: its d sums then its weight, > 0),
// into next; returns its squared move from old, summed over the features in order in double.
template <typename T>
GPUML_HOST_DEVICE inline double move_center(const double* sums, const T* old, int64_t d, T* next) {
  const double weight = sums[d];
  double moved = 0.0;
  for (int64_t j = 0; j < d; ++j) {
    next[j] = static_cast<T>(sums[j] / weight);
    moved = add_square(moved, static_cast<double>(next[j]) - static_cast<double>(old[j]));
  }
  return moved;
}

template <typename T>
class KMeansBackend {
 public:
  virtual ~KMeansBackend() = default;

  // Unweighted mean of every column of X into means_host (d values), summed in double in a
  // fixed order (per-block partial sums, then the blocks in order): deterministic.
  virtual void column_means(const T* X, int64_t n, int64_t d, double* means_host) = 0;

  // out = X - means_host (per column), computed in double and rounded to T, in the same pass as
  // the return value: the mean over features of sum_i (X_ij - means_host[j])^2 / n (the
  // unweighted population variance of each column about the given means), summed in double in a
  // fixed order (per-chunk partial sums, then the chunks in order). out may be X (in place) or
  // another n x d array in the backend's memory.
  virtual double center_columns(const T* X, int64_t n, int64_t d, const double* means_host, T* out) = 0;

  // For every row: index of the nearest center (lowest index on ties) into labels and its
  // squared distance into dist2. Returns how many labels differ from what `labels` held before
  // (when count_changes is false the old labels are not read and 0 is returned).
  virtual int64_t assign(const T* X, int64_t n, int64_t d, const T* centers_host, int64_t k,
                         int32_t* labels, T* dist2, bool count_changes) = 0;

  // dist2 (assign's or lloyd_sums' for these labels) as each row's sum of squared differences to
  // its labeled center, where the backend's assign computes the distances another way. The CUDA
  // backend's are |x|² + |c|² - 2 x·c, whose rounding grows with |x|², not with the distance
  // (float32 rows 200 from the origin, 1 from their center: 7e-4 of the inertia seen); the
  // inertia and score then have the CPU's (and scikit-learn's) accuracy. The CPU backend's assign
  // already sums squared differences: nothing to do.
  virtual void refine_distances(const T* /*X*/, int64_t /*n*/, int64_t /*d*/, const T* /*centers_host*/, int64_t /*k*/,
                                const int32_t* /*labels*/, T* /*dist2*/) {}

  // Says that X (n x d) stays as it is, for the assigns on it, until keep_rows is called again:
  // the backend may keep per-row values across those calls (the CUDA backend: the rows'
  // squared norms). Other arrays passed to assign are read afresh.
  virtual void keep_rows(const T* /*X*/, int64_t /*n*/, int64_t /*d*/) {}

  // k-means|| keeps each row's least D² and its candidate: for every row where first == 0 or
  // max(dist2[i], 0) < closest[i] (dist2 from assign, which may round below 0),
  // closest[i] = max(dist2[i], 0) and nearest[i] = first + labels[i]. Then closest[idx_host[e]] = 0
  // for the m_zero rows listed (rows chosen as candidates sit on one). closest and nearest are in
  // the backend's memory.
  virtual void merge_nearest(const int32_t* labels, const T* dist2, int64_t n, int64_t first, T* closest, int32_t* nearest,
                             const int64_t* zero_rows_host, int64_t m_zero) = 0;

  // k-means|| (src/cluster/kmeans.cpp): this rank's part of φ = sum_i weights[i] closest[i], as
  // sums over fixed chunks of kOversampleChunk rows added in order (the same bits for any thread
  // count). closest is in the backend's memory.
  virtual double oversampling_potential(const T* weights, const T* closest, int64_t n) = 0;

  // k-means|| draw of round `round`: the local rows i with mass = oversampling * weights[i] *
  // closest[i] > 0 and counter_uniform(key, round, offset + i) * phi < mass (u < min(1, mass / φ)
  // without the division's rounding), in row order.
  virtual std::vector<int64_t> oversample(const T* weights, const T* closest, int64_t n, double oversampling, double phi,
                                          uint64_t key, uint64_t round, int64_t offset) = 0;

  // totals_host[c] = sum of weights[i] over the rows i with nearest[i] == c (c < m), added in row
  // order; weights == nullptr: every weight is 1 (the counts).
  virtual void nearest_weights(const T* weights, const int32_t* nearest, int64_t n, int64_t m, double* totals_host) = 0;

  // One Lloyd step's first half, in the backend's memory: assign as `assign` does, to centers
  // in the backend's memory, then the step's sums (lloyd_sums_size) from the new labels (weights
  // nullptr: every weight is 1), the labels changed last (0 without count_changes). The CUDA
  // backend does not wait for the device.
  virtual void lloyd_sums(const T* X, const T* weights, int64_t n, int64_t d, const T* centers, int64_t k, int32_t* labels,
                          T* dist2, bool count_changes, double* sums) = 0;

  // Its second half, once the sums are added over the ranks: next[c] = move_center of center c
  // from centers[c] (all in the backend's memory) and the shift, the sum over c in order of the
  // moves; unless a center has weight 0: then `empty`, and next holds nothing of use. In two
  // calls, so that the driver can queue the next step's first half in between: start queues the
  // work (the CPU backend does it there), finish waits for its report and returns it.
  virtual void start_move_centers(const double* sums, int64_t k, int64_t d, const T* centers, T* next) = 0;
  virtual CenterMoves finish_move_centers() = 0;

  // sum_i weights[i] * values[i] (values may be dist2), in double.
  virtual double weighted_sum(const T* weights, const T* values, int64_t n) = 0;

  // Indices of the m rows with the largest dist2, largest first (ties: lower index first).
  virtual void largest(const T* dist2, int64_t n, int64_t m, int64_t* idx_host) = 0;

  // Copies rows idx_host[0..m) of X into out_host (m x d).
  virtual void gather_rows(const T* X, int64_t n, int64_t d, const int64_t* idx_host, int64_t m, T* out_host) = 0;

  // Inverse-CDF sampling: for each threshold t in thresholds_host[0..m), the first i with
  // cumsum(weights * values)[i] > t (values == nullptr means all ones), clipped to n - 1.
  virtual void search_cumsum(const T* weights, const T* values, int64_t n, const double* thresholds_host,
                             int64_t m, int64_t* idx_host) = 0;

  // Whether candidate_potentials and update_closest read NearestCenters' gaps (the driver
  // computes them only then; nearest is kept either way).
  virtual bool reads_gaps() const { return false; }

  // k-means++ step: for each of m candidate rows, the potential
  // sum_i weights[i] * min(closest[i], |X_i - candidate|^2), into potentials_host; rows may be
  // skipped through `known` (gaps_host: known.centers x m).
  virtual void candidate_potentials(const T* X, const T* weights, const T* closest, const NearestCenters<T>& known,
                                    int64_t n, int64_t d, const T* candidates_host, int64_t m,
                                    double* potentials_host) = 0;

  // The k-means++ steps that choose centers [from, k) into centers_host (k x d; centers [0,
  // from) given), in one call that stays in the backend's memory, for one process: the steps of
  // Seeder::plusplus_steps (src/cluster/kmeans.cpp) over the primitives above, step s drawing
  // its `trials` thresholds as uniforms_host[s * trials + t] times the potential (which starts
  // at `potential`, the sum of weights * closest). closest (and nearest, where not null: rows
  // may then be skipped, NearestCenters) are left as the last step leaves them. Returns false,
  // having done nothing, where the backend has no such path (the driver then loops over the
  // primitives).
  virtual bool plusplus_steps(const T* /*X*/, const T* /*weights*/, int64_t /*n*/, int64_t /*d*/, T* /*closest*/,
                              int32_t* /*nearest*/, double /*potential*/, const double* /*uniforms_host*/,
                              int64_t /*trials*/, int64_t /*from*/, int64_t /*k*/, T* /*centers_host*/) {
    return false;
  }

  // closest[i] = min(closest[i], |X_i - center|^2), and where it decreases strictly,
  // known.nearest[i] = known.centers (the center's index; not kept where nearest is null); rows
  // may be skipped through the gaps (gaps_host: 1 x known.centers). With `reset`,
  // closest[i] = |X_i - center|^2 and nearest[i] = 0 (the gaps are not read).
  virtual void update_closest(const T* X, int64_t n, int64_t d, const T* center_host, T* closest,
                              const NearestCenters<T>& known, bool reset) = 0;

  // Euclidean (not squared) distances to every center: out is n x k in the backend's memory.
  virtual void distances(const T* X, int64_t n, int64_t d, const T* centers_host, int64_t k, T* out) = 0;

  // The same steps for an X known through its products with the centers (sparse X:
  // core/sparse_backend.hpp): products = X Cᵀ (n x m, the backend's memory), row_norms[i] = |x_i|²
  // and center_norms_host[c] = |c|², and |x - c|² taken as max(0, |x|² - 2 x·c + |c|²), in double.
  // As assign; the nearest center is the one of least |c|² - 2 x·c (lowest index on ties).
  virtual int64_t assign_from_products(const T* products, const T* row_norms, int64_t n, const T* center_norms_host,
                                       int64_t k, int32_t* labels, T* dist2, bool count_changes) = 0;
  // As candidate_potentials, for m candidates.
  virtual void candidate_potentials_from_products(const T* products, const T* row_norms, const T* weights,
                                                  const T* closest, int64_t n, const T* candidate_norms_host,
                                                  int64_t m, double* potentials_host) = 0;
  // As update_closest, for one center (products: n x 1).
  virtual void update_closest_from_products(const T* products, const T* row_norms, int64_t n, T center_norm,
                                            T* closest, bool reset) = 0;
  // As distances, in place: products (n x k) become the Euclidean distances.
  virtual void distances_from_products(T* products, const T* row_norms, int64_t n, const T* center_norms_host,
                                       int64_t k) = 0;
};

// Exported (GPUML_API) only so that tests/cpp/cluster/kmeans_backend_gpu_test.cpp can compare the
// two backends primitive by primitive; not part of the public API.
template <typename T> GPUML_API std::unique_ptr<KMeansBackend<T>> make_kmeans_cpu_backend(const Context& ctx);
template <typename T> GPUML_API std::unique_ptr<KMeansBackend<T>> make_kmeans_cuda_backend(const Context& ctx);

}  // namespace gpuml::detail
