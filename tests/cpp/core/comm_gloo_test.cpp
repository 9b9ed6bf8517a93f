// The Gloo communicator in one process, its ranks as threads: every collective against sums
// computed here, fits over the ranks against a 1-process fit (CPU contexts, and CUDA contexts
// sharing one GPU), the transport Comm::for_context chooses for CUDA contexts, and the failures
// (bad arguments, a rank that never comes, a rank that leaves) as named errors rather than hangs. Under mpirun,
// tests/mpi/mpi_test.cpp runs every estimator's distributed test over Gloo too (mpi.gloo.*).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpuml/core/comm.hpp"
#include "gpuml/gpuml.h"
#include "gpuml/gpuml.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

// A fresh rendezvous directory, removed with its files at the end of the test.
class RendezvousDir {
 public:
  RendezvousDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuml-gloo-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~RendezvousDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  GlooOptions options(double timeout_seconds = 60) const {
    GlooOptions o;
    o.rendezvous_dir = path_;
    o.hostname = "127.0.0.1";  // the ranks are this process's threads
    o.timeout_seconds = timeout_seconds;
    return o;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs body(rank, comm) on n_ranks threads, each with its own Gloo communicator; an exception in
// a thread becomes a test failure naming the rank.
void on_ranks(int n_ranks, const GlooOptions& options, const std::function<void(int, Comm&)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::string> failures(static_cast<std::size_t>(n_ranks));
  for (int r = 0; r < n_ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        std::shared_ptr<Comm> comm = Comm::gloo(n_ranks, r, options);
        body(r, *comm);
      } catch (const std::exception& e) {
        failures[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n_ranks; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

// An in-memory key-value store shared by the threads of a test (the caller's store of
// Comm::gloo and of gpuml_context_attach_gloo_store).
class MemoryStore final : public GlooStore {
 public:
  void set(const std::string& key, const std::vector<char>& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
    ++sets_;
    changed_.notify_all();
  }
  std::vector<char> get(const std::string& key, double timeout_seconds) override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, std::chrono::duration<double>(timeout_seconds), [&] { return values_.count(key) > 0; }))
      throw_error(ErrorCode::io, "no " + key + " in time");
    return values_[key];
  }
  int sets() {
    std::lock_guard<std::mutex> lock(mutex_);
    return sets_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<char>> values_;
  int sets_ = 0;
};

class GlooComm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!built_with_gloo()) GTEST_SKIP() << "gpuml was built without Gloo";
  }
};

TEST_F(GlooComm, EveryCollectiveMatchesTheSumsOfItsRanks) {
  GPUML_FRESH_RNG(rng);
  RendezvousDir dir;
  const int n_ranks = 3;
  const int64_t count = test::uniform_int(rng, 1, 5000);
  // Each rank's values, drawn here; the expected sums are made in rank order.
  std::vector<std::vector<double>> d(n_ranks, std::vector<double>(count));
  std::vector<std::vector<int64_t>> l(n_ranks, std::vector<int64_t>(count));
  std::normal_distribution<double> normal;
  for (int r = 0; r < n_ranks; ++r)
    for (int64_t i = 0; i < count; ++i) {
      d[r][i] = normal(rng);
      l[r][i] = static_cast<int64_t>(rng() >> 4) - (int64_t{1} << 58);  // beyond int32, no overflow in 3
    }
  std::vector<std::vector<double>> d_sum(n_ranks);
  std::vector<std::vector<float>> f_sum(n_ranks);
  std::vector<std::vector<int64_t>> l_sum(n_ranks);
  std::vector<std::vector<int32_t>> gathered(n_ranks);
  std::vector<std::vector<double>> broadcast(n_ranks);
  on_ranks(n_ranks, dir.options(), [&](int r, Comm& comm) {
    ASSERT_EQ(comm.rank(), r);
    ASSERT_EQ(comm.size(), n_ranks);
    EXPECT_STREQ(comm.kind(), "gloo");
    d_sum[r] = d[r];
    comm.allreduce_sum(d_sum[r].data(), count);
    f_sum[r].assign(d[r].begin(), d[r].end());
    comm.allreduce_sum(f_sum[r].data(), count);
    l_sum[r] = l[r];
    comm.allreduce_sum(l_sum[r].data(), count);
    // allgatherv: rank r sends r * 7 values r, 100 + r, ...; rank 0 sends none.
    std::vector<int64_t> counts = {0, 7, 14};
    std::vector<int32_t> send(static_cast<std::size_t>(counts[r]));
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = 100 * static_cast<int32_t>(i) + r;
    gathered[r].assign(21, -1);
    comm.allgatherv(send.data(), counts[r], gathered[r].data(), counts.data(), DType::int32);
    broadcast[r].assign(static_cast<std::size_t>(count), r == 2 ? 0.0 : -1.0);
    if (r == 2) broadcast[r] = d[2];
    comm.broadcast(broadcast[r].data(), count, 2);
    comm.barrier();
    EXPECT_THROW(comm.broadcast(broadcast[r].data(), count, n_ranks), Error);  // root out of range: before any message
  });
  for (int r = 0; r < n_ranks; ++r) {
    for (int64_t i = 0; i < count; ++i) {
      const double want = d[0][i] + d[1][i] + d[2][i];
      // Gloo adds in its own order: within a few ulps of the rank-order sum (3 terms).
      ASSERT_NEAR(d_sum[r][i], want, 4e-16 * (std::abs(d[0][i]) + std::abs(d[1][i]) + std::abs(d[2][i]))) << i;
      ASSERT_EQ(std::memcmp(&d_sum[r][i], &d_sum[0][i], sizeof(double)), 0) << "rank " << r << " holds other bits at " << i;
      ASSERT_EQ(std::memcmp(&f_sum[r][i], &f_sum[0][i], sizeof(float)), 0) << "rank " << r << " holds other bits at " << i;
      ASSERT_NEAR(f_sum[r][i], want, 1e-6 * (std::abs(d[0][i]) + std::abs(d[1][i]) + std::abs(d[2][i]))) << i;
      ASSERT_EQ(l_sum[r][i], l[0][i] + l[1][i] + l[2][i]) << i;
      ASSERT_EQ(broadcast[r][i], d[2][i]) << i;
    }
    for (int s = 1, at = 0; s < n_ranks; ++s)
      for (int i = 0; i < 7 * s; ++i, ++at) ASSERT_EQ(gathered[r][at], 100 * i + s) << "rank " << r << " entry " << at;
  }
}

TEST_F(GlooComm, ACallersStoreServesTheRendezvous) {
  GPUML_FRESH_RNG(rng);
  MemoryStore store;
  const int n_ranks = static_cast<int>(test::uniform_int(rng, 2, 4));
  GlooOptions options;
  options.hostname = "127.0.0.1";
  options.prefix = "job-" + std::to_string(rng());
  options.timeout_seconds = 60;
  std::vector<double> sums(static_cast<std::size_t>(n_ranks));
  std::vector<std::string> failures(static_cast<std::size_t>(n_ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < n_ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        std::shared_ptr<Comm> comm = Comm::gloo(n_ranks, r, store, options);
        double value = r + 0.25;
        comm->allreduce_sum(&value, 1);
        sums[r] = value;
      } catch (const std::exception& e) {
        failures[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n_ranks; ++r) {
    EXPECT_EQ(failures[r], "") << "rank " << r;
    EXPECT_EQ(sums[r], n_ranks * (n_ranks - 1) / 2.0 + 0.25 * n_ranks) << "rank " << r;  // exact in binary
  }
  EXPECT_GE(store.sets(), n_ranks);  // every rank left its addresses there

  // A store where the other rank never comes: an io error after the timeout.
  MemoryStore empty;
  options.timeout_seconds = 1;
  try {
    Comm::gloo(2, 1, empty, options);
    ADD_FAILURE() << "the rendezvous of 2 ranks succeeded with one";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io) << e.what();
  }
}

// The C ABI's store: C callbacks over a MemoryStore.
int32_t memory_set(void* user, const char* key, const void* value, int64_t size) {
  const char* bytes = static_cast<const char*>(value);
  static_cast<MemoryStore*>(user)->set(key, std::vector<char>(bytes, bytes + size));
  return 0;
}
int64_t memory_get(void* user, const char* key, void* out, int64_t capacity, double timeout_seconds) {
  try {
    const std::vector<char> value = static_cast<MemoryStore*>(user)->get(key, timeout_seconds);
    if (static_cast<int64_t>(value.size()) <= capacity) std::memcpy(out, value.data(), value.size());
    return static_cast<int64_t>(value.size());
  } catch (const Error&) {
    return -1;
  }
}

TEST_F(GlooComm, TheCAbiAttachesThroughACallersStore) {
  GPUML_FRESH_RNG(rng);
  MemoryStore memory;
  const gpuml_gloo_store_t store = {&memory, memory_set, memory_get};
  const int n_ranks = 3;
  const int64_t n = test::uniform_int(rng, 30, 200), d = 3;
  std::vector<double> X(static_cast<std::size_t>(n * d)), y(static_cast<std::size_t>(n));
  std::normal_distribution<double> normal;
  for (double& v : X) v = normal(rng);
  for (int64_t i = 0; i < n; ++i) y[i] = X[i * d] - X[i * d + 2] + 0.1 * normal(rng);
  std::vector<std::vector<double>> coef(n_ranks, std::vector<double>(d, 0.0));
  std::vector<std::string> failures(n_ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < n_ranks; ++r)
    threads.emplace_back([&, r] {
      gpuml_context_t ctx = nullptr;
      gpuml_estimator_t est = nullptr;
      int32_t rank = -1, size = -1;
      const int64_t begin = n * r / n_ranks, rows = n * (r + 1) / n_ranks - begin;
      gpuml_array_t X_r = {X.data() + begin * d, GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 2, {rows, d}, {d, 1}};
      gpuml_array_t y_r = {y.data() + begin, GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 1, {rows, 0}, {1, 0}};
      gpuml_array_t out = {coef[r].data(), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 1, {d, 0}, {1, 0}};
      if (gpuml_context_create("cpu", &ctx) != GPUML_OK ||
          gpuml_context_attach_gloo_store(ctx, n_ranks, r, "{\"prefix\": \"capi\", \"hostname\": \"127.0.0.1\"}", &store) !=
              GPUML_OK ||
          gpuml_context_rank(ctx, &rank, &size) != GPUML_OK || rank != r || size != n_ranks ||
          gpuml_estimator_create("linear_regression", "{}", &est) != GPUML_OK ||
          gpuml_estimator_fit(ctx, est, &X_r, &y_r, nullptr) != GPUML_OK ||
          gpuml_estimator_get_attribute(ctx, est, "coef_", &out) != GPUML_OK)
        failures[r] = gpuml_last_error();
      gpuml_estimator_free(est);
      gpuml_context_free(ctx);
    });
  for (std::thread& t : threads) t.join();
  Context single = Context::cpu();
  LinearRegression all;
  all.fit(single, host_view(X.data(), n, d), host_view(y.data(), n));
  for (int r = 0; r < n_ranks; ++r) {
    EXPECT_EQ(failures[r], "") << "rank " << r;
    EXPECT_EQ(coef[r], coef[0]) << "rank " << r << " holds other coefficients than rank 0";
    for (int64_t j = 0; j < d; ++j) EXPECT_NEAR(coef[r][j], all.coef().as<double>()[j], 1e-10) << j;  // sums regrouped
  }
}

// KMeans and LinearRegression over 2 ranks of Gloo (threads), each rank's context made by
// make_context and its communicator chosen by Comm::for_context (whose kind must be
// `expected_kind`), against the 1-process fit on make_context's device.
void expect_fits_over_ranks_equal_the_one_process_fit(const std::function<Context()>& make_context, const char* expected_kind) {
  GPUML_FRESH_RNG(rng);
  RendezvousDir dir;
  const int n_ranks = 2;
  const int64_t n = test::uniform_int(rng, 400, 1500), d = test::uniform_int(rng, 2, 6);
  const test::Blobs blobs = test::make_blobs(rng, n, d, 4, 1.0, 10.0);
  std::vector<double> y(static_cast<std::size_t>(n));
  std::normal_distribution<double> normal;
  for (int64_t i = 0; i < n; ++i) y[i] = blobs.X[i * d] - 2 * blobs.X[i * d + d - 1] + 0.1 * normal(rng);
  const int64_t first_share = test::uniform_int(rng, 1, n - 1);

  KMeansParams kmeans_params;
  kmeans_params.n_clusters = 4;
  kmeans_params.random_state = 5;
  Context single = make_context();
  KMeans kmeans_all(kmeans_params);
  kmeans_all.fit(single, host_view(blobs.X.data(), n, d));
  LinearRegression ols_all;
  ols_all.fit(single, host_view(blobs.X.data(), n, d), host_view(y.data(), n));

  std::vector<std::vector<double>> centers(n_ranks), coef(n_ranks);
  std::vector<double> inertia(n_ranks), intercept(n_ranks);
  on_ranks(n_ranks, dir.options(), [&](int r, Comm& comm) {
    Context ctx = make_context();
    ctx.attach_comm(Comm::for_context(ctx, std::shared_ptr<Comm>(&comm, [](Comm*) {})));  // the thread owns comm
    EXPECT_STREQ(ctx.comm().kind(), expected_kind) << "rank " << r;
    const int64_t begin = r == 0 ? 0 : first_share, rows = r == 0 ? first_share : n - first_share;
    KMeans kmeans(kmeans_params);
    kmeans.fit(ctx, host_view(blobs.X.data() + begin * d, rows, d));
    centers[r].assign(kmeans.cluster_centers().as<double>(), kmeans.cluster_centers().as<double>() + 4 * d);
    inertia[r] = kmeans.inertia();
    LinearRegression ols;
    ols.fit(ctx, host_view(blobs.X.data() + begin * d, rows, d), host_view(y.data() + begin, rows));
    coef[r].assign(ols.coef().as<double>(), ols.coef().as<double>() + d);
    intercept[r] = ols.intercept().as<double>()[0];
  });
  const double* want_centers = kmeans_all.cluster_centers().as<double>();
  for (int r = 0; r < n_ranks; ++r) {
    // The same algorithm and seed; only the sums' grouping differs (rtol 1e-9 of the largest coordinate).
    for (int64_t i = 0; i < 4 * d; ++i) EXPECT_NEAR(centers[r][i], want_centers[i], 1e-9 * 10) << "rank " << r << " " << i;
    EXPECT_NEAR(inertia[r], kmeans_all.inertia(), 1e-9 * kmeans_all.inertia()) << "rank " << r;
    for (int64_t j = 0; j < d; ++j) EXPECT_NEAR(coef[r][j], ols_all.coef().as<double>()[j], 1e-9) << "rank " << r << " " << j;
    EXPECT_NEAR(intercept[r], ols_all.intercept().as<double>()[0], 1e-9) << "rank " << r;
    EXPECT_EQ(centers[r], centers[0]) << "rank " << r << "'s centers differ from rank 0's";
    EXPECT_EQ(coef[r], coef[0]) << "rank " << r << "'s coefficients differ from rank 0's";
  }
}

TEST_F(GlooComm, FitsOverRanksEqualTheOneProcessFit) {
  expect_fits_over_ranks_equal_the_one_process_fit([] { return Context::cpu(); }, "gloo");
}

// Two ranks on one GPU cannot run NCCL: automatically, the Gloo communicator itself carries
// their CUDA contexts' collectives (through host memory).
TEST_F(GlooComm, CudaRanksSharingAGpuFitOverGlooThroughTheHost) {
  GPUML_CUDA_CONTEXT_OR_SKIP(probe);
  expect_fits_over_ranks_equal_the_one_process_fit([] { return Context::cuda(0); }, "gloo");
}

// Runs body(rank, host) on n_ranks threads, each with a Gloo communicator under `prefix`
// (one directory, a fresh prefix per group), and returns each rank's error (empty: none).
std::vector<std::string> errors_on_ranks(const RendezvousDir& dir, const std::string& prefix, int n_ranks,
                                         const std::function<void(int, std::shared_ptr<Comm>)>& body) {
  GlooOptions options = dir.options();
  options.prefix = prefix;
  std::vector<std::string> errors(static_cast<std::size_t>(n_ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < n_ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r, Comm::gloo(n_ranks, r, options));
      } catch (const Error& e) {
        errors[r] = std::string(error_code_name(e.code())) + ": " + e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  return errors;
}

TEST_F(GlooComm, ForContextChoosesTheSameTransportOnEveryRank) {
  RendezvousDir dir;
  // CPU contexts keep the host communicator; nccl on them is an error on every rank.
  std::vector<std::string> errors = errors_on_ranks(dir, "cpu", 2, [](int, std::shared_ptr<Comm> host) {
    Context ctx = Context::cpu();
    EXPECT_EQ(Comm::for_context(ctx, host).get(), host.get());
    EXPECT_EQ(Comm::for_context(ctx, host, GpuTransport::host).get(), host.get());
  });
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  errors = errors_on_ranks(dir, "cpu-nccl", 2, [](int, std::shared_ptr<Comm> host) {
    Context ctx = Context::cpu();
    Comm::for_context(ctx, host, GpuTransport::nccl);
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("invalid_argument: Comm::for_context: transport nccl needs CUDA"), std::string::npos) << e;
  EXPECT_THROW(Comm::for_context(Context::cpu(), nullptr), Error);
  if (cuda_device_count() == 0) return;

  // A CPU context on one rank and a CUDA context on the other: an error on both, no hang.
  errors = errors_on_ranks(dir, "mixed", 2, [](int r, std::shared_ptr<Comm> host) {
    Context ctx = r == 0 ? Context::cpu() : Context::cuda(0);
    Comm::for_context(ctx, host);
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("rank 0's context is CPU but rank 1's is CUDA"), std::string::npos) << e;
  // Two ranks on one GPU: host automatically, host when asked, and nccl an error on both.
  errors = errors_on_ranks(dir, "shared", 2, [](int, std::shared_ptr<Comm> host) {
    Context ctx = Context::cuda(0);
    EXPECT_EQ(Comm::for_context(ctx, host).get(), host.get());
    EXPECT_EQ(Comm::for_context(ctx, host, GpuTransport::host).get(), host.get());
    Comm::for_context(ctx, host, GpuTransport::nccl);
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("ranks 0 and 1 share one GPU"), std::string::npos) << e;
  // One rank on its own GPU: NCCL (bootstrapped over Gloo) where gpuml has it.
  errors = errors_on_ranks(dir, "own", 1, [](int, std::shared_ptr<Comm> host) {
    Context ctx = Context::cuda(0);
    std::shared_ptr<Comm> chosen = Comm::for_context(ctx, host);
    EXPECT_STREQ(chosen->kind(), built_with_nccl() ? "nccl" : "gloo");
    double value = 1.5;
    chosen->allreduce_sum(&value, 1);
    EXPECT_EQ(value, 1.5);
  });
  EXPECT_EQ(errors[0], "");
}

TEST_F(GlooComm, BadArgumentsAreNamedErrors) {
  RendezvousDir dir;
  const GlooOptions good = dir.options();
  auto expect_invalid = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one naming " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_invalid([&] { Comm::gloo(0, 0, good); }, "n_ranks");
  expect_invalid([&] { Comm::gloo(2, 2, good); }, "rank");
  expect_invalid([&] { Comm::gloo(2, -1, good); }, "rank");
  GlooOptions no_dir = good;
  no_dir.rendezvous_dir = "";
  expect_invalid([&] { Comm::gloo(1, 0, no_dir); }, "rendezvous_dir");
  no_dir.rendezvous_dir = dir.path() + "/absent";
  expect_invalid([&] { Comm::gloo(1, 0, no_dir); }, "not a directory");
  for (double timeout : {0.0, -1.0, std::nan(""), 1e300}) {
    GlooOptions bad = good;
    bad.timeout_seconds = timeout;
    expect_invalid([&] { Comm::gloo(1, 0, bad); }, "timeout_seconds");
  }
  // The C ABI's gpu_transport: one of three words, and nccl only for CUDA contexts.
  gpuml_context_t ctx = nullptr;
  ASSERT_EQ(gpuml_context_create("cpu", &ctx), GPUML_OK);
  const std::string params = "{\"rendezvous_dir\": \"" + dir.path() + "\", \"hostname\": \"127.0.0.1\", \"gpu_transport\": ";
  EXPECT_EQ(gpuml_context_attach_gloo(ctx, 1, 0, (params + "\"fast\"}").c_str()), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpuml_last_error()).find("gpu_transport must be"), std::string::npos) << gpuml_last_error();
  EXPECT_EQ(gpuml_context_attach_gloo(ctx, 1, 0, (params + "\"nccl\", \"prefix\": \"a\"}").c_str()), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpuml_last_error()).find("transport nccl needs CUDA"), std::string::npos) << gpuml_last_error();
  EXPECT_EQ(gpuml_context_attach_gloo(ctx, 1, 0, (params + "\"host\", \"prefix\": \"b\"}").c_str()), GPUML_OK) << gpuml_last_error();
  gpuml_context_free(ctx);
  // One rank is a communicator of its own.
  std::shared_ptr<Comm> one = Comm::gloo(1, 0, good);
  double v = 2.5;
  one->allreduce_sum(&v, 1);
  EXPECT_EQ(v, 2.5);
}

TEST_F(GlooComm, ARankThatNeverComesIsAnIoErrorAfterTheTimeout) {
  RendezvousDir dir;
  const auto start = std::chrono::steady_clock::now();
  try {
    Comm::gloo(2, 0, dir.options(1.0));
    ADD_FAILURE() << "the rendezvous of 2 ranks succeeded with one";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io) << e.what();
    EXPECT_NE(std::string(e.what()).find("rendezvous"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST_F(GlooComm, ARankThatLeavesIsAnIoErrorOnTheOthers) {
  RendezvousDir dir;
  std::string error;
  ErrorCode code = ErrorCode::internal;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      std::shared_ptr<Comm> comm = Comm::gloo(2, r, dir.options(20.0));
      comm->barrier();
      if (r == 1) return;  // leaves: its communicator closes its connections
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::vector<double> data(1000, 1.0);
      try {
        comm->allreduce_sum(data.data(), 1000);
      } catch (const Error& e) {
        error = e.what();
        code = e.code();
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(code, ErrorCode::io) << error;
  EXPECT_NE(error.find("allreduce_sum"), std::string::npos) << error;
}

}  // namespace
}  // namespace gpuml
