#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/export.hpp"
#include "gpuml/core/sparse.hpp"

namespace gpuml {

// What every estimator offers, so that the C ABI (and serialization) need one generic handle.
// Methods an estimator lacks throw ErrorCode::unsupported. Outputs are caller-allocated views
// in host or device memory, of any dtype that can hold the values; predict/transform are const
// and safe to call from many threads at once, each with its own Context.
class GPUML_API Estimator {
 public:
  virtual ~Estimator();

  virtual const char* kind() const = 0;             // "kmeans", ...
  virtual std::string get_params_json() const = 0;  // scikit-learn's parameter names

  virtual void fit(Context& ctx, const ArrayView& X, const ArrayView* y, const ArrayView* sample_weight) = 0;
  virtual bool fitted() const = 0;

  // Shape and default dtype of the output of `method` ("predict", "transform", "predict_proba").
  virtual ArraySpec output_spec(const std::string& method, int64_t n_rows) const;
  virtual void predict(Context& ctx, const ArrayView& X, const ArrayView& out) const;
  virtual void transform(Context& ctx, const ArrayView& X, const ArrayView& out) const;
  virtual void predict_proba(Context& ctx, const ArrayView& X, const ArrayView& out) const;

  // Sparse X (CSR or CSC, sparse.hpp), the same methods otherwise. An estimator that takes it
  // overrides accepts_sparse and the methods it offers; the defaults throw unsupported, naming
  // the estimator ("<kind>: sparse input is not supported for it yet").
  virtual bool accepts_sparse() const;
  virtual void fit_sparse(Context& ctx, const SparseView& X, const ArrayView* y, const ArrayView* sample_weight);
  virtual void predict_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const;
  virtual void transform_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const;
  virtual void predict_proba_sparse(Context& ctx, const SparseView& X, const ArrayView& out) const;

  // Fitted attributes by scikit-learn name ("cluster_centers_", "inertia_"; scalars are 0-d).
  // Together they are the whole fitted state: serialization saves them and restores them.
  virtual std::vector<std::string> attribute_names() const = 0;
  virtual const HostArray& attribute(const std::string& name) const = 0;
  virtual void restore(std::map<std::string, HostArray> attributes) = 0;

  // warm_start: this estimator's next fit continues from `previous` (a fitted estimator of the
  // same kind, say one with other parameters) as it would from its own earlier fit. Estimators
  // without a warm start throw ErrorCode::unsupported.
  virtual void warm_start_from(const Estimator& previous);

  // Sets an array-valued parameter from memory (host or device, any float dtype) rather than
  // from its JSON form, with the same checks (KMeans "init": the initial centers, n_clusters x
  // n_features): no text to write and parse. Other names throw invalid_argument naming them.
  virtual void set_param_array(Context& ctx, const std::string& name, const ArrayView& value);

 protected:
  void require_fitted() const;  // throws not_fitted naming the estimator
};

// Creates an estimator of `kind` from a JSON object of parameters (unknown names are errors).
GPUML_API std::unique_ptr<Estimator> make_estimator(const std::string& kind, const std::string& params_json);
GPUML_API std::vector<std::string> estimator_kinds();
// The parameters `kind` takes, as JSON: {"kind", "parameters": [{"name", "forms", "default",
// "ranks_agree", "doc"}, ...]} in scikit-learn's order (src/core/param_table.hpp says what forms are).
GPUML_API const std::string& estimator_params_schema(const std::string& kind);

// Versioned, checksummed bytes: kind, parameters and fitted attributes.
GPUML_API std::vector<uint8_t> serialize(const Estimator& estimator);
GPUML_API std::unique_ptr<Estimator> deserialize(const void* data, std::size_t size);

}  // namespace gpuml
