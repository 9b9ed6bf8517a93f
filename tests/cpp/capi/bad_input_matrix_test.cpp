// The bad-input matrix over the C ABI (issue 9): every row of rows() is a kind of bad input (or a
// legal edge case), tried on every estimator kind it applies to, on a CPU context (and on a CUDA
// context when a device is present; GPUML_REQUIRE_CUDA=1 makes that required). Each (row, kind)
// cell checks
// 1. the status (a named gpuml_status_t) and that gpuml_last_error() names the argument;
// 2. that a fitted model a bad call did not replace still predicts what it did, bit for bit
//    (or is refused as not fitted), never something else;
// 3. that the same handle and context still work: a good fit + predict on them gives the
//    predictions of a fresh handle on a fresh context, bit for bit.
// docs/reliability.md ("Bad-input matrix") has the table (GPUML_MATRIX_TABLE=1 prints it);
// BadInputMatrixTable.CoversEveryKind prints the matrix's size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "capi/capi_harness.hpp"
#include "gpuml/core/estimator.hpp"
#include "test_util.hpp"

namespace gpuml::test::capi {
namespace {

bool built_with_cuda() { return std::string(gpuml_build_info()).find("\"cuda\":true") != std::string::npos; }

struct Expect {
  gpuml_status_t status;
  std::string words;  // what the message must name ('|'-separated alternatives); unused for GPUML_OK
};
Expect ok() { return {GPUML_OK, ""}; }
Expect invalid(const std::string& words) { return {GPUML_ERROR_INVALID_ARGUMENT, words}; }

// The handle and context under test, the data, and helpers for building bad calls.
struct Bench {
  const KindSpec& spec;
  gpuml_context_t ctx;
  gpuml_estimator_t est;
  Data train, test;

  gpuml_array_t X() const { return host_matrix(train.X.data(), train.n, train.d); }
  gpuml_array_t y() const { return target_of(spec, train); }
  gpuml_array_t w() const { return host_vector(train.w.data(), train.n); }
  const gpuml_array_t* y_or_null(const gpuml_array_t& y) const { return spec.target == Target::none ? nullptr : &y; }
  const gpuml_array_t* w_or_null(const gpuml_array_t& w) const { return spec.weights ? &w : nullptr; }

  gpuml_status_t fit(const gpuml_array_t& X) const {
    const gpuml_array_t y_ = y(), w_ = w();
    return gpuml_estimator_fit(ctx, est, &X, y_or_null(y_), w_or_null(w_));
  }
  gpuml_status_t fit(const Data& data) const { return capi::fit(ctx, est, spec, data, true); }
  // y as float64 values (labels converted), for putting NaN or infinity into a target.
  std::vector<double> float_target() const {
    return spec.target == Target::labels ? std::vector<double>(train.labels.begin(), train.labels.end()) : train.y;
  }
  gpuml_status_t fit_with_y(const std::vector<double>& y_values) const {
    const gpuml_array_t X_ = X(), y_ = host_vector(y_values.data(), static_cast<int64_t>(y_values.size())),
                        w_ = w();
    return gpuml_estimator_fit(ctx, est, &X_, &y_, w_or_null(w_));
  }
  gpuml_status_t fit_with_w(const std::vector<double>& w_values) const {
    const gpuml_array_t X_ = X(), y_ = y(), w_ = host_vector(w_values.data(), static_cast<int64_t>(w_values.size()));
    return gpuml_estimator_fit(ctx, est, &X_, y_or_null(y_), &w_);
  }
  // The main method on X into a float64 output of the right shape for X's rows.
  gpuml_status_t apply(const gpuml_array_t& X, const std::string& method = "") const {
    const std::string m = method.empty() ? spec.method : method;
    int32_t dtype = -1, ndim = -1;
    int64_t shape[2] = {0, 0};
    const int64_t rows = X.ndim >= 1 ? X.shape[0] : 1;
    gpuml_status_t s = gpuml_estimator_output_shape(est, m.c_str(), rows, &dtype, &ndim, shape);
    if (s != GPUML_OK) return s;
    std::vector<double> values(static_cast<std::size_t>(shape[0] * (ndim == 2 ? shape[1] : 1)) + 1);
    gpuml_array_t out = host_array(values.data(), GPUML_FLOAT64, ndim, shape[0], shape[1]);
    return call_method(m, ctx, est, &X, &out);
  }
  gpuml_status_t apply_to_out(const gpuml_array_t& out) const {
    const gpuml_array_t X_ = host_matrix(test.X.data(), test.n, test.d);
    return call_method(spec.method, ctx, est, &X_, const_cast<gpuml_array_t*>(&out));
  }
  // A good output array for the test rows, in `storage`.
  gpuml_array_t good_out(std::vector<double>& storage) const {
    int32_t dtype = -1, ndim = -1;
    int64_t shape[2] = {0, 0};
    gpuml_estimator_output_shape(est, spec.method.c_str(), test.n, &dtype, &ndim, shape);
    storage.assign(static_cast<std::size_t>(shape[0] * (ndim == 2 ? shape[1] : 1)), 0.0);
    return host_array(storage.data(), GPUML_FLOAT64, ndim, shape[0], shape[1]);
  }
};

enum class State { fresh, fitted };  // the handle before the call

struct Row {
  std::string name;
  std::function<bool(const KindSpec&)> applies;
  State state;
  std::function<Expect(const KindSpec&)> expect;
  std::function<gpuml_status_t(Bench&)> call;
};


const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

gpuml_status_t fit_bad_X_value(Bench& b, double value) { return b.fit(with_X_value(b.train, value)); }
gpuml_status_t predict_bad_X_value(Bench& b, double value) {
  const Data bad = with_X_value(b.test, value);
  return b.apply(host_matrix(bad.X.data(), bad.n, bad.d));
}
gpuml_status_t fit_bad_y_value(Bench& b, double value) {
  std::vector<double> y = b.float_target();
  y[b.train.n / 3] = value;
  return b.fit_with_y(y);
}
gpuml_status_t fit_bad_w_value(Bench& b, double value) {
  std::vector<double> w = b.train.w;
  w[b.train.n / 4] = value;
  return b.fit_with_w(w);
}
// Fits with the labels (1, 3, 5) as int64 labels offset + scale · label.
gpuml_status_t fit_int64_labels(Bench& b, int64_t offset, int64_t scale) {
  std::vector<int64_t> y;
  for (const int32_t label : b.train.labels) y.push_back(offset + scale * label);
  const gpuml_array_t X = b.X(), y_ = host_array(y.data(), GPUML_INT64, 1, b.train.n, 0), w = b.w();
  return gpuml_estimator_fit(b.ctx, b.est, &X, &y_, b.w_or_null(w));
}
// Fits on the first `rows` rows and `cols` columns of the training data, then applies the main
// method to the same rows: the first failing status.
gpuml_status_t fit_and_apply_subset(Bench& b, int64_t rows, int64_t cols) {
  Data small;
  small.n = rows;
  small.d = cols;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) small.X.push_back(b.train.X[i * b.train.d + j]);
    small.y.push_back(b.train.y[i]);
    small.w.push_back(b.train.w[i]);
    small.labels.push_back(b.train.labels[i]);
  }
  const gpuml_status_t s = b.fit(small);
  if (s != GPUML_OK) return s;
  return b.apply(host_matrix(small.X.data(), small.n, small.d));
}
// A create that must fail (leaving *out NULL), or, when it succeeds, the fit that must fail.
gpuml_status_t create_then_fit(Bench& b, const char* kind, const char* params) {
  gpuml_estimator_t other = reinterpret_cast<gpuml_estimator_t>(&b);  // must be reset to NULL
  const gpuml_status_t s = gpuml_estimator_create(kind, params, &other);
  if (s != GPUML_OK) {
    EXPECT_EQ(other, nullptr) << "a failed create must leave *out NULL";
    return s;
  }
  const gpuml_array_t X = b.X(), y = b.y(), w = b.w();
  const gpuml_status_t f = gpuml_estimator_fit(b.ctx, other, &X, b.y_or_null(y), b.w_or_null(w));
  if (f != GPUML_OK)
    ADD_FAILURE() << "params \"" << params << "\" were accepted at create and refused only at fit: " << gpuml_last_error();
  gpuml_estimator_free(other);  // a successful call: the fit's message stays the last error
  return f;
}

// After a fit through misaligned arrays: the model predicts exactly as the aligned fit does.
gpuml_status_t expect_same_model_as_aligned(Bench& b, gpuml_status_t fitted, const char* what) {
  if (fitted != GPUML_OK) return fitted;
  const Output got = capi::apply(b.ctx, b.est, b.spec.method, b.test);
  const gpuml_status_t s = b.fit(b.train);
  if (s != GPUML_OK) return s;
  const Output aligned = capi::apply(b.ctx, b.est, b.spec.method, b.test);
  EXPECT_TRUE(same_bits(got.values, aligned.values)) << what << ": the fit differs from the aligned one";
  return got.status;
}

const std::vector<Row>& rows() {
  // A build without CUDA cannot inspect pointers: it refuses any CUDA array as unsupported.
  const gpuml_status_t cuda_refusal = built_with_cuda() ? GPUML_ERROR_INVALID_ARGUMENT : GPUML_ERROR_UNSUPPORTED;
  static const std::vector<Row> table = {
      // ---- values: NaN and infinity ------------------------------------------------------------
      {"NaN in X (fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { return fit_bad_X_value(b, kNaN); }},
      {"+inf in X (fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { return fit_bad_X_value(b, kInf); }},
      {"-inf in X (fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { return fit_bad_X_value(b, -kInf); }},
      {"NaN in X (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { return predict_bad_X_value(b, kNaN); }},
      {"+inf in X (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { return predict_bad_X_value(b, kInf); }},
      {"-inf in X (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { return predict_bad_X_value(b, -kInf); }},
      {"NaN in y", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) { return fit_bad_y_value(b, kNaN); }},
      {"+inf in y", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) { return fit_bad_y_value(b, kInf); }},
      {"-inf in y", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) { return fit_bad_y_value(b, -kInf); }},
      // Classes are float64: 2^53 + 1, + 3, + 5 would round to 2^53, 2^53 + 4, 2^53 + 4.
      {"int64 labels beyond 2^53", classifier, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) { return fit_int64_labels(b, int64_t(1) << 53, 1); }},
      {"int64 labels at -2^53, 0, 2^53 (exact in float64)", classifier, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) { return fit_int64_labels(b, -(int64_t(1) << 53) - (int64_t(1) << 52), int64_t(1) << 52); }},
      {"NaN in sample_weight", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) { return fit_bad_w_value(b, kNaN); }},
      {"+inf in sample_weight", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) { return fit_bad_w_value(b, kInf); }},
      {"-inf in sample_weight", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) { return fit_bad_w_value(b, -kInf); }},
      {"negative sample_weight", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) { return fit_bad_w_value(b, -1.0); }},
      {"sample_weight given to a kind without weights", [](auto& s) { return !s.weights; }, State::fitted,
       [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) { return b.fit_with_w(b.train.w); }},
      // ---- shapes -------------------------------------------------------------------------------
      {"empty X (0 rows, fit)", any_kind, State::fitted, [](auto&) { return invalid("X|n_samples|samples"); },
       [](Bench& b) { return fit_and_apply_subset(b, 0, b.train.d); }},
      {"X with 0 features (fit)", any_kind, State::fitted, [](auto&) { return invalid("X|n_features|features"); },
       [](Bench& b) { return fit_and_apply_subset(b, b.train.n, 0); }},
      {"empty X (0 rows, predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { return b.apply(host_matrix(b.test.X.data(), 0, b.test.d)); }},
      {"one sample (fit + predict)", any_kind, State::fitted,
       [](const KindSpec& s) -> Expect {
         if (s.kind == "kmeans") return invalid("n_clusters|n_samples");
         if (decomposition(s)) return invalid("n_components|n_samples");
         if (classifier(s)) return invalid("class|classes");
         return ok();
       },
       [](Bench& b) { return fit_and_apply_subset(b, 1, b.train.d); }},
      {"one feature (fit + predict)", any_kind, State::fitted,
       [](const KindSpec& s) { return decomposition(s) ? invalid("n_components") : ok(); },
       [](Bench& b) { return fit_and_apply_subset(b, b.train.n, 1); }},
      {"y length != rows of X", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) {
         std::vector<double> y = b.float_target();
         y.pop_back();
         return b.fit_with_y(y);
       }},
      {"sample_weight length != rows of X", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) {
         std::vector<double> w = b.train.w;
         w.push_back(1.0);
         return b.fit_with_w(w);
       }},
      {"predict width != n_features", any_kind, State::fitted, [](auto&) { return invalid("X|features|n_features"); },
       [](Bench& b) { return b.apply(host_matrix(b.test.X.data(), b.test.n / 2, b.test.d - 1)); }},
      {"out rows != rows of X", any_kind, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) {
         std::vector<double> storage;
         gpuml_array_t out = b.good_out(storage);
         out.shape[0] -= 1;
         return b.apply_to_out(out);
       }},
      {"out of the wrong rank", any_kind, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) {
         std::vector<double> storage;
         gpuml_array_t out = b.good_out(storage);
         if (out.ndim == 1) {
           out = host_array(storage.data(), GPUML_FLOAT64, 2, b.test.n / 2, 2);
         } else {
           out = host_array(storage.data(), GPUML_FLOAT64, 1, out.shape[0] * out.shape[1], 0);
         }
         return b.apply_to_out(out);
       }},
      {"X 1-d (fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { return b.fit(host_vector(b.train.X.data(), b.train.n)); }},
      {"y 2-d with 0 columns", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) {
         const gpuml_array_t X = b.X(), w = b.w();
         const gpuml_array_t y = host_array(b.train.y.data(), GPUML_FLOAT64, 2, b.train.n, 0);
         return gpuml_estimator_fit(b.ctx, b.est, &X, &y, b.w_or_null(w));
       }},
      {"sample_weight 2-d", weighted, State::fitted, [](auto&) { return invalid("sample_weight"); },
       [](Bench& b) {
         const gpuml_array_t X = b.X(), y = b.y();
         const gpuml_array_t w = host_array(b.train.w.data(), GPUML_FLOAT64, 2, b.train.n, 1);
         return gpuml_estimator_fit(b.ctx, b.est, &X, b.y_or_null(y), &w);
       }},
      // ---- dtypes -------------------------------------------------------------------------------
      {"X.dtype unknown (42)", any_kind, State::fitted, [](auto&) { return invalid("X.dtype"); },
       [](Bench& b) {
         gpuml_array_t X = b.X();
         X.dtype = 42;
         return b.fit(X);
       }},
      {"y.dtype unknown (-1)", supervised, State::fitted, [](auto&) { return invalid("y.dtype"); },
       [](Bench& b) {
         const gpuml_array_t X = b.X(), w = b.w();
         gpuml_array_t y = b.y();
         y.dtype = -1;
         return gpuml_estimator_fit(b.ctx, b.est, &X, &y, b.w_or_null(w));
       }},
      {"out.dtype unknown (4)", any_kind, State::fitted, [](auto&) { return invalid("out.dtype"); },
       [](Bench& b) {
         std::vector<double> storage;
         gpuml_array_t out = b.good_out(storage);
         out.dtype = 4;
         return b.apply_to_out(out);
       }},
      {"int32 X (converted, as scikit-learn does)", any_kind, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         std::vector<int32_t> X(b.train.X.size());
         for (std::size_t i = 0; i < X.size(); ++i) X[i] = static_cast<int32_t>(std::lround(b.train.X[i] * 4.0));
         const gpuml_status_t s = b.fit(host_array(X.data(), GPUML_INT32, 2, b.train.n, b.train.d));
         return s != GPUML_OK ? s : b.apply(host_array(X.data(), GPUML_INT32, 2, b.train.n, b.train.d));
       }},
      {"real-valued output into an int32 out", real_output, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) {
         std::vector<double> storage;
         gpuml_array_t out = b.good_out(storage);
         out.dtype = GPUML_INT32;
         return b.apply_to_out(out);
       }},
      // ---- strides ------------------------------------------------------------------------------
      {"negative stride", any_kind, State::fitted, [](auto&) { return invalid("X.strides"); },
       [](Bench& b) {
         gpuml_array_t X = b.X();
         X.data = b.train.X.data() + (b.train.n - 1) * b.train.d;
         X.strides[0] = -b.train.d;
         return b.fit(X);
       }},
      {"overflowing stride", any_kind, State::fitted, [](auto&) { return invalid("X.strides"); },
       [](Bench& b) {
         gpuml_array_t X = b.X();
         X.strides[0] = std::numeric_limits<int64_t>::max() / 4;
         return b.fit(X);
       }},
      {"zero stride", any_kind, State::fitted, [](auto&) { return invalid("X.strides"); },
       [](Bench& b) {
         gpuml_array_t X = b.X();
         X.strides[1] = 0;
         return b.fit(X);
       }},
      {"strided X (every other column of a wider array)", any_kind, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         // The same values as the training X, read through a view with column stride 2: the
         // model must equal the one fitted on the contiguous copy.
         std::vector<double> wide(b.train.X.size() * 2, kNaN);
         for (std::size_t i = 0; i < b.train.X.size(); ++i) wide[2 * i] = b.train.X[i];
         gpuml_array_t X = b.X();
         X.data = wide.data();
         X.strides[0] = 2 * b.train.d;
         X.strides[1] = 2;
         gpuml_status_t s = b.fit(X);
         if (s != GPUML_OK) return s;
         const Output strided = capi::apply(b.ctx, b.est, b.spec.method, b.test);
         s = b.fit(b.train);
         if (s != GPUML_OK) return s;
         const Output contiguous = capi::apply(b.ctx, b.est, b.spec.method, b.test);
         EXPECT_TRUE(same_bits(strided.values, contiguous.values)) << "the strided fit differs from the contiguous one";
         return strided.status;
       }},
      // ---- misaligned memory (issue 22 item 7): arrays at an odd byte offset are read and written
      // bytewise, never through a misaligned typed pointer (UBSan in scripts/sanitize checks it);
      // the model equals the one from aligned arrays of the same values.
      {"misaligned X (odd byte offset)", any_kind, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         Misaligned X(b.train.X), test_X(b.test.X);
         const gpuml_status_t s = b.fit(host_array(X.data(), GPUML_FLOAT64, 2, b.train.n, b.train.d));
         if (s != GPUML_OK) return s;
         const gpuml_array_t misaligned_test = host_array(test_X.data(), GPUML_FLOAT64, 2, b.test.n, b.test.d);
         std::vector<double> storage;
         gpuml_array_t out = b.good_out(storage);
         const gpuml_status_t p = call_method(b.spec.method, b.ctx, b.est, &misaligned_test, &out);
         if (p != GPUML_OK) return p;
         EXPECT_TRUE(same_bits(storage, capi::apply(b.ctx, b.est, b.spec.method, b.test).values))
             << "predictions from a misaligned X differ from those from the aligned one";
         return expect_same_model_as_aligned(b, s, "misaligned X");
       }},
      {"misaligned y (odd byte offset)", supervised, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         const bool labels = b.spec.target == Target::labels;
         Misaligned y = labels ? Misaligned(b.train.labels) : Misaligned(b.train.y);
         const gpuml_array_t X = b.X(), w = b.w();
         const gpuml_array_t y_ = host_array(y.data(), labels ? GPUML_INT32 : GPUML_FLOAT64, 1, b.train.n, 0);
         return expect_same_model_as_aligned(b, gpuml_estimator_fit(b.ctx, b.est, &X, &y_, b.w_or_null(w)), "misaligned y");
       }},
      {"misaligned sample_weight (odd byte offset)", weighted, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         Misaligned w(b.train.w);
         const gpuml_array_t X = b.X(), y = b.y();
         const gpuml_array_t w_ = host_array(w.data(), GPUML_FLOAT64, 1, b.train.n, 0);
         return expect_same_model_as_aligned(b, gpuml_estimator_fit(b.ctx, b.est, &X, b.y_or_null(y), &w_),
                                             "misaligned sample_weight");
       }},
      {"misaligned out (odd byte offset)", any_kind, State::fitted, [](auto&) { return ok(); },
       [](Bench& b) {
         std::vector<double> aligned;
         gpuml_array_t out = b.good_out(aligned);
         Misaligned misaligned(aligned);
         out.data = misaligned.data();
         const gpuml_status_t s = b.apply_to_out(out);
         if (s != GPUML_OK) return s;
         EXPECT_TRUE(same_bits(misaligned.doubles(), capi::apply(b.ctx, b.est, b.spec.method, b.test).values))
             << "the output written into a misaligned out differs from the aligned one";
         return s;
       }},
      // ---- pointers -----------------------------------------------------------------------------
      {"NULL X (fit)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) { return gpuml_estimator_fit(b.ctx, b.est, nullptr, nullptr, nullptr); }},
      {"NULL X (predict)", any_kind, State::fitted, [](auto&) { return invalid("X"); },
       [](Bench& b) {
         std::vector<double> storage;
         gpuml_array_t out = b.good_out(storage);
         return call_method(b.spec.method, b.ctx, b.est, nullptr, &out);
       }},
      {"NULL out", any_kind, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) {
         const gpuml_array_t X = host_matrix(b.test.X.data(), b.test.n, b.test.d);
         return call_method(b.spec.method, b.ctx, b.est, &X, nullptr);
       }},
      {"NULL estimator (fit)", any_kind, State::fitted, [](auto&) { return invalid("est"); },
       [](Bench& b) {
         const gpuml_array_t X = b.X();
         return gpuml_estimator_fit(b.ctx, nullptr, &X, nullptr, nullptr);
       }},
      {"NULL estimator (predict)", any_kind, State::fitted, [](auto&) { return invalid("est"); },
       [](Bench& b) {
         std::vector<double> storage;
         gpuml_array_t out = b.good_out(storage);
         const gpuml_array_t X = host_matrix(b.test.X.data(), b.test.n, b.test.d);
         return call_method(b.spec.method, b.ctx, nullptr, &X, &out);
       }},
      {"NULL context (fit)", any_kind, State::fitted, [](auto&) { return invalid("ctx"); },
       [](Bench& b) {
         const gpuml_array_t X = b.X(), y = b.y();
         return gpuml_estimator_fit(nullptr, b.est, &X, b.y_or_null(y), nullptr);
       }},
      {"NULL context (predict)", any_kind, State::fitted, [](auto&) { return invalid("ctx"); },
       [](Bench& b) {
         std::vector<double> storage;
         gpuml_array_t out = b.good_out(storage);
         const gpuml_array_t X = host_matrix(b.test.X.data(), b.test.n, b.test.d);
         return call_method(b.spec.method, nullptr, b.est, &X, &out);
       }},
      {"X.data NULL with elements", any_kind, State::fitted, [](auto&) { return invalid("X.data"); },
       [](Bench& b) {
         gpuml_array_t X = b.X();
         X.data = nullptr;
         return b.fit(X);
       }},
      {"NULL y for a supervised kind", supervised, State::fitted, [](auto&) { return invalid("y"); },
       [](Bench& b) {
         const gpuml_array_t X = b.X();
         return gpuml_estimator_fit(b.ctx, b.est, &X, nullptr, nullptr);
       }},
      {"y.data NULL with elements", supervised, State::fitted, [](auto&) { return invalid("y.data"); },
       [](Bench& b) {
         const gpuml_array_t X = b.X();
         gpuml_array_t y = b.y();
         y.data = nullptr;
         return gpuml_estimator_fit(b.ctx, b.est, &X, &y, nullptr);
       }},
      {"NULL out handle (create)", any_kind, State::fitted, [](auto&) { return invalid("out"); },
       [](Bench& b) { return gpuml_estimator_create(b.spec.kind.c_str(), b.spec.params.c_str(), nullptr); }},
      // ---- devices ------------------------------------------------------------------------------
      {"host X declared as CUDA memory (fit, CPU context)", any_kind, State::fitted,
       [cuda_refusal](auto&) { return Expect{cuda_refusal, "X"}; },
       [](Bench& b) {
         gpuml_array_t X = b.X();
         X.device_type = GPUML_DEVICE_CUDA;
         return b.fit(X);
       }},
      {"host X declared as CUDA memory (predict, CPU context)", any_kind, State::fitted,
       [cuda_refusal](auto&) { return Expect{cuda_refusal, "X"}; },
       [](Bench& b) {
         gpuml_array_t X = host_matrix(b.test.X.data(), b.test.n, b.test.d);
         X.device_type = GPUML_DEVICE_CUDA;
         return b.apply(X);
       }},
      {"host out declared as CUDA memory (CPU context)", any_kind, State::fitted,
       [cuda_refusal](auto&) { return Expect{cuda_refusal, "out"}; },
       [](Bench& b) {
         std::vector<double> storage;
         gpuml_array_t out = b.good_out(storage);
         out.device_type = GPUML_DEVICE_CUDA;
         return b.apply_to_out(out);
       }},
      {"X.device_type unknown (7)", any_kind, State::fitted, [](auto&) { return invalid("X.device_type"); },
       [](Bench& b) {
         gpuml_array_t X = b.X();
         X.device_type = 7;
         return b.fit(X);
       }},
      // ---- kinds and parameters -----------------------------------------------------------------
      {"unknown kind", any_kind, State::fitted, [](auto&) { return invalid("no_such_kind"); },
       [](Bench& b) { return create_then_fit(b, "no_such_kind", "{}"); }},
      {"unknown parameter", any_kind, State::fitted, [](auto&) { return invalid("no_such_param"); },
       [](Bench& b) { return create_then_fit(b, b.spec.kind.c_str(), R"({"no_such_param": 1})"); }},
      {"wrong parameter type", any_kind, State::fitted, [](const KindSpec& s) { return invalid(s.wrong_type_name); },
       [](Bench& b) { return create_then_fit(b, b.spec.kind.c_str(), b.spec.wrong_type.c_str()); }},
      {"out-of-range parameter value", any_kind, State::fitted,
       [](const KindSpec& s) { return invalid(s.out_of_range_name); },
       [](Bench& b) { return create_then_fit(b, b.spec.kind.c_str(), b.spec.out_of_range.c_str()); }},
      {"params not JSON", any_kind, State::fitted, [](auto&) { return invalid("JSON|json|params_json|params"); },
       [](Bench& b) { return create_then_fit(b, b.spec.kind.c_str(), "{\"n\": "); }},
      {"params not an object", any_kind, State::fitted, [](auto&) { return invalid("object|params_json|params"); },
       [](Bench& b) { return create_then_fit(b, b.spec.kind.c_str(), "[1, 2]"); }},
      {"NULL params", any_kind, State::fitted, [](auto&) { return invalid("params_json"); },
       [](Bench& b) {
         gpuml_estimator_t other = nullptr;
         return gpuml_estimator_create(b.spec.kind.c_str(), nullptr, &other);
       }},
      // ---- state and labels ---------------------------------------------------------------------
      {"predict before fit", any_kind, State::fresh,
       [](const KindSpec& s) { return Expect{GPUML_ERROR_NOT_FITTED, s.kind + "|fit|fitted"}; },
       [](Bench& b) { return b.apply(host_matrix(b.test.X.data(), b.test.n, b.test.d)); }},
      {"attribute before fit", any_kind, State::fresh,
       [](const KindSpec&) { return Expect{GPUML_ERROR_NOT_FITTED, "n_features_in_"}; },
       [](Bench& b) {
         int32_t dtype = 0, ndim = 0;
         int64_t shape[2] = {0, 0};
         return gpuml_estimator_attribute_shape(b.est, "n_features_in_", &dtype, &ndim, shape);
       }},
      {"unknown attribute", any_kind, State::fitted, [](auto&) { return invalid("no_such_attribute_"); },
       [](Bench& b) {
         int32_t dtype = 0, ndim = 0;
         int64_t shape[2] = {0, 0};
         return gpuml_estimator_attribute_shape(b.est, "no_such_attribute_", &dtype, &ndim, shape);
       }},
      {"labels with a single class", classifier, State::fitted, [](auto&) { return invalid("class|classes"); },
       [](Bench& b) {
         std::vector<double> y(b.train.n, 3.0);
         return b.fit_with_y(y);
       }},
      {"a method the kind does not offer", [](const KindSpec& s) { return s.methods.size() < 3; }, State::fitted,
       [](auto&) { return Expect{GPUML_ERROR_UNSUPPORTED, "predict|transform|predict_proba"}; },
       [](Bench& b) {
         for (const char* m : {"predict", "transform", "predict_proba"}) {
           if (std::find(b.spec.methods.begin(), b.spec.methods.end(), m) == b.spec.methods.end())
             return b.apply(host_matrix(b.test.X.data(), b.test.n, b.test.d), m);
         }
         return GPUML_OK;
       }},
      {"unknown method name (output_shape)", any_kind, State::fitted, [](auto&) { return invalid("method|fit_predict"); },
       [](Bench& b) {
         int32_t dtype = 0, ndim = 0;
         int64_t shape[2] = {0, 0};
         return gpuml_estimator_output_shape(b.est, "fit_predict", 3, &dtype, &ndim, shape);
       }},
  };
  return table;
}

using KindOnBackend = std::tuple<KindSpec, std::string>;
class BadInputMatrix : public ::testing::TestWithParam<KindOnBackend> {};

// Every row on one estimator kind.
TEST_P(BadInputMatrix, EveryRow) {
  // Not a structured binding: clang (C++17) cannot capture those in the lambdas below.
  const KindSpec& spec = std::get<0>(GetParam());
  const std::string& backend = std::get<1>(GetParam());
  GPUML_SKIP_UNLESS_BACKEND(backend);
  GPUML_FRESH_RNG(rng);
  const Data train = make_data(rng, 90, 4);
  const Data test = make_data(rng, 20, 4);

  // The reference: a good fit and prediction on a fresh handle and context.
  std::vector<double> reference;
  {
    ContextHandle ctx(backend.c_str());
    EstimatorHandle est(spec.kind, spec.params);
    ASSERT_EQ(ctx.status(), GPUML_OK);
    ASSERT_EQ(est.status(), GPUML_OK) << gpuml_last_error();
    ASSERT_EQ(fit(ctx.get(), est.get(), spec, train, true), GPUML_OK) << gpuml_last_error();
    const Output out = apply(ctx.get(), est.get(), spec.method, test);
    ASSERT_EQ(out.status, GPUML_OK) << out.error;
    reference = out.values;
  }

  int cells = 0;
  for (const Row& row : rows()) {
    if (!row.applies(spec)) continue;
    SCOPED_TRACE("row \"" + row.name + "\", kind " + spec.kind + " on " + backend);
    ++cells;
    ContextHandle ctx(backend.c_str());
    EstimatorHandle est(spec.kind, spec.params);
    ASSERT_EQ(est.status(), GPUML_OK);
    Bench bench{spec, ctx.get(), est.get(), train, test};
    if (row.state == State::fitted) ASSERT_EQ(fit(ctx.get(), est.get(), spec, train, true), GPUML_OK);

    const Expect expect = row.expect(spec);
    const gpuml_status_t status = row.call(bench);
    const std::string message = gpuml_last_error();
    EXPECT_EQ(status, expect.status) << "message: " << message;
    if (expect.status != GPUML_OK && status != GPUML_OK) {
      EXPECT_TRUE(mentions(message, expect.words))
          << "the message does not name " << expect.words << ": \"" << message << "\"";
    }

    // A model the bad call did not replace still predicts what it did (or is unfitted).
    if (row.state == State::fitted && expect.status != GPUML_OK) {
      const Output after = apply(ctx.get(), est.get(), spec.method, test);
      if (after.status == GPUML_OK)
        EXPECT_TRUE(same_bits(after.values, reference)) << "the model changed after a refused call";
      else
        EXPECT_EQ(after.status, GPUML_ERROR_NOT_FITTED) << after.error;
    }

    // The handle and context still work.
    ASSERT_EQ(fit(ctx.get(), est.get(), spec, train, true), GPUML_OK) << gpuml_last_error();
    const Output again = apply(ctx.get(), est.get(), spec.method, test);
    ASSERT_EQ(again.status, GPUML_OK) << again.error;
    EXPECT_TRUE(same_bits(again.values, reference)) << "the refit on the same handle differs from a fresh fit";
  }
  std::printf("[ matrix   ] %s on %s: %d rows\n", spec.kind.c_str(), backend.c_str(), cells);
}

INSTANTIATE_TEST_SUITE_P(CApi, BadInputMatrix,
                         ::testing::Combine(::testing::ValuesIn(kind_specs()), ::testing::ValuesIn(backends())),
                         [](const ::testing::TestParamInfo<KindOnBackend>& info) {
                           return std::get<0>(info.param).kind + (std::get<1>(info.param) == "cpu" ? "_cpu" : "_cuda");
                         });

// The table covers every kind the library registers, and says how many cells the matrix has.
TEST(BadInputMatrixTable, CoversEveryKind) {
  std::vector<std::string> covered;
  for (const KindSpec& spec : kind_specs()) covered.push_back(spec.kind);
  for (const std::string& kind : gpuml::estimator_kinds())
    EXPECT_NE(std::find(covered.begin(), covered.end(), kind), covered.end()) << kind << " is not in the matrix";
  int cells = 0;
  for (const Row& row : rows())
    for (const KindSpec& spec : kind_specs()) cells += row.applies(spec) ? 1 : 0;
  std::printf("[ matrix   ] %zu rows x %zu kinds: %d cells\n", rows().size(), kind_specs().size(), cells);

  // GPUML_MATRIX_TABLE=1 prints the matrix as the Markdown table of docs/reliability.md.
  const char* table = std::getenv("GPUML_MATRIX_TABLE");
  if (table == nullptr || std::string(table) != "1") return;
  auto code = [](gpuml_status_t s) -> std::string {
    switch (s) {
      case GPUML_OK: return "ok";
      case GPUML_ERROR_INVALID_ARGUMENT: return "IA";
      case GPUML_ERROR_NOT_FITTED: return "NF";
      case GPUML_ERROR_UNSUPPORTED: return "UN";
      default: return std::to_string(static_cast<int>(s));
    }
  };
  std::string out = "| case | message names |";
  for (const KindSpec& spec : kind_specs()) out += " " + spec.kind + " |";
  out += "\n|---|---|";
  for (std::size_t i = 0; i < kind_specs().size(); ++i) out += ":-:|";
  out += "\n";
  for (const Row& row : rows()) {
    std::string words;
    for (const KindSpec& spec : kind_specs()) {
      if (!row.applies(spec)) continue;
      const Expect e = row.expect(spec);
      std::string alternatives = e.words;  // "a|b" -> "a / b", '|' being Markdown's cell separator
      for (std::size_t at = alternatives.find('|'); at != std::string::npos; at = alternatives.find('|', at))
        alternatives.replace(at, 1, " / ");
      if (e.status != GPUML_OK && words.find(alternatives) == std::string::npos)
        words += (words.empty() ? "" : "; ") + alternatives;
    }
    std::string line = "| " + row.name + " | " + (words.empty() ? "" : "`" + words + "`") + " |";
    for (const KindSpec& spec : kind_specs()) line += " " + (row.applies(spec) ? code(row.expect(spec).status) : "") + " |";
    out += line + "\n";
  }
  std::printf("%s", out.c_str());
}

// CUDA memory declared as host memory (and, on a CUDA context, host memory declared as CUDA
// memory) is refused with a named error, never dereferenced. Needs a device.
TEST(BadInputMatrixCuda, DeviceMemoryDeclaredAsHost) {
  if (gpuml::cuda_device_count() == 0) {
    if (gpuml::test::cuda_required()) FAIL() << "no CUDA device, but GPUML_REQUIRE_CUDA=1 requires one";
    GTEST_SKIP() << "no CUDA device";
  }
  GPUML_FRESH_RNG(rng);
  const Data train = make_data(rng, 60, 3);
  ContextHandle cpu("cpu"), gpu("cuda:0");
  ASSERT_EQ(gpu.status(), GPUML_OK) << gpuml_last_error();
  const KindSpec& spec = kind_specs().front();  // kmeans: X alone
  EstimatorHandle est(spec.kind, spec.params);
  // Device memory: a fitted model's attribute copied into a device array by the C ABI is the one
  // way to get device memory without the CUDA runtime here, so use gpuml::Buffer instead.
  gpuml::Context device_context = gpuml::Context::from_string("cuda:0");
  gpuml::Buffer device_X(device_context, train.X.size() * sizeof(double));
  gpuml_array_t X = host_matrix(static_cast<const double*>(device_X.data()), train.n, train.d);  // declared host
  EXPECT_EQ(gpuml_estimator_fit(cpu.get(), est.get(), &X, nullptr, nullptr), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(gpuml_last_error(), "X")) << gpuml_last_error();
  EXPECT_EQ(gpuml_estimator_fit(gpu.get(), est.get(), &X, nullptr, nullptr), GPUML_ERROR_INVALID_ARGUMENT);
  gpuml_array_t host_X = host_matrix(train.X.data(), train.n, train.d);
  host_X.device_type = GPUML_DEVICE_CUDA;  // host memory declared as CUDA memory, on a CUDA context
  EXPECT_EQ(gpuml_estimator_fit(gpu.get(), est.get(), &host_X, nullptr, nullptr), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(gpuml_last_error(), "X")) << gpuml_last_error();
  // Both contexts still work.
  for (gpuml_context_t ctx : {cpu.get(), gpu.get()}) {
    ASSERT_EQ(fit(ctx, est.get(), spec, train, false), GPUML_OK) << gpuml_last_error();
    EXPECT_EQ(apply(ctx, est.get(), spec.method, train).status, GPUML_OK);
  }
}

}  // namespace
}  // namespace gpuml::test::capi
