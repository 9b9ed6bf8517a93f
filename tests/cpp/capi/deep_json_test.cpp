// Deeply nested params JSON through the C ABI (issue 22, item 1): estimator params, PageRank's
// params and the params string inside a model file. The error message once dumped the caller's
// value with a recursive serializer, which overflowed the stack (SIGSEGV) on ~200 KB of
// `[[[...]]]` on an 8 MB stack and ~20 KB on a 1 MB one. Each call here runs on a thread with a
// 1 MB stack, as an embedding program's worker thread might have, and must return
// GPUML_ERROR_INVALID_ARGUMENT with a short message. Nesting is capped at
// gpuml::detail::kMaxParamsDepth (32) levels: the boundary is checked on both sides.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "capi/capi_harness.hpp"
#include "capi/model_bytes.hpp"
#include "test_util.hpp"

namespace gpuml::test::capi {
namespace {

constexpr std::size_t kSmallStack = std::size_t(1) << 20;
constexpr std::size_t kMessageLimit = 400;  // what a message quoting an 80-character excerpt stays under
constexpr int kDepthLimit = 32;             // gpuml::detail::kMaxParamsDepth

// Runs fn on a new thread whose stack is `bytes` long, and waits for it.
void on_small_stack(std::size_t bytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
  pthread_t thread;
  auto run = [](void* f) -> void* {
    (*static_cast<const std::function<void()>*>(f))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, run, const_cast<std::function<void()>*>(&fn)), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

// `levels` nested arrays around a random number: [[[...0.42...]]].
std::string nested_arrays(int64_t levels, std::mt19937_64& rng) {
  return std::string(levels, '[') + std::to_string(uniform_real(rng, 0.0, 1.0)) + std::string(levels, ']');
}

struct Refusal {
  gpuml_status_t status = GPUML_OK;
  std::string message;
  bool out_null = true;
};

Refusal create(const std::string& kind, const std::string& params) {
  Refusal r;
  gpuml_estimator_t est = nullptr;
  r.status = gpuml_estimator_create(kind.c_str(), params.c_str(), &est);
  r.message = gpuml_last_error();
  r.out_null = est == nullptr;
  gpuml_estimator_free(est);
  return r;
}

Refusal pagerank(const std::string& params) {
  Refusal r;
  ContextHandle ctx("cpu");
  int64_t src[3] = {0, 1, 2}, dst[3] = {1, 2, 0}, n_iter = -1;
  double ranks[3] = {0, 0, 0};
  int32_t converged = -1;
  const gpuml_array_t s = host_array(src, GPUML_INT64, 1, 3, 0), d = host_array(dst, GPUML_INT64, 1, 3, 0);
  gpuml_array_t out = host_vector(ranks, 3);
  r.status = gpuml_pagerank(ctx.get(), 3, &s, &d, nullptr, nullptr, nullptr, nullptr, params.c_str(), &out, &n_iter,
                            &converged);
  r.message = gpuml_last_error();
  return r;
}

Refusal deserialize(const std::vector<uint8_t>& bytes) {
  Refusal r;
  gpuml_estimator_t est = nullptr;
  r.status = gpuml_estimator_deserialize(bytes.data(), bytes.size(), &est);
  r.message = gpuml_last_error();
  r.out_null = est == nullptr;
  gpuml_estimator_free(est);
  return r;
}

void expect_refused(const Refusal& r, const std::string& what, const std::string& mentions) {
  EXPECT_EQ(r.status, GPUML_ERROR_INVALID_ARGUMENT) << what << ": " << r.message.substr(0, 300);
  EXPECT_TRUE(r.out_null) << what;
  EXPECT_LT(r.message.size(), kMessageLimit) << what << ": " << r.message.substr(0, 300);
  EXPECT_NE(r.message.find(mentions), std::string::npos) << what << ": the message should mention '" << mentions
                                                         << "': " << r.message.substr(0, 300);
}

// ~200 KB of nesting as the whole params, as a parameter of the wrong type and as an unknown
// parameter, for every estimator kind and for PageRank.
TEST(CApiDeepJson, NestedParamsAreRefusedOnASmallStack) {
  GPUML_FRESH_RNG(rng);
  const std::string deep = nested_arrays(100000, rng);
  std::vector<std::string> kinds;
  for (const KindSpec& spec : kind_specs()) kinds.push_back(spec.kind);
  on_small_stack(kSmallStack, [&] {
    for (const std::string& kind : kinds) {
      SCOPED_TRACE(kind);
      expect_refused(create(kind, deep), "the whole params", "levels");
      expect_refused(create(kind, R"({"max_iter": )" + deep + "}"), "a parameter's value", "levels");
      expect_refused(create(kind, R"({"no_such_parameter": )" + deep + "}"), "an unknown parameter", "levels");
    }
    expect_refused(pagerank(deep), "pagerank: the whole params", "levels");
    expect_refused(pagerank(R"({"alpha": )" + deep + "}"), "pagerank: alpha", "levels");
  });
}

// At the limit the parser accepts the value and the parameter's own check refuses it, quoting a
// short prefix; one level more is refused for its depth. Real params stay far inside (3 levels:
// class_weight pairs, KMeans init rows), and still work on the small stack.
TEST(CApiDeepJson, DepthLimitBoundary) {
  GPUML_FRESH_RNG(rng);
  on_small_stack(kSmallStack, [&] {
    // The top-level object is level 1.
    const Refusal at_limit = create("kmeans", R"({"init": )" + nested_arrays(kDepthLimit - 1, rng) + "}");
    expect_refused(at_limit, "32 levels", "init");
    EXPECT_NE(at_limit.message.find("[[[["), std::string::npos) << at_limit.message;
    EXPECT_EQ(at_limit.message.find("levels"), std::string::npos) << at_limit.message;
    expect_refused(create("kmeans", R"({"init": )" + nested_arrays(kDepthLimit, rng) + "}"), "33 levels", "32 levels");
    expect_refused(pagerank(nested_arrays(kDepthLimit + 1, rng)), "pagerank, 33 levels", "32 levels");

    const double a = uniform_real(rng, 0.5, 2.0), b = uniform_real(rng, 0.5, 2.0);
    const std::string real = R"({"class_weight": [[1, )" + std::to_string(a) + "], [3, " + std::to_string(b) + "]]}";
    const Refusal ok = create("random_forest_classifier", real);
    EXPECT_EQ(ok.status, GPUML_OK) << ok.message;
    const Refusal rows = create("kmeans", R"({"n_clusters": 2, "init": [[0.5, 1.5], [)" + std::to_string(a) + ", " +
                                              std::to_string(b) + "]]}");
    EXPECT_EQ(rows.status, GPUML_OK) << rows.message;
  });
}

// A long value of the wrong type is quoted as a short prefix, not whole.
TEST(CApiDeepJson, LongValuesAreQuotedShort) {
  GPUML_FRESH_RNG(rng);
  std::string list = "[";
  // Integers: the message renders them as written (a real such as 0.506580 would come back as 0.50658).
  for (int i = 0; i < 20000; ++i) list += (i ? "," : "") + std::to_string(uniform_int(rng, 1, 1000000));
  list += "]";
  const Refusal r = create("kmeans", R"({"tol": )" + list + "}");
  expect_refused(r, "a long list as tol", "tol");
  EXPECT_NE(r.message.find(list.substr(0, 20)), std::string::npos) << r.message;
  expect_refused(create("ridge", "{" + std::string(100000, ' ') + "\"alpha\" 1}"), "bad JSON", "not valid JSON");
  expect_refused(create("ridge", R"({")" + std::string(50000, 'k') + R"(": 1})"), "a long unknown name", "unknown");
}

// A model file whose params string is deeply nested (size and checksum repaired, so the loader
// reaches the params parser) is refused like the params of create.
TEST(CApiDeepJson, ModelWithNestedParamsIsRefused) {
  GPUML_FRESH_RNG(rng);
  const KindSpec& spec = kind_specs()[1];  // linear_regression
  ASSERT_EQ(spec.kind, "linear_regression");
  const Data data = make_data(rng, 60, 3);
  ContextHandle ctx("cpu");
  EstimatorHandle est(spec.kind, spec.params);
  ASSERT_EQ(fit(ctx.get(), est.get(), spec, data, false), GPUML_OK) << gpuml_last_error();
  const std::vector<uint8_t> bytes = serialize(est.get());
  ModelParts parts = split_model(bytes);
  ASSERT_EQ(join_model(parts), bytes) << "the test's model writer must match the library's";
  ASSERT_EQ(deserialize(join_model(parts)).status, GPUML_OK);

  const std::string deep = nested_arrays(100000, rng);
  std::vector<std::vector<uint8_t>> models;
  for (const std::string& params : {deep, R"({"fit_intercept": )" + deep + "}"}) {
    parts.params = params;
    models.push_back(join_model(parts));
  }
  on_small_stack(kSmallStack, [&] {
    for (const auto& model : models) expect_refused(deserialize(model), "a model's params", "levels");
  });
}

}  // namespace
}  // namespace gpuml::test::capi
