// Writes the fuzzers' seed corpora: real saved models of every estimator kind, fitted through the
// C ABI on small random data (and unfitted ones), and real params JSON strings; and the params
// fuzzer's dictionary words from every kind's parameter table (gpuml_estimator_params_schema):
// each parameter's name and string choices.
//   make_seeds <deserialize seed dir> <params seed dir> [<dictionary file to write>]
#include <nlohmann/json.hpp>

#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fuzz_util.hpp"

using namespace gpuml_fuzz;

namespace {

enum class Target { none, regression, binary, multiclass };

struct Spec {
  const char* kind;
  const char* params;
  Target y;
  bool weighted;
};

// Small models (the fuzzer mutates every byte) that still cover each kind's attributes and options.
const Spec kSpecs[] = {
    {"kmeans", R"({"n_clusters": 3, "n_init": 1, "random_state": 0})", Target::none, false},
    {"kmeans", R"({"n_clusters": 2, "init": "random", "n_init": 2, "max_iter": 20, "tol": 0.001, "random_state": 7})", Target::none, true},
    {"linear_regression", R"({})", Target::regression, false},
    {"linear_regression", R"({"fit_intercept": false, "algorithm": "svd"})", Target::regression, true},
    {"ridge", R"({"alpha": 0.5, "solver": "cholesky"})", Target::regression, false},
    {"ridge", R"({"alpha": 2.0, "fit_intercept": false, "solver": "svd"})", Target::regression, true},
    {"ridge", R"({"alpha": 0.3, "solver": "lbfgs", "positive": true, "max_iter": 50, "tol": 1e-6})", Target::regression, true},
    {"linear_regression", R"({"positive": true, "tol": 1e-8})", Target::regression, false},
    {"lasso", R"({"alpha": 0.1})", Target::regression, false},
    {"elastic_net", R"({"alpha": 0.1, "l1_ratio": 0.3, "max_iter": 200, "selection": "cyclic"})", Target::regression, true},
    {"logistic_regression", R"({"C": 1.0})", Target::binary, false},
    {"logistic_regression", R"({"C": 0.5, "max_iter": 50})", Target::multiclass, true},
    {"logistic_regression", R"({"penalty": "l1", "C": 2.0})", Target::binary, false},
    {"logistic_regression", R"({"class_weight": [[0, 1.0], [1, 2.5]]})", Target::binary, false},
    {"logistic_regression", R"({"class_weight": "balanced", "fit_intercept": false})", Target::multiclass, false},
    {"pca", R"({"n_components": 2})", Target::none, false},
    {"pca", R"({"n_components": 3, "whiten": true, "svd_solver": "full"})", Target::none, false},
    {"pca", R"({"n_components": 2, "svd_solver": "randomized", "random_state": 1})", Target::none, false},
    {"truncated_svd", R"({"n_components": 2, "random_state": 0})", Target::none, false},
    {"truncated_svd", R"({"n_components": 3, "algorithm": "full"})", Target::none, false},
    {"random_forest_classifier", R"({"n_estimators": 3, "max_depth": 3, "random_state": 0})", Target::binary, false},
    {"random_forest_classifier", R"({"n_estimators": 2, "max_depth": 4, "oob_score": true, "class_weight": "balanced", "criterion": "entropy", "random_state": 3})", Target::multiclass, true},
    {"random_forest_classifier", R"({"n_estimators": 2, "max_leaf_nodes": 5, "max_features": null, "random_state": 4})", Target::multiclass, false},
    {"random_forest_regressor", R"({"n_estimators": 3, "max_depth": 3, "random_state": 0})", Target::regression, false},
    {"random_forest_regressor", R"({"n_estimators": 2, "max_depth": 3, "oob_score": true, "max_samples": 0.8, "random_state": 5})", Target::regression, true},
};

// Params strings only (not fitted): edge values and forms the parser accepts or refuses.
const std::pair<const char*, const char*> kParamsOnly[] = {
    {"kmeans", R"({"n_clusters": 8})"},
    {"kmeans", "null"},
    {"kmeans", ""},
    {"kmeans", R"({"n_clusters": 8.0, "random_state": null})"},
    {"kmeans", R"({"n_clusters": 0})"},
    {"kmeans", R"({"n_clusters": "8"})"},
    {"kmeans", R"({"nope": 1})"},
    {"linear_regression", R"({"positive": true})"},
    {"ridge", R"({"alpha": 1e-300, "solver": "auto"})"},
    {"lasso", R"({"alpha": 1e308, "positive": true, "selection": "random", "random_state": 18446744073709551615})"},
    {"elastic_net", R"({"l1_ratio": 1.5})"},
    {"logistic_regression", R"({"penalty": "elasticnet", "l1_ratio": 0.5, "tol": 1e-8})"},
    {"logistic_regression", R"({"penalty": null, "init_coef": null, "solver": "liblinear", "intercept_scaling": 2})"},
    {"logistic_regression", R"({"class_weight": [[1.5, 0], [-2, 3]]})"},
    {"pca", R"({"n_components": null, "iterated_power": 7, "n_oversamples": 10})"},
    {"pca", R"({"n_components": 0.95, "svd_solver": "covariance_eigh"})"},
    {"truncated_svd", R"({"n_components": 1, "n_iter": 5, "tol": 0.0})"},
    {"random_forest_classifier", R"({"max_features": "sqrt", "min_samples_split": 0.1, "min_samples_leaf": 2, "bootstrap": false, "n_bins": 64})"},
    {"random_forest_classifier", R"({"class_weight": "balanced_subsample", "max_features": 0.5, "min_impurity_decrease": 0.01})"},
    {"random_forest_regressor", R"({"criterion": "poisson", "max_features": 2, "max_samples": 10})"},
    {"random_forest_regressor", R"({"criterion": "squared_error", "max_depth": null, "max_leaf_nodes": null})"},
};

void write_file(const std::string& path, const void* data, std::size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!f) fail("cannot write", path);
}

void write_params_seed(const std::string& dir, const std::string& kind, const std::string& json, int index) {
  std::size_t k = 0;
  while (kinds()[k] != kind) ++k;
  std::string bytes(1, static_cast<char>(k));
  bytes += json;
  write_file(dir + "/params-" + std::to_string(index), bytes.data(), bytes.size());
}

gpuml_array_t view(std::vector<double>& v, int64_t rows, int64_t cols) {
  gpuml_array_t a{};
  a.data = v.data();
  a.dtype = GPUML_FLOAT64;
  a.device_type = GPUML_DEVICE_CPU;
  a.ndim = cols > 0 ? 2 : 1;
  a.shape[0] = rows;
  a.shape[1] = cols > 0 ? cols : 0;
  a.strides[0] = cols > 0 ? cols : 1;
  a.strides[1] = 1;
  return a;
}

}  // namespace

// The dictionary words of every kind's parameter schema, as libFuzzer's quoted entries.
void write_dictionary(const std::string& path) {
  std::set<std::string> words;
  for (const char* kind : {"kmeans", "linear_regression", "ridge", "lasso", "elastic_net", "logistic_regression", "pca",
                           "truncated_svd", "random_forest_classifier", "random_forest_regressor"}) {
    const char* schema = nullptr;
    if (gpuml_estimator_params_schema(kind, &schema) != GPUML_OK) fail("gpuml_estimator_params_schema", kind);
    const nlohmann::json parsed = nlohmann::json::parse(schema);  // kept alive for the loop
    for (const auto& row : parsed["parameters"]) {
      words.insert(row["name"].dump());
      for (const auto& form : row["forms"])
        if (form.contains("choices"))
          for (const auto& choice : form["choices"]) words.insert(choice.dump());
    }
  }
  std::ofstream out(path);
  out << "# Generated by fuzz_make_seeds from the parameter tables: names and string choices.\n";
  for (const std::string& word : words) out << nlohmann::json(word).dump() << "\n";  // the JSON text, quoted again
  std::printf("make_seeds: %zu dictionary words in %s\n", words.size(), path.c_str());
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s <deserialize seed dir> <params seed dir> [<dictionary file>]\n", argv[0]);
    return 2;
  }
  if (argc == 4) write_dictionary(argv[3]);
  const std::string models = argv[1], params_dir = argv[2];
  gpuml_context_t ctx = nullptr;
  if (gpuml_context_create("cpu", &ctx) != GPUML_OK) fail("gpuml_context_create");

  const int64_t n = 40, d = 4;
  std::mt19937_64 rng(20261123);
  std::normal_distribution<double> normal;
  std::vector<double> X(n * d), y_reg(n), y_bin(n), y_multi(n), w(n);
  for (double& x : X) x = normal(rng);
  for (int64_t i = 0; i < n; ++i) {
    const double* r = &X[i * d];
    y_reg[i] = 1.5 * r[0] - 2.0 * r[1] + 0.5 * r[3] + 0.1 * normal(rng) + 3.0;
    y_bin[i] = r[0] + 0.3 * normal(rng) > 0 ? 1.0 : 0.0;
    y_multi[i] = r[1] > 0.4 ? 2.0 : r[1] > -0.4 ? 1.0 : 0.0;
    w[i] = 0.5 + static_cast<double>(i % 3);
  }
  gpuml_array_t xa = view(X, n, d), wa = view(w, n, 0);
  gpuml_array_t reg = view(y_reg, n, 0), bin = view(y_bin, n, 0), multi = view(y_multi, n, 0);

  int count = 0, params_count = 0;
  std::set<std::string> unfitted;
  for (const Spec& s : kSpecs) {
    gpuml_estimator_t est = nullptr;
    if (gpuml_estimator_create(s.kind, s.params, &est) != GPUML_OK) fail("create", std::string(s.kind) + " " + s.params);
    write_params_seed(params_dir, s.kind, s.params, params_count++);
    write_params_seed(params_dir, s.kind, params_or_fail(est), params_count++);
    if (unfitted.insert(s.kind).second) {  // an unfitted model of each kind
      const std::vector<uint8_t> bytes = serialize_or_fail(est);
      write_file(models + "/unfitted-" + s.kind, bytes.data(), bytes.size());
    }
    const gpuml_array_t* y = s.y == Target::regression ? &reg : s.y == Target::binary ? &bin
                             : s.y == Target::multiclass ? &multi : nullptr;
    if (gpuml_estimator_fit(ctx, est, &xa, y, s.weighted ? &wa : nullptr) != GPUML_OK)
      fail("fit", std::string(s.kind) + " " + s.params);
    const std::vector<uint8_t> bytes = serialize_or_fail(est);
    write_file(models + "/" + s.kind + "-" + std::to_string(count++), bytes.data(), bytes.size());
    gpuml_estimator_free(est);
  }
  for (const auto& [kind, json] : kParamsOnly) write_params_seed(params_dir, kind, json, params_count++);
  gpuml_context_free(ctx);
  std::printf("make_seeds: %d models in %s, %d params strings in %s\n", count, models.c_str(), params_count,
              params_dir.c_str());
  return 0;
}
