// Parameter tables (src/core/param_table.hpp), through the public API: reading params JSON
// (every form, the defaults, the errors), checking params built in C++, get_params and the schema
// gpuml_estimator_params_schema returns. KMeans's table has a row of most forms; every kind with a
// table round-trips its defaults.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "gpuml/cluster/kmeans.hpp"
#include "gpuml/core/error.hpp"
#include "gpuml/core/estimator.hpp"

namespace {

std::string message_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const gpuml::Error& e) {
    EXPECT_EQ(e.code(), gpuml::ErrorCode::invalid_argument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

nlohmann::json params_of(const std::string& kind, const std::string& json) {
  return nlohmann::json::parse(gpuml::make_estimator(kind, json)->get_params_json());
}

TEST(ParamTable, ReadsEveryFormAndKeepsDefaultsForAbsentOrNull) {
  const auto p = params_of("kmeans", R"({"n_clusters": 2, "init": [[1, 2], [3, 4.5]], "n_init": 3,
      "max_iter": 5.0, "tol": 0, "verbose": 2, "random_state": 42, "copy_x": false, "algorithm": "elkan"})");
  EXPECT_EQ(p["init"], nlohmann::json::parse("[[1.0, 2.0], [3.0, 4.5]]"));  // a matrix, rows kept
  EXPECT_EQ(p["n_init"], 3);
  EXPECT_EQ(p["max_iter"], 5);  // a float without fraction is an integer
  EXPECT_EQ(p["verbose"], 2);
  EXPECT_EQ(p["random_state"], 42);
  EXPECT_EQ(p["copy_x"], false);
  EXPECT_EQ(p["algorithm"], "elkan");
  const auto defaults = params_of("kmeans", R"({"n_clusters": null, "random_state": null})");
  EXPECT_EQ(defaults["n_clusters"], 8);  // null without a null form: the default
  EXPECT_EQ(defaults["random_state"], nullptr);
  EXPECT_EQ(defaults["n_init"], "auto");
}

TEST(ParamTable, RefusesValuesOfNoFormNamingTheParameterAndTheForms) {
  const auto create = [](const char* json) { return [json] { gpuml::make_estimator("kmeans", json); }; };
  EXPECT_EQ(message_of(create(R"({"n_clusters": 0})")), "kmeans parameter 'n_clusters' must be an integer >= 1, got 0");
  EXPECT_EQ(message_of(create(R"({"n_clusters": 2.5})")), "kmeans parameter 'n_clusters' must be an integer >= 1, got 2.5");
  EXPECT_EQ(message_of(create(R"({"tol": -1})")), "kmeans parameter 'tol' must be a finite number >= 0, got -1");
  EXPECT_EQ(message_of(create(R"({"algorithm": "auto"})")),
            "kmeans parameter 'algorithm' must be \"lloyd\" or \"elkan\", got \"auto\"");
  EXPECT_EQ(message_of(create(R"({"n_init": "all"})")),
            "kmeans parameter 'n_init' must be \"auto\" or an integer >= 1, got \"all\"");
  EXPECT_EQ(message_of(create(R"({"init": [[1, 2], [3]]})")),
            "kmeans parameter 'init' must be \"k-means++\", \"k-means||\", \"random\" or a list of equally long "
            "lists of finite numbers, got [[1,2],[3]]");
  EXPECT_EQ(message_of(create(R"({"random_state": -1})")),
            "kmeans parameter 'random_state' must be null or an integer >= 0, got -1");
  EXPECT_EQ(message_of(create(R"({"copy_x": 1})")), "kmeans parameter 'copy_x' must be true or false, got 1");
  EXPECT_EQ(message_of(create(R"({"verbose": -1})")), "kmeans parameter 'verbose' must be an integer >= 0, got -1");
  EXPECT_EQ(message_of(create(R"({"max_iter": 4294967296})")),
            "parameter 'max_iter' must be an integer that fits in 32 bits, got 4294967296");  // never wraps
  EXPECT_EQ(message_of(create(R"({"n_init": 4294967296})")),
            "parameter 'n_init' must be an integer that fits in 32 bits, got 4294967296");
  EXPECT_EQ(message_of(create(R"({"colour": 1, "n_clusters": 2})")), "unknown kmeans parameter(s): 'colour'");
  EXPECT_EQ(message_of(create(R"({"n_clusters": 3, "init": [[1, 2], [3, 4]]})")),
            "kmeans parameter 'init' has 2 rows but n_clusters is 3");  // a relation between two rows
}

TEST(ParamTable, FloatOfACountOrFractionIsTheFraction) {
  // scikit-learn's Interval(Integral, ...) with Interval(RealNotInt, ...): a JSON integer is the
  // count, a JSON float the fraction (never a count, though other integer forms take 2.0).
  const auto p = params_of("random_forest_classifier", R"({"min_samples_split": 1.0, "min_samples_leaf": 3,
      "max_samples": 2.5, "max_features": 1})");
  EXPECT_TRUE(p["min_samples_split"].is_number_float());
  EXPECT_EQ(p["min_samples_split"], 1.0);
  EXPECT_TRUE(p["min_samples_leaf"].is_number_integer());
  EXPECT_EQ(p["max_samples"], 2.5);  // a fraction of the rows' weight may pass 1
  EXPECT_TRUE(p["max_features"].is_number_integer());
  const auto create = [](const char* json) { return [json] { gpuml::make_estimator("random_forest_classifier", json); }; };
  EXPECT_EQ(message_of(create(R"({"min_samples_leaf": 1.0})")),
            "random_forest_classifier parameter 'min_samples_leaf' must be an integer >= 1 or a float in (0, 1), got 1.0");
  EXPECT_EQ(message_of(create(R"({"min_samples_split": 2.0})")),
            "random_forest_classifier parameter 'min_samples_split' must be an integer >= 2 or a float in (0, 1], got 2.0");
  const nlohmann::json schema = nlohmann::json::parse(gpuml::estimator_params_schema("random_forest_classifier"));
  for (const auto& row : schema["parameters"])
    if (row["name"] == "max_samples")
      EXPECT_EQ(row["forms"][1], nlohmann::json::parse(R"({"type": "real_not_int", "min": 0.0, "max": null, "closed": "neither"})"));
}

TEST(ParamTable, ChecksParamsBuiltInCpp) {
  gpuml::KMeansParams p;
  p.tol = std::nan("");
  EXPECT_EQ(message_of([&] { gpuml::KMeans{p}; }), "kmeans parameter 'tol' must be a finite number >= 0, got NaN");
  p = gpuml::KMeansParams{};
  p.init_array = {1.0, 2.0};
  EXPECT_EQ(message_of([&] { gpuml::KMeans{p}; }), "kmeans parameter 'init' is \"k-means++\" but init_array is set");
  p.init = "array";
  p.n_clusters = 2;
  p.init_array = {1.0, 2.0, 3.0};
  EXPECT_NE(message_of([&] { gpuml::KMeans{p}; }).find("kmeans parameter 'init'"), std::string::npos);
  EXPECT_NO_THROW(gpuml::KMeans{gpuml::KMeansParams{}});
}

TEST(ParamTable, SchemaDescribesEachParameter) {
  const nlohmann::json schema = nlohmann::json::parse(gpuml::estimator_params_schema("kmeans"));
  EXPECT_EQ(schema["kind"], "kmeans");
  std::vector<std::string> names;
  for (const auto& row : schema["parameters"]) names.push_back(row["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"n_clusters", "init", "n_init", "max_iter", "tol", "verbose",
                                             "random_state", "copy_x", "algorithm"}));  // scikit-learn's order
  const nlohmann::json& n_clusters = schema["parameters"][0];
  EXPECT_EQ(n_clusters["default"], 8);
  EXPECT_EQ(n_clusters["forms"][0], nlohmann::json::parse(R"({"type": "integer", "min": 1, "max": null, "closed": "left"})"));
  EXPECT_TRUE(n_clusters["ranks_agree"].get<bool>());
  EXPECT_FALSE(schema["parameters"][5]["ranks_agree"].get<bool>());  // verbose may differ per rank
  EXPECT_EQ(schema["parameters"][1]["forms"][0], nlohmann::json::parse(R"({"type": "string", "choices": ["k-means++", "k-means||", "random"]})"));
  EXPECT_EQ(schema["parameters"][1]["forms"][1]["type"], "matrix");
  for (const auto& row : schema["parameters"]) EXPECT_FALSE(row["doc"].get<std::string>().empty()) << row["name"];
  EXPECT_EQ(message_of([] { gpuml::estimator_params_schema("kmeanz"); }).find("unknown estimator kind"), 0u);
}

// Every kind has a table: its defaults are accepted as they are and come back from get_params.
TEST(ParamTable, EverySchemaRoundTripsItsDefaults) {
  for (const std::string& kind : gpuml::estimator_kinds()) {
    const nlohmann::json schema = nlohmann::json::parse(gpuml::estimator_params_schema(kind));
    EXPECT_EQ(schema["kind"], kind);
    nlohmann::json defaults = nlohmann::json::object();
    for (const auto& row : schema["parameters"]) defaults[row["name"].get<std::string>()] = row["default"];
    EXPECT_EQ(params_of(kind, defaults.dump()), defaults) << kind;
    EXPECT_EQ(params_of(kind, "{}"), defaults) << kind;
  }
}

}  // namespace
