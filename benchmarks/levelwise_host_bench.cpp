// The host's share of the level-by-level forest builder (src/ensemble/levelwise.cpp): the roots and
// slot lists, and the trees made from each level's records on the host (LevelBackend::grow_trees'
// default, grow_trees_by_levels: the records kept, then assembled in grow_tree's order; the host
// backend's path, while the CUDA backend assembles its trees on the device), with the backend's
// search left out. A backend stand-in hands over the levels of regression trees with every target
// distinct (at full depth every node of two or more rows splits: 2 rows - 1 nodes a tree, as the
// default RandomForestRegressor grows), splitting each node's rows at a pseudo-random 30-70% point.
// The levels are recorded once, before the timing: a run is the driver's host work alone.
// Arguments: rows per tree, trees, max_depth (0: none); the threads are OpenMP's.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "bench_util.hpp"
#include "ensemble/levelwise.hpp"

namespace {

using namespace gpuml::detail;

// A node's statistics over the targets y_i = i of rows [first, first + count) of its tree: W, S, Q
// (small ranges summed: the closed form's rounding would swamp their variance).
void row_range_stats(int64_t first, int64_t count, double* s) {
  s[0] = static_cast<double>(count);
  if (count < 64) {
    s[1] = s[2] = 0.0;
    for (int64_t i = first; i < first + count; ++i) {
      s[1] += static_cast<double>(i);
      s[2] += static_cast<double>(i) * static_cast<double>(i);
    }
    return;
  }
  const double a = static_cast<double>(first), b = static_cast<double>(first + count - 1);
  s[1] = (a + b) * static_cast<double>(count) / 2.0;
  s[2] = (b * (b + 1.0) * (2.0 * b + 1.0) - (a - 1.0) * a * (2.0 * a - 1.0)) / 6.0;  // sum of squares a..b
}

// Hands over recorded levels (made once, before the timing; the slots of a node are its rows,
// which the driver never reads), so that a run times the driver's host work alone.
class RecordedLevels final : public LevelBackend {
 public:
  // The levels of `trees` trees of n rows each, as grow_levels_by_search would hand them over.
  void record(int64_t n, int64_t trees, const LevelGrowth& growth) {
    std::vector<LevelNode> level(static_cast<std::size_t>(trees)), next;
    for (int64_t t = 0; t < trees; ++t) level[t] = LevelNode{static_cast<int32_t>(t), static_cast<int32_t>(n), t * n, n, 1.0, 0};
    std::vector<double> stats(level.size() * 3), next_stats, right(3);
    for (std::size_t i = 0; i < level.size(); ++i) row_range_stats(0, n, stats.data() + 3 * i);
    uint64_t stream = 12345;
    for (int64_t depth = 0; !level.empty(); ++depth) {
      const int64_t m = static_cast<int64_t>(level.size());
      Level& out = levels_.emplace_back();
      out.splits.assign(static_cast<std::size_t>(m), LevelSplit{});
      out.left.assign(static_cast<std::size_t>(m * 3), 0.0);
      out.flags.assign(static_cast<std::size_t>(m), 0);
      next.clear();
      next_stats.clear();
      for (int64_t i = 0; i < m; ++i) {
        const LevelNode& p = level[i];
        const int64_t rows = p.slot_count;
        const uint64_t r = bench::splitmix64(stream);
        const int64_t l = std::max<int64_t>(1, std::min<int64_t>(rows - 1, rows * static_cast<int64_t>(30 + r % 41) / 100));
        LevelSplit& s = out.splits[i];
        s.found = 1;
        s.feature = static_cast<int32_t>((r >> 8) % 32);
        s.bin = static_cast<int32_t>((r >> 16) % 250);
        s.next_bin = s.bin + 1;
        s.improvement = 1.0;
        s.left_rows = s.left_slots = l;
        s.right_rows = rows - l;
        double* left = out.left.data() + 3 * i;
        row_range_stats(p.slot_begin - static_cast<int64_t>(p.tree) * n, l, left);  // the tree's own rows
        const uint8_t flags = level_flags(growth, depth, true, s.improvement, l, rows - l, stats.data() + 3 * i, left, right.data());
        out.flags[i] = flags;
        if ((flags & kLeftSearched) != 0) {
          LevelNode c = p;
          c.slot_count = l;
          next.push_back(c);
          next_stats.insert(next_stats.end(), left, left + 3);
        }
        if ((flags & kRightSearched) != 0) {
          LevelNode c = p;
          c.slot_begin += l;
          c.slot_count = rows - l;
          next.push_back(c);
          next_stats.insert(next_stats.end(), right.begin(), right.end());
        }
      }
      level.swap(next);
      stats.swap(next_stats);
    }
  }

  LevelPrimitives& primitives() override { std::abort(); }
  void load(const float*, int64_t, int64_t, FeatureBins&, const LevelTargets&) override {}
  void load(const double*, int64_t, int64_t, FeatureBins&, const LevelTargets&) override {}
  void load_codes(const uint8_t*, int64_t, int64_t, const FeatureBins&, const LevelTargets&) override {}
  void begin_trees(const TreeSlots&) override {}
  void split_level(const std::vector<LevelNode>&, const LevelRules&, std::vector<LevelSplit>&,
                   std::vector<double>&) override {
    std::abort();  // depth-first growth only
  }
  void grow_levels(const std::vector<LevelNode>&, const std::vector<double>&, const LevelRules&, const LevelGrowth&,
                   const LevelSink& sink) override {
    for (std::size_t depth = 0; depth < levels_.size(); ++depth) {
      const Level& l = levels_[depth];
      sink(LevelRecords{static_cast<int64_t>(depth), static_cast<int64_t>(l.flags.size()), l.splits.data(), l.left.data(),
                        l.flags.data()});
    }
  }

 private:
  struct Level {
    std::vector<LevelSplit> splits;
    std::vector<double> left;
    std::vector<uint8_t> flags;
  };
  std::vector<Level> levels_;
};

void BM_LevelwiseHostTreeWork(benchmark::State& state) {
  const int64_t n = state.range(0), trees = state.range(1), max_depth = state.range(2), d = 32;
  FeatureBins bins;  // 255 thresholds a feature; each bin's values [b, b + 0.25]
  bins.offsets.resize(static_cast<std::size_t>(d + 1));
  for (int64_t j = 0; j <= d; ++j) bins.offsets[j] = j * 255;
  bins.values.resize(static_cast<std::size_t>(d * 255));
  for (std::size_t i = 0; i < bins.values.size(); ++i) bins.values[i] = static_cast<double>(i % 255) + 0.5;
  bins.low.resize(static_cast<std::size_t>(d * 256));
  bins.high.resize(bins.low.size());
  for (std::size_t i = 0; i < bins.low.size(); ++i) {
    bins.low[i] = static_cast<double>(i % 256);
    bins.high[i] = bins.low[i] + 0.25;
  }
  std::vector<int64_t> units(static_cast<std::size_t>(2 * n));  // y_i = i: the roots' statistics
  for (int64_t i = 0; i < n; ++i) {
    units[2 * i] = i;
    units[2 * i + 1] = i * i;
  }
  LevelTargets targets;
  targets.units = units.data();
  const std::vector<uint8_t> weights(static_cast<std::size_t>(n * trees), 1);
  std::vector<uint64_t> seeds(static_cast<std::size_t>(trees));
  for (int64_t t = 0; t < trees; ++t) seeds[t] = 1000 + static_cast<uint64_t>(t);
  TreeRules rules;
  rules.criterion = Criterion::squared_error;
  rules.width = 3;
  rules.max_features = d;
  rules.max_depth = max_depth > 0 ? max_depth : -1;
  LevelGrowth growth;
  growth.criterion = rules.criterion;
  growth.width = rules.width;
  growth.max_depth = rules.max_depth;
  RecordedLevels backend;
  backend.record(n, trees, growth);
  int64_t nodes = 0;
  for (auto _ : state) {
    std::vector<Tree> grown = grow_trees_levelwise(backend, n, d, bins, targets, weights.data(), seeds, rules, omp_get_max_threads());
    nodes = 0;
    for (const Tree& tree : grown) nodes += tree.node_count();
    benchmark::DoNotOptimize(grown.data());
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

// Arguments: rows, trees, max_depth (0: none). 10 full-depth trees of 316k rows: a tenth of the
// default regressor at 500k rows (6.3M nodes); 100 trees of 500k rows to depth 12: the shape of the
// depth-12 target (the driver's steps before the first level weigh most there).
BENCHMARK(BM_LevelwiseHostTreeWork)->Args({316000, 10, 0})->Args({500000, 100, 12})->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
