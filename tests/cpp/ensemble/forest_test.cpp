// The host reference forest (src/ensemble/tree_builder.hpp): scikit-learn's quality bar on the
// steel plates (shuffled stratified 5-fold CV), a regression, determinism across thread counts,
// and a full-depth tree that fits its training rows.
//
// The forest is internal: this file reaches it through the src/ header (exported for it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "../../../src/ensemble/tree_builder.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::uniform_int;
using test::uniform_real;

// Stratified folds with the rows shuffled (scikit-learn's StratifiedKFold(shuffle=True) in
// spirit; its exact folds need numpy's generator, so the Python tests use those): each class's
// rows in a random order, dealt round-robin over the folds, continuing from class to class.
std::vector<int> stratified_folds(const std::vector<int32_t>& y, int splits, std::mt19937_64& rng) {
  std::map<int32_t, std::vector<int64_t>> by_class;
  for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) by_class[y[i]].push_back(i);
  std::vector<int> fold(y.size());
  int next = 0;
  for (auto& [label, rows] : by_class) {
    std::shuffle(rows.begin(), rows.end(), rng);
    for (int64_t i : rows) fold[i] = next++ % splits;
  }
  return fold;
}

TEST(ForestReference, SteelPlatesAccuracyMatchesScikitLearn) {
  GPUML_DATASET_OR_SKIP(table, "steel-plates-faults/steel_plates_faults.csv");
  GPUML_FRESH_RNG(rng);
  const int64_t n = table.rows, cols = static_cast<int64_t>(table.columns.size()), d = cols - 7;
  std::vector<double> X(n * d);
  std::vector<int32_t> y(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) X[i * d + j] = table.values[i * cols + j];
    const double* onehot = table.values.data() + i * cols + d;
    y[i] = static_cast<int32_t>(std::max_element(onehot, onehot + 7) - onehot);
  }
  // Three repetitions (each its own shuffle and forest seed), averaged: one repetition's mean
  // accuracy varies by about +-0.5 point with the shuffle and the seed.
  constexpr int kRepeats = 3;
  double accuracy = 0.0;
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    const std::vector<int> fold = stratified_folds(y, 5, rng);
    detail::ForestRules rules;  // scikit-learn's defaults: 100 trees, gini, sqrt(27) = 5 features
    rules.tree.width = 7;
    rules.tree.max_features = 5;
    rules.threads = 2;
    rules.seed = rng();
    for (int f = 0; f < 5; ++f) {
      std::vector<double> Xtr, Xte;
      std::vector<int32_t> ytr, yte;
      for (int64_t i = 0; i < n; ++i) {
        auto& Xs = fold[i] == f ? Xte : Xtr;
        Xs.insert(Xs.end(), X.begin() + i * d, X.begin() + (i + 1) * d);
        (fold[i] == f ? yte : ytr).push_back(y[i]);
      }
      const int64_t ntr = static_cast<int64_t>(ytr.size()), nte = static_cast<int64_t>(yte.size());
      const detail::Forest forest = detail::fit_forest<double>(Xtr.data(), ntr, d, ytr.data(), nullptr, nullptr, rules);
      std::vector<double> proba(nte * 7);
      detail::forest_predict(forest, Xte.data(), nte, d, proba.data(), 2);
      int64_t right = 0;
      for (int64_t i = 0; i < nte; ++i)
        right += std::max_element(proba.begin() + i * 7, proba.begin() + (i + 1) * 7) - (proba.begin() + i * 7) == yte[i];
      accuracy += static_cast<double>(right) / nte / (5.0 * kRepeats);
    }
  }
  // The bar is scikit-learn's 0.7805 (RandomForestClassifier(random_state=0),
  // StratifiedKFold(5, shuffle=True, random_state=0)) minus 0.5 point, on scikit-learn's folds:
  // the Python tests will check it on those folds. Here the folds are our own shuffles, so the bar
  // allows for their spread. Measured, one repetition:
  //   - this forest, 20 runs: 0.769-0.788, mean 0.781;
  //   - scikit-learn over random_state 0-5 (forest and folds): 0.776-0.787, mean 0.783;
  //   - scikit-learn on codes binned by its own 256-bin mapper: mean 0.781;
  //   - without shuffling (the file is sorted by class): scikit-learn 0.6105, this forest ~0.61.
  EXPECT_GE(accuracy, 0.770) << "mean 5-fold accuracy over " << kRepeats << " repetitions";
  RecordProperty("steel_plates_cv_accuracy", std::to_string(accuracy));

  // Out of bag, on all rows: each row judged by the ~37% of the trees that did not draw it; about
  // the cross-validated accuracy (measured: within ~1 point; 3 points allowed).
  detail::ForestRules rules;
  rules.tree.width = 7;
  rules.tree.max_features = 5;
  rules.threads = 2;
  rules.seed = rng();
  rules.oob_score = true;
  const detail::Forest forest = detail::fit_forest<double>(X.data(), n, d, y.data(), nullptr, nullptr, rules);
  EXPECT_EQ(forest.oob_missing, 0);
  EXPECT_NEAR(forest.oob_score, accuracy, 0.03);
  RecordProperty("steel_plates_oob_score", std::to_string(forest.oob_score));
}

// A whitespace-separated numeric file of `columns` columns (the C-MAPSS text files), row-major;
// empty when it cannot be read.
std::vector<double> read_table(const std::string& path, int64_t columns) {
  std::ifstream in(path);
  std::vector<double> values;
  double v;
  while (in >> v) values.push_back(v);
  if (values.size() % static_cast<std::size_t>(columns) != 0) values.clear();
  return values;
}

TEST(ForestReference, CmapssRemainingUsefulLifeMatchesScikitLearn) {
  // Train on every training cycle's 3 settings and 21 sensors, target min(RUL, 125); test on each
  // test unit's last cycle against min(true RUL, 125) (as datasets/cmapss.py loads them).
  const std::string dir = test::datasets_dir() + "/cmapss-fd001/";
  const std::vector<double> train = read_table(dir + "train_FD001.txt", 26), test_rows = read_table(dir + "test_FD001.txt", 26);
  const std::vector<double> rul = read_table(dir + "RUL_FD001.txt", 1);
  if (train.empty() || test_rows.empty() || rul.size() != 100) GTEST_SKIP() << "C-MAPSS FD001 not available under " << dir;
  GPUML_FRESH_RNG(rng);
  const int64_t d = 24, n = static_cast<int64_t>(train.size() / 26);
  std::map<int, double> last_train, last_test;
  for (int64_t i = 0; i < n; ++i) last_train[static_cast<int>(train[i * 26])] = std::max(last_train[static_cast<int>(train[i * 26])], train[i * 26 + 1]);
  std::vector<double> X, y, Xt, yt;
  for (int64_t i = 0; i < n; ++i) {
    X.insert(X.end(), train.begin() + i * 26 + 2, train.begin() + (i + 1) * 26);
    y.push_back(std::min(125.0, last_train[static_cast<int>(train[i * 26])] - train[i * 26 + 1]));
  }
  const int64_t nt_all = static_cast<int64_t>(test_rows.size() / 26);
  for (int64_t i = 0; i < nt_all; ++i) {
    const int unit = static_cast<int>(test_rows[i * 26]);
    last_test[unit] = std::max(last_test[unit], test_rows[i * 26 + 1]);
  }
  for (int unit = 1; unit <= 100; ++unit)
    for (int64_t i = 0; i < nt_all; ++i)
      if (static_cast<int>(test_rows[i * 26]) == unit && test_rows[i * 26 + 1] == last_test[unit]) {
        Xt.insert(Xt.end(), test_rows.begin() + i * 26 + 2, test_rows.begin() + (i + 1) * 26);
        yt.push_back(std::min(125.0, rul[unit - 1]));
      }
  ASSERT_EQ(yt.size(), 100u);
  detail::ForestRules rules;  // RandomForestRegressor(n_estimators=200, min_samples_leaf=5)
  rules.n_estimators = 200;
  rules.tree.criterion = detail::Criterion::squared_error;
  rules.tree.width = 3;
  rules.tree.max_features = d;
  rules.tree.min_samples_leaf = 5;
  rules.threads = 2;
  rules.seed = rng();
  const detail::Forest forest = detail::fit_forest<double>(X.data(), n, d, nullptr, y.data(), nullptr, rules);
  std::vector<double> pred(100);
  detail::forest_predict(forest, Xt.data(), 100, d, pred.data(), 2);
  double ss = 0.0;
  for (int i = 0; i < 100; ++i) ss += (pred[i] - yt[i]) * (pred[i] - yt[i]);
  const double rmse = std::sqrt(ss / 100.0);
  RecordProperty("cmapss_rmse", std::to_string(rmse));
  // The bar: within 2% of scikit-learn's 17.28 (random_state=0). One forest's RMSE on these
  // 100 test engines moves with the seed, measured:
  //   - scikit-learn, random_state 0-4: 17.28-17.48, mean 17.39;
  //   - this forest, 8 seeds: 17.09-17.66, mean 17.40.
  // So one run is held to 4% (the 2% check, over several seeds, belongs with the estimator's
  // Python tests).
  EXPECT_LE(rmse, 17.28 * 1.04);
}

TEST(ForestReference, RegressionFollowsASmoothTarget) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = 4000, d = 4;
  std::normal_distribution<double> noise(0.0, 0.1);
  auto make = [&](int64_t rows, std::vector<float>& X, std::vector<float>& y) {
    for (int64_t i = 0; i < rows; ++i) {
      double x[d];
      for (int64_t j = 0; j < d; ++j) X.push_back(static_cast<float>(x[j] = uniform_real(rng, -2.0, 2.0)));
      y.push_back(static_cast<float>(3.0 * std::sin(x[0]) + x[1] * x[1] + noise(rng)));
    }
  };
  std::vector<float> X, y, Xt, yt;
  make(n, X, y);
  make(1000, Xt, yt);
  detail::ForestRules rules;  // the regressor's defaults: 100 trees, all features
  rules.tree.criterion = detail::Criterion::squared_error;
  rules.tree.width = 3;
  rules.tree.max_features = d;
  rules.threads = 2;
  rules.seed = rng();
  const detail::Forest forest = detail::fit_forest<float>(X.data(), n, d, nullptr, y.data(), nullptr, rules);
  std::vector<double> pred(1000);
  detail::forest_predict(forest, Xt.data(), 1000, d, pred.data(), 2);
  double mean = std::accumulate(yt.begin(), yt.end(), 0.0) / 1000.0, ss_res = 0.0, ss_tot = 0.0;
  for (int i = 0; i < 1000; ++i) ss_res += (yt[i] - pred[i]) * (yt[i] - pred[i]), ss_tot += (yt[i] - mean) * (yt[i] - mean);
  // Noise variance 0.01 against a target variance of ~5: a forest gets R² well above 0.95.
  EXPECT_GT(1.0 - ss_res / ss_tot, 0.95);
  // The target depends on x0 and x1 only, with variances ~5.35 (3 sin x0) and ~1.42 (x1²): the
  // importances (impurity decreases) follow, about 0.79 and 0.21, the noise features near 0.
  const std::vector<double>& importance = forest.feature_importances;
  ASSERT_EQ(importance.size(), 4u);
  EXPECT_NEAR(std::accumulate(importance.begin(), importance.end(), 0.0), 1.0, 1e-12);
  for (double v : importance) EXPECT_GE(v, 0.0);
  RecordProperty("importances", std::to_string(importance[0]) + " " + std::to_string(importance[1]) + " " +
                                    std::to_string(importance[2]) + " " + std::to_string(importance[3]));
  EXPECT_GT(importance[0], 0.6);
  EXPECT_GT(importance[1], 0.1);
  EXPECT_LT(importance[2] + importance[3], 0.05);
  // Out of bag: R² about the held-out one.
  rules.oob_score = true;
  const detail::Forest with_oob = detail::fit_forest<float>(X.data(), n, d, nullptr, y.data(), nullptr, rules);
  EXPECT_GT(with_oob.oob_score, 0.95);
  EXPECT_EQ(with_oob.trees[0].threshold, forest.trees[0].threshold);  // OOB changes nothing in the trees
}

TEST(ForestReference, SameSeedSameForestOnAnyThreadCount) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 200, 2000), d = uniform_int(rng, 2, 10);
  std::vector<double> X(n * d);
  std::vector<int32_t> y(n);
  for (auto& v : X) v = uniform_real(rng, -1.0, 1.0);
  for (int64_t i = 0; i < n; ++i) y[i] = X[i * d] + 0.3 * uniform_real(rng, -1.0, 1.0) > 0 ? 1 : 0;
  detail::ForestRules rules;
  rules.n_estimators = 20;
  rules.tree.max_features = std::max<int64_t>(1, static_cast<int64_t>(std::sqrt(static_cast<double>(d))));
  rules.seed = rng();
  rules.threads = 1;
  const detail::Forest a = detail::fit_forest<double>(X.data(), n, d, y.data(), nullptr, nullptr, rules);
  rules.threads = 2;
  const detail::Forest b = detail::fit_forest<double>(X.data(), n, d, y.data(), nullptr, nullptr, rules);
  ASSERT_EQ(a.trees.size(), b.trees.size());
  for (std::size_t t = 0; t < a.trees.size(); ++t) {
    EXPECT_EQ(a.trees[t].feature, b.trees[t].feature);
    EXPECT_EQ(a.trees[t].threshold, b.trees[t].threshold);
    EXPECT_EQ(a.trees[t].stats, b.trees[t].stats);
  }
  rules.seed += 1;
  const detail::Forest c = detail::fit_forest<double>(X.data(), n, d, y.data(), nullptr, nullptr, rules);
  EXPECT_NE(a.trees[0].threshold, c.trees[0].threshold);  // another seed, another forest
}

TEST(ForestReference, ClassWeightsScaleEachClassAtTheRoot) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 300, 3000), d = 3;
  const int k = 3;
  std::vector<double> X(n * d);
  std::vector<int32_t> y(n);
  for (auto& v : X) v = uniform_real(rng, -1.0, 1.0);
  std::vector<int64_t> per_class(k, 0);
  for (auto& v : y) {  // imbalanced: class 0 about 70%
    v = uniform_int(rng, 0, 9) < 7 ? 0 : static_cast<int32_t>(uniform_int(rng, 1, 2));
    ++per_class[v];
  }
  detail::ForestRules rules;
  rules.n_estimators = 5;
  rules.tree.width = k;
  rules.tree.max_features = 2;
  rules.seed = rng();
  // Per-class weights as sample weights, no bootstrap: the root holds w_c n_c of class c.
  rules.bootstrap = false;
  const std::vector<double> class_weight = {uniform_real(rng, 0.5, 2.0), uniform_real(rng, 0.5, 2.0), uniform_real(rng, 0.5, 2.0)};
  std::vector<double> w(n);
  for (int64_t i = 0; i < n; ++i) w[i] = class_weight[y[i]];
  const detail::Forest weighted = detail::fit_forest<double>(X.data(), n, d, y.data(), nullptr, w.data(), rules);
  for (int c = 0; c < k; ++c) EXPECT_NEAR(weighted.trees[0].stats[c], class_weight[c] * per_class[c], 1e-9 * n);
  // With bootstrap the weights pick the rows (scikit-learn 1.9): a tree's root holds n draws, of
  // class c in proportion to w_c n_c, and rows of weight 0 are never drawn.
  rules.bootstrap = true;
  rules.n_estimators = 40;
  for (int64_t i = 0; i < n; i += 5) w[i] = 0.0;
  double total = 0.0;
  std::vector<double> class_total(k, 0.0);
  for (int64_t i = 0; i < n; ++i) total += w[i], class_total[y[i]] += w[i];
  const detail::Forest drawn = detail::fit_forest<double>(X.data(), n, d, y.data(), nullptr, w.data(), rules);
  std::vector<double> mean_root(k, 0.0);
  for (const detail::Tree& tree : drawn.trees) {
    double root = 0.0;
    for (int c = 0; c < k; ++c) root += tree.stats[c], mean_root[c] += tree.stats[c] / rules.n_estimators;
    EXPECT_EQ(root, static_cast<double>(n));  // counts: n draws
  }
  for (int c = 0; c < k; ++c) {
    // Binomial draws: 40 trees x n draws; 6 standard deviations of the mean over trees.
    const double p = class_total[c] / total, sd = std::sqrt(n * p * (1 - p) / rules.n_estimators);
    EXPECT_NEAR(mean_root[c], n * p, 6 * sd + 1e-9) << "class " << c;
  }
  // Rows of weight 0 are in no tree: a full tree on them would have to be out of bag everywhere.
  rules.oob_score = true;
  const detail::Forest oob = detail::fit_forest<double>(X.data(), n, d, y.data(), nullptr, w.data(), rules);
  int64_t never_drawn = 0;
  for (int64_t i = 0; i < n; i += 5) never_drawn += oob.oob_decision[i * k] + oob.oob_decision[i * k + 1] + oob.oob_decision[i * k + 2] > 0.5;
  EXPECT_EQ(never_drawn, (n + 4) / 5);  // out of bag in every tree: a full distribution
  rules.oob_score = false;
  rules.n_estimators = 5;
  // balanced_subsample with bootstrap: every tree's root holds the same weight for every class
  // drawn (n / k_drawn each), whatever the draws.
  rules.bootstrap = true;
  rules.balanced_subsample = true;
  const detail::Forest balanced = detail::fit_forest<double>(X.data(), n, d, y.data(), nullptr, nullptr, rules);
  for (const detail::Tree& tree : balanced.trees)
    for (int c = 0; c < k; ++c) EXPECT_NEAR(tree.stats[c], static_cast<double>(n) / k, 1e-9 * n) << "class " << c;
}

TEST(ForestReference, AFullTreeFitsItsTrainingRows) {
  GPUML_FRESH_RNG(rng);
  const int64_t n = uniform_int(rng, 50, 200), d = 3;
  std::vector<double> X(n * d);
  std::vector<int32_t> y(n);
  for (auto& v : X) v = static_cast<double>(uniform_int(rng, 0, 1000));  // distinct rows (almost surely)
  for (auto& v : y) v = static_cast<int32_t>(uniform_int(rng, 0, 2));   // labels unrelated to X
  detail::ForestRules rules;
  rules.n_estimators = 1;
  rules.bootstrap = false;
  rules.tree.width = 3;
  rules.tree.max_features = d;
  rules.seed = rng();
  const detail::Forest forest = detail::fit_forest<double>(X.data(), n, d, y.data(), nullptr, nullptr, rules);
  std::vector<double> proba(n * 3);
  detail::forest_predict(forest, X.data(), n, d, proba.data(), 1);
  // n <= 200 rows: every value of a feature is its own bin, so pure leaves are reachable.
  for (int64_t i = 0; i < n; ++i) EXPECT_DOUBLE_EQ(proba[i * 3 + y[i]], 1.0) << "row " << i;
  const detail::Tree& tree = forest.trees[0];
  for (int64_t node = 0; node < tree.node_count(); ++node)
    if (tree.feature[node] < 0) EXPECT_LE(tree.impurity[node], 1e-12);
}

}  // namespace
}  // namespace gpuml
