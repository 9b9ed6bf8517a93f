#pragma once
// Class labels and weights of the classifiers (LogisticRegression, RandomForestClassifier), read
// on the host: labels become class indices, and sample and class weights become host doubles.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/staging.hpp"
#include "gpuml/core/array.hpp"
#include "gpuml/core/comm.hpp"
#include "gpuml/core/context.hpp"

namespace gpuml::detail {

// classes: the distinct label values, ascending; index: each row's class.
struct Labels {
  std::vector<double> classes;
  std::vector<int32_t> index;
};

// y (n,) of finite numeric labels with at least two distinct values (else invalid_argument,
// naming `estimator`). Same as index_labels(ctx, read_labels(ctx, y, n, estimator), its own classes).
Labels encode_labels(Context& ctx, const ArrayView& y, int64_t n, const std::string& estimator);

// The two halves of encode_labels, for fits whose class set is agreed over ranks first
// (LogisticRegression: the union of every rank's classes): read_labels checks y and finds its
// distinct values (ascending; any number, even one); index_labels checks that `classes` (sorted,
// distinct, holding every value of y) has at least two classes and maps each row to its class.
struct LabelValues {
  HostReadable values;          // y as host float64
  int64_t n = 0;
  std::vector<double> classes;  // this y's distinct values, ascending
};
LabelValues read_labels(Context& ctx, const ArrayView& y, int64_t n, const std::string& estimator);
Labels index_labels(Context& ctx, const LabelValues& y, std::vector<double> classes, const std::string& estimator);

// sample_weight (n,) as host doubles, checked finite and >= 0; empty for nullptr.
std::vector<double> host_sample_weights(Context& ctx, const ArrayView* sample_weight, int64_t n);

// One weight per class: "balanced" (Σ w / (n_classes · Σ w of the class), w the sample weights or
// ones), or the listed (label, weight) pairs as scikit-learn reads a dict (classes not listed
// weigh 1; listing a label that is not a class is an error unless every class is listed), or
// ones. With a communicator, "balanced" sums the class totals over its ranks (collective; labels
// must then hold the classes agreed by every rank): the weights of all ranks' rows.
std::vector<double> class_weights(const Labels& labels, const std::vector<double>& sample_weight, bool balanced,
                                  const std::vector<std::pair<double, double>>& listed, const std::string& estimator,
                                  Comm* comm = nullptr);

// Writes predicted labels (float64, n, in the context's memory) to out: a float array, or an
// integer array when every class is an integer (write_output never truncates floats).
void write_labels(Context& ctx, const ArrayView& labels, const HostArray& classes, const ArrayView& out);

std::string number_text(double v);  // shortest round-trip-ish text of a number, for messages

}  // namespace gpuml::detail
