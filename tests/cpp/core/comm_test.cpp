// gpuml::Comm's local (1-rank) communicator, a context's communicator, and the distributed C ABI
// entry points in one process. The MPI communicator and distributed fits are tested under
// mpirun by tests/mpi/mpi_test.cpp (ctest -L mpi).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gpuml/core/comm.hpp"
#include "gpuml/gpuml.h"
#include "gpuml/gpuml.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

TEST(LocalComm, EveryCollectiveIsTheIdentity) {
  std::shared_ptr<Comm> comm = Comm::local();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  EXPECT_STREQ(comm->kind(), "local");

  std::vector<double> d = {1.5, -2.25, 3.0};
  comm->allreduce_sum(d.data(), 3);
  EXPECT_EQ(d, (std::vector<double>{1.5, -2.25, 3.0}));
  std::vector<float> f = {0.5f, 7.0f};
  comm->allreduce_sum(f.data(), 2);
  EXPECT_EQ(f, (std::vector<float>{0.5f, 7.0f}));
  int64_t l = int64_t{1} << 40;
  comm->allreduce_sum(&l, 1);
  EXPECT_EQ(l, int64_t{1} << 40);

  EXPECT_EQ(comm->allgather(int64_t{42}), std::vector<int64_t>{42});
  const int32_t send[3] = {4, 5, 6};
  int32_t recv[3] = {0, 0, 0};
  const int64_t counts[1] = {3};
  comm->allgatherv(send, 3, recv, counts, DType::int32);
  EXPECT_EQ(std::memcmp(send, recv, sizeof send), 0);

  std::vector<double> b = {9.0, 8.0};
  comm->broadcast(b.data(), 2, 0);
  EXPECT_EQ(b, (std::vector<double>{9.0, 8.0}));
  comm->barrier();
}

TEST(LocalComm, BadArgumentsAreNamedErrors) {
  std::shared_ptr<Comm> comm = Comm::local();
  double x = 1.0;
  try {
    comm->broadcast(&x, 1, 1);
    FAIL() << "root 1 of 1 rank accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("root 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(comm->allreduce_sum(&x, -1), Error);
  EXPECT_THROW(comm->allreduce_sum(static_cast<double*>(nullptr), 2), Error);
  const int64_t counts[1] = {2};
  EXPECT_THROW(comm->allgatherv(&x, 1, &x, counts, DType::float64), Error);  // count != counts[rank]
}

TEST(ContextComm, LocalUntilAttachedAndAttachedOnce) {
  Context ctx = Context::cpu(1);
  EXPECT_FALSE(ctx.has_comm());
  EXPECT_EQ(ctx.comm().size(), 1);
  EXPECT_THROW(ctx.attach_comm(nullptr), Error);
  Context copy = ctx;  // copies share the communicator
  ctx.attach_comm(Comm::local());
  EXPECT_TRUE(copy.has_comm());
  try {
    copy.attach_comm(Comm::local());
    FAIL() << "attached twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("already has a communicator"), std::string::npos) << e.what();
  }
}

TEST(ContextComm, MpiFactoriesWithoutMpiAreUnsupported) {
  if (built_with_mpi()) GTEST_SKIP() << "built with MPI: tested under mpirun (ctest -L mpi)";
  try {
    Comm::mpi_world();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("without MPI"), std::string::npos) << e.what();
  }
}

// A fit under a context holding the local communicator is the fit without one, bit for bit.
TEST(ContextComm, KMeansWithTheLocalCommunicatorIsUnchanged) {
  const int64_t n = 500, d = 3;
  std::vector<double> rows(n * d);
  uint64_t state = 12345;
  for (double& v : rows) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<double>(state >> 11) / 9007199254740992.0 * 10.0 + static_cast<double>((&v - rows.data()) % 4);
  }
  KMeansParams params;
  params.n_clusters = 5;
  params.random_state = 3;
  Context plain = Context::cpu();
  Context with_local = Context::cpu();
  with_local.attach_comm(Comm::local());
  KMeans a(params), b(params);
  a.fit(plain, host_view(rows.data(), n, d));
  b.fit(with_local, host_view(rows.data(), n, d));
  EXPECT_EQ(std::memcmp(a.cluster_centers().as<double>(), b.cluster_centers().as<double>(), static_cast<std::size_t>(params.n_clusters * d) * sizeof(double)), 0);
  EXPECT_EQ(a.inertia(), b.inertia());
  EXPECT_EQ(a.n_iter(), b.n_iter());
}

TEST(CapiComm, RankAndTheAttachChecks) {
  gpuml_context_t ctx = nullptr;
  ASSERT_EQ(gpuml_context_create("cpu", &ctx), GPUML_OK);
  int32_t rank = -1, n_ranks = -1;
  EXPECT_EQ(gpuml_context_rank(ctx, &rank, &n_ranks), GPUML_OK);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(n_ranks, 1);
  EXPECT_EQ(gpuml_context_rank(nullptr, &rank, &n_ranks), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuml_context_rank(ctx, &rank, nullptr), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpuml_last_error()).find("n_ranks"), std::string::npos) << gpuml_last_error();

  uint8_t id[128] = {};
  EXPECT_EQ(gpuml_nccl_unique_id(nullptr), GPUML_ERROR_INVALID_ARGUMENT);
  if (!built_with_nccl()) {
    EXPECT_EQ(gpuml_nccl_unique_id(id), GPUML_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(gpuml_last_error()).find("NCCL"), std::string::npos) << gpuml_last_error();
  }
  EXPECT_EQ(gpuml_context_attach_nccl(ctx, id, 2, 2), GPUML_ERROR_INVALID_ARGUMENT);  // rank out of range
  EXPECT_EQ(gpuml_context_attach_nccl(ctx, id, 0, 0), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuml_context_attach_nccl(ctx, nullptr, 2, 0), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuml_context_attach_nccl(ctx, id, 2, 0), GPUML_ERROR_INVALID_ARGUMENT);  // a CPU context
  EXPECT_NE(std::string(gpuml_last_error()).find("CUDA context"), std::string::npos) << gpuml_last_error();
  EXPECT_EQ(gpuml_context_attach_mpi(nullptr), GPUML_ERROR_INVALID_ARGUMENT);
  if (!built_with_mpi()) {
    EXPECT_EQ(gpuml_context_attach_mpi(ctx), GPUML_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(gpuml_last_error()).find("without MPI"), std::string::npos) << gpuml_last_error();
  }

  // Gloo: the parameters are checked before any rendezvous (the ranks of a job over Gloo:
  // comm_gloo_test.cpp and mpi.gloo.*).
  EXPECT_EQ(gpuml_context_attach_gloo(nullptr, 1, 0, "{\"rendezvous_dir\": \"/tmp\"}"), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuml_context_attach_gloo(ctx, 1, 0, nullptr), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpuml_last_error()).find("params_json"), std::string::npos) << gpuml_last_error();
  EXPECT_EQ(gpuml_context_attach_gloo(ctx, 1, 0, "{not json"), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuml_context_attach_gloo(ctx, 1, 0, "{\"rendezvous_dir\": 3}"), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpuml_last_error()).find("rendezvous_dir"), std::string::npos) << gpuml_last_error();
  EXPECT_EQ(gpuml_context_attach_gloo(ctx, 1, 0, "{\"rendezvous_dir\": \"/tmp\", \"timeout\": 5}"),
            GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpuml_last_error()).find("timeout"), std::string::npos) << gpuml_last_error();
  if (built_with_gloo()) {
    EXPECT_EQ(gpuml_context_attach_gloo(ctx, 2, 5, "{\"rendezvous_dir\": \"/tmp\"}"), GPUML_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(gpuml_last_error()).find("rank"), std::string::npos) << gpuml_last_error();
  } else {
    EXPECT_EQ(gpuml_context_attach_gloo(ctx, 1, 0, "{\"rendezvous_dir\": \"/tmp\"}"), GPUML_ERROR_UNSUPPORTED);
    EXPECT_NE(std::string(gpuml_last_error()).find("without Gloo"), std::string::npos) << gpuml_last_error();
  }
  gpuml_gloo_store_t store = {nullptr, nullptr, nullptr};
  EXPECT_EQ(gpuml_context_attach_gloo_store(ctx, 1, 0, "{}", nullptr), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpuml_last_error()).find("store"), std::string::npos) << gpuml_last_error();
  EXPECT_EQ(gpuml_context_attach_gloo_store(ctx, 1, 0, "{}", &store), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpuml_last_error()).find("store->set"), std::string::npos) << gpuml_last_error();
  EXPECT_EQ(gpuml_context_rank(ctx, &rank, &n_ranks), GPUML_OK);
  EXPECT_EQ(n_ranks, 1);  // nothing was attached

  // gpuml_context_allgather without a communicator: a copy; its arguments are checked.
  const int64_t send[3] = {7, -2, 1LL << 40};
  int64_t recv[3] = {};
  EXPECT_EQ(gpuml_context_allgather(ctx, send, 3, GPUML_INT64, recv), GPUML_OK) << gpuml_last_error();
  EXPECT_EQ(std::memcmp(send, recv, sizeof(send)), 0);
  EXPECT_EQ(gpuml_context_allgather(ctx, send, 3, 9, recv), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpuml_last_error()).find("dtype"), std::string::npos) << gpuml_last_error();
  EXPECT_EQ(gpuml_context_allgather(ctx, send, -1, GPUML_INT64, recv), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuml_context_allgather(ctx, nullptr, 3, GPUML_INT64, recv), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpuml_last_error()).find("send"), std::string::npos) << gpuml_last_error();
  EXPECT_EQ(gpuml_context_allgather(ctx, send, 3, GPUML_INT64, nullptr), GPUML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuml_context_allgather(ctx, nullptr, 0, GPUML_INT64, nullptr), GPUML_OK);
  EXPECT_EQ(gpuml_context_free(ctx), GPUML_OK);
}

// A one-rank gpuml_comm_t that counts its calls, and fails every call once `fail` is set.
struct CountingComm {
  int calls = 0;
  bool fail = false;
  static CountingComm& of(void* user) { return *static_cast<CountingComm*>(user); }
  static int32_t allreduce_sum(void* user, void*, int64_t, int32_t) { return of(user).call(); }
  static int32_t allgatherv(void* user, const void* send, int64_t count, void* recv, const int64_t*, int32_t dtype) {
    std::memcpy(recv, send, static_cast<std::size_t>(count) * dtype_size(static_cast<DType>(dtype)));  // one rank
    return of(user).call();
  }
  static int32_t broadcast(void* user, void*, int64_t, int32_t, int32_t) { return of(user).call(); }
  static int32_t barrier(void* user) { return of(user).call(); }
  int32_t call() {
    ++calls;
    return fail ? 7 : 0;
  }
  gpuml_comm_t handle() { return {this, 0, 1, allreduce_sum, allgatherv, broadcast, barrier}; }
};

TEST(CapiComm, ACallersCommunicatorCarriesTheCollectives) {
  GPUML_FRESH_RNG(rng);
  CountingComm counting;
  gpuml_comm_t comm = counting.handle();
  gpuml_context_t ctx = nullptr;
  ASSERT_EQ(gpuml_context_create("cpu", &ctx), GPUML_OK);
  auto expect_invalid = [&](const gpuml_comm_t* c, const char* params, const char* needle) {
    EXPECT_EQ(gpuml_context_attach_comm(ctx, c, params), GPUML_ERROR_INVALID_ARGUMENT) << needle;
    EXPECT_NE(std::string(gpuml_last_error()).find(needle), std::string::npos) << gpuml_last_error();
  };
  expect_invalid(nullptr, "{}", "comm");
  expect_invalid(&comm, nullptr, "params_json");
  expect_invalid(&comm, "{\"gpu_transport\": \"fast\"}", "gpu_transport must be");
  expect_invalid(&comm, "{\"ranks\": 2}", "ranks");
  expect_invalid(&comm, "{\"gpu_transport\": \"nccl\"}", "transport nccl needs CUDA");
  gpuml_comm_t bad = comm;
  bad.barrier = nullptr;
  expect_invalid(&bad, "{}", "must all be set");
  bad = comm;
  bad.n_ranks = 0;
  expect_invalid(&bad, "{}", "n_ranks must be >= 1");
  bad = comm;
  bad.rank = 1;
  expect_invalid(&bad, "{}", "rank must be in [0, n_ranks)");
  EXPECT_EQ(counting.calls, 1);  // only the nccl attempt reached the communicator (its facts' allgather)

  ASSERT_EQ(gpuml_context_attach_comm(ctx, &comm, "{}"), GPUML_OK) << gpuml_last_error();
  expect_invalid(&comm, "{}", "already has a communicator");
  int32_t rank = -1, n_ranks = -1;
  EXPECT_EQ(gpuml_context_rank(ctx, &rank, &n_ranks), GPUML_OK);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(n_ranks, 1);
  const int calls_before_gather = counting.calls;
  const double mine[2] = {0.5, -3.0};
  double gathered[2] = {};
  EXPECT_EQ(gpuml_context_allgather(ctx, mine, 2, GPUML_FLOAT64, gathered), GPUML_OK) << gpuml_last_error();
  EXPECT_EQ(gathered[0], 0.5);
  EXPECT_EQ(gathered[1], -3.0);
  EXPECT_EQ(counting.calls, calls_before_gather + 1);  // through the caller's allgatherv

  // A fit under it calls its collectives and equals the fit without a communicator, bit for bit.
  const int64_t n = test::uniform_int(rng, 20, 200), d = 3;
  std::vector<double> X(static_cast<std::size_t>(n * d)), y(static_cast<std::size_t>(n)), coef(d), local(d);
  std::normal_distribution<double> normal;
  for (double& v : X) v = normal(rng);
  for (int64_t i = 0; i < n; ++i) y[i] = 2 * X[i * d] - X[i * d + 1] + 0.1 * normal(rng);
  gpuml_array_t X_a = {X.data(), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 2, {n, d}, {d, 1}};
  gpuml_array_t y_a = {y.data(), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 1, {n, 0}, {1, 0}};
  gpuml_array_t coef_a = {coef.data(), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 1, {d, 0}, {1, 0}};
  gpuml_estimator_t est = nullptr;
  ASSERT_EQ(gpuml_estimator_create("linear_regression", "{}", &est), GPUML_OK);
  const int before = counting.calls;
  ASSERT_EQ(gpuml_estimator_fit(ctx, est, &X_a, &y_a, nullptr), GPUML_OK) << gpuml_last_error();
  EXPECT_GT(counting.calls, before);
  ASSERT_EQ(gpuml_estimator_get_attribute(ctx, est, "coef_", &coef_a), GPUML_OK);
  Context single = Context::cpu();
  LinearRegression all;
  all.fit(single, host_view(X.data(), n, d), host_view(y.data(), n));
  for (int64_t j = 0; j < d; ++j) EXPECT_EQ(coef[j], all.coef().as<double>()[j]) << j;

  // A failing collective: the fit returns GPUML_ERROR_IO naming it.
  counting.fail = true;
  EXPECT_EQ(gpuml_estimator_fit(ctx, est, &X_a, &y_a, nullptr), GPUML_ERROR_IO);
  EXPECT_NE(std::string(gpuml_last_error()).find("the caller's communicator failed in"), std::string::npos) << gpuml_last_error();
  gpuml_estimator_free(est);
  EXPECT_EQ(gpuml_context_free(ctx), GPUML_OK);
}

// NCCL with one rank on the GPU: the collectives are the identity through the device scratch,
// a KMeans fit under it gives the fit without it bit for bit, and the C ABI attaches it.
TEST(NcclCommGpu, OneRankCollectivesAndAFit) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  if (!built_with_nccl()) GTEST_SKIP() << "built without NCCL";
  GPUML_FRESH_RNG(rng);
  uint8_t id[128];
  Comm::nccl_unique_id(id);
  Context with_nccl = Context::cuda(0);
  with_nccl.attach_comm(Comm::nccl(with_nccl, id, 1, 0));
  Comm& comm = with_nccl.comm();
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_STREQ(comm.kind(), "nccl");
  std::vector<double> values(1000);
  for (double& v : values) v = test::uniform_real(rng, -1e6, 1e6);
  std::vector<double> reduced = values, gathered(values.size());
  comm.allreduce_sum(reduced.data(), static_cast<int64_t>(reduced.size()));
  EXPECT_EQ(reduced, values);  // one rank: the sum is the value, bit for bit
  const int64_t counts[1] = {static_cast<int64_t>(values.size())};
  comm.allgatherv(values.data(), counts[0], gathered.data(), counts, DType::float64);
  EXPECT_EQ(gathered, values);
  std::vector<int64_t> ints = {3, -7, 11};
  comm.allreduce_sum(ints.data(), 3);
  EXPECT_EQ(ints, (std::vector<int64_t>{3, -7, 11}));
  comm.broadcast(reduced.data(), static_cast<int64_t>(reduced.size()), 0);
  EXPECT_EQ(reduced, values);
  comm.barrier();

  const int64_t n = 3000, d = 6;
  std::vector<double> rows(static_cast<std::size_t>(n * d));
  for (double& v : rows) v = test::uniform_real(rng, -3.0, 3.0);
  KMeansParams params;
  params.n_clusters = 5;
  params.random_state = rng();
  Context plain = Context::cuda(0);
  KMeans a(params), b(params);
  a.fit(plain, host_view(rows.data(), n, d));
  b.fit(with_nccl, host_view(rows.data(), n, d));
  EXPECT_EQ(std::memcmp(a.cluster_centers().as<double>(), b.cluster_centers().as<double>(),
                        static_cast<std::size_t>(params.n_clusters * d) * sizeof(double)),
            0);

  gpuml_context_t ctx = nullptr;
  ASSERT_EQ(gpuml_context_create("cuda", &ctx), GPUML_OK);
  ASSERT_EQ(gpuml_nccl_unique_id(id), GPUML_OK) << gpuml_last_error();
  ASSERT_EQ(gpuml_context_attach_nccl(ctx, id, 1, 0), GPUML_OK) << gpuml_last_error();
  int32_t rank = -1, n_ranks = -1;
  EXPECT_EQ(gpuml_context_rank(ctx, &rank, &n_ranks), GPUML_OK);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(n_ranks, 1);
  EXPECT_EQ(gpuml_context_attach_nccl(ctx, id, 1, 0), GPUML_ERROR_INVALID_ARGUMENT);  // once per context
  EXPECT_EQ(gpuml_context_free(ctx), GPUML_OK);
}

}  // namespace
}  // namespace gpuml
