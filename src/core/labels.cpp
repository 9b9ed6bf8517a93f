// Class labels and weights on the host (labels.hpp).
#include "core/labels.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/parallel.hpp"
#include "core/staging.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml::detail {

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

namespace {

// The distinct values, ascending. Classes are few: each thread keeps a sorted list of those seen
// in its rows, and the lists are merged; everything is sorted only when there turn out to be
// many (y of n distinct values is an error later, but must not take quadratic time first).
std::vector<double> distinct_sorted(const double* values, int64_t n, int threads) {
  constexpr std::size_t kFew = 256;
  const RowBlocks blocks(n, threads, 1 << 15);
  std::vector<std::vector<double>> seen(static_cast<std::size_t>(blocks.count()));
  std::vector<char> many(static_cast<std::size_t>(blocks.count()), 0);
#pragma omp parallel for num_threads(threads_for(threads, n)) schedule(static)
  for (int b = 0; b < blocks.count(); ++b) {
    std::vector<double>& list = seen[b];
    double last = std::nan("");
    for (int64_t i = blocks.begin(b); i < blocks.end(b); ++i) {
      const double v = values[i];
      if (v == last) continue;  // runs of one label are common
      last = v;
      auto it = std::lower_bound(list.begin(), list.end(), v);
      if (it != list.end() && *it == v) continue;
      if (list.size() >= kFew) {
        many[b] = 1;
        break;
      }
      list.insert(it, v);
    }
  }
  std::vector<double> all;
  if (std::find(many.begin(), many.end(), 1) != many.end()) {
    all.assign(values, values + n);
  } else {
    for (const auto& list : seen) all.insert(all.end(), list.begin(), list.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

}  // namespace

LabelValues read_labels(Context& ctx, const ArrayView& y, int64_t n, const std::string& estimator) {
  GPUML_EXPECT(y.ndim == 1, estimator + ": y must be a 1-d array of class labels, got " + std::to_string(y.ndim) +
                                " dimension(s)");
  GPUML_EXPECT(y.shape[0] == n, "y has " + std::to_string(y.shape[0]) + " samples but X has " + std::to_string(n));
  LabelValues y_values;
  if (y.dtype == DType::int64) {
    // Classes are float64, which holds every integer up to 2^53 and not all beyond: check the
    // integers themselves, before any rounding could merge two labels or change one.
    constexpr int64_t kExact = int64_t(1) << 53;
    const HostReadable ints = host_readable(ctx, y, DType::int64, "y");
    const int64_t* v = static_cast<const int64_t*>(ints.data());
    HostArray converted(DType::float64, n);
    double* out = converted.as<double>();
    int64_t bad = -1;
    for (int64_t i = 0; i < n; ++i) {
      if ((v[i] > kExact || v[i] < -kExact) && bad < 0) bad = i;
      out[i] = static_cast<double>(v[i]);
    }
    GPUML_EXPECT(bad < 0, estimator + ": y holds the label " + std::to_string(bad < 0 ? 0 : v[bad]) + " (at index " +
                              std::to_string(bad) + "), beyond 2^53 in magnitude: classes are float64, which cannot "
                              "hold such integers exactly, so labels could merge or change");
    y_values.values.copy = std::move(converted);
  } else {
    y_values.values = host_readable(ctx, y, DType::float64, "y");
  }
  y_values.n = n;
  y_values.classes = distinct_sorted(static_cast<const double*>(y_values.values.data()), n, ctx.n_threads());
  return y_values;
}

Labels index_labels(Context& ctx, const LabelValues& y, std::vector<double> classes, const std::string& estimator) {
  const double* values = static_cast<const double*>(y.values.data());
  const int64_t n = y.n;
  Labels labels;
  labels.classes = std::move(classes);
  GPUML_EXPECT(labels.classes.size() >= 2, estimator +
                                               " needs samples of at least 2 classes in the data, but the data contains "
                                               "only one class: " + number_text(labels.classes[0]));
  GPUML_EXPECT(labels.classes.size() <= (1u << 24),
               estimator + ": too many classes (" + std::to_string(labels.classes.size()) + ")");
  labels.index.resize(static_cast<std::size_t>(n));
  const std::vector<double>& sorted = labels.classes;
  const int64_t n_classes = static_cast<int64_t>(sorted.size());
  int32_t* index = labels.index.data();
  if (n_classes <= 16) {  // the count of classes below the value: no branches, vectorizes
#pragma omp parallel for num_threads(threads_for(ctx.n_threads(), n)) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      int32_t below = 0;
      for (int64_t c = 1; c < n_classes; ++c) below += values[i] >= sorted[c];
      index[i] = below;
    }
  } else {
#pragma omp parallel for num_threads(threads_for(ctx.n_threads(), n)) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      index[i] = static_cast<int32_t>(std::lower_bound(sorted.begin(), sorted.end(), values[i]) - sorted.begin());
  }
  return labels;
}

Labels encode_labels(Context& ctx, const ArrayView& y, int64_t n, const std::string& estimator) {
  LabelValues y_values = read_labels(ctx, y, n, estimator);
  std::vector<double> classes = std::move(y_values.classes);
  return index_labels(ctx, y_values, std::move(classes), estimator);
}

std::vector<double> host_sample_weights(Context& ctx, const ArrayView* sample_weight, int64_t n) {
  if (!sample_weight) return {};
  const ArrayView& sw = *sample_weight;
  GPUML_EXPECT(sw.ndim == 1, "sample_weight must be a 1-d array, got " + std::to_string(sw.ndim) + " dimension(s)");
  GPUML_EXPECT(sw.shape[0] == n,
               "sample_weight has " + std::to_string(sw.shape[0]) + " entries but X has " + std::to_string(n) + " samples");
  const HostReadable copy = host_readable(ctx, sw, DType::float64, "sample_weight");
  std::vector<double> w(static_cast<const double*>(copy.data()), static_cast<const double*>(copy.data()) + n);
  for (int64_t i = 0; i < n; ++i)
    GPUML_EXPECT(w[i] >= 0, "sample_weight must be non-negative, got " + number_text(w[i]) + " at index " + std::to_string(i));
  return w;
}

std::vector<double> class_weights(const Labels& labels, const std::vector<double>& sample_weight, bool balanced,
                                  const std::vector<std::pair<double, double>>& listed, const std::string& estimator,
                                  Comm* comm) {
  const std::size_t n = labels.index.size(), n_classes = labels.classes.size();
  std::vector<double> weight(n_classes, 1.0);
  if (balanced) {
    std::vector<double> count(n_classes, 0.0);
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double wi = sample_weight.empty() ? 1.0 : sample_weight[i];
      count[labels.index[i]] += wi;
      total += wi;
    }
    if (comm != nullptr) {  // every rank's totals: the same bits on every rank
      count.push_back(total);
      comm->allreduce_sum(count.data(), static_cast<int64_t>(count.size()));
      total = count.back();
      count.pop_back();
    }
    for (std::size_t c = 0; c < n_classes; ++c) {
      GPUML_EXPECT(count[c] > 0, estimator + ": class_weight=\"balanced\" needs a positive total sample_weight in every "
                                             "class; class " + number_text(labels.classes[c]) + " has none");
      weight[c] = total / (static_cast<double>(n_classes) * count[c]);
    }
  } else if (!listed.empty()) {
    std::vector<double> missing;
    std::size_t found = 0;
    for (std::size_t c = 0; c < n_classes; ++c) {
      auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& e) { return e.first == labels.classes[c]; });
      if (it == listed.end()) {
        missing.push_back(labels.classes[c]);
      } else {
        weight[c] = it->second;
        ++found;
      }
    }
    if (!missing.empty() && found != listed.size()) {
      std::string names;
      for (double m : missing) names += (names.empty() ? "" : ", ") + number_text(m);
      throw_error(ErrorCode::invalid_argument, estimator + ": class_weight lists labels that are not in y, and the "
                                                           "classes [" + names + "] are not in class_weight");
    }
  }
  return weight;
}

void write_labels(Context& ctx, const ArrayView& labels, const HostArray& classes, const ArrayView& out) {
  if (is_floating(out.dtype)) return write_output(ctx, labels, out, "predictions");
  const double* cls = classes.as<const double>();
  const int64_t n_classes = classes.spec().shape[0], n = labels.shape[0];
  GPUML_EXPECT(std::all_of(cls, cls + n_classes, [](double c) { return c == std::floor(c) && std::abs(c) < 9e15; }),
               "predictions: the classes are not all integers, so the output must be a float32/float64 array, got " +
                   std::string(dtype_name(out.dtype)));
  const HostArray host = labels.device.is_cuda() ? to_host(ctx, labels) : HostArray();
  const double* values = labels.device.is_cuda() ? host.as<const double>() : labels.as<const double>();
  HostArray integral(DType::int64, n);
  std::transform(values, values + n, integral.as<int64_t>(), [](double v) { return static_cast<int64_t>(v); });
  write_output(ctx, integral.view(), out, "predictions");
}

}  // namespace gpuml::detail
