#pragma once
// The whole C++ API.
#include "gpuml/cluster/kmeans.hpp"
#include "gpuml/core/array.hpp"
#include "gpuml/core/context.hpp"
#include "gpuml/core/dtype.hpp"
#include "gpuml/core/error.hpp"
#include "gpuml/core/estimator.hpp"
#include "gpuml/decomposition/pca.hpp"
#include "gpuml/decomposition/truncated_svd.hpp"
#include "gpuml/linear_model/linear_regression.hpp"
#include "gpuml/linear_model/elastic_net.hpp"
#include "gpuml/linear_model/logistic_regression.hpp"
#include "gpuml/linear_model/ridge.hpp"
