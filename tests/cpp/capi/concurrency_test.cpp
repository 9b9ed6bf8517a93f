// Concurrency through the C ABI (issue 9), for every estimator kind, on the CPU backend and on
// CUDA when a device is present (GPUML_REQUIRE_CUDA=1 turns the CUDA skips into failures):
// - 16 threads predicting on one fitted model, each with its own context, get what one thread
//   gets, bit for bit, for every method the kind offers;
// - a fit racing serialize (and predict) on one handle: every serialize either succeeds with the
//   bytes of one of the two models the fits make (bytes that load and round-trip) or is refused
//   with a named status; every prediction is one of the two models' predictions;
// - one graph handle ranked from many threads at once, and freed while they rank.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
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

// Skips (or fails under GPUML_REQUIRE_CUDA=1) a CUDA backend without a device.
#define SKIP_WITHOUT_BACKEND(backend)                                                      \
  if ((backend) != "cpu" && gpuml_cuda_devices() == 0) {                                   \
    if (::gpuml::test::cuda_required()) FAIL() << "no CUDA device, but GPUML_REQUIRE_CUDA=1 requires one"; \
    GTEST_SKIP() << "no CUDA device";                                                      \
  }

int gpuml_cuda_devices() { return gpuml::cuda_device_count(); }

class CApiConcurrency : public ::testing::TestWithParam<KindOnBackend> {};

TEST_P(CApiConcurrency, SixteenThreadsPredictLikeOne) {
  // Not a structured binding: clang (C++17) cannot capture those in the lambdas below.
  const KindSpec& spec = std::get<0>(GetParam());
  const std::string& backend = std::get<1>(GetParam());
  SKIP_WITHOUT_BACKEND(backend);
  GPUML_FRESH_RNG(rng);
  const Data train = make_data(rng, 300, 5);
  const Data test = make_data(rng, 257, 5);

  ContextHandle ctx(backend.c_str());
  ASSERT_EQ(ctx.status(), GPUML_OK) << gpuml_last_error();
  EstimatorHandle est(spec.kind, spec.params);
  ASSERT_EQ(fit(ctx.get(), est.get(), spec, train, true), GPUML_OK) << gpuml_last_error();
  std::vector<std::vector<double>> expected;
  for (const std::string& method : spec.methods) {
    const Output out = apply(ctx.get(), est.get(), method, test);
    ASSERT_EQ(out.status, GPUML_OK) << method << ": " << out.error;
    expected.push_back(out.values);
  }

  constexpr int kThreads = 16, kRounds = 4;
  std::atomic<int> ready{0}, failures{0}, mismatches{0};
  std::vector<std::string> first_error(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ContextHandle own(backend.c_str());  // each thread its own context
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();  // start together
      for (int round = 0; round < kRounds; ++round) {
        for (std::size_t m = 0; m < spec.methods.size(); ++m) {
          // Alternate the order of methods between threads so different calls overlap.
          const std::size_t k = (m + static_cast<std::size_t>(t)) % spec.methods.size();
          const Output out = apply(own.get(), est.get(), spec.methods[k], test);
          if (out.status != GPUML_OK) {
            if (failures.fetch_add(1) == 0) first_error[t] = out.error;
          } else if (!same_bits(out.values, expected[k])) {
            mismatches.fetch_add(1);
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::string errors;
  for (const std::string& e : first_error) errors += e.empty() ? "" : e + "; ";
  EXPECT_EQ(failures.load(), 0) << errors;
  EXPECT_EQ(mismatches.load(), 0) << "of " << kThreads * kRounds * spec.methods.size() << " calls";
}

TEST_P(CApiConcurrency, FitRacingSerializeIsNeverCorrupt) {
  // Not a structured binding: clang (C++17) cannot capture those in the lambdas below.
  const KindSpec& spec = std::get<0>(GetParam());
  const std::string& backend = std::get<1>(GetParam());
  SKIP_WITHOUT_BACKEND(backend);
  GPUML_FRESH_RNG(rng);
  // Two data sets of different sizes, so the two models can differ in size too (forests).
  const Data a = make_data(rng, 120, 4);
  const Data b = make_data(rng, 200, 4);
  const Data test = make_data(rng, 40, 4);

  // The two models' bytes and predictions, from handles of their own.
  std::vector<uint8_t> bytes_a, bytes_b;
  std::vector<double> predicted_a, predicted_b;
  {
    ContextHandle ctx(backend.c_str());
    ASSERT_EQ(ctx.status(), GPUML_OK) << gpuml_last_error();
    for (int which = 0; which < 2; ++which) {
      EstimatorHandle est(spec.kind, spec.params);
      ASSERT_EQ(fit(ctx.get(), est.get(), spec, which == 0 ? a : b, true), GPUML_OK) << gpuml_last_error();
      gpuml_status_t status = GPUML_OK;
      (which == 0 ? bytes_a : bytes_b) = serialize(est.get(), &status);
      ASSERT_EQ(status, GPUML_OK) << gpuml_last_error();
      const Output out = apply(ctx.get(), est.get(), spec.method, test);
      ASSERT_EQ(out.status, GPUML_OK) << out.error;
      (which == 0 ? predicted_a : predicted_b) = out.values;
    }
  }

  EstimatorHandle shared(spec.kind, spec.params);
  {
    ContextHandle ctx(backend.c_str());
    ASSERT_EQ(fit(ctx.get(), shared.get(), spec, a, true), GPUML_OK) << gpuml_last_error();
  }
  constexpr int kFits = 12;
  std::atomic<bool> done{false};
  std::atomic<int> fit_failures{0}, serialized{0}, refused{0}, corrupt{0}, predicted{0}, wrong_predictions{0};
  std::string fit_error, refusal, corruption;

  std::thread fitter([&] {
    ContextHandle ctx(backend.c_str());
    for (int i = 0; i < kFits; ++i) {
      if (fit(ctx.get(), shared.get(), spec, i % 2 == 0 ? b : a, true) != GPUML_OK && fit_failures.fetch_add(1) == 0)
        fit_error = gpuml_last_error();
    }
    done.store(true);
  });
  std::thread serializer([&] {
    // At least a few serializations even if the fits finish first.
    for (int i = 0; !done.load() || i < 4; ++i) {
      gpuml_status_t status = GPUML_OK;
      const std::vector<uint8_t> bytes = serialize(shared.get(), &status);
      if (status != GPUML_OK) {
        // Refused: the model changed size between serialized_size and serialize.
        const std::string message = gpuml_last_error();
        if (status == GPUML_ERROR_INVALID_ARGUMENT && message.find("size") != std::string::npos) {
          refused.fetch_add(1);
          refusal = message;
        } else if (corrupt.fetch_add(1) == 0) {
          corruption = "status " + std::to_string(status) + ": " + message;
        }
        continue;
      }
      serialized.fetch_add(1);
      EstimatorHandle loaded(bytes);
      const bool known = bytes == bytes_a || bytes == bytes_b;
      if (!known || loaded.status() != GPUML_OK || serialize(loaded.get()) != bytes) {
        if (corrupt.fetch_add(1) == 0)
          corruption = std::string(known ? "a model that does not load back: " : "bytes of neither model, ") +
                       std::to_string(bytes.size()) + " bytes (A: " + std::to_string(bytes_a.size()) +
                       ", B: " + std::to_string(bytes_b.size()) + ")" +
                       (loaded.status() != GPUML_OK ? std::string("; loading: ") + gpuml_last_error() : "");
      }
    }
  });
  std::thread predictor([&] {
    ContextHandle ctx(backend.c_str());
    while (!done.load()) {
      const Output out = apply(ctx.get(), shared.get(), spec.method, test);
      predicted.fetch_add(1);
      if (out.status != GPUML_OK || !(same_bits(out.values, predicted_a) || same_bits(out.values, predicted_b)))
        wrong_predictions.fetch_add(1);
    }
  });
  fitter.join();
  serializer.join();
  predictor.join();

  EXPECT_EQ(fit_failures.load(), 0) << fit_error;
  EXPECT_EQ(corrupt.load(), 0) << corruption;
  EXPECT_EQ(wrong_predictions.load(), 0) << "of " << predicted.load();
  EXPECT_GT(serialized.load(), 0);
  // After the race: the last fit was on A.
  gpuml_status_t status = GPUML_OK;
  EXPECT_EQ(serialize(shared.get(), &status), bytes_a);
  std::printf("[ race     ] %s on %s: %d serialized, %d refused (%s), %d predictions\n", spec.kind.c_str(),
              backend.c_str(), serialized.load(), refused.load(), refusal.c_str(), predicted.load());
}

// The race's narrow window, made certain: the model changes between gpuml_estimator_serialized_size
// and gpuml_estimator_serialize (another thread's fit). The buffer sized for the old model then
// gets either the new model's complete bytes, exactly `size` of them, or a named refusal, never
// a model shorter than the size the caller believes it has.
TEST_P(CApiConcurrency, RefitBetweenSizeAndSerialize) {
  // Not a structured binding: clang (C++17) cannot capture those in the lambdas below.
  const KindSpec& spec = std::get<0>(GetParam());
  const std::string& backend = std::get<1>(GetParam());
  SKIP_WITHOUT_BACKEND(backend);
  GPUML_FRESH_RNG(rng);
  const Data a = make_data(rng, 200, 4);
  const Data b = make_data(rng, 60, 4);
  ContextHandle ctx(backend.c_str());
  EstimatorHandle est(spec.kind, spec.params);
  for (int order = 0; order < 2; ++order) {  // to a smaller model and to a larger one (forests)
    const Data& first = order == 0 ? a : b;
    const Data& second = order == 0 ? b : a;
    ASSERT_EQ(fit(ctx.get(), est.get(), spec, first, true), GPUML_OK) << gpuml_last_error();
    uint64_t size = 0;
    ASSERT_EQ(gpuml_estimator_serialized_size(est.get(), &size), GPUML_OK);
    ASSERT_EQ(fit(ctx.get(), est.get(), spec, second, true), GPUML_OK) << gpuml_last_error();
    const std::vector<uint8_t> now = serialize(est.get());
    std::vector<uint8_t> buffer(size, 0xAB);
    const gpuml_status_t status = gpuml_estimator_serialize(est.get(), buffer.data(), size);
    if (now.size() == size) {
      EXPECT_EQ(status, GPUML_OK) << gpuml_last_error();
      EXPECT_EQ(buffer, now);
    } else {
      EXPECT_EQ(status, GPUML_ERROR_INVALID_ARGUMENT)
          << "a " << now.size() << "-byte model written into a " << size << "-byte buffer";
      EXPECT_NE(std::string(gpuml_last_error()).find("size"), std::string::npos) << gpuml_last_error();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CApi, CApiConcurrency,
                         ::testing::Combine(::testing::ValuesIn(kind_specs()), ::testing::ValuesIn(backends())),
                         param_name);

// ---- one graph handle (gpuml_graph_t) shared by threads ----------------------------------------

class CApiGraphConcurrency : public ::testing::TestWithParam<std::string> {};

// 8 threads rank one graph at once, each with its own personalization: the graph's lock runs the
// calls one at a time, and each gets what it gets alone, bit for bit. Then a free races the calls:
// each call either ranks as before or is refused as a freed handle (never a crash), and once one
// is refused so are the later ones.
TEST_P(CApiGraphConcurrency, ThreadsShareOneGraphAndRaceItsFree) {
  const std::string backend = GetParam();
  SKIP_WITHOUT_BACKEND(backend);
  GPUML_FRESH_RNG(rng);
  constexpr int64_t n = 500, m = 4000;
  constexpr int kThreads = 8;
  std::vector<int64_t> src(m), dst(m);
  std::vector<double> w(m);
  for (int64_t e = 0; e < m; ++e) {
    src[e] = uniform_int(rng, 0, n - 1);
    dst[e] = uniform_int(rng, 0, n - 1);
    w[e] = uniform_real(rng, 0.0, 2.0);
  }
  const gpuml_array_t s = host_array(src.data(), GPUML_INT64, 1, m, 0), d = host_array(dst.data(), GPUML_INT64, 1, m, 0);
  const gpuml_array_t wv = host_vector(w.data(), m);
  ContextHandle ctx(backend.c_str());
  ASSERT_EQ(ctx.status(), GPUML_OK) << gpuml_last_error();
  gpuml_graph_t graph = nullptr;
  ASSERT_EQ(gpuml_graph_create(ctx.get(), n, &s, &d, &wv, GPUML_FLOAT64, &graph), GPUML_OK) << gpuml_last_error();

  std::vector<std::vector<double>> personalization(kThreads), expected(kThreads);
  auto rank = [&](int t, std::vector<double>& out) {
    out.assign(n, 0.0);
    const gpuml_array_t p = host_vector(personalization[t].data(), n);
    gpuml_array_t o = host_vector(out.data(), n);
    int64_t n_iter = 0;
    int32_t converged = 0;
    return gpuml_graph_pagerank(graph, &p, nullptr, nullptr, "{}", &o, &n_iter, &converged);
  };
  for (int t = 0; t < kThreads; ++t) {
    for (int64_t v = 0; v < n; ++v) personalization[t].push_back(uniform_real(rng, 0.0, 1.0));
    ASSERT_EQ(rank(t, expected[t]), GPUML_OK) << gpuml_last_error();
  }

  for (int with_free = 0; with_free < 2; ++with_free) {
    SCOPED_TRACE(with_free ? "racing a free" : "sharing the graph");
    std::atomic<int> ready{0}, failures{0}, mismatches{0}, refused{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        ++ready;
        while (ready.load() < kThreads + with_free) std::this_thread::yield();
        bool gone = false;
        for (int round = 0; round < 6; ++round) {
          std::vector<double> out;
          const gpuml_status_t status = rank(t, out);
          if (status == GPUML_OK) {
            if (gone) ++failures;  // a freed handle must stay refused
            if (std::memcmp(out.data(), expected[t].data(), n * sizeof(double)) != 0) ++mismatches;
          } else if (with_free && status == GPUML_ERROR_INVALID_ARGUMENT &&
                     std::string(gpuml_last_error()).find("not a live graph handle") != std::string::npos) {
            gone = true;
            ++refused;
          } else {
            ++failures;
          }
        }
      });
    if (with_free) {
      ++ready;
      while (ready.load() < kThreads + 1) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      EXPECT_EQ(gpuml_graph_free(graph), GPUML_OK) << gpuml_last_error();
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(mismatches.load(), 0);
    if (!with_free) EXPECT_EQ(refused.load(), 0);
  }
  EXPECT_EQ(gpuml_graph_free(graph), GPUML_ERROR_INVALID_ARGUMENT);  // freed above
}

INSTANTIATE_TEST_SUITE_P(CApi, CApiGraphConcurrency, ::testing::ValuesIn(backends()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "cpu" ? std::string("cpu") : std::string("cuda");
                         });

}  // namespace
}  // namespace gpuml::test::capi
