// Determinism through the C ABI (issue 9): for every estimator kind, with parameters that make
// the fit use its random_state (k-means++ with several inits, random coordinate selection,
// randomized solvers, bootstrap and feature draws), two fits on fresh handles and contexts give
// the same model bit for bit (the serialized bytes: every fitted attribute) and the same outputs
// of every method; a refit on the first handle does too. On the CPU backend, and on CUDA when a
// device is present (GPUML_REQUIRE_CUDA=1 turns that skip into a failure).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "capi/capi_harness.hpp"
#include "test_util.hpp"

namespace gpuml::test::capi {
namespace {

using KindOnBackend = std::tuple<KindSpec, std::string>;

std::string param_name(const ::testing::TestParamInfo<KindOnBackend>& info) {
  return std::get<0>(info.param).kind + (std::get<1>(info.param) == "cpu" ? "_cpu" : "_cuda");
}

class CApiDeterminism : public ::testing::TestWithParam<KindOnBackend> {};

TEST_P(CApiDeterminism, SameRandomStateSameModel) {
  // Not a structured binding: clang (C++17) cannot capture those in the lambdas below.
  const KindSpec& spec = std::get<0>(GetParam());
  const std::string& backend = std::get<1>(GetParam());
  GPUML_SKIP_UNLESS_BACKEND(backend);
  GPUML_FRESH_RNG(rng);
  const Data train = make_data(rng, 400, 6);
  const Data test = make_data(rng, 50, 6);

  struct Run {
    std::vector<uint8_t> bytes;
    std::vector<std::vector<double>> outputs;
  };
  auto outputs_of = [&](gpuml_context_t ctx, gpuml_estimator_t est, Run& run) {
    gpuml_status_t status = GPUML_OK;
    run.bytes = serialize(est, &status);
    ASSERT_EQ(status, GPUML_OK) << gpuml_last_error();
    for (const std::string& method : spec.methods) {
      const Output out = apply(ctx, est, method, test);
      ASSERT_EQ(out.status, GPUML_OK) << method << ": " << out.error;
      run.outputs.push_back(out.values);
    }
  };

  Run first, second, refit;
  ContextHandle ctx1(backend.c_str());
  ASSERT_EQ(ctx1.status(), GPUML_OK) << gpuml_last_error();
  EstimatorHandle est1(spec.kind, spec.random_params);
  ASSERT_EQ(est1.status(), GPUML_OK) << spec.random_params << ": " << gpuml_last_error();
  ASSERT_EQ(fit(ctx1.get(), est1.get(), spec, train, true), GPUML_OK) << gpuml_last_error();
  outputs_of(ctx1.get(), est1.get(), first);
  {
    ContextHandle ctx2(backend.c_str());
    EstimatorHandle est2(spec.kind, spec.random_params);
    ASSERT_EQ(fit(ctx2.get(), est2.get(), spec, train, true), GPUML_OK) << gpuml_last_error();
    outputs_of(ctx2.get(), est2.get(), second);
  }
  ASSERT_EQ(fit(ctx1.get(), est1.get(), spec, train, true), GPUML_OK) << gpuml_last_error();
  outputs_of(ctx1.get(), est1.get(), refit);

  ASSERT_FALSE(first.bytes.empty());
  EXPECT_EQ(first.bytes, second.bytes) << "two fits with the same random_state differ";
  EXPECT_EQ(first.bytes, refit.bytes) << "a refit on the same handle differs";
  for (std::size_t m = 0; m < spec.methods.size(); ++m) {
    EXPECT_TRUE(same_bits(first.outputs[m], second.outputs[m])) << spec.methods[m];
    EXPECT_TRUE(same_bits(first.outputs[m], refit.outputs[m])) << spec.methods[m];
  }
}

INSTANTIATE_TEST_SUITE_P(CApi, CApiDeterminism,
                         ::testing::Combine(::testing::ValuesIn(kind_specs()), ::testing::ValuesIn(backends())),
                         param_name);

}  // namespace
}  // namespace gpuml::test::capi
