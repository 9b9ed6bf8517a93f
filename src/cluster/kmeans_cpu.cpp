// The CPU backend of KMeans: every primitive of KMeansBackend<T> with OpenMP threads.
//
// Determinism: rows are split into a fixed number of contiguous blocks (a function of the row
// count and the context's thread count only) and per-block partial sums are combined in block
// order, so a result depends on the thread count but never on scheduling. Squared distances
// are summed feature by feature in index order, in T, the same way in every primitive.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/counter_random.hpp"
#include "core/parallel.hpp"
#include "cluster/kmeans_backend.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

namespace {


// |a - b|^2 summed in feature order (no reassociation, so every primitive agrees bit for bit).
template <typename T>
inline T squared_distance(const T* a, const T* b, int64_t d) {
  T sum = 0;
  for (int64_t j = 0; j < d; ++j) {
    const T diff = a[j] - b[j];
    sum += diff * diff;
  }
  return sum;
}

// |x - c|² from |x|², x·c and |c|² (X known through its products), in double; rounding can make
// it slightly negative for a row on its center, hence the clip.
template <typename T>
inline T squared_distance_from_product(T row_norm, T product, T center_norm) {
  const double d2 = static_cast<double>(row_norm) - 2.0 * static_cast<double>(product) + static_cast<double>(center_norm);
  return static_cast<T>(std::max(0.0, d2));
}

// Centers stored tile by tile and transposed (feature-major inside a tile), so that the
// distances from one row to all centers of a tile vectorize across centers while each
// distance is still summed in feature order.
template <typename T>
class CenterTiles {
 public:
  static constexpr int64_t kMaxWidth = 16;

  // Tiles are kMaxWidth centers wide, or narrower (a multiple of 4) when there are few centers.
  CenterTiles(const T* centers, int64_t k, int64_t d)
      : k_(k), d_(d), width_(std::min(kMaxWidth, (k + 3) / 4 * 4)), n_tiles_((k + width_ - 1) / width_) {
    data_.assign(static_cast<std::size_t>(n_tiles_ * d * width_), T(0));
    for (int64_t c = 0; c < k; ++c)
      for (int64_t j = 0; j < d; ++j) data_[((c / width_) * d + j) * width_ + c % width_] = centers[c * d + j];
  }
  int64_t tiles() const { return n_tiles_; }
  int64_t first(int64_t t) const { return t * width_; }
  int64_t width(int64_t t) const { return std::min(width_, k_ - t * width_); }

  // acc[c] = |x - center(first(t) + c)|^2 for c < width(t); acc holds kMaxWidth entries.
  void distances(const T* x, int64_t t, T* acc) const {
    const T* rows[1] = {x};
    rows_distances<1>(rows, t, reinterpret_cast<T(*)[kMaxWidth]>(acc));
  }

  // The same for R rows of X (rows[r]) into acc[r]: each row's sums in the same order as
  // distances(), the rows' independent chains interleaved (one row's ordered sum is bound by
  // the add's latency).
  template <int R>
  void rows_distances(const T* const* rows, int64_t t, T (*acc)[kMaxWidth]) const {
    const T* tile = data_.data() + t * d_ * width_;
    // A compile-time lane count lets the compiler keep acc in registers.
    switch (width_) {
      case 4: return tile_distances<R, 4>(rows, tile, acc);
      case 8: return tile_distances<R, 8>(rows, tile, acc);
      case 12: return tile_distances<R, 12>(rows, tile, acc);
      default: return tile_distances<R, kMaxWidth>(rows, tile, acc);
    }
  }

 private:
  template <int R, int64_t W>
  void tile_distances(const T* const* rows, const T* tile, T (*acc)[kMaxWidth]) const {
    for (int r = 0; r < R; ++r)
      for (int64_t c = 0; c < W; ++c) acc[r][c] = T(0);
    for (int64_t j = 0; j < d_; ++j) {
      const T* column = tile + j * W;
      for (int r = 0; r < R; ++r) {
        const T xj = rows[r][j];
#pragma omp simd
        for (int64_t c = 0; c < W; ++c) {
          const T diff = xj - column[c];
          acc[r][c] += diff * diff;
        }
      }
    }
  }

  int64_t k_, d_, width_, n_tiles_;
  std::vector<T> data_;
};

// Rows per tile: the tile's rows are reused for every center tile while they are in cache.
constexpr int64_t kRowTile = 128;

template <typename T>
class KMeansCpuBackend final : public KMeansBackend<T> {
 public:
  explicit KMeansCpuBackend(const Context& ctx) : threads_(std::max(1, ctx.n_threads())) {}

  void column_means(const T* X, int64_t n, int64_t d, double* means_host) override {
    column_sums(X, n, d, nullptr, means_host);
    for (int64_t j = 0; j < d; ++j) means_host[j] /= static_cast<double>(n);
  }

  double center_columns(const T* X, int64_t n, int64_t d, const double* means_host, T* out) override {
    // Deviations from given means (a first pass's): no cancellation of E[x^2] - E[x]^2.
    std::vector<double> spread(static_cast<std::size_t>(d));
    column_sums(X, n, d, means_host, spread.data(), out);
    double sum = 0.0;
    for (int64_t j = 0; j < d; ++j) sum += spread[j] / static_cast<double>(n);
    return sum / static_cast<double>(d);
  }

  void merge_nearest(const int32_t* labels, const T* dist2, int64_t n, int64_t first, T* closest, int32_t* nearest,
                     const int64_t* zero_rows_host, int64_t m_zero) override {
#pragma omp parallel for num_threads(threads_for(n)) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const T d2 = std::max(dist2[i], T(0));
      if (first == 0 || d2 < closest[i]) {
        closest[i] = d2;
        nearest[i] = static_cast<int32_t>(first + labels[i]);
      }
    }
    for (int64_t e = 0; e < m_zero; ++e) closest[zero_rows_host[e]] = T(0);
  }

  double oversampling_potential(const T* weights, const T* closest, int64_t n) override {
    const int64_t chunks = (n + kOversampleChunk - 1) / kOversampleChunk;
    std::vector<double> chunk_sums(static_cast<std::size_t>(chunks));
#pragma omp parallel for num_threads(threads_for(n)) schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      double sum = 0.0;
      for (int64_t i = c * kOversampleChunk; i < std::min(n, (c + 1) * kOversampleChunk); ++i)
        sum += static_cast<double>(weights[i]) * static_cast<double>(closest[i]);
      chunk_sums[c] = sum;
    }
    double phi = 0.0;
    for (double v : chunk_sums) phi += v;
    return phi;
  }

  std::vector<int64_t> oversample(const T* weights, const T* closest, int64_t n, double oversampling, double phi,
                                  uint64_t key, uint64_t round, int64_t offset) override {
    const int64_t chunks = (n + kOversampleChunk - 1) / kOversampleChunk;
    std::vector<std::vector<int64_t>> chunk_chosen(static_cast<std::size_t>(chunks));
#pragma omp parallel for num_threads(threads_for(n)) schedule(static)
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t i = c * kOversampleChunk; i < std::min(n, (c + 1) * kOversampleChunk); ++i) {
        const double mass = oversampling * static_cast<double>(weights[i]) * static_cast<double>(closest[i]);
        if (mass > 0.0 && counter_uniform(key, round, static_cast<uint64_t>(offset + i)) * phi < mass)
          chunk_chosen[c].push_back(i);
      }
    std::vector<int64_t> chosen;  // in row order
    for (const auto& part : chunk_chosen) chosen.insert(chosen.end(), part.begin(), part.end());
    return chosen;
  }

  void nearest_weights(const T* weights, const int32_t* nearest, int64_t n, int64_t m, double* totals_host) override {
    std::fill(totals_host, totals_host + m, 0.0);
    if (weights) {  // in row order: the sums' bits depend on it
      for (int64_t i = 0; i < n; ++i) totals_host[nearest[i]] += static_cast<double>(weights[i]);
      return;
    }
    // Counts: integers, exact in any order, so per-block counts added up give the same bits.
    const RowBlocks blocks(n, threads_, 1 << 16, max_blocks_for(m));
    std::vector<int64_t> counts(static_cast<std::size_t>(blocks.count() * m), 0);
#pragma omp parallel for num_threads(threads_for(n)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b)
      for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i) ++counts[b * m + nearest[i]];
    for (int b = 0; b < blocks.count(); ++b)
      for (int64_t c = 0; c < m; ++c) totals_host[c] += static_cast<double>(counts[b * m + c]);
  }

  int64_t assign(const T* X, int64_t n, int64_t d, const T* centers_host, int64_t k, int32_t* labels, T* dist2,
                 bool count_changes) override {
    const CenterTiles<T> tiles(centers_host, k, d);
    const int64_t n_row_tiles = (n + kRowTile - 1) / kRowTile;
    int64_t changes = 0;
#pragma omp parallel for num_threads(threads_for(n * d * k)) schedule(static) reduction(+ : changes)
    for (int64_t rt = 0; rt < n_row_tiles; ++rt) {
      const int64_t row0 = rt * kRowTile, rows = std::min(kRowTile, n - row0);
      T best[kRowTile];
      int32_t best_label[kRowTile];
      T acc[CenterTiles<T>::kMaxWidth];
      for (int64_t t = 0; t < tiles.tiles(); ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          tiles.distances(X + (row0 + r) * d, t, acc);
          int64_t c = 0;
          if (t == 0) {
            best[r] = acc[0];
            best_label[r] = 0;
            c = 1;
          }
          // Strict comparison in increasing center order: the lowest index wins ties.
          for (; c < tiles.width(t); ++c)
            if (acc[c] < best[r]) {
              best[r] = acc[c];
              best_label[r] = static_cast<int32_t>(tiles.first(t) + c);
            }
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        if (count_changes && labels[row0 + r] != best_label[r]) ++changes;
        labels[row0 + r] = best_label[r];
        dist2[row0 + r] = best[r];
      }
    }
    return changes;
  }

  void lloyd_sums(const T* X, const T* weights, int64_t n, int64_t d, const T* centers, int64_t k, int32_t* labels, T* dist2,
                  bool count_changes, double* sums) override {
    const int64_t changed = assign(X, n, d, centers, k, labels, dist2, count_changes);
    std::vector<double> feature_sums(static_cast<std::size_t>(k * d)), weight_sums(static_cast<std::size_t>(k));
    accumulate(X, weights, labels, n, d, k, feature_sums.data(), weight_sums.data());
    pack_lloyd_sums(feature_sums.data(), weight_sums.data(), k, d, static_cast<double>(changed), sums);
  }

  void start_move_centers(const double* sums, int64_t k, int64_t d, const T* centers, T* next) override {
    CenterMoves& moves = pending_moves_;
    moves = CenterMoves{};
    moves.changed = sums[k * (d + 1)];
    for (int64_t c = 0; c < k; ++c) moves.empty = moves.empty || !(sums[c * (d + 1) + d] > 0.0);
    if (moves.empty) return;
    for (int64_t c = 0; c < k; ++c) moves.shift += move_center(sums + c * (d + 1), centers + c * d, d, next + c * d);
  }

  CenterMoves finish_move_centers() override { return pending_moves_; }

  double weighted_sum(const T* weights, const T* values, int64_t n) override {
    const RowBlocks blocks(n, threads_, 16384);
    std::vector<double> partial(static_cast<std::size_t>(blocks.count()), 0.0);
#pragma omp parallel for num_threads(threads_for(n)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      double acc = 0.0;
      for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i)
        acc += static_cast<double>(weights[i]) * (values ? static_cast<double>(values[i]) : 1.0);
      partial[b] = acc;
    }
    return std::accumulate(partial.begin(), partial.end(), 0.0);
  }

  void largest(const T* dist2, int64_t n, int64_t m, int64_t* idx_host) override {
    m = std::min(m, n);
    if (m <= 0) return;
    // "a before b" when a is farther, or as far with a lower index.
    auto before = [dist2](int64_t a, int64_t b) { return dist2[a] > dist2[b] || (dist2[a] == dist2[b] && a < b); };
    // A heap of the m best rows seen so far whose top is the worst of them: O(n log m), O(m) memory.
    std::vector<int64_t> heap;
    heap.reserve(static_cast<std::size_t>(m));
    for (int64_t i = 0; i < n; ++i) {
      if (static_cast<int64_t>(heap.size()) < m) {
        heap.push_back(i);
        std::push_heap(heap.begin(), heap.end(), before);
      } else if (before(i, heap.front())) {
        std::pop_heap(heap.begin(), heap.end(), before);
        heap.back() = i;
        std::push_heap(heap.begin(), heap.end(), before);
      }
    }
    std::sort(heap.begin(), heap.end(), before);
    std::copy(heap.begin(), heap.end(), idx_host);
  }

  void gather_rows(const T* X, int64_t n, int64_t d, const int64_t* idx_host, int64_t m, T* out_host) override {
    for (int64_t r = 0; r < m; ++r) {
      if (idx_host[r] < 0 || idx_host[r] >= n) throw_error(ErrorCode::internal, "kmeans gather_rows: row index out of range");
      std::memcpy(out_host + r * d, X + idx_host[r] * d, static_cast<std::size_t>(d) * sizeof(T));
    }
  }

  void search_cumsum(const T* weights, const T* values, int64_t n, const double* thresholds_host, int64_t m,
                     int64_t* idx_host) override {
    // One sequential pass over the running sum, answering the thresholds in increasing order.
    std::vector<int64_t> order(static_cast<std::size_t>(m));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [thresholds_host](int64_t a, int64_t b) { return thresholds_host[a] < thresholds_host[b]; });
    double cumsum = 0.0;  // sum of the terms before row i
    int64_t i = 0;
    for (int64_t q : order) {
      const double threshold = thresholds_host[q];
      while (i < n) {
        const double next = cumsum + static_cast<double>(weights[i]) * (values ? static_cast<double>(values[i]) : 1.0);
        if (next > threshold) break;
        cumsum = next;
        ++i;
      }
      idx_host[q] = std::min(i, n - 1);
    }
  }

  bool reads_gaps() const override { return true; }

  void candidate_potentials(const T* X, const T* weights, const T* closest, const NearestCenters<T>& known, int64_t n,
                            int64_t d, const T* candidates_host, int64_t m, double* potentials_host) override {
    const CenterTiles<T> tiles(candidates_host, m, d);
    const RowBlocks blocks(n, threads_, 1024);
    const PlusPlusBound<T> bound(d);
    // Rows no candidate can bring closer (NearestCenters) are not read: their terms are
    // w * closest, which min(closest, distance) would give.
    auto unchanged = [&](int64_t i) {
      if (known.nearest == nullptr || known.gaps_host == nullptr) return false;
      const T* gaps = known.gaps_host + static_cast<int64_t>(known.nearest[i]) * m;
      for (int64_t q = 0; q < m; ++q)
        if (!bound.unchanged(gaps[q], closest[i])) return false;
      return true;
    };
    std::vector<double> partial(static_cast<std::size_t>(blocks.count() * m), 0.0);
#pragma omp parallel for num_threads(threads_for(n * d * m)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      double* acc_pot = partial.data() + static_cast<int64_t>(b) * m;
      // A window of rows at a time: the distances of the rows read, kRows at once (independent
      // sums), then every row's terms in row order, as one row at a time would add them.
      constexpr int kRows = 4;
      constexpr int64_t kWindow = 128;
      T dist[kWindow][CenterTiles<T>::kMaxWidth];
      bool skipped[kWindow];
      const T* read[kWindow];
      int64_t read_at[kWindow];
      for (int64_t w0 = blocks.begin(b); w0 < blocks.end(b); w0 += kWindow) {
        const int64_t rows = std::min(kWindow, blocks.end(b) - w0);
        int64_t n_read = 0;
        for (int64_t r = 0; r < rows; ++r) {
          skipped[r] = unchanged(w0 + r);
          if (!skipped[r]) {
            read[n_read] = X + (w0 + r) * d;
            read_at[n_read++] = r;
          }
        }
        for (int64_t t = 0; t < tiles.tiles(); ++t) {
          int64_t j = 0;
          for (; j + kRows <= n_read && tiles.tiles() == 1; j += kRows) {
            T acc[kRows][CenterTiles<T>::kMaxWidth];
            tiles.template rows_distances<kRows>(read + j, t, acc);
            for (int r = 0; r < kRows; ++r) std::copy_n(acc[r], tiles.width(t), dist[read_at[j + r]]);
          }
          for (; j < n_read; ++j) {
            T acc[CenterTiles<T>::kMaxWidth];
            tiles.distances(read[j], t, acc);
            std::copy_n(acc, tiles.width(t), dist[read_at[j]]);
          }
          for (int64_t r = 0; r < rows; ++r) {
            const T near = closest[w0 + r];
            const double w = static_cast<double>(weights[w0 + r]);
            for (int64_t c = 0; c < tiles.width(t); ++c)
              acc_pot[tiles.first(t) + c] += w * static_cast<double>(skipped[r] ? near : std::min(near, dist[r][c]));
          }
        }
      }
    }
    std::fill(potentials_host, potentials_host + m, 0.0);
    for (int b = 0; b < blocks.count(); ++b)
      for (int64_t c = 0; c < m; ++c) potentials_host[c] += partial[b * m + c];
  }

  void update_closest(const T* X, int64_t n, int64_t d, const T* center_host, T* closest, const NearestCenters<T>& known,
                      bool reset) override {
    const PlusPlusBound<T> bound(d);
    const bool skipping = !reset && known.nearest != nullptr && known.gaps_host != nullptr;
    const auto index = static_cast<int32_t>(reset ? 0 : known.centers);
    // Windows of rows; the rows read in groups of kGroup (independent sums hide the latency of
    // each row's ordered sum). Rows the center cannot bring closer are not read (NearestCenters).
    constexpr int64_t kGroup = 8, kWindow = 1024;
    const int64_t n_windows = (n + kWindow - 1) / kWindow;
#pragma omp parallel for num_threads(threads_for(n * d)) schedule(static)
    for (int64_t w = 0; w < n_windows; ++w) {
      const int64_t w0 = w * kWindow, w_end = std::min(n, w0 + kWindow);
      int64_t read[kWindow];
      int64_t n_read = 0;
      for (int64_t i = w0; i < w_end; ++i)
        if (!skipping || !bound.unchanged(known.gaps_host[known.nearest[i]], closest[i])) read[n_read++] = i;
      for (int64_t g = 0; g < n_read; g += kGroup) {
        const int64_t rows = std::min(kGroup, n_read - g);
        const T* x[kGroup];
        for (int64_t r = 0; r < kGroup; ++r) x[r] = X + read[g + std::min(r, rows - 1)] * d;  // repeats: unused
        T acc[kGroup] = {};
        for (int64_t j = 0; j < d; ++j) {
          const T cj = center_host[j];
          for (int64_t r = 0; r < kGroup; ++r) {
            const T diff = x[r][j] - cj;
            acc[r] += diff * diff;
          }
        }
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = read[g + r];
          if (reset || acc[r] < closest[i]) {
            closest[i] = acc[r];
            if (known.nearest) known.nearest[i] = index;
          }
        }
      }
    }
  }


  void distances(const T* X, int64_t n, int64_t d, const T* centers_host, int64_t k, T* out) override {
    const CenterTiles<T> tiles(centers_host, k, d);
    const int64_t n_row_tiles = (n + kRowTile - 1) / kRowTile;
#pragma omp parallel for num_threads(threads_for(n * d * k)) schedule(static)
    for (int64_t rt = 0; rt < n_row_tiles; ++rt) {
      const int64_t row0 = rt * kRowTile, rows = std::min(kRowTile, n - row0);
      T acc[CenterTiles<T>::kMaxWidth];
      for (int64_t t = 0; t < tiles.tiles(); ++t)
        for (int64_t r = 0; r < rows; ++r) {
          tiles.distances(X + (row0 + r) * d, t, acc);
          T* row_out = out + (row0 + r) * k + tiles.first(t);
          for (int64_t c = 0; c < tiles.width(t); ++c) row_out[c] = std::sqrt(acc[c]);
        }
    }
  }

  int64_t assign_from_products(const T* products, const T* row_norms, int64_t n, const T* center_norms_host, int64_t k,
                               int32_t* labels, T* dist2, bool count_changes) override {
    int64_t changes = 0;
#pragma omp parallel for num_threads(threads_for(n * k)) schedule(static) reduction(+ : changes)
    for (int64_t i = 0; i < n; ++i) {
      const T* p = products + i * k;
      // |x|² is the same for every center: compared without it, as scikit-learn's sparse Lloyd.
      double best = static_cast<double>(center_norms_host[0]) - 2.0 * static_cast<double>(p[0]);
      int32_t label = 0;
      for (int64_t c = 1; c < k; ++c) {
        const double partial = static_cast<double>(center_norms_host[c]) - 2.0 * static_cast<double>(p[c]);
        if (partial < best) {
          best = partial;
          label = static_cast<int32_t>(c);
        }
      }
      if (count_changes && labels[i] != label) ++changes;
      labels[i] = label;
      dist2[i] = static_cast<T>(std::max(0.0, static_cast<double>(row_norms[i]) + best));  // as squared_distance_from_product
    }
    return changes;
  }

  void candidate_potentials_from_products(const T* products, const T* row_norms, const T* weights, const T* closest,
                                          int64_t n, const T* candidate_norms_host, int64_t m,
                                          double* potentials_host) override {
    const RowBlocks blocks(n, threads_, 1024);
    std::vector<double> partial(static_cast<std::size_t>(blocks.count() * m), 0.0);
#pragma omp parallel for num_threads(threads_for(n * m)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      double* acc = partial.data() + static_cast<int64_t>(b) * m;
      for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i) {
        const double w = static_cast<double>(weights[i]);
        for (int64_t c = 0; c < m; ++c) {
          const T dist = squared_distance_from_product(row_norms[i], products[i * m + c], candidate_norms_host[c]);
          acc[c] += w * static_cast<double>(std::min(closest[i], dist));
        }
      }
    }
    std::fill(potentials_host, potentials_host + m, 0.0);
    for (int b = 0; b < blocks.count(); ++b)
      for (int64_t c = 0; c < m; ++c) potentials_host[c] += partial[b * m + c];
  }

  void update_closest_from_products(const T* products, const T* row_norms, int64_t n, T center_norm, T* closest,
                                    bool reset) override {
#pragma omp parallel for num_threads(threads_for(n)) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const T dist = squared_distance_from_product(row_norms[i], products[i], center_norm);
      closest[i] = reset ? dist : std::min(closest[i], dist);
    }
  }

  void distances_from_products(T* products, const T* row_norms, int64_t n, const T* center_norms_host,
                               int64_t k) override {
#pragma omp parallel for num_threads(threads_for(n * k)) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < k; ++c) {
        T& p = products[i * k + c];
        p = std::sqrt(squared_distance_from_product(row_norms[i], p, center_norms_host[c]));
      }
  }

  int threads_for(int64_t work) const { return detail::threads_for(threads_, work); }

 private:
  // Per-cluster weighted sums of rows (k x d) and weights (k) in double (weights nullptr: all 1).
  void accumulate(const T* X, const T* weights, const int32_t* labels, int64_t n, int64_t d, int64_t k,
                  double* sums_host, double* weight_sums_host) {
    const int64_t stride = k * d + k;  // one block's sums, then its weights
    const RowBlocks blocks(n, threads_, 4096, max_blocks_for(stride));
    std::vector<double> partial(static_cast<std::size_t>(blocks.count() * stride));
#pragma omp parallel for num_threads(threads_for(n * d)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      double* sums = partial.data() + b * stride;
      double* wsums = sums + k * d;
      std::fill(sums, sums + stride, 0.0);
      for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i) {
        const int64_t c = labels[i];
        const double w = weights ? static_cast<double>(weights[i]) : 1.0;
        double* row_sum = sums + c * d;
        const T* x = X + i * d;
        for (int64_t j = 0; j < d; ++j) row_sum[j] += static_cast<double>(x[j]) * w;
        wsums[c] += w;
      }
    }
    std::fill(sums_host, sums_host + k * d, 0.0);
    std::fill(weight_sums_host, weight_sums_host + k, 0.0);
    for (int b = 0; b < blocks.count(); ++b) {
      const double* sums = partial.data() + b * stride;
      for (int64_t e = 0; e < k * d; ++e) sums_host[e] += sums[e];
      for (int64_t c = 0; c < k; ++c) weight_sums_host[c] += sums[k * d + c];
    }
  }

  // Per column j: sum_i X_ij into out[j], or sum_i (X_ij - center[j])^2 when center is given,
  // and then, where centered != nullptr, centered[i, j] = X_ij - center[j] rounded to T (it may
  // be X). Per-block partial sums in double, then the blocks in order: deterministic.
  void column_sums(const T* X, int64_t n, int64_t d, const double* center, double* out, T* centered = nullptr) const {
    const RowBlocks blocks(n, threads_, 1024, max_blocks_for(d));
    std::vector<double> partial(static_cast<std::size_t>(blocks.count() * d));
#pragma omp parallel for num_threads(threads_for(n * d)) schedule(static)
    for (int b = 0; b < blocks.count(); ++b) {
      double* acc = partial.data() + static_cast<int64_t>(b) * d;
      std::fill(acc, acc + d, 0.0);
      for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i)
        for (int64_t j = 0; j < d; ++j) {
          const double v = static_cast<double>(X[i * d + j]);
          if (center) {
            const double dev = v - center[j];
            acc[j] += dev * dev;
            if (centered) centered[i * d + j] = static_cast<T>(dev);
          } else {
            acc[j] += v;
          }
        }
    }
    std::fill(out, out + d, 0.0);
    for (int b = 0; b < blocks.count(); ++b)
      for (int64_t j = 0; j < d; ++j) out[j] += partial[b * d + j];
  }

  // Caps the number of blocks so that per-block scratch of `per_block` doubles stays under 256 MiB.
  static int64_t max_blocks_for(int64_t per_block) {
    constexpr int64_t kScratchDoubles = (int64_t{256} << 20) / 8;
    return std::max<int64_t>(1, kScratchDoubles / std::max<int64_t>(1, per_block));
  }

  int threads_;
  CenterMoves pending_moves_;  // start_move_centers' result, for finish_move_centers
};

}  // namespace

template <typename T>
std::unique_ptr<KMeansBackend<T>> make_kmeans_cpu_backend(const Context& ctx) {
  return std::make_unique<KMeansCpuBackend<T>>(ctx);
}

template std::unique_ptr<KMeansBackend<float>> make_kmeans_cpu_backend<float>(const Context&);
template std::unique_ptr<KMeansBackend<double>> make_kmeans_cpu_backend<double>(const Context&);

}  // namespace gpuml::detail
