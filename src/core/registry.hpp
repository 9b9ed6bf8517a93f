#pragma once
// The estimator factories behind gpuml::make_estimator, and the parameter schemas from their
// parameter tables (core/param_table.hpp), one per kind.
#include <nlohmann/json.hpp>

#include <memory>

#include "gpuml/core/estimator.hpp"

namespace gpuml::detail {

std::unique_ptr<Estimator> kmeans_from_params(const nlohmann::json& params);  // src/cluster/kmeans.cpp
nlohmann::json kmeans_params_schema();
std::unique_ptr<Estimator> linear_regression_from_params(const nlohmann::json& params);  // src/linear_model/linear_regression.cpp
nlohmann::json linear_regression_params_schema();
std::unique_ptr<Estimator> ridge_from_params(const nlohmann::json& params);  // src/linear_model/ridge.cpp
nlohmann::json ridge_params_schema();
std::unique_ptr<Estimator> elastic_net_from_params(const nlohmann::json& params);  // src/linear_model/elastic_net.cpp
std::unique_ptr<Estimator> lasso_from_params(const nlohmann::json& params);  // src/linear_model/elastic_net.cpp
nlohmann::json elastic_net_params_schema();
nlohmann::json lasso_params_schema();
std::unique_ptr<Estimator> logistic_regression_from_params(const nlohmann::json& params);  // src/linear_model/logistic_regression.cpp
nlohmann::json logistic_regression_params_schema();

std::unique_ptr<Estimator> random_forest_classifier_from_params(const nlohmann::json& params);  // src/ensemble/random_forest.cpp
std::unique_ptr<Estimator> random_forest_regressor_from_params(const nlohmann::json& params);  // src/ensemble/random_forest.cpp
nlohmann::json random_forest_classifier_params_schema();
nlohmann::json random_forest_regressor_params_schema();

std::unique_ptr<Estimator> pca_from_params(const nlohmann::json& params);  // src/decomposition/pca.cpp
nlohmann::json pca_params_schema();
std::unique_ptr<Estimator> truncated_svd_from_params(const nlohmann::json& params);  // src/decomposition/truncated_svd.cpp
nlohmann::json truncated_svd_params_schema();

}  // namespace gpuml::detail
