#pragma once
// What the reliability tests of the C ABI (tests/cpp/capi/) and of the C++ API
// (tests/cpp/core/bad_input_matrix_test.cpp) share: one row per estimator kind saying how to
// create and use it (by kind name and JSON params, so both APIs build the same model), fresh
// random data for it, and the check that an error message names an argument. No C ABI or
// backend types here.
#include <cctype>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace gpuml::test {

enum class Target { none, real, labels };

// How the tests drive one estimator kind. `params` are small and quick, with random_state set
// wherever the kind has one (so that two fits are comparable bit for bit).
struct KindSpec {
  std::string kind;
  std::string params;
  Target target;
  std::string method;                // the main apply method: "predict" or "transform"
  std::vector<std::string> methods;  // every apply method the kind offers
  bool weights;                      // whether fit takes sample_weight
  std::string out_of_range;          // params with a value out of its range, and that param's name
  std::string out_of_range_name;
  std::string wrong_type;            // params with a value of the wrong JSON type, and its name
  std::string wrong_type_name;
  std::string random_params;         // params that make the fit use its random_state (determinism)
};

inline const std::vector<KindSpec>& kind_specs() {
  static const std::vector<KindSpec> specs = {
      {"kmeans", R"({"n_clusters": 3, "n_init": 2, "random_state": 7})", Target::none, "predict",
       {"predict", "transform"}, true, R"({"n_clusters": 0})", "n_clusters", R"({"n_clusters": "three"})",
       "n_clusters", R"({"n_clusters": 3, "n_init": 3, "init": "k-means++", "random_state": 11})"},
      {"linear_regression", R"({})", Target::real, "predict", {"predict"}, true, R"({"algorithm": "bogus"})",
       "algorithm", R"({"fit_intercept": "yes"})", "fit_intercept", R"({"algorithm": "svd"})"},
      {"ridge", R"({"alpha": 0.5})", Target::real, "predict", {"predict"}, true, R"({"alpha": -1.0})", "alpha",
       R"({"alpha": "big"})", "alpha", R"({"alpha": 2.0, "solver": "cholesky"})"},
      {"elastic_net", R"({"alpha": 0.05, "l1_ratio": 0.5})", Target::real, "predict", {"predict"}, true,
       R"({"l1_ratio": 2.0})", "l1_ratio", R"({"max_iter": 2.5})", "max_iter",
       R"({"alpha": 0.05, "l1_ratio": 0.5, "selection": "random", "random_state": 5})"},
      {"lasso", R"({"alpha": 0.05})", Target::real, "predict", {"predict"}, true, R"({"alpha": -0.5})", "alpha",
       R"({"tol": "small"})", "tol", R"({"alpha": 0.05, "selection": "random", "random_state": 9})"},
      {"logistic_regression", R"({"C": 1.0})", Target::labels, "predict", {"predict", "predict_proba", "transform"},
       true, R"({"C": 0.0})", "C", R"({"C": [1]})", "C", R"({"C": 0.5, "penalty": "l1"})"},
      {"pca", R"({"n_components": 2})", Target::none, "transform", {"transform"}, false, R"({"n_components": -3})",
       "n_components", R"({"whiten": 3})", "whiten",
       R"({"n_components": 2, "svd_solver": "randomized", "random_state": 3})"},
      {"truncated_svd", R"({"n_components": 2, "random_state": 1})", Target::none, "transform", {"transform"}, false,
       R"({"n_components": 0})", "n_components", R"({"algorithm": 1})", "algorithm",
       R"({"n_components": 2, "algorithm": "randomized", "random_state": 4})"},
      {"random_forest_classifier", R"({"n_estimators": 4, "max_depth": 5, "random_state": 2})", Target::labels,
       "predict", {"predict", "predict_proba"}, true, R"({"n_estimators": 0})", "n_estimators",
       R"({"bootstrap": "no"})", "bootstrap", R"({"n_estimators": 6, "max_features": "sqrt", "random_state": 8})"},
      {"random_forest_regressor", R"({"n_estimators": 4, "max_depth": 5, "random_state": 2})", Target::real,
       "predict", {"predict"}, true, R"({"min_samples_leaf": 0})", "min_samples_leaf", R"({"max_depth": "deep"})",
       "max_depth", R"({"n_estimators": 6, "max_features": 0.5, "random_state": 8})"},
  };
  return specs;
}

inline std::string kind_test_name(const ::testing::TestParamInfo<KindSpec>& info) { return info.param.kind; }
// gtest prints parameters in test listings (and ctest's names): the kind, not the struct's bytes.
inline void PrintTo(const KindSpec& spec, std::ostream* os) { *os << spec.kind; }

// Three Gaussian blobs in d dimensions; labels are 1, 3, 5 (not 0..k-1); a real target that is
// linear in X plus noise; positive weights.
struct Data {
  int64_t n = 0, d = 0;
  std::vector<double> X, y, w;
  std::vector<int32_t> labels;
};

inline Data make_data(std::mt19937_64& rng, int64_t n, int64_t d) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.5, 2.0);
  Data data;
  data.n = n;
  data.d = d;
  std::vector<double> centers(3 * d), beta(d);
  for (double& c : centers) c = 4.0 * normal(rng);
  for (double& b : beta) b = normal(rng);
  data.X.resize(n * d);
  data.y.resize(n);
  data.w.resize(n);
  data.labels.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t blob = i % 3;
    double target = 0.0;
    for (int64_t j = 0; j < d; ++j) {
      data.X[i * d + j] = centers[blob * d + j] + normal(rng);
      target += beta[j] * data.X[i * d + j];
    }
    data.y[i] = target + 0.1 * normal(rng);
    data.w[i] = uniform(rng);
    data.labels[i] = static_cast<int32_t>(2 * blob + 1);
  }
  return data;
}

// Which kinds a matrix row applies to.
// A copy of `values` that starts one byte past an aligned address, as a NumPy view at an odd
// byte offset: every element is misaligned for its type (issue 22 item 7).
struct Misaligned {
  std::vector<unsigned char> storage;
  template <typename T>
  explicit Misaligned(const std::vector<T>& values) : storage(values.size() * sizeof(T) + 1) {
    if (!values.empty()) std::memcpy(data(), values.data(), values.size() * sizeof(T));
  }
  void* data() { return storage.data() + 1; }  // vector storage is aligned for any scalar type
  std::vector<double> doubles() const {       // read back bytewise (the values are float64)
    std::vector<double> out((storage.size() - 1) / sizeof(double));
    if (!out.empty()) std::memcpy(out.data(), storage.data() + 1, out.size() * sizeof(double));
    return out;
  }
};

inline bool any_kind(const KindSpec&) { return true; }
inline bool supervised(const KindSpec& s) { return s.target != Target::none; }
inline bool weighted(const KindSpec& s) { return s.weights; }
inline bool classifier(const KindSpec& s) { return s.target == Target::labels; }
inline bool decomposition(const KindSpec& s) { return s.method == "transform"; }
// Whether the kind's main output holds non-integer values (a float output into an int32 array).
inline bool real_output(const KindSpec& s) { return s.target == Target::real || decomposition(s); }

// A copy of the training X with one value replaced.
inline Data with_X_value(const Data& data, double value) {
  Data bad = data;
  bad.X[(data.n / 2) * data.d + data.d - 1] = value;
  return bad;
}

// Whether `message` names one of `words` ('|'-separated alternatives) as a whole word: no
// identifier character on either side (so "X" is not found in "max_iter").
inline bool mentions(const std::string& message, const std::string& words) {
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::stringstream list(words);
  std::string word;
  while (std::getline(list, word, '|')) {
    for (std::size_t at = message.find(word); at != std::string::npos; at = message.find(word, at + 1)) {
      const bool starts = at == 0 || !is_word(message[at - 1]) || !is_word(word.front());
      const std::size_t end = at + word.size();
      const bool ends = end == message.size() || !is_word(message[end]) || !is_word(word.back());
      if (starts && ends) return true;
    }
  }
  return false;
}

}  // namespace gpuml::test
