// The bad-input matrix through the C++ API (issue 9), the twin of the C ABI's
// (tests/cpp/capi/bad_input_matrix_test.cpp, same kinds, params and data: estimator_cases.hpp).
// Every row of estimator_rows() is a kind of bad input (or a legal edge case) tried on every
// estimator kind it applies to, built as its own class (gpuml::KMeans, gpuml::Ridge, ...), on a
// CPU context and, with a device, a CUDA context. Each (row, kind) cell checks
// 1. that the call throws gpuml::Error with the expected ErrorCode, whose message names the
//    argument (anything else thrown is a failure);
// 2. that a fitted model the bad call did not replace is unchanged: the same predictions and
//    the same serialized bytes, bit for bit (an unfitted one stays unfitted);
// 3. that the same estimator object and context still work: a good fit + predict on them gives
//    the predictions and bytes of a fresh estimator on a fresh context.
// The C ABI's rows that have no C++ form (NULL handles, NULL params strings) are replaced by
// their C++ equivalents: default-constructed views, null data with a nonzero shape, views of a
// device the context cannot read, strides whose extent overflows, params structs out of range.
// pagerank_rows() does the same for gpuml::pagerank (ranks_out must stay unwritten).
// docs/reliability.md ("Bad-input matrix") has the table (GPUML_MATRIX_TABLE=1 prints it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "estimator_cases.hpp"
#include "test_util.hpp"

namespace gpuml::test::cpp_api {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
const int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

// ---- what a call did and what it should have done ------------------------------------------

struct Outcome {
  bool ok = true;
  ErrorCode code = ErrorCode::internal;
  std::string message;
  std::string foreign;  // what() of an exception that is not a gpuml::Error (always a failure)
};

template <typename Call>
Outcome outcome_of(Call&& call) {
  Outcome out;
  try {
    call();
  } catch (const Error& e) {
    out.ok = false;
    out.code = e.code();
    out.message = e.what();
  } catch (const std::exception& e) {
    out.ok = false;
    out.foreign = std::string("std::exception: ") + e.what();
  } catch (...) {
    out.ok = false;
    out.foreign = "an exception of an unknown type";
  }
  return out;
}

struct Expect {
  std::optional<ErrorCode> code;  // none: the call must succeed
  std::string words;              // what the message must name ('|'-separated alternatives)
};
Expect ok() { return {std::nullopt, ""}; }
Expect invalid(const std::string& words) { return {ErrorCode::invalid_argument, words}; }
Expect error(ErrorCode code, const std::string& words) { return {code, words}; }

// Checks one outcome against its expectation; returns whether the call was refused.
bool check_outcome(const Outcome& got, const Expect& expect) {
  EXPECT_TRUE(got.foreign.empty()) << "threw something other than gpuml::Error: " << got.foreign;
  if (!expect.code) {
    EXPECT_TRUE(got.ok) << "expected success, got " << error_code_name(got.code) << ": " << got.message;
    return !got.ok;
  }
  EXPECT_FALSE(got.ok) << "expected gpuml::Error(" << error_code_name(*expect.code) << "), but the call succeeded";
  if (!got.ok && got.foreign.empty()) {
    EXPECT_EQ(got.code, *expect.code) << "got " << error_code_name(got.code) << ": " << got.message;
    EXPECT_TRUE(mentions(got.message, expect.words))
        << "the message does not name " << expect.words << ": \"" << got.message << "\"";
  }
  return !got.ok;
}

// A CUDA array on a build without CUDA is refused as unsupported; with CUDA, host memory
// declared as CUDA memory is caught by the pointer check (invalid_argument).
ErrorCode cuda_refusal() { return built_with_cuda() ? ErrorCode::invalid_argument : ErrorCode::unsupported; }

Context make_context(const std::string& backend) { return backend == "cpu" ? Context::cpu() : Context::cuda(0); }

// ---- C++ facts per kind ----------------------------------------------------------------------

// How the C++ API builds each kind: the typed class with the params of KindSpec::params (the test
// checks both give the same get_params_json), and params structs that are bad in ways JSON is
// not (NaN) or only at fit (values that do not fit the data).
struct CppKind {
  std::function<std::unique_ptr<Estimator>()> make;
  std::string out_of_range_name;                // the constructor must refuse this struct
  std::function<void()> construct_out_of_range;
  std::string nan_name;                         // a float parameter set to NaN (empty: no such parameter)
  std::function<void()> construct_nan;
  std::string mismatch_name;                    // params valid alone, refused at fit on d features
  std::function<std::unique_ptr<Estimator>(int64_t d)> mismatched;
};

RandomForestParams small_forest() {
  RandomForestParams p;
  p.n_estimators = 4;
  p.max_depth = 5;
  p.random_state = 2;
  return p;
}

const CppKind& cpp_kind(const std::string& kind) {
  static const std::vector<std::pair<std::string, CppKind>> table = {
      {"kmeans",
       {[] {
          KMeansParams p;
          p.n_clusters = 3;
          p.n_init = 2;
          p.random_state = 7;
          return std::make_unique<KMeans>(p);
        },
        "n_clusters",
        [] {
          KMeansParams p;
          p.n_clusters = 0;
          KMeans{p};
        },
        "tol",
        [] {
          KMeansParams p;
          p.tol = kNaN;
          KMeans{p};
        },
        "init_array",
        [](int64_t d) {
          KMeansParams p;
          p.n_clusters = 3;
          p.init = "array";
          p.init_array.assign(static_cast<std::size_t>(3 * (d + 1)), 0.5);  // 3 x (d + 1): one column too many
          return std::make_unique<KMeans>(p);
        }}},
      {"linear_regression",
       {[] { return std::make_unique<LinearRegression>(); },
        "algorithm",
        [] {
          LinearRegressionParams p;
          p.algorithm = "bogus";
          LinearRegression{p};
        },
        "", nullptr, "", nullptr}},
      {"ridge",
       {[] {
          RidgeParams p;
          p.alpha = {0.5};
          return std::make_unique<Ridge>(p);
        },
        "alpha",
        [] {
          RidgeParams p;
          p.alpha = {-1.0};
          Ridge{p};
        },
        "alpha",
        [] {
          RidgeParams p;
          p.alpha = {kNaN};
          Ridge{p};
        },
        "alpha",
        [](int64_t) {
          RidgeParams p;
          p.alpha = {1.0, 2.0};  // one per target, but y has one target
          return std::make_unique<Ridge>(p);
        }}},
      {"elastic_net",
       {[] {
          ElasticNetParams p;
          p.alpha = 0.05;
          p.l1_ratio = 0.5;
          return std::make_unique<ElasticNet>(p);
        },
        "l1_ratio",
        [] {
          ElasticNetParams p;
          p.l1_ratio = 2.0;
          ElasticNet{p};
        },
        "l1_ratio",
        [] {
          ElasticNetParams p;
          p.l1_ratio = kNaN;
          ElasticNet{p};
        },
        "init_coef",
        [](int64_t d) {
          ElasticNetParams p;
          p.alpha = 0.05;
          p.init_coef.assign(static_cast<std::size_t>(d + 1), 0.0);
          return std::make_unique<ElasticNet>(p);
        }}},
      {"lasso",
       {[] {
          LassoParams p;
          p.alpha = 0.05;
          return std::make_unique<Lasso>(p);
        },
        "alpha",
        [] {
          LassoParams p;
          p.alpha = -0.5;
          Lasso{p};
        },
        "tol",
        [] {
          LassoParams p;
          p.tol = kNaN;
          Lasso{p};
        },
        "init_coef",
        [](int64_t d) {
          LassoParams p;
          p.alpha = 0.05;
          p.init_coef.assign(static_cast<std::size_t>(d + 1), 0.0);
          return std::make_unique<Lasso>(p);
        }}},
      {"logistic_regression",
       {[] {
          LogisticRegressionParams p;
          p.C = 1.0;
          return std::make_unique<LogisticRegression>(p);
        },
        "C",
        [] {
          LogisticRegressionParams p;
          p.C = 0.0;
          LogisticRegression{p};
        },
        "C",
        [] {
          LogisticRegressionParams p;
          p.C = kNaN;
          LogisticRegression{p};
        },
        "class_weight",
        [](int64_t) {
          LogisticRegressionParams p;
          p.class_weight = {{42.0, 2.0}};  // a label that is not in y
          return std::make_unique<LogisticRegression>(p);
        }}},
      {"pca",
       {[] {
          PCAParams p;
          p.n_components = 2;
          return std::make_unique<PCA>(p);
        },
        "n_components",
        [] {
          PCAParams p;
          p.n_components = -3;
          PCA{p};
        },
        "n_components",
        [] {
          PCAParams p;
          p.n_components = kNaN;
          PCA{p};
        },
        "n_components",
        [](int64_t d) {
          PCAParams p;
          p.n_components = static_cast<double>(d + 1);
          return std::make_unique<PCA>(p);
        }}},
      {"truncated_svd",
       {[] {
          TruncatedSVDParams p;
          p.n_components = 2;
          p.random_state = 1;
          return std::make_unique<TruncatedSVD>(p);
        },
        "n_components",
        [] {
          TruncatedSVDParams p;
          p.n_components = 0;
          TruncatedSVD{p};
        },
        "tol",
        [] {
          TruncatedSVDParams p;
          p.tol = kNaN;
          TruncatedSVD{p};
        },
        "n_components",
        [](int64_t d) {
          TruncatedSVDParams p;
          p.n_components = d + 1;
          return std::make_unique<TruncatedSVD>(p);
        }}},
      {"random_forest_classifier",
       {[] { return std::make_unique<RandomForestClassifier>(small_forest()); },
        "n_estimators",
        [] {
          RandomForestParams p = small_forest();
          p.n_estimators = 0;
          RandomForestClassifier{p};
        },
        "min_impurity_decrease",
        [] {
          RandomForestParams p = small_forest();
          p.min_impurity_decrease = kNaN;
          RandomForestClassifier{p};
        },
        "max_features",
        [](int64_t d) {
          RandomForestParams p = small_forest();
          p.max_features = "count";
          p.max_features_value = static_cast<double>(d + 1);
          return std::make_unique<RandomForestClassifier>(p);
        }}},
      {"random_forest_regressor",
       {[] { return std::make_unique<RandomForestRegressor>(small_forest()); },
        "min_samples_leaf",
        [] {
          RandomForestParams p = small_forest();
          p.min_samples_leaf = {0, false};
          RandomForestRegressor{p};
        },
        "min_impurity_decrease",
        [] {
          RandomForestParams p = small_forest();
          p.min_impurity_decrease = kNaN;
          RandomForestRegressor{p};
        },
        "max_features",
        [](int64_t d) {
          RandomForestParams p = small_forest();
          p.max_features = "count";
          p.max_features_value = static_cast<double>(d + 1);
          return std::make_unique<RandomForestRegressor>(p);
        }}},
  };
  for (const auto& entry : table)
    if (entry.first == kind) return entry.second;
  throw std::runtime_error("no C++ entry for kind " + kind);
}

// ---- the estimator under test -----------------------------------------------------------------

ArrayView vector_view(const double* data, int64_t n) { return host_view(data, n); }

struct Bench {
  const KindSpec& spec;
  Context& ctx;
  Estimator& est;
  const Data& train;
  const Data& test;

  ArrayView X() const { return host_view(train.X.data(), train.n, train.d); }
  ArrayView test_X() const { return host_view(test.X.data(), test.n, test.d); }
  ArrayView y() const {
    return spec.target == Target::labels ? host_view(train.labels.data(), train.n) : vector_view(train.y.data(), train.n);
  }
  ArrayView w() const { return vector_view(train.w.data(), train.n); }

  // Fits on X with the training y and weights (where the kind takes them); y or w replaced
  // when given.
  void fit(const ArrayView& X_, const ArrayView* y_ = nullptr, const ArrayView* w_ = nullptr) const {
    const ArrayView y_default = y(), w_default = w();
    const ArrayView* y_arg = y_ != nullptr ? y_ : spec.target == Target::none ? nullptr : &y_default;
    const ArrayView* w_arg = w_ != nullptr ? w_ : spec.weights ? &w_default : nullptr;
    est.fit(ctx, X_, y_arg, w_arg);
  }
  void fit_data(const Data& data) const {
    const ArrayView X_ = host_view(data.X.data(), data.n, data.d);
    const ArrayView y_ = spec.target == Target::labels ? host_view(data.labels.data(), data.n)
                                                        : vector_view(data.y.data(), data.n);
    const ArrayView w_ = vector_view(data.w.data(), data.n);
    est.fit(ctx, X_, spec.target == Target::none ? nullptr : &y_, spec.weights ? &w_ : nullptr);
  }
  // y as float64 values (labels converted), for putting NaN or infinity into a target.
  std::vector<double> float_target() const {
    return spec.target == Target::labels ? std::vector<double>(train.labels.begin(), train.labels.end()) : train.y;
  }

  void call(const std::string& method, const ArrayView& X_, const ArrayView& out) const {
    if (method == "predict") est.predict(ctx, X_, out);
    else if (method == "transform") est.transform(ctx, X_, out);
    else est.predict_proba(ctx, X_, out);
  }
  // The method (default: the kind's main one) on X into a float64 array of the right shape.
  void apply(const ArrayView& X_, const std::string& method = "") const {
    const std::string m = method.empty() ? spec.method : method;
    const ArraySpec shape = est.output_spec(m, X_.ndim >= 1 ? X_.shape[0] : 1);
    std::vector<double> storage;
    call(m, X_, out_like(shape, storage));
  }
  // The main method on the test rows into `out`.
  void apply_to_out(const ArrayView& out) const { call(spec.method, test_X(), out); }
  // A good output array for the test rows, in `storage`.
  ArrayView good_out(std::vector<double>& storage) const {
    return out_like(est.output_spec(spec.method, test.n), storage);
  }
  static ArrayView out_like(const ArraySpec& shape, std::vector<double>& storage) {
    storage.assign(static_cast<std::size_t>(shape.shape[0] * (shape.ndim == 2 ? shape.shape[1] : 1)), 0.0);
    return shape.ndim == 2 ? host_view(storage.data(), shape.shape[0], shape.shape[1])
                           : host_view(storage.data(), shape.shape[0]);
  }
};

// The kind's main output on `data` as float64 (the reference the matrix compares with).
std::vector<double> predictions(Context& ctx, const Estimator& est, const KindSpec& spec, const Data& data) {
  const ArraySpec shape = est.output_spec(spec.method, data.n);
  std::vector<double> values;
  const ArrayView out = Bench::out_like(shape, values);
  const ArrayView X = host_view(data.X.data(), data.n, data.d);
  if (spec.method == "predict") est.predict(ctx, X, out);
  else est.transform(ctx, X, out);
  return values;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void fit_bad_X_value(Bench& b, double value) { b.fit_data(with_X_value(b.train, value)); }
void predict_bad_X_value(Bench& b, double value) {
  const Data bad = with_X_value(b.test, value);
  b.apply(host_view(bad.X.data(), bad.n, bad.d));
}
void fit_with_y(Bench& b, const std::vector<double>& y) {
  const ArrayView y_ = vector_view(y.data(), static_cast<int64_t>(y.size()));
  b.fit(b.X(), &y_);
}
void fit_with_w(Bench& b, const std::vector<double>& w) {
  const ArrayView w_ = vector_view(w.data(), static_cast<int64_t>(w.size()));
  const ArrayView y_ = b.y();
  b.est.fit(b.ctx, b.X(), b.spec.target == Target::none ? nullptr : &y_, &w_);
}
void fit_bad_y_value(Bench& b, double value) {
  std::vector<double> y = b.float_target();
  y[b.train.n / 3] = value;
  fit_with_y(b, y);
}
void fit_bad_w_value(Bench& b, double value) {
  std::vector<double> w = b.train.w;
  w[b.train.n / 4] = value;
  fit_with_w(b, w);
}
// Fits on the first `rows` rows and `cols` columns, then applies the main method to them.
void fit_and_apply_subset(Bench& b, int64_t rows, int64_t cols) {
  Data small;
  small.n = rows;
  small.d = cols;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) small.X.push_back(b.train.X[i * b.train.d + j]);
    small.y.push_back(b.train.y[i]);
    small.w.push_back(b.train.w[i]);
    small.labels.push_back(b.train.labels[i]);
  }
  b.fit_data(small);
  b.apply(host_view(small.X.data(), small.n, small.d));
}
// make_estimator must refuse; if it does not, the fit of what it made must (and that is a
// failure of its own: params must be checked when the estimator is made).
void make_then_fit(Bench& b, const std::string& kind, const std::string& params) {
  std::unique_ptr<Estimator> other = make_estimator(kind, params);
  ADD_FAILURE() << "make_estimator(\"" << kind << "\", " << params << ") accepted the params";
  const ArrayView X = b.X(), y = b.y(), w = b.w();
  other->fit(b.ctx, X, supervised(b.spec) ? &y : nullptr, weighted(b.spec) ? &w : nullptr);
}
// The training X with one stride changed (data pointer kept).
ArrayView X_with_strides(const Bench& b, int64_t row_stride, int64_t col_stride) {
  ArrayView X = b.X();
  X.strides[0] = row_stride;
  X.strides[1] = col_stride;
  return X;
}

// The model fitted through the spoiled call must predict, and serialize, exactly as the aligned
// fit on the same values does.
void expect_same_model_as_aligned(Bench& b, const char* what) {
  const std::vector<double> got = predictions(b.ctx, b.est, b.spec, b.test);
  const std::vector<uint8_t> got_bytes = serialize(b.est);
  b.fit_data(b.train);
  EXPECT_TRUE(same_bits(got, predictions(b.ctx, b.est, b.spec, b.test))) << what << ": predicts differently from the aligned fit";
  EXPECT_EQ(got_bytes, serialize(b.est)) << what << ": the model differs from the aligned fit";
}

enum class State { fresh, fitted };  // the estimator before the call

struct Row {
  std::string name;
  std::function<bool(const KindSpec&)> applies;
  State state;
  std::function<Expect(const KindSpec&)> expect;
  std::function<void(Bench&)> call;
};

const std::vector<Row>& estimator_rows() {
  static const std::vector<Row> table = {
      // ---- values: NaN and infinity ------------------------------------------------------------
      {"NaN in X (fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { fit_bad_X_value(b, kNaN); }},
      {"+inf in X (fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { fit_bad_X_value(b, kInf); }},
      {"-inf in X (fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { fit_bad_X_value(b, -kInf); }},
      {"NaN in X (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { predict_bad_X_value(b, kNaN); }},
      {"+inf in X (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { predict_bad_X_value(b, kInf); }},
      {"-inf in X (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { predict_bad_X_value(b, -kInf); }},
      {"NaN in y", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) { fit_bad_y_value(b, kNaN); }},
      {"+inf in y", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) { fit_bad_y_value(b, kInf); }},
      {"-inf in y", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) { fit_bad_y_value(b, -kInf); }},
      {"NaN in sample_weight", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) { fit_bad_w_value(b, kNaN); }},
      {"+inf in sample_weight", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) { fit_bad_w_value(b, kInf); }},
      {"-inf in sample_weight", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) { fit_bad_w_value(b, -kInf); }},
      {"negative sample_weight", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) { fit_bad_w_value(b, -1.0); }},
      {"sample_weight all zero", weighted, State::fitted,
       [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) { fit_with_w(b, std::vector<double>(static_cast<std::size_t>(b.train.n), 0.0)); }},
      {"sample_weight given to a kind without weights", [](auto& s) { return !s.weights; }, State::fitted,
       [](auto&) { return invalid("sample_weight"); }, [](Bench& b) { fit_with_w(b, b.train.w); }},
      // ---- shapes -------------------------------------------------------------------------------
      {"empty X (0 rows, fit)", any_kind, State::fitted, [](auto&) { return invalid("X|n_samples|samples"); },
       [](Bench& b) { fit_and_apply_subset(b, 0, b.train.d); }},
      {"X with 0 features (fit)", any_kind, State::fitted, [](auto&) { return invalid("X|n_features|features"); },
       [](Bench& b) { fit_and_apply_subset(b, b.train.n, 0); }},
      {"empty X (0 rows, predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { b.apply(host_view(b.test.X.data(), 0, b.test.d)); }},
      {"one sample (fit + predict)", any_kind, State::fitted,
       [](const KindSpec& s) -> Expect {
         if (s.kind == "kmeans") return invalid("n_clusters|n_samples");
         if (decomposition(s)) return invalid("n_components|n_samples");
         if (classifier(s)) return invalid("class|classes");
         return ok();
       },
       [](Bench& b) { fit_and_apply_subset(b, 1, b.train.d); }},
      {"one feature (fit + predict)", any_kind, State::fitted,
       [](const KindSpec& s) { return decomposition(s) ? invalid("n_components") : ok(); },
       [](Bench& b) { fit_and_apply_subset(b, b.train.n, 1); }},
      {"y length != rows of X", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) {
         std::vector<double> y = b.float_target();
         y.pop_back();
         fit_with_y(b, y);
       }},
      {"sample_weight length != rows of X", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) {
         std::vector<double> w = b.train.w;
         w.push_back(1.0);
         fit_with_w(b, w);
       }},
      {"predict width != n_features", any_kind, State::fitted, [](auto&) { return invalid("X|features|n_features"); },
       [](Bench& b) { b.apply(host_view(b.test.X.data(), b.test.n / 2, b.test.d - 1)); }},
      {"out rows != rows of X", any_kind, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) {
         std::vector<double> storage;
         ArrayView out = b.good_out(storage);
         out.shape[0] -= 1;
         b.apply_to_out(out);
       }},
      {"out of the wrong rank", any_kind, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) {
         std::vector<double> storage;
         ArrayView out = b.good_out(storage);
         out = out.ndim == 1 ? host_view(storage.data(), b.test.n / 2, 2) : host_view(storage.data(), out.shape[0] * out.shape[1]);
         b.apply_to_out(out);
       }},
      {"X 1-d (fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { b.fit(vector_view(b.train.X.data(), b.train.n)); }},
      {"X 3-d (ndim = 3, fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         ArrayView X = b.X();
         X.ndim = 3;
         b.fit(X);
       }},
      {"X with a negative dimension (fit)", any_kind, State::fitted, [](auto&) { return invalid("X|n_samples|samples"); },
       [](Bench& b) {
         ArrayView X = b.X();
         X.shape[0] = -b.train.n;
         b.fit(X);
       }},
      {"X with a negative dimension (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         std::vector<double> storage;
         const ArrayView out = b.good_out(storage);
         ArrayView X = b.test_X();
         X.shape[0] = -b.test.n;
         b.call(b.spec.method, X, out);
       }},
      {"y 2-d with 0 columns", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) {
         const ArrayView y = host_view(b.train.y.data(), b.train.n, 0);
         b.fit(b.X(), &y);
       }},
      {"sample_weight 2-d", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) {
         const ArrayView w = host_view(b.train.w.data(), b.train.n, 1);
         b.fit(b.X(), nullptr, &w);
       }},
      {"output_spec with negative n_rows", any_kind, State::fitted, [](auto&) { return invalid("n_rows"); },
       [](Bench& b) { b.est.output_spec(b.spec.method, -1); }},
      // ---- dtypes -------------------------------------------------------------------------------
      {"X.dtype unknown (42)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         ArrayView X = b.X();
         X.dtype = static_cast<DType>(42);
         b.fit(X);
       }},
      {"X.dtype unknown (42, predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         ArrayView X = b.test_X();
         X.dtype = static_cast<DType>(42);
         b.apply(X);
       }},
      {"y.dtype unknown (-1)", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) {
         ArrayView y = b.y();
         y.dtype = static_cast<DType>(-1);
         b.fit(b.X(), &y);
       }},
      {"sample_weight.dtype unknown (9)", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) {
         ArrayView w = b.w();
         w.dtype = static_cast<DType>(9);
         b.fit(b.X(), nullptr, &w);
       }},
      {"out.dtype unknown (4)", any_kind, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) {
         std::vector<double> storage;
         ArrayView out = b.good_out(storage);
         out.dtype = static_cast<DType>(4);
         b.apply_to_out(out);
       }},
      {"int32 X (converted, as scikit-learn does)", any_kind, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         std::vector<int32_t> X(b.train.X.size());
         for (std::size_t i = 0; i < X.size(); ++i) X[i] = static_cast<int32_t>(std::lround(b.train.X[i] * 4.0));
         b.fit(host_view(X.data(), b.train.n, b.train.d));
         b.apply(host_view(X.data(), b.train.n, b.train.d));
       }},
      {"real-valued output into an int32 out", real_output, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) {
         std::vector<double> storage;
         ArrayView out = b.good_out(storage);
         out.dtype = DType::int32;
         b.apply_to_out(out);
       }},
      // ---- strides ------------------------------------------------------------------------------
      {"negative stride", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         ArrayView X = X_with_strides(b, -b.train.d, 1);
         X.data = const_cast<double*>(b.train.X.data() + (b.train.n - 1) * b.train.d);
         b.fit(X);
       }},
      {"overflowing stride", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { b.fit(X_with_strides(b, kMaxInt64 / 4, 1)); }},
      {"strides whose extents overflow together", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         // Each dimension's extent fits in int64 alone, their sum does not.
         const int64_t stride = kMaxInt64 / b.train.n;
         b.fit(X_with_strides(b, stride, stride));
       }},
      {"zero stride (strides left unset)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         // An ArrayView filled in by hand without strides: {0, 0} would read one value n*d times.
         ArrayView X;
         X.data = const_cast<double*>(b.train.X.data());
         X.dtype = DType::float64;
         X.ndim = 2;
         X.shape[0] = b.train.n;
         X.shape[1] = b.train.d;
         b.fit(X);
       }},
      {"zero stride (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         ArrayView X = b.test_X();
         X.strides[0] = 0;
         b.apply(X);
       }},
      {"strided X (every other column of a wider array)", any_kind, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         // The same values read through a column stride of 2: the model must equal the one fitted
         // on the contiguous copy.
         std::vector<double> wide(b.train.X.size() * 2, kNaN);
         for (std::size_t i = 0; i < b.train.X.size(); ++i) wide[2 * i] = b.train.X[i];
         ArrayView X = X_with_strides(b, 2 * b.train.d, 2);
         X.data = wide.data();
         b.fit(X);
         const std::vector<double> strided = predictions(b.ctx, b.est, b.spec, b.test);
         const std::vector<uint8_t> strided_bytes = serialize(b.est);
         b.fit_data(b.train);
         EXPECT_TRUE(same_bits(strided, predictions(b.ctx, b.est, b.spec, b.test)))
             << "the strided fit predicts differently from the contiguous one";
         EXPECT_EQ(strided_bytes, serialize(b.est)) << "the strided fit differs from the contiguous one";
       }},
      // ---- misaligned memory (issue 22 item 7): arrays at an odd byte offset are read and written
      // bytewise, never through a misaligned typed pointer (UBSan in scripts/sanitize checks it);
      // the model equals the one from aligned arrays of the same values.
      {"misaligned X (odd byte offset)", any_kind, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         Misaligned X(b.train.X), test_X(b.test.X);
         b.fit(make_view(X.data(), DType::float64, Device{}, b.train.n, b.train.d));
         std::vector<double> storage;
         const ArrayView out = b.good_out(storage);
         b.call(b.spec.method, make_view(test_X.data(), DType::float64, Device{}, b.test.n, b.test.d), out);
         EXPECT_TRUE(same_bits(storage, predictions(b.ctx, b.est, b.spec, b.test)))
             << "predictions from a misaligned X differ from those from the aligned one";
         expect_same_model_as_aligned(b, "misaligned X");
       }},
      {"misaligned int32 X (odd byte offset, converted)", any_kind, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         std::vector<int32_t> values(b.train.X.size());
         for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int32_t>(std::lround(b.train.X[i] * 4.0));
         Misaligned X(values);
         b.fit(make_view(X.data(), DType::int32, Device{}, b.train.n, b.train.d));
         const std::vector<double> got = predictions(b.ctx, b.est, b.spec, b.test);
         b.fit(host_view(values.data(), b.train.n, b.train.d));
         EXPECT_TRUE(same_bits(got, predictions(b.ctx, b.est, b.spec, b.test)))
             << "the fit on a misaligned int32 X differs from the aligned one";
       }},
      {"misaligned y (odd byte offset)", supervised, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         const bool labels = b.spec.target == Target::labels;
         Misaligned y = labels ? Misaligned(b.train.labels) : Misaligned(b.train.y);
         const ArrayView y_ = make_view(y.data(), labels ? DType::int32 : DType::float64, Device{}, b.train.n);
         b.fit(b.X(), &y_);
         expect_same_model_as_aligned(b, "misaligned y");
       }},
      {"misaligned sample_weight (odd byte offset)", weighted, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         Misaligned w(b.train.w);
         const ArrayView w_ = make_view(w.data(), DType::float64, Device{}, b.train.n);
         b.fit(b.X(), nullptr, &w_);
         expect_same_model_as_aligned(b, "misaligned sample_weight");
       }},
      {"misaligned out (odd byte offset)", any_kind, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         std::vector<double> aligned;
         ArrayView out = b.good_out(aligned);
         Misaligned misaligned(aligned);
         out.data = misaligned.data();
         b.apply_to_out(out);
         EXPECT_TRUE(same_bits(misaligned.doubles(), predictions(b.ctx, b.est, b.spec, b.test)))
             << "the output written into a misaligned out differs from the aligned one";
       }},
      // ---- pointers: C++ forms of the C ABI's NULL rows ------------------------------------------
      {"default-constructed X (0-d, no data)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { b.fit(ArrayView{}); }},
      {"default-constructed X (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         std::vector<double> storage;
         b.call(b.spec.method, ArrayView{}, b.good_out(storage));
       }},
      {"default-constructed out", any_kind, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) { b.apply_to_out(ArrayView{}); }},
      {"X.data null with elements (fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         ArrayView X = b.X();
         X.data = nullptr;
         b.fit(X);
       }},
      {"X.data null with elements (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         ArrayView X = b.test_X();
         X.data = nullptr;
         b.apply(X);
       }},
      {"out.data null with elements", any_kind, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) {
         std::vector<double> storage;
         ArrayView out = b.good_out(storage);
         out.data = nullptr;
         b.apply_to_out(out);
       }},
      {"no y for a supervised kind (y == nullptr)", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) { b.est.fit(b.ctx, b.X(), nullptr, nullptr); }},
      {"y.data null with elements", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) {
         ArrayView y = b.y();
         y.data = nullptr;
         b.fit(b.X(), &y);
       }},
      {"sample_weight.data null with elements", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) {
         ArrayView w = b.w();
         w.data = nullptr;
         b.fit(b.X(), nullptr, &w);
       }},
      // ---- devices ------------------------------------------------------------------------------
      {"host X declared as CUDA memory (fit)", any_kind, State::fitted,
       [](auto&) { return error(cuda_refusal(), "X"); },
       [](Bench& b) {
         ArrayView X = b.X();
         X.device = Device{DeviceType::cuda, 0};
         b.fit(X);
       }},
      {"host X declared as CUDA memory (predict)", any_kind, State::fitted,
       [](auto&) { return error(cuda_refusal(), "X"); },
       [](Bench& b) {
         ArrayView X = b.test_X();
         X.device = Device{DeviceType::cuda, 0};
         b.apply(X);
       }},
      {"host y declared as CUDA memory", supervised, State::fitted, [](auto&) { return error(cuda_refusal(), "y"); },
       [](Bench& b) {
         ArrayView y = b.y();
         y.device = Device{DeviceType::cuda, 0};
         b.fit(b.X(), &y);
       }},
      {"host out declared as CUDA memory", any_kind, State::fitted, [](auto&) { return error(cuda_refusal(), "out"); },
       [](Bench& b) {
         std::vector<double> storage;
         ArrayView out = b.good_out(storage);
         out.device = Device{DeviceType::cuda, 0};
         b.apply_to_out(out);
       }},
      {"X.device.type unknown (7)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         ArrayView X = b.X();
         X.device.type = static_cast<DeviceType>(7);
         b.fit(X);
       }},
      {"host X (copied to the device on a CUDA context)", any_kind, State::fitted,
       [](auto&) { return ok(); }, [](Bench& b) { b.fit(b.X()); }},
      // ---- kinds and parameters -----------------------------------------------------------------
      {"unknown kind", any_kind, State::fitted, [](auto&) { return invalid("no_such_kind"); },
       [](Bench& b) { make_then_fit(b, "no_such_kind", "{}"); }},
      {"unknown parameter", any_kind, State::fitted, [](auto&) { return invalid("no_such_param"); },
       [](Bench& b) { make_then_fit(b, b.spec.kind, R"({"no_such_param": 1})"); }},
      {"wrong parameter type (JSON)", any_kind, State::fitted, [](const KindSpec& s) { return invalid(s.wrong_type_name); },
       [](Bench& b) { make_then_fit(b, b.spec.kind, b.spec.wrong_type); }},
      {"out-of-range parameter value (JSON)", any_kind, State::fitted,
       [](const KindSpec& s) { return invalid(s.out_of_range_name); },
       [](Bench& b) { make_then_fit(b, b.spec.kind, b.spec.out_of_range); }},
      {"params not JSON", any_kind, State::fitted, [](auto&) { return invalid("JSON|json|params_json|params"); },
       [](Bench& b) { make_then_fit(b, b.spec.kind, "{\"n\": "); }},
      {"params not an object", any_kind, State::fitted, [](auto&) { return invalid("object|params_json|params"); },
       [](Bench& b) { make_then_fit(b, b.spec.kind, "[1, 2]"); }},
      {"out-of-range value in the params struct", any_kind, State::fitted,
       [](const KindSpec& s) { return invalid(cpp_kind(s.kind).out_of_range_name); },
       [](Bench& b) { cpp_kind(b.spec.kind).construct_out_of_range(); }},
      {"NaN in a params struct value", [](auto& s) { return !cpp_kind(s.kind).nan_name.empty(); }, State::fitted,
       [](const KindSpec& s) { return invalid(cpp_kind(s.kind).nan_name); },
       [](Bench& b) { cpp_kind(b.spec.kind).construct_nan(); }},
      {"params that do not fit the data (checked at fit)", [](auto& s) { return !cpp_kind(s.kind).mismatch_name.empty(); },
       State::fitted, [](const KindSpec& s) { return invalid(cpp_kind(s.kind).mismatch_name); },
       [](Bench& b) {
         // Another estimator on the same context; the bench's must be untouched by it.
         const std::unique_ptr<Estimator> other = cpp_kind(b.spec.kind).mismatched(b.train.d);
         Bench on_other{b.spec, b.ctx, *other, b.train, b.test};
         on_other.fit(b.X());
       }},
      // ---- state and labels ---------------------------------------------------------------------
      {"predict before fit", any_kind, State::fresh,
       [](const KindSpec& s) { return error(ErrorCode::not_fitted, s.kind + "|fit|fitted"); },
       [](Bench& b) { b.apply(b.test_X()); }},
      {"attribute before fit", any_kind, State::fresh,
       [](const KindSpec& s) { return error(ErrorCode::not_fitted, s.kind + "|fit|fitted"); },
       [](Bench& b) { b.est.attribute("n_features_in_"); }},
      {"serialize before fit (an unfitted model)", any_kind, State::fresh, [](auto&) { return ok(); },
       [](Bench& b) {
         const std::vector<uint8_t> bytes = serialize(b.est);
         EXPECT_FALSE(deserialize(bytes.data(), bytes.size())->fitted());
       }},
      {"unknown attribute", any_kind, State::fitted, [](auto&) { return invalid("no_such_attribute_"); },
       [](Bench& b) { b.est.attribute("no_such_attribute_"); }},
      {"labels with a single class", classifier, State::fitted, [](auto&) { return invalid("class|classes"); },
       [](Bench& b) { fit_with_y(b, std::vector<double>(static_cast<std::size_t>(b.train.n), 3.0)); }},
      {"a method the kind does not offer", [](const KindSpec& s) { return s.methods.size() < 3; }, State::fitted,
       [](auto&) { return error(ErrorCode::unsupported, "predict|transform|predict_proba"); },
       [](Bench& b) {
         std::vector<double> storage(static_cast<std::size_t>(b.test.n) * 8);
         const ArrayView out = host_view(storage.data(), b.test.n);
         for (const char* m : {"predict", "transform", "predict_proba"})
           if (std::find(b.spec.methods.begin(), b.spec.methods.end(), m) == b.spec.methods.end()) b.call(m, b.test_X(), out);
       }},
      {"unknown method name (output_spec)", any_kind, State::fitted,
       [](auto&) { return error(ErrorCode::unsupported, "fit_predict"); },
       [](Bench& b) { b.est.output_spec("fit_predict", 3); }},
  };
  return table;
}

using KindOnBackend = std::tuple<KindSpec, std::string>;
class CppBadInputMatrix : public ::testing::TestWithParam<KindOnBackend> {};

// Every row on one estimator kind.
TEST_P(CppBadInputMatrix, EveryRow) {
  const KindSpec& spec = std::get<0>(GetParam());
  const std::string& backend = std::get<1>(GetParam());
  if (backend != "cpu" && cuda_device_count() == 0) {
    if (cuda_required()) FAIL() << "no CUDA device, but GPUML_REQUIRE_CUDA=1 requires one";
    GTEST_SKIP() << "no CUDA device";
  }
  GPUML_FRESH_RNG(rng);
  const Data train = make_data(rng, 90, 4);
  const Data test = make_data(rng, 20, 4);
  const CppKind& cpp = cpp_kind(spec.kind);

  // The reference: a good fit of a fresh estimator on a fresh context, its predictions and bytes.
  std::vector<double> reference;
  std::vector<uint8_t> reference_bytes;
  {
    Context ctx = make_context(backend);
    const std::unique_ptr<Estimator> est = cpp.make();
    ASSERT_EQ(est->get_params_json(), make_estimator(spec.kind, spec.params)->get_params_json())
        << "the typed params differ from KindSpec::params";
    Bench bench{spec, ctx, *est, train, test};
    ASSERT_NO_THROW(bench.fit_data(train));
    ASSERT_NO_THROW(reference = predictions(ctx, *est, spec, test));
    reference_bytes = serialize(*est);
  }

  int cells = 0;
  for (const Row& row : estimator_rows()) {
    if (!row.applies(spec)) continue;
    SCOPED_TRACE("row \"" + row.name + "\", kind " + spec.kind + " on " + backend);
    ++cells;
    Context ctx = make_context(backend);
    const std::unique_ptr<Estimator> est = cpp.make();
    Bench bench{spec, ctx, *est, train, test};
    if (row.state == State::fitted) {
      ASSERT_NO_THROW(bench.fit_data(train));
    }

    const Expect expect = row.expect(spec);
    const bool refused = check_outcome(outcome_of([&] { row.call(bench); }), expect);

    // A model the refused call did not replace is what it was.
    if (refused && row.state == State::fitted) {
      EXPECT_TRUE(est->fitted()) << "a refused call unfitted the model";
      if (est->fitted()) {
        std::vector<double> after;
        EXPECT_NO_THROW(after = predictions(ctx, *est, spec, test));
        EXPECT_TRUE(same_bits(after, reference)) << "the model predicts differently after a refused call";
        EXPECT_EQ(serialize(*est), reference_bytes) << "the model's bytes changed after a refused call";
      }
    }
    if (refused && row.state == State::fresh) {
      EXPECT_FALSE(est->fitted()) << "a refused call fitted the model";
    }

    // The estimator and context still work, like fresh ones.
    ASSERT_NO_THROW(bench.fit_data(train));
    std::vector<double> again;
    ASSERT_NO_THROW(again = predictions(ctx, *est, spec, test));
    EXPECT_TRUE(same_bits(again, reference)) << "the refit on the same estimator differs from a fresh fit";
    EXPECT_EQ(serialize(*est), reference_bytes) << "the refit's bytes differ from a fresh fit's";
  }
  std::printf("[ matrix   ] C++ %s on %s: %d rows\n", spec.kind.c_str(), backend.c_str(), cells);
}

INSTANTIATE_TEST_SUITE_P(CppApi, CppBadInputMatrix,
                         ::testing::Combine(::testing::ValuesIn(kind_specs()), ::testing::Values("cpu", "cuda:0")),
                         [](const ::testing::TestParamInfo<KindOnBackend>& info) {
                           return std::get<0>(info.param).kind + (std::get<1>(info.param) == "cpu" ? "_cpu" : "_cuda");
                         });

// ---- gpuml::pagerank ---------------------------------------------------------------------------

// A small graph: a ring over n vertices plus chords, one dangling vertex (n - 1 has no
// out-edges), float64 weights.
struct Graph {
  int64_t n = 0;
  std::vector<int64_t> src, dst;
  std::vector<double> w, per_vertex;  // weights; a positive per-vertex vector
};

Graph make_graph(std::mt19937_64& rng, int64_t n) {
  Graph g;
  g.n = n;
  std::uniform_int_distribution<int64_t> vertex(0, n - 1);
  std::uniform_real_distribution<double> weight(0.5, 2.0);
  for (int64_t v = 0; v + 1 < n; ++v) {
    g.src.push_back(v);
    g.dst.push_back(v + 1);
    g.src.push_back(v);
    g.dst.push_back(vertex(rng));
  }
  for (std::size_t e = 0; e < g.src.size(); ++e) g.w.push_back(weight(rng));
  for (int64_t v = 0; v < n; ++v) g.per_vertex.push_back(weight(rng));
  return g;
}

// One pagerank call: every argument a field, good by default, that a row may spoil.
struct PageRankCall {
  int64_t n_vertices;
  ArrayView src, dst;
  std::optional<ArrayView> weights, personalization, nstart, dangling;
  PageRankParams params;
  ArrayView ranks_out;

  PageRankResult run(Context& ctx) const {
    auto ptr = [](const std::optional<ArrayView>& v) { return v ? &*v : nullptr; };
    return pagerank(ctx, n_vertices, src, dst, ptr(weights), ptr(personalization), ptr(nstart), ptr(dangling), params,
                    ranks_out);
  }
};

struct PageRankBench {
  const Graph& g;
  PageRankCall call;  // the good call (with weights and personalization), for a row to spoil
  // Storage for the arrays a row puts in instead (they must outlive the call).
  std::vector<double> scratch;
  std::vector<int64_t> ids;
  std::vector<int32_t> src32, dst32;
};

PageRankCall good_call(const Graph& g, std::vector<double>& ranks) {
  PageRankCall c;
  c.n_vertices = g.n;
  c.src = host_view(g.src.data(), static_cast<int64_t>(g.src.size()));
  c.dst = host_view(g.dst.data(), static_cast<int64_t>(g.dst.size()));
  c.weights = host_view(g.w.data(), static_cast<int64_t>(g.w.size()));
  c.personalization = host_view(g.per_vertex.data(), g.n);
  c.ranks_out = host_view(ranks.data(), g.n);
  return c;
}

struct PageRankRow {
  std::string name;
  Expect expect;
  std::function<void(PageRankBench&)> spoil;  // changes b.call (may fill b.scratch)
};

// A per-vertex vector equal to the good one with entry 1 set to `value`.
ArrayView per_vertex_with(PageRankBench& b, double value) {
  b.scratch = b.g.per_vertex;
  b.scratch[1] = value;
  return host_view(b.scratch.data(), b.g.n);
}
ArrayView src_with(PageRankBench& b, int64_t id) {
  b.ids = b.g.src;
  b.ids[3] = id;
  return host_view(b.ids.data(), static_cast<int64_t>(b.ids.size()));
}
ArrayView weights_with(PageRankBench& b, double value) {
  b.scratch = b.g.w;
  b.scratch[2] = value;
  return host_view(b.scratch.data(), static_cast<int64_t>(b.scratch.size()));
}

const std::vector<PageRankRow>& pagerank_rows() {
  static const std::vector<PageRankRow> table = {
      // ---- values
      {"NaN in weights", invalid("weights"), [](PageRankBench& b) { b.call.weights = weights_with(b, kNaN); }},
      {"+inf in weights", invalid("weights"), [](PageRankBench& b) { b.call.weights = weights_with(b, kInf); }},
      {"negative weight", invalid("weights"), [](PageRankBench& b) { b.call.weights = weights_with(b, -1.0); }},
      {"NaN in personalization", invalid("personalization"),
       [](PageRankBench& b) { b.call.personalization = per_vertex_with(b, kNaN); }},
      {"-inf in personalization", invalid("personalization"),
       [](PageRankBench& b) { b.call.personalization = per_vertex_with(b, -kInf); }},
      {"negative personalization", invalid("personalization"),
       [](PageRankBench& b) { b.call.personalization = per_vertex_with(b, -1.0); }},
      {"personalization summing to 0", invalid("personalization"),
       [](PageRankBench& b) {
         b.scratch.assign(static_cast<std::size_t>(b.g.n), 0.0);
         b.call.personalization = host_view(b.scratch.data(), b.g.n);
       }},
      {"+inf in nstart", invalid("nstart"), [](PageRankBench& b) { b.call.nstart = per_vertex_with(b, kInf); }},
      {"NaN in dangling", invalid("dangling"), [](PageRankBench& b) { b.call.dangling = per_vertex_with(b, kNaN); }},
      {"vertex id >= n_vertices", invalid("src|dst"), [](PageRankBench& b) { b.call.src = src_with(b, b.g.n); }},
      {"negative vertex id", invalid("src|dst"), [](PageRankBench& b) { b.call.src = src_with(b, -2); }},
      // ---- shapes
      {"src and dst of different lengths", invalid("src|dst"),
       [](PageRankBench& b) { b.call.dst.shape[0] -= 1; }},
      {"weights length != edges", invalid("weights"), [](PageRankBench& b) { b.call.weights->shape[0] -= 1; }},
      {"personalization length != n_vertices", invalid("personalization"),
       [](PageRankBench& b) { b.call.personalization->shape[0] += 1; }},
      {"ranks_out length != n_vertices", invalid("ranks_out"), [](PageRankBench& b) { b.call.ranks_out.shape[0] -= 1; }},
      {"src 2-d", invalid("src"),
       [](PageRankBench& b) { b.call.src = host_view(b.g.src.data(), static_cast<int64_t>(b.g.src.size()) / 2, 2); }},
      {"negative n_vertices", invalid("n_vertices"), [](PageRankBench& b) { b.call.n_vertices = -1; }},
      {"n_vertices beyond 2^31 - 1", error(ErrorCode::unsupported, "n_vertices"),
       [](PageRankBench& b) { b.call.n_vertices = int64_t{1} << 31; }},
      {"n_vertices 0 with edges", invalid("n_vertices"),
       [](PageRankBench& b) {
         b.call.n_vertices = 0;
         b.call.personalization.reset();
         b.call.ranks_out.shape[0] = 0;  // so that the check reached is the edges'
       }},
      {"no vertices and no edges (empty result)", ok(),
       [](PageRankBench& b) {
         b.call = PageRankCall{0, host_view(b.g.src.data(), 0), host_view(b.g.dst.data(), 0), {}, {}, {}, {}, {},
                               host_view(b.scratch.data(), 0)};
       }},
      // ---- dtypes
      {"float64 src", invalid("src"),
       [](PageRankBench& b) {
         b.scratch.assign(b.g.src.begin(), b.g.src.end());
         b.call.src = host_view(b.scratch.data(), static_cast<int64_t>(b.scratch.size()));
       }},
      {"src.dtype unknown (42)", invalid("src"), [](PageRankBench& b) { b.call.src.dtype = static_cast<DType>(42); }},
      {"weights.dtype unknown (42)", invalid("weights"),
       [](PageRankBench& b) { b.call.weights->dtype = static_cast<DType>(42); }},
      {"int32 ranks_out", invalid("ranks_out"), [](PageRankBench& b) { b.call.ranks_out.dtype = DType::int32; }},
      {"int32 vertex ids (converted)", ok(),
       [](PageRankBench& b) {
         b.src32.assign(b.g.src.begin(), b.g.src.end());
         b.dst32.assign(b.g.dst.begin(), b.g.dst.end());
         b.call.src = host_view(b.src32.data(), static_cast<int64_t>(b.src32.size()));
         b.call.dst = host_view(b.dst32.data(), static_cast<int64_t>(b.dst32.size()));
       }},
      // ---- strides and pointers
      {"negative src stride", invalid("src"),
       [](PageRankBench& b) {
         b.call.src.data = const_cast<int64_t*>(b.g.src.data() + b.g.src.size() - 1);
         b.call.src.strides[0] = -1;
       }},
      {"overflowing src stride", invalid("src"), [](PageRankBench& b) { b.call.src.strides[0] = kMaxInt64 / 4; }},
      {"zero src stride", invalid("src"), [](PageRankBench& b) { b.call.src.strides[0] = 0; }},
      {"src.data null with elements", invalid("src"), [](PageRankBench& b) { b.call.src.data = nullptr; }},
      {"weights.data null with elements", invalid("weights"), [](PageRankBench& b) { b.call.weights->data = nullptr; }},
      {"ranks_out.data null with elements", invalid("ranks_out"), [](PageRankBench& b) { b.call.ranks_out.data = nullptr; }},
      {"default-constructed src", invalid("src"), [](PageRankBench& b) { b.call.src = ArrayView{}; }},
      {"host src declared as CUDA memory", error(cuda_refusal(), "src"),
       [](PageRankBench& b) { b.call.src.device = Device{DeviceType::cuda, 0}; }},
      {"host ranks_out declared as CUDA memory", error(cuda_refusal(), "ranks_out"),
       [](PageRankBench& b) { b.call.ranks_out.device = Device{DeviceType::cuda, 0}; }},
      // ---- parameters
      {"alpha = 1", invalid("alpha"), [](PageRankBench& b) { b.call.params.alpha = 1.0; }},
      {"alpha NaN", invalid("alpha"), [](PageRankBench& b) { b.call.params.alpha = kNaN; }},
      {"negative max_iter", invalid("max_iter"), [](PageRankBench& b) { b.call.params.max_iter = -1; }},
      {"tol NaN", invalid("tol"), [](PageRankBench& b) { b.call.params.tol = kNaN; }},
      {"not converged within max_iter", error(ErrorCode::not_converged, "max_iter"),
       [](PageRankBench& b) { b.call.params.max_iter = 1; }},
  };
  return table;
}

class CppPageRankBadInput : public ::testing::TestWithParam<std::string> {};

// Every row on gpuml::pagerank: the named code and argument, ranks_out left unwritten, and the
// context then computes the reference ranks bit for bit.
TEST_P(CppPageRankBadInput, EveryRow) {
  const std::string& backend = GetParam();
  if (backend != "cpu" && cuda_device_count() == 0) {
    if (cuda_required()) FAIL() << "no CUDA device, but GPUML_REQUIRE_CUDA=1 requires one";
    GTEST_SKIP() << "no CUDA device";
  }
  GPUML_FRESH_RNG(rng);
  const Graph g = make_graph(rng, 30);
  std::vector<double> reference(static_cast<std::size_t>(g.n), kNaN);
  {
    Context ctx = make_context(backend);
    ASSERT_NO_THROW(good_call(g, reference).run(ctx));
  }
  for (const PageRankRow& row : pagerank_rows()) {
    SCOPED_TRACE("row \"" + row.name + "\" on " + backend);
    Context ctx = make_context(backend);
    std::vector<double> ranks(static_cast<std::size_t>(g.n), -7.0);
    PageRankBench bench{g, good_call(g, ranks), {}, {}, {}, {}};
    row.spoil(bench);
    const bool refused = check_outcome(outcome_of([&] { bench.call.run(ctx); }), row.expect);
    if (refused) {
      EXPECT_TRUE(std::all_of(ranks.begin(), ranks.end(), [](double v) { return v == -7.0; }))
          << "a refused call wrote into ranks_out";
    }
    std::fill(ranks.begin(), ranks.end(), kNaN);
    ASSERT_NO_THROW(good_call(g, ranks).run(ctx));
    EXPECT_TRUE(same_bits(ranks, reference)) << "the context computes different ranks after the row";
  }
  std::printf("[ matrix   ] C++ pagerank on %s: %zu rows\n", backend.c_str(), pagerank_rows().size());
}

INSTANTIATE_TEST_SUITE_P(CppApi, CppPageRankBadInput, ::testing::Values("cpu", "cuda:0"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "cpu" ? std::string("cpu") : std::string("cuda");
                         });

// ---- the table and its size -----------------------------------------------------------------

std::string code_of(const Expect& e) {
  if (!e.code) return "ok";
  switch (*e.code) {
    case ErrorCode::invalid_argument: return "IA";
    case ErrorCode::not_fitted: return "NF";
    case ErrorCode::unsupported: return "UN";
    case ErrorCode::not_converged: return "NC";
    default: return error_code_name(*e.code);
  }
}
std::string words_of(const std::string& words) {  // "a|b" -> "a / b" ('|' separates Markdown cells)
  std::string out = words;
  for (std::size_t at = out.find('|'); at != std::string::npos; at = out.find('|', at)) out.replace(at, 1, " / ");
  return out;
}

// The tables cover every kind the library registers; GPUML_MATRIX_TABLE=1 prints them as the
// Markdown of docs/reliability.md.
TEST(CppBadInputMatrixTable, CoversEveryKind) {
  for (const std::string& kind : estimator_kinds()) {
    EXPECT_TRUE(std::any_of(kind_specs().begin(), kind_specs().end(), [&](const KindSpec& s) { return s.kind == kind; }))
        << kind << " is not in the matrix";
    EXPECT_NO_THROW(cpp_kind(kind)) << kind << " has no C++ entry";
  }
  int cells = 0;
  for (const Row& row : estimator_rows())
    for (const KindSpec& spec : kind_specs()) cells += row.applies(spec) ? 1 : 0;
  std::printf("[ matrix   ] C++: %zu rows x %zu kinds: %d cells; pagerank: %zu rows\n", estimator_rows().size(),
              kind_specs().size(), cells, pagerank_rows().size());

  const char* print = std::getenv("GPUML_MATRIX_TABLE");
  if (print == nullptr || std::string(print) != "1") return;
  std::string out = "| case | message names |";
  for (const KindSpec& spec : kind_specs()) out += " " + spec.kind + " |";
  out += "\n|---|---|";
  for (std::size_t i = 0; i < kind_specs().size(); ++i) out += ":-:|";
  out += "\n";
  for (const Row& row : estimator_rows()) {
    std::string words;
    for (const KindSpec& spec : kind_specs()) {
      if (!row.applies(spec)) continue;
      const Expect e = row.expect(spec);
      const std::string w = words_of(e.words);
      if (e.code && words.find(w) == std::string::npos) words += (words.empty() ? "" : "; ") + w;
    }
    // Per-kind words of the "before fit" rows are the kind's own name: say so once.
    if (row.name == "predict before fit" || row.name == "attribute before fit") words = "the kind / fit / fitted";
    out += "| " + row.name + " | " + (words.empty() ? "" : "`" + words + "`") + " |";
    for (const KindSpec& spec : kind_specs()) out += " " + (row.applies(spec) ? code_of(row.expect(spec)) : "") + " |";
    out += "\n";
  }
  out += "\n| pagerank case | message names | code |\n|---|---|:-:|\n";
  for (const PageRankRow& row : pagerank_rows())
    out += "| " + row.name + " | " + (row.expect.code ? "`" + words_of(row.expect.words) + "`" : "") + " | " +
           code_of(row.expect) + " |\n";
  std::printf("%s", out.c_str());
}

// Device memory declared as host memory, and host memory declared as device memory on a CUDA
// context, are refused with a named error, never dereferenced; both contexts then still work.
TEST(CppBadInputMatrixCuda, DeviceMemoryDeclaredAsHost) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  const Data train = make_data(rng, 60, 3);
  Context cpu = Context::cpu();
  KMeansParams params;
  params.n_clusters = 3;
  params.random_state = 1;
  KMeans km(params);
  Buffer device_X(gpu, train.X.size() * sizeof(double));  // contents never read
  const ArrayView declared_host = host_view(device_X.as<const double>(), train.n, train.d);
  for (Context* ctx : {&cpu, &gpu}) {
    const Outcome got = outcome_of([&] { km.fit(*ctx, declared_host); });
    check_outcome(got, invalid("X"));
  }
  ArrayView declared_device = host_view(train.X.data(), train.n, train.d);
  declared_device.device = gpu.device();
  check_outcome(outcome_of([&] { km.fit(gpu, declared_device); }), invalid("X"));
  for (Context* ctx : {&cpu, &gpu}) {
    EXPECT_NO_THROW(km.fit(*ctx, host_view(train.X.data(), train.n, train.d)));
    std::vector<int32_t> labels(static_cast<std::size_t>(train.n));
    EXPECT_NO_THROW(km.predict(*ctx, host_view(train.X.data(), train.n, train.d), host_view(labels.data(), train.n)));
  }
}

}  // namespace
}  // namespace gpuml::test::cpp_api
