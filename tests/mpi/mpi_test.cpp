// Distributed training over MPI, run by ctest under `mpirun -np 2` (label mpi; any rank count
// works). `mpi_test comm` checks every Comm operation; `mpi_test kmeans` checks that KMeans fitted
// on every rank's own rows (an uneven split of fresh random rows) equals, on every rank, a
// 1-process fit on all rows with the same seed (k-means++, k-means||, "random", array init), and
// the collective error paths. `mpi_test linear`
// does the same for LinearRegression (every algorithm), Ridge, Lasso and ElasticNet, and
// `mpi_test decomposition` for PCA and TruncatedSVD, `mpi_test logistic` for LogisticRegression,
// `mpi_test pagerank` for PageRank over every rank's share of the edges, and `mpi_test forest`
// for RandomForestClassifier / RandomForestRegressor (random parameters; the forest must be the
// 1-process forest bit for bit). A second argument `cuda` runs any of the estimators' tests on
// CUDA contexts (the communicator stays MPI: ranks may share a GPU); `nccl` runs them on CUDA
// contexts with NCCL bootstrapped over MPI (one GPU per rank; skipped where a node has fewer);
// `gloo` runs them (and `comm`) with Gloo as the communicator on CPU contexts, MPI only starting
// the ranks and carrying the rendezvous directory that rank 0 makes (skipped without Gloo).
// A failed check prints the rank and the line and makes the program exit non-zero.
// MPI's C API only (Open MPI's and MPICH's mpi.h would pull in the deprecated C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpuml/core/comm.hpp"
#include "gpuml/gpuml.h"
#include "gpuml/gpuml.hpp"

namespace {

int g_rank = -1;
int g_failures = 0;
// The contexts the estimator tests fit on: "cpu", or with the argument `cuda` the rank's GPU (its
// node-local rank modulo the node's GPUs). The communicator stays MPI (host memory), so two ranks
// may share one GPU: that tests the CUDA backends' distributed paths on a one-GPU machine, which
// NCCL (one rank per GPU) cannot.
std::string g_device = "cpu";
bool g_nccl = false;  // the estimators' communicator: MPI, or NCCL over MPI (second argument `nccl`)
std::string g_gloo_dir;  // with the second argument `gloo`: Gloo, meeting in this directory

gpuml::Context test_context() { return gpuml::Context::from_string(g_device); }

// A Gloo communicator of MPI_COMM_WORLD's ranks; each call a fresh prefix (the same sequence on
// every rank, since every rank makes the same calls).
std::shared_ptr<gpuml::Comm> gloo_world(int size) {
  static int made = 0;
  gpuml::GlooOptions options;
  options.rendezvous_dir = g_gloo_dir;
  options.prefix = "comm-" + std::to_string(made++);
  options.hostname = "127.0.0.1";  // the ranks of a ctest run share the host
  options.timeout_seconds = 60;  // below ctest's 120 s: ranks that diverge fail by name
  return gpuml::Comm::gloo(size, g_rank, options);
}

// A context of this rank's device with the tests' communicator attached.
gpuml::Context distributed_context() {
  gpuml::Context ctx = test_context();
  if (!g_gloo_dir.empty()) {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ctx.attach_comm(gloo_world(size));
  } else {
    ctx.attach_comm(g_nccl ? gpuml::Comm::nccl_over_mpi(ctx) : gpuml::Comm::mpi_world());
  }
  return ctx;
}

#define CHECK(cond, ...)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed: ", g_rank, __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                            \
      std::fprintf(stderr, "\n");                                                   \
      ++g_failures;                                                                 \
    }                                                                               \
  } while (0)

// Runs f, which must throw gpuml::Error with `code` and a message containing `needle`.
template <typename F>
void expect_error(gpuml::ErrorCode code, const std::string& needle, F&& f, int line) {
  try {
    f();
    std::fprintf(stderr, "rank %d: line %d: expected an error containing \"%s\", got none\n", g_rank, line, needle.c_str());
    ++g_failures;
  } catch (const gpuml::Error& e) {
    const bool ok = e.code() == code && std::string(e.what()).find(needle) != std::string::npos;
    if (!ok) {
      std::fprintf(stderr, "rank %d: line %d: expected code %d with \"%s\", got code %d: %s\n", g_rank, line,
                   static_cast<int>(code), needle.c_str(), static_cast<int>(e.code()), e.what());
      ++g_failures;
    }
  }
}

// ---- Comm -------------------------------------------------------------------------------

void test_comm(gpuml::Comm& comm) {
  const int rank = comm.rank(), size = comm.size();
  CHECK(size >= 2, "this test needs at least 2 ranks, got %d", size);

  // allreduce_sum: rank r contributes (r + 1) * (i + 0.5) to entry i; exact in every dtype.
  const int64_t count = 1000;
  const double ranks_sum = size * (size + 1) / 2.0;  // sum over r of (r + 1)
  std::vector<double> d(count);
  std::vector<float> f(count);
  std::vector<int64_t> l(count);
  for (int64_t i = 0; i < count; ++i) {
    d[i] = (rank + 1) * (i + 0.5);
    f[i] = static_cast<float>((rank + 1) * (i % 64 + 0.5));
    l[i] = (rank + 1) * (i - 500) * (int64_t{1} << 33);  // beyond int32
  }
  comm.allreduce_sum(d.data(), count);
  comm.allreduce_sum(f.data(), count);
  comm.allreduce_sum(l.data(), count);
  for (int64_t i = 0; i < count; ++i) {
    CHECK(d[i] == ranks_sum * (i + 0.5), "allreduce double [%lld] = %g", static_cast<long long>(i), d[i]);
    CHECK(f[i] == static_cast<float>(ranks_sum * (i % 64 + 0.5)), "allreduce float [%lld] = %g", static_cast<long long>(i), f[i]);
    CHECK(l[i] == static_cast<int64_t>(ranks_sum) * (i - 500) * (int64_t{1} << 33), "allreduce int64 [%lld]", static_cast<long long>(i));
  }
  // A sum that is not exact still gives every rank the same bits.
  double noisy = 0.1 * (rank + 1) + 1e-17 * rank;
  comm.allreduce_sum(&noisy, 1);
  const std::vector<double> seen = comm.allgather(noisy);
  for (int r = 0; r < size; ++r) CHECK(std::memcmp(&seen[r], &noisy, sizeof noisy) == 0, "rank %d's sum differs", r);

  // allgather: 3 values per rank.
  const int64_t mine[3] = {rank, 10 * rank, -rank};
  std::vector<int64_t> gathered(3 * size);
  comm.allgather(mine, 3, gathered.data(), gpuml::DType::int64);
  for (int r = 0; r < size; ++r)
    CHECK(gathered[3 * r] == r && gathered[3 * r + 1] == 10 * r && gathered[3 * r + 2] == -r, "allgather from rank %d", r);

  // allgatherv: rank r sends 2r + 1 floats of value r (rank 0: 1, rank 1: 3, ...), and zero counts work.
  std::vector<int64_t> counts(size);
  int64_t total = 0;
  for (int r = 0; r < size; ++r) total += counts[r] = 2 * r + 1;
  std::vector<float> send(counts[rank], static_cast<float>(rank)), recv(total, -1.0f);
  comm.allgatherv(send.data(), counts[rank], recv.data(), counts.data(), gpuml::DType::float32);
  int64_t at = 0;
  for (int r = 0; r < size; ++r)
    for (int64_t i = 0; i < counts[r]; ++i, ++at) CHECK(recv[at] == static_cast<float>(r), "allgatherv [%lld]", static_cast<long long>(at));
  std::vector<int64_t> zero_counts(size, 0);
  zero_counts[size - 1] = 2;
  const int32_t two[2] = {7, 8};
  int32_t got[2] = {0, 0};
  comm.allgatherv(two, rank == size - 1 ? 2 : 0, got, zero_counts.data(), gpuml::DType::int32);
  CHECK(got[0] == 7 && got[1] == 8, "allgatherv with empty ranks: %d %d", got[0], got[1]);

  // broadcast from the last rank.
  std::vector<double> b(5, rank == size - 1 ? 3.25 : 0.0);
  comm.broadcast(b.data(), 5, size - 1);
  for (double v : b) CHECK(v == 3.25, "broadcast got %g", v);
  comm.barrier();

  // Bad arguments are named errors, raised before any message is sent.
  expect_error(gpuml::ErrorCode::invalid_argument, "root", [&] { comm.broadcast(b.data(), 5, size); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, "count", [&] { comm.allreduce_sum(d.data(), -1); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, "differs from counts",
               [&] { comm.allgatherv(send.data(), counts[rank] + 1, recv.data(), counts.data(), gpuml::DType::float32); },
               __LINE__);
}

// ---- KMeans -----------------------------------------------------------------------------

// Fresh blobs: k centers in [-10, 10]^d, unit-variance rows around them, from `seed`.
std::vector<double> make_rows(uint64_t seed, int64_t n, int64_t d, int64_t k) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> center(-10.0, 10.0);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> centers(k * d), rows(n * d);
  for (double& c : centers) c = center(gen);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = static_cast<int64_t>(gen() % static_cast<uint64_t>(k));
    for (int64_t j = 0; j < d; ++j) rows[i * d + j] = centers[c * d + j] + noise(gen);
  }
  return rows;
}

// Rank r holds rows [begin[r], begin[r + 1]): shares growing with the rank (uneven).
std::vector<int64_t> split(int64_t n, int size) {
  std::vector<int64_t> begin(size + 1, 0);
  const int64_t parts = size * (size + 1) / 2;
  for (int r = 0; r < size; ++r) begin[r + 1] = begin[r] + n * (r + 1) / parts;
  begin[size] = n;
  return begin;
}

struct Model {
  std::vector<double> centers;
  double inertia = 0;
  int64_t n_iter = 0;
};

template <typename T>
Model fit_kmeans(gpuml::Context& ctx, const gpuml::KMeansParams& params, const std::vector<T>& rows, int64_t n, int64_t d,
                 const std::vector<T>* weights, std::vector<int32_t>* labels = nullptr) {
  gpuml::KMeans km(params);
  const gpuml::ArrayView w = weights ? gpuml::host_view(weights->data(), n) : gpuml::ArrayView{};
  km.fit(ctx, gpuml::host_view(rows.data(), n, d), weights ? &w : nullptr);
  Model m;
  const gpuml::HostArray& c = km.cluster_centers();
  m.centers.assign(c.as<const T>(), c.as<const T>() + params.n_clusters * d);
  m.inertia = km.inertia();
  m.n_iter = km.n_iter();
  if (labels) labels->assign(km.labels().as<const int32_t>(), km.labels().as<const int32_t>() + n);
  return m;
}

// inertia_atol: the inertias' absolute tolerance beside rtol (the GPU's |x|² + |c|² - 2 x.c
// rounds each row's distance by ~eps |x|², which is all an inertia of exactly 0 shows).
void expect_same_model(const Model& got, const Model& want, double rtol, const char* what, double inertia_atol = 0) {
  CHECK(got.n_iter == want.n_iter, "%s: n_iter %lld, 1-process fit %lld", what, static_cast<long long>(got.n_iter),
        static_cast<long long>(want.n_iter));
  double scale = 0;
  for (double v : want.centers) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < want.centers.size(); ++i)
    CHECK(std::abs(got.centers[i] - want.centers[i]) <= rtol * scale,  // rtol relative to the largest coordinate
          "%s: center value %zu is %.17g, 1-process fit %.17g (rtol %g)", what, i, got.centers[i], want.centers[i], rtol);
  CHECK(std::abs(got.inertia - want.inertia) <= rtol * want.inertia + inertia_atol,
        "%s: inertia %.17g, 1-process fit %.17g (rtol %g, atol %g)", what, got.inertia, want.inertia, rtol, inertia_atol);
}

// Every rank must hold bit-identical centers, inertia and n_iter.
void expect_same_on_every_rank(gpuml::Comm& comm, const Model& m, const char* what) {
  std::vector<double> mine = m.centers;
  mine.push_back(m.inertia);
  mine.push_back(static_cast<double>(m.n_iter));
  std::vector<double> all(mine.size() * comm.size());
  comm.allgather(mine.data(), static_cast<int64_t>(mine.size()), all.data(), gpuml::DType::float64);
  for (int r = 0; r < comm.size(); ++r)
    CHECK(std::memcmp(all.data() + r * mine.size(), mine.data(), mine.size() * sizeof(double)) == 0,
          "%s: rank %d's model differs from this rank's", what, r);
}

template <typename T>
void test_kmeans_case(gpuml::Context& dist, gpuml::Comm& comm, uint64_t data_seed, const gpuml::KMeansParams& params,
                      bool weighted, double rtol, const char* what) {
  const int64_t n = 2003, d = 5;
  const std::vector<double> all64 = make_rows(data_seed, n, d, 6);
  const std::vector<T> all(all64.begin(), all64.end());
  std::vector<T> weights_all(n);
  std::mt19937_64 wgen(data_seed + 1);
  for (T& w : weights_all) w = static_cast<T>(0.5 + std::uniform_real_distribution<double>(0, 1)(wgen));
  const std::vector<int64_t> begin = split(n, comm.size());
  const int64_t b = begin[comm.rank()], e = begin[comm.rank() + 1];
  const std::vector<T> local(all.begin() + b * d, all.begin() + e * d), local_w(weights_all.begin() + b, weights_all.begin() + e);

  std::vector<int32_t> local_labels, all_labels;
  const Model distributed = fit_kmeans<T>(dist, params, local, e - b, d, weighted ? &local_w : nullptr, &local_labels);
  gpuml::Context single = test_context();  // no communicator: one process, all rows
  const Model reference = fit_kmeans<T>(single, params, all, n, d, weighted ? &weights_all : nullptr, &all_labels);
  double squares = 0;  // |X|_F², in the centered coordinates the fit uses (a bound: the raw ones)
  for (T v : all) squares += static_cast<double>(v) * static_cast<double>(v);
  expect_same_model(distributed, reference, rtol, what, 8 * std::numeric_limits<T>::epsilon() * squares);
  expect_same_on_every_rank(comm, distributed, what);
  int64_t differ = 0;
  for (int64_t i = 0; i < e - b; ++i) differ += local_labels[i] != all_labels[b + i];
  CHECK(differ == 0, "%s: %lld of this rank's labels differ from the 1-process fit's", what, static_cast<long long>(differ));
}

void check_c_abi_fit(gpuml_context_t ctx, gpuml::Comm& comm, uint64_t data_seed);

// The C ABI: attach, rank, attaching twice, a fit through the generic estimator handle.
void test_c_abi(gpuml::Comm& comm, uint64_t data_seed) {
  gpuml_context_t ctx = nullptr;
  CHECK(gpuml_context_create("cpu", &ctx) == GPUML_OK, "context_create: %s", gpuml_last_error());
  int32_t rank = -1, n_ranks = -1;
  CHECK(gpuml_context_rank(ctx, &rank, &n_ranks) == GPUML_OK && rank == 0 && n_ranks == 1,
        "before attaching: rank %d of %d", rank, n_ranks);
  CHECK(gpuml_context_attach_mpi(ctx) == GPUML_OK, "attach_mpi: %s", gpuml_last_error());
  CHECK(gpuml_context_rank(ctx, &rank, &n_ranks) == GPUML_OK && rank == comm.rank() && n_ranks == comm.size(),
        "after attaching: rank %d of %d", rank, n_ranks);
  CHECK(gpuml_context_attach_mpi(ctx) == GPUML_ERROR_INVALID_ARGUMENT &&
            std::strstr(gpuml_last_error(), "already has a communicator") != nullptr,
        "attaching twice: %s", gpuml_last_error());
  CHECK(gpuml_context_rank(ctx, nullptr, &n_ranks) == GPUML_ERROR_INVALID_ARGUMENT, "rank NULL");
  // One rank attaching its attached context again while the others attach fresh ones: every rank
  // returns an error (before, the others waited in MPI_Comm_dup), and the next attach works.
  {
    const bool last = comm.rank() == comm.size() - 1;
    gpuml_context_t fresh = nullptr, again = nullptr;
    CHECK(gpuml_context_create("cpu", &fresh) == GPUML_OK && gpuml_context_create("cpu", &again) == GPUML_OK, "%s",
          gpuml_last_error());
    CHECK(gpuml_context_attach_mpi(last ? ctx : fresh) == GPUML_ERROR_INVALID_ARGUMENT &&
              std::strstr(gpuml_last_error(), last ? "already has a communicator" : "failed on rank") != nullptr,
          "attaching with one rank failing: %s", gpuml_last_error());
    CHECK(gpuml_context_attach_mpi(again) == GPUML_OK, "attaching after a failed attach: %s", gpuml_last_error());
    CHECK(gpuml_context_rank(again, &rank, &n_ranks) == GPUML_OK && rank == comm.rank() && n_ranks == comm.size(),
          "after the failed attach: rank %d of %d", rank, n_ranks);
    gpuml_context_free(fresh);
    gpuml_context_free(again);
  }
  check_c_abi_fit(ctx, comm, data_seed);
  gpuml_context_free(ctx);
}

// The C ABI over Gloo: attach (JSON parameters), rank, attaching twice, bad parameters, a fit.
void test_c_abi_gloo(gpuml::Comm& comm, uint64_t data_seed) {
  gpuml_context_t ctx = nullptr;
  CHECK(gpuml_context_create("cpu", &ctx) == GPUML_OK, "context_create: %s", gpuml_last_error());
  const std::string params = "{\"rendezvous_dir\": \"" + g_gloo_dir + "\", \"prefix\": \"capi\", \"hostname\": \"127.0.0.1\"}";
  CHECK(gpuml_context_attach_gloo(ctx, comm.size(), comm.rank(), "{\"rendezvous_dir\": \"/tmp\", \"port\": 1}") ==
                GPUML_ERROR_INVALID_ARGUMENT &&
            std::strstr(gpuml_last_error(), "port") != nullptr,
        "an unknown parameter: %s", gpuml_last_error());
  CHECK(gpuml_context_attach_gloo(ctx, comm.size(), comm.size(), params.c_str()) == GPUML_ERROR_INVALID_ARGUMENT &&
            std::strstr(gpuml_last_error(), "rank") != nullptr,
        "a rank out of range: %s", gpuml_last_error());
  CHECK(gpuml_context_attach_gloo(ctx, comm.size(), comm.rank(), params.c_str()) == GPUML_OK, "attach_gloo: %s",
        gpuml_last_error());
  int32_t rank = -1, n_ranks = -1;
  CHECK(gpuml_context_rank(ctx, &rank, &n_ranks) == GPUML_OK && rank == comm.rank() && n_ranks == comm.size(),
        "after attaching: rank %d of %d", rank, n_ranks);
  CHECK(gpuml_context_attach_gloo(ctx, comm.size(), comm.rank(), params.c_str()) == GPUML_ERROR_INVALID_ARGUMENT &&
            std::strstr(gpuml_last_error(), "already has a communicator") != nullptr,
        "attaching twice: %s", gpuml_last_error());
  check_c_abi_fit(ctx, comm, data_seed);
  gpuml_context_free(ctx);
}

// A KMeans fit through the generic estimator handle on `ctx` (attached) equals the 1-process fit.
void check_c_abi_fit(gpuml_context_t ctx, gpuml::Comm& comm, uint64_t data_seed) {
  const int64_t n = 1501, d = 3, k = 4;
  const std::vector<double> all = make_rows(data_seed + 2, n, d, k);
  const std::vector<int64_t> begin = split(n, comm.size());
  const int64_t b = begin[comm.rank()], e = begin[comm.rank() + 1];
  gpuml_estimator_t est = nullptr;
  CHECK(gpuml_estimator_create("kmeans", "{\"n_clusters\": 4, \"random_state\": 11}", &est) == GPUML_OK, "create: %s",
        gpuml_last_error());
  gpuml_array_t X = {const_cast<double*>(all.data() + b * d), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 2, {e - b, d}, {d, 1}};
  CHECK(gpuml_estimator_fit(ctx, est, &X, nullptr, nullptr) == GPUML_OK, "fit: %s", gpuml_last_error());
  Model got;
  got.centers.resize(k * d);
  gpuml_array_t centers = {got.centers.data(), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 2, {k, d}, {d, 1}};
  gpuml_array_t inertia = {&got.inertia, GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 0, {0, 0}, {0, 0}};
  gpuml_array_t n_iter = {&got.n_iter, GPUML_INT64, GPUML_DEVICE_CPU, 0, 0, {0, 0}, {0, 0}};
  CHECK(gpuml_estimator_get_attribute(ctx, est, "cluster_centers_", &centers) == GPUML_OK, "%s", gpuml_last_error());
  CHECK(gpuml_estimator_get_attribute(ctx, est, "inertia_", &inertia) == GPUML_OK, "%s", gpuml_last_error());
  CHECK(gpuml_estimator_get_attribute(ctx, est, "n_iter_", &n_iter) == GPUML_OK, "%s", gpuml_last_error());
  gpuml::KMeansParams params;
  params.n_clusters = k;
  params.random_state = 11;
  gpuml::Context single = gpuml::Context::cpu();
  expect_same_model(got, fit_kmeans<double>(single, params, all, n, d, nullptr), 1e-9, "C ABI fit");
  gpuml_estimator_free(est);
}

void test_kmeans(gpuml::Comm& comm, uint64_t data_seed) {
  gpuml::Context ctx = distributed_context();
  expect_error(gpuml::ErrorCode::invalid_argument, "already has a communicator",
               [&] { ctx.attach_comm(gpuml::Comm::local()); }, __LINE__);

  gpuml::KMeansParams params;
  params.n_clusters = 6;
  params.random_state = 42;
  // Tolerances: float64 sums differ only in their order (~1e-15 relative); 1e-9 leaves room.
  // float32: the centers are rounded to float32 (~6e-8); 1e-5 leaves room.
  test_kmeans_case<double>(ctx, comm, data_seed, params, false, 1e-9, "k-means++ float64");
  params.random_state = 7;
  test_kmeans_case<float>(ctx, comm, data_seed + 10, params, true, 1e-5, "k-means++ float32 weighted");
  params.init = "random";
  params.n_init = 3;
  test_kmeans_case<double>(ctx, comm, data_seed + 20, params, true, 1e-9, "random init, 3 runs, weighted");
  // k-means||: each row's draw is keyed by its global index and the chosen rows are gathered in
  // rank order, so the split over ranks changes no choice.
  params.init = "k-means||";
  params.n_init = 0;
  params.random_state = 5;
  test_kmeans_case<double>(ctx, comm, data_seed + 21, params, false, 1e-9, "k-means|| float64");
  test_kmeans_case<float>(ctx, comm, data_seed + 22, params, true, 1e-5, "k-means|| float32 weighted");
  // k == n: the rounds leave some rows out, and k-means++ steps over all ranks choose the rest.
  params.n_clusters = 2003;
  // Unweighted: each center is exactly its row (x * 1 / 1), so the inertia is 0 in both fits
  // (on the CPU; the GPU's expanded distances leave rounding, within the atol above).
  test_kmeans_case<double>(ctx, comm, data_seed + 23, params, false, 1e-9, "k-means|| with k = n");
  params.n_clusters = 6;
  // A center far from every row: its cluster is empty after the first assignment and takes the
  // farthest row over all ranks.
  params.init = "array";
  params.n_init = 0;
  params.init_array.assign(6 * 5, 0.0);
  for (int64_t j = 0; j < 5; ++j) {
    params.init_array[0 * 5 + j] = 1e3;
    params.init_array[1 * 5 + j] = -1e3;
    params.init_array[2 * 5 + j] = j;
    params.init_array[3 * 5 + j] = -j;
    params.init_array[4 * 5 + j] = 2.0 * (j % 2);
  }
  test_kmeans_case<double>(ctx, comm, data_seed + 30, params, false, 1e-9, "empty clusters relocated");

  // No random_state: rank 0's context seed for all ranks (no 1-process reference: its seed is unknown).
  gpuml::KMeansParams unseeded;
  unseeded.n_clusters = 5;
  const int64_t n = 300 + comm.rank() * 7, d = 4;
  std::vector<double> rows = make_rows(data_seed + 40 + comm.rank(), n, d, 5);
  expect_same_on_every_rank(comm, fit_kmeans<double>(ctx, unseeded, rows, n, d, nullptr), "unseeded fit");

  // Bad input on one rank: every rank returns an error (none waits forever), and the next fit works.
  const bool last = comm.rank() == comm.size() - 1;
  std::vector<double> wide(static_cast<std::size_t>(10 * 5), 1.0);
  for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<double>(i % 7);
  gpuml::KMeansParams small;
  small.n_clusters = 2;
  small.random_state = 1;
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on n_features",
               [&] { gpuml::KMeans(small).fit(ctx, gpuml::host_view(wide.data(), 10, last ? 4 : 5)); }, __LINE__);
  gpuml::KMeansParams other = small;
  other.n_clusters = last ? 3 : 2;
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on n_clusters",
               [&] { gpuml::KMeans(other).fit(ctx, gpuml::host_view(wide.data(), 10, 5)); }, __LINE__);
  std::vector<double> nan_rows = wide;
  if (last) nan_rows[7] = std::nan("");
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "NaN" : "failed on rank",
               [&] { gpuml::KMeans(small).fit(ctx, gpuml::host_view(nan_rows.data(), 10, 5)); }, __LINE__);
  std::vector<double> weights(10, 1.0);
  if (comm.rank() == 0) weights[3] = -1.0;
  const gpuml::ArrayView w = gpuml::host_view(weights.data(), 10);
  expect_error(gpuml::ErrorCode::invalid_argument, comm.rank() == 0 ? "non-negative" : "failed on rank 0",
               [&] { gpuml::KMeans(small).fit(ctx, gpuml::host_view(wide.data(), 10, 5), &w); }, __LINE__);
  gpuml::KMeansParams many = small;
  many.n_clusters = comm.size() + 1;  // one row per rank: too few rows over all ranks
  expect_error(gpuml::ErrorCode::invalid_argument, "should be >= n_clusters",
               [&] { gpuml::KMeans(many).fit(ctx, gpuml::host_view(wide.data(), 1, 5)); }, __LINE__);
  many.n_clusters = comm.size();  // exactly enough rows over all ranks, fewer than k on each
  gpuml::KMeans ok(many);
  ok.fit(ctx, gpuml::host_view(wide.data() + 5 * comm.rank(), 1, 5));
  CHECK(ok.inertia() == 0.0, "one row per cluster: inertia %g", ok.inertia());
}


// ---- Linear models and decompositions ---------------------------------------------------

// Fresh rows: X (n x d), column j = offset + (1 + j / 2) * N(0, 1) (distinct spreads, so PCA's
// components are well separated), y (n x t) = X b_k + 0.1 N(0, 1) + 3 k, weights in [0.5, 1.5].
template <typename T>
struct Data {
  int64_t n = 0, d = 0, t = 0;
  std::vector<T> X, y, w;
  gpuml::ArrayView Xv(int64_t b, int64_t e) const { return gpuml::host_view(X.data() + b * d, e - b, d); }
  gpuml::ArrayView yv(int64_t b, int64_t e) const {
    return t == 1 ? gpuml::host_view(y.data() + b, e - b) : gpuml::host_view(y.data() + b * t, e - b, t);
  }
  gpuml::ArrayView wv(int64_t b, int64_t e) const { return gpuml::host_view(w.data() + b, e - b); }
};

template <typename T>
Data<T> make_data(uint64_t seed, int64_t n, int64_t d, int64_t t, double offset) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  Data<T> data;
  data.n = n, data.d = d, data.t = t;
  std::vector<double> b(d * t);
  for (double& v : b) v = normal(gen);
  data.X.resize(n * d);
  data.y.resize(n * t);
  data.w.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) data.X[i * d + j] = static_cast<T>(offset + (1.0 + 0.5 * j) * normal(gen));
    for (int64_t k = 0; k < t; ++k) {
      double v = 3.0 * k + 0.1 * normal(gen);
      for (int64_t j = 0; j < d; ++j) v += static_cast<double>(data.X[i * d + j]) * b[k * d + j];
      data.y[i * t + k] = static_cast<T>(v);
    }
    data.w[i] = static_cast<T>(uniform(gen));
  }
  return data;
}

// Rank 0 holds `few` rows, the other ranks the rest in shares growing with the rank.
std::vector<int64_t> split_few(int64_t n, int size, int64_t few) {
  std::vector<int64_t> begin(size + 1, 0);
  begin[1] = few;
  const int64_t rest = n - few, parts = size * (size - 1) / 2;
  for (int r = 1; r < size; ++r) begin[r + 1] = begin[r] + rest * r / std::max<int64_t>(parts, 1);
  begin[size] = n;
  return begin;
}

std::vector<double> values_of(const gpuml::HostArray& a) {
  if (a.dtype() == gpuml::DType::float32)
    return std::vector<double>(a.as<const float>(), a.as<const float>() + a.bytes() / sizeof(float));
  if (a.dtype() == gpuml::DType::int64)
    return std::vector<double>(a.as<const int64_t>(), a.as<const int64_t>() + a.bytes() / sizeof(int64_t));
  return std::vector<double>(a.as<const double>(), a.as<const double>() + a.bytes() / sizeof(double));
}

// A fitted model as one vector of numbers, in a fixed order.
using Fit = std::function<std::vector<double>(gpuml::Context&, const gpuml::ArrayView& X, const gpuml::ArrayView& y,
                                              const gpuml::ArrayView* w)>;

// Every value within rtol of the 1-process fit's, relative to the largest of its values.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol, const std::string& what) {
  CHECK(got.size() == want.size(), "%s: %zu values, 1-process fit %zu", what.c_str(), got.size(), want.size());
  if (got.size() != want.size()) return;
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    CHECK(std::abs(got[i] - want[i]) <= rtol * scale, "%s: value %zu is %.17g, 1-process fit %.17g (rtol %g of %g)",
          what.c_str(), i, got[i], want[i], rtol, scale);
    worst = std::max(worst, std::abs(got[i] - want[i]) / scale);
  }
  if (g_rank == 0 && std::getenv("GPUML_TEST_VERBOSE"))
    std::printf("%s: largest difference %.2g of the largest value (rtol %g)\n", what.c_str(), worst, rtol);
}

// Every rank must hold the same bits.
void expect_same_bits(gpuml::Comm& comm, const std::vector<double>& mine, const std::string& what) {
  std::vector<double> all(mine.size() * comm.size());
  comm.allgather(mine.data(), static_cast<int64_t>(mine.size()), all.data(), gpuml::DType::float64);
  for (int r = 0; r < comm.size(); ++r)
    CHECK(std::memcmp(all.data() + r * mine.size(), mine.data(), mine.size() * sizeof(double)) == 0,
          "%s: rank %d's model differs from this rank's", what.c_str(), r);
}

// The fit of every rank's rows [begin[r], begin[r + 1]) under `dist` against the 1-process fit
// of all rows, on every rank.
template <typename T>
void expect_distributed_fit(gpuml::Comm& comm, gpuml::Context& dist, const Data<T>& data, const std::vector<int64_t>& begin,
                            bool weighted, const Fit& fit, double rtol, const std::string& what) {
  const int64_t b = begin[comm.rank()], e = begin[comm.rank() + 1];
  const gpuml::ArrayView w_local = data.wv(b, e), w_all = data.wv(0, data.n);
  try {
    const std::vector<double> got = fit(dist, data.Xv(b, e), data.yv(b, e), weighted ? &w_local : nullptr);
    gpuml::Context single = test_context();  // no communicator: one process, all rows
    const std::vector<double> want = fit(single, data.Xv(0, data.n), data.yv(0, data.n), weighted ? &w_all : nullptr);
    expect_close(got, want, rtol, what);
    expect_same_bits(comm, got, what);
  } catch (const std::exception& e) {
    CHECK(false, "%s: %s", what.c_str(), e.what());
    throw;  // the ranks may now disagree on the collectives that follow: stop
  }
}

template <typename Estimator, typename Params>
Fit linear_fit(Params params, bool with_lasso_extras = false) {
  return [params, with_lasso_extras](gpuml::Context& ctx, const gpuml::ArrayView& X, const gpuml::ArrayView& y,
                                     const gpuml::ArrayView* w) {
    Estimator est(params);
    est.fit(ctx, X, y, w);
    std::vector<double> out = values_of(est.coef());
    for (double v : values_of(est.intercept())) out.push_back(v);
    if constexpr (std::is_same_v<Estimator, gpuml::ElasticNet> || std::is_same_v<Estimator, gpuml::Lasso>) {
      if (with_lasso_extras) out.push_back(static_cast<double>(est.n_iter()));
    }
    return out;
  };
}

void test_linear(gpuml::Comm& comm, uint64_t seed) {
  gpuml::Context ctx = distributed_context();
  const int size = comm.size();
  // Tolerances, relative to the largest value of the 1-process fit: float64 results differ only
  // in the order of their sums (~1e-15 relative, times the condition number of XᵀX, ~10 here),
  // and the intercept ȳ − x̄·coef carries |x̄| (up to 1e3 here) times the coefficients' rounding:
  // ~6e-12 seen at worst, 1e-9 leaves room. float32: the coefficients are rounded to float32
  // and XᵀX is formed from float32 rows (~1e-7 relative, times the same factors; ~1e-5 seen): 1e-4.
  const double rtol64 = 1e-9, rtol32 = 1e-4;

  // LinearRegression, every algorithm; a large mean (1e3) tests the merge of centered sums.
  for (const char* algorithm : {"auto", "eig", "qr", "svd"}) {
    gpuml::LinearRegressionParams p;
    p.algorithm = algorithm;
    const Data<double> one = make_data<double>(seed + 1, 1001, 7, 1, 1e3);
    expect_distributed_fit(comm, ctx, one, split(one.n, size), true, linear_fit<gpuml::LinearRegression>(p), rtol64,
                           std::string("LinearRegression ") + algorithm + " float64 weighted");
    // Rank 0 with 4 rows, fewer than the 7 features (TSQR takes its rows as they are).
    const Data<double> three = make_data<double>(seed + 2, 1203, 7, 3, -20.0);
    expect_distributed_fit(comm, ctx, three, split_few(three.n, size, 4), false, linear_fit<gpuml::LinearRegression>(p),
                           rtol64, std::string("LinearRegression ") + algorithm + " 3 targets, 4 rows on rank 0");
    const Data<float> f32 = make_data<float>(seed + 3, 1500, 6, 2, 10.0);
    expect_distributed_fit(comm, ctx, f32, split(f32.n, size), true, linear_fit<gpuml::LinearRegression>(p), rtol32,
                           std::string("LinearRegression ") + algorithm + " float32 weighted");
  }
  {
    gpuml::LinearRegressionParams p;
    p.fit_intercept = false;
    p.algorithm = "eig";
    const Data<double> data = make_data<double>(seed + 4, 800, 5, 2, 1.0);
    expect_distributed_fit(comm, ctx, data, split(data.n, size), true, linear_fit<gpuml::LinearRegression>(p), rtol64,
                           "LinearRegression without intercept");
    // Fewer rows than features over all ranks (9 < 12): "svd"'s minimum-norm solution gathers the rows.
    p.fit_intercept = true;
    p.algorithm = "svd";
    const Data<double> wide = make_data<double>(seed + 5, 9, 12, 1, 2.0);
    expect_distributed_fit(comm, ctx, wide, split_few(wide.n, size, 3), false, linear_fit<gpuml::LinearRegression>(p),
                           rtol64, "LinearRegression svd with n < d");
    p.algorithm = "auto";  // rank deficient: "auto" falls back to the SVD route on every rank
    expect_distributed_fit(comm, ctx, wide, split_few(wide.n, size, 3), true, linear_fit<gpuml::LinearRegression>(p),
                           rtol64, "LinearRegression auto with n < d (falls back to svd)");
  }

  // "qr" on X with two nearly equal columns (cond(X) ~ 1e9): Cholesky QR fails (cond(XᵀX) beyond
  // 1 / eps) on every rank alike, and Householder QR over the ranks (TSQR) solves it; rank 0 holds
  // 3 rows, fewer than the 6 features. y lies in X's column space (no noise), so both fits carry
  // errors ~ eps cond(X) ~ 1e-7 relative: 1e-5 leaves room.
  {
    Data<double> data = make_data<double>(seed + 12, 700, 6, 1, 0.0);
    std::mt19937_64 gen(seed + 13);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int64_t i = 0; i < data.n; ++i) {
      double* row = data.X.data() + i * data.d;
      row[5] = row[4] + 1e-9 * normal(gen);
      data.y[i] = 1.0 - 2.0 * row[0] + 0.5 * row[1] + row[2] - row[3] + 3.0 * row[4] + 2.0 * row[5];
    }
    gpuml::LinearRegressionParams p;
    p.algorithm = "qr";
    expect_distributed_fit(comm, ctx, data, split_few(data.n, size, 3), false, linear_fit<gpuml::LinearRegression>(p), 1e-5,
                           "LinearRegression qr, cond(X) ~ 1e9 (Householder TSQR)");
  }

  // Ridge.
  {
    gpuml::RidgeParams p;
    p.alpha = {0.5, 20.0};
    p.solver = "cholesky";
    const Data<double> data = make_data<double>(seed + 6, 907, 8, 2, 100.0);
    expect_distributed_fit(comm, ctx, data, split_few(data.n, size, 2), true, linear_fit<gpuml::Ridge>(p), rtol64,
                           "Ridge cholesky, alpha per target, 2 rows on rank 0");
    p.solver = "svd";
    expect_distributed_fit(comm, ctx, data, split(data.n, size), false, linear_fit<gpuml::Ridge>(p), rtol64, "Ridge svd");
    p.solver = "auto";
    p.alpha = {3.0};
    const Data<float> f32 = make_data<float>(seed + 7, 1100, 5, 1, -5.0);
    expect_distributed_fit(comm, ctx, f32, split(f32.n, size), true, linear_fit<gpuml::Ridge>(p), rtol32, "Ridge float32");
  }

  // Lasso and ElasticNet: coordinate descent on the Gram matrix of all rows, the same on every
  // rank. A tight tol: both fits stop at the same optimum up to the rounding of the Gram matrix;
  // 1e-8 leaves room for a sweep more or less at the stopping test (its change is below tol).
  {
    gpuml::LassoParams lasso;
    lasso.alpha = 0.05;
    lasso.tol = 1e-12;
    const Data<double> data = make_data<double>(seed + 8, 1000, 9, 1, 30.0);
    expect_distributed_fit(comm, ctx, data, split_few(data.n, size, 5), false, linear_fit<gpuml::Lasso>(lasso), 1e-8,
                           "Lasso, 5 rows on rank 0");
    gpuml::ElasticNetParams enet;
    enet.alpha = 0.1;
    enet.l1_ratio = 0.3;
    enet.tol = 1e-12;
    enet.selection = "random";
    enet.random_state = 5;
    const Data<double> multi = make_data<double>(seed + 9, 1200, 6, 2, -3.0);
    expect_distributed_fit(comm, ctx, multi, split(multi.n, size), true, linear_fit<gpuml::ElasticNet>(enet), 1e-8,
                           "ElasticNet random selection, 2 targets, weighted");
    gpuml::ElasticNetParams f32params;
    f32params.alpha = 0.02;
    const Data<float> f32 = make_data<float>(seed + 10, 1300, 5, 1, 4.0);
    expect_distributed_fit(comm, ctx, f32, split(f32.n, size), true, linear_fit<gpuml::ElasticNet>(f32params), rtol32,
                           "ElasticNet float32");
  }

  // Through the C ABI: a "lasso" handle fitted under an MPI context, against the C++ 1-process fit.
  {
    const Data<double> data = make_data<double>(seed + 14, 601, 4, 1, 7.0);
    const std::vector<int64_t> begin = split(data.n, size);
    const int64_t b = begin[comm.rank()], e = begin[comm.rank() + 1];
    gpuml_context_t c_ctx = nullptr;
    gpuml_estimator_t est = nullptr;
    CHECK(gpuml_context_create("cpu", &c_ctx) == GPUML_OK && gpuml_context_attach_mpi(c_ctx) == GPUML_OK, "%s",
          gpuml_last_error());
    CHECK(gpuml_estimator_create("lasso", "{\"alpha\": 0.01, \"tol\": 1e-12}", &est) == GPUML_OK, "%s", gpuml_last_error());
    gpuml_array_t X = {const_cast<double*>(data.X.data() + b * 4), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 2, {e - b, 4}, {4, 1}};
    gpuml_array_t y = {const_cast<double*>(data.y.data() + b), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 1, {e - b, 0}, {1, 0}};
    CHECK(gpuml_estimator_fit(c_ctx, est, &X, &y, nullptr) == GPUML_OK, "C ABI lasso fit: %s", gpuml_last_error());
    std::vector<double> got(5);
    gpuml_array_t coef = {got.data(), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 1, {4, 0}, {1, 0}};
    gpuml_array_t intercept = {got.data() + 4, GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 0, {0, 0}, {0, 0}};
    CHECK(gpuml_estimator_get_attribute(c_ctx, est, "coef_", &coef) == GPUML_OK, "%s", gpuml_last_error());
    CHECK(gpuml_estimator_get_attribute(c_ctx, est, "intercept_", &intercept) == GPUML_OK, "%s", gpuml_last_error());
    gpuml::LassoParams lasso;
    lasso.alpha = 0.01;
    lasso.tol = 1e-12;
    gpuml::Context single = test_context();
    // As the Lasso case above: 1e-8.
    expect_close(got, linear_fit<gpuml::Lasso>(lasso)(single, data.Xv(0, data.n), data.yv(0, data.n), nullptr), 1e-8,
                 "C ABI lasso");
    gpuml_estimator_free(est);
    gpuml_context_free(c_ctx);
  }

  // Bad input on one rank: every rank returns an error (none waits forever), and the next fit works.
  const bool last = comm.rank() == size - 1;
  const Data<double> data = make_data<double>(seed + 11, 40, 4, 1, 0.0);
  std::vector<double> nan_X = data.X;
  if (last) nan_X[5] = std::nan("");
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "NaN" : "failed on rank",
               [&] { gpuml::LinearRegression().fit(ctx, gpuml::host_view(nan_X.data(), 40, 4), data.yv(0, 40)); }, __LINE__);
  gpuml::LinearRegressionParams qr;
  qr.algorithm = "qr";
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "NaN" : "failed on rank",
               [&] { gpuml::LinearRegression(qr).fit(ctx, gpuml::host_view(nan_X.data(), 40, 4), data.yv(0, 40)); }, __LINE__);
  std::vector<double> nan_y = data.y;
  if (comm.rank() == 0) nan_y[3] = std::nan("");
  expect_error(gpuml::ErrorCode::invalid_argument, comm.rank() == 0 ? "y contains NaN" : "failed on rank 0",
               [&] { gpuml::Ridge().fit(ctx, data.Xv(0, 40), gpuml::host_view(nan_y.data(), 40)); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on n_features",
               [&] { gpuml::Lasso().fit(ctx, gpuml::host_view(data.X.data(), last ? 40 : 30, last ? 3 : 4), data.yv(0, last ? 40 : 30)); },
               __LINE__);
  gpuml::RidgeParams other;
  other.alpha = {last ? 2.0 : 1.0};
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on alpha",
               [&] { gpuml::Ridge(other).fit(ctx, data.Xv(0, 40), data.yv(0, 40)); }, __LINE__);
  gpuml::ElasticNetParams enet;
  enet.l1_ratio = last ? 0.7 : 0.5;
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on l1_ratio",
               [&] { gpuml::ElasticNet(enet).fit(ctx, data.Xv(0, 40), data.yv(0, 40)); }, __LINE__);
  std::vector<double> weights(40, 1.0);
  if (last) weights[2] = -1.0;
  const gpuml::ArrayView w = gpuml::host_view(weights.data(), 40);
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "non-negative" : "failed on rank",
               [&] { gpuml::ElasticNet().fit(ctx, data.Xv(0, 40), data.yv(0, 40), &w); }, __LINE__);
  gpuml::LinearRegression ok;
  ok.fit(ctx, data.Xv(0, 40), data.yv(0, 40));
  expect_same_bits(comm, values_of(ok.coef()), "a fit after the errors");
}

Fit pca_fit(gpuml::PCAParams params) {
  return [params](gpuml::Context& ctx, const gpuml::ArrayView& X, const gpuml::ArrayView&, const gpuml::ArrayView*) {
    gpuml::PCA pca(params);
    pca.fit(ctx, X);
    std::vector<double> out;
    for (const char* name : {"components_", "explained_variance_", "explained_variance_ratio_", "singular_values_", "mean_",
                             "noise_variance_", "n_components_", "n_samples_"})
      for (double v : values_of(pca.attribute(name))) out.push_back(v);
    return out;
  };
}

Fit svd_fit(gpuml::TruncatedSVDParams params) {
  return [params](gpuml::Context& ctx, const gpuml::ArrayView& X, const gpuml::ArrayView&, const gpuml::ArrayView*) {
    gpuml::TruncatedSVD svd(params);
    svd.fit(ctx, X);
    std::vector<double> out;
    for (const char* name : {"components_", "explained_variance_", "explained_variance_ratio_", "singular_values_"})
      for (double v : values_of(svd.attribute(name))) out.push_back(v);
    return out;
  };
}

void test_decomposition(gpuml::Comm& comm, uint64_t seed) {
  gpuml::Context ctx = distributed_context();
  const int size = comm.size();
  // Tolerances as in test_linear: float64 1e-9 (sums in another order, times the ratio of the
  // largest eigenvalue to the gaps between them, ~10 here), float32 1e-4. Components are
  // compared with their signs: both fits flip them the same way (svd_flip).
  const double rtol64 = 1e-9, rtol32 = 1e-4;
  gpuml::PCAParams p;
  p.svd_solver = "covariance_eigh";
  const Data<double> data = make_data<double>(seed + 21, 1500, 6, 1, 50.0);
  expect_distributed_fit(comm, ctx, data, split_few(data.n, size, 3), false, pca_fit(p), rtol64,
                         "PCA covariance_eigh, 3 rows on rank 0");
  p.n_components = 3;
  expect_distributed_fit(comm, ctx, data, split(data.n, size), false, pca_fit(p), rtol64, "PCA 3 components");
  p.n_components = 0.8;  // a variance fraction: every rank finds the same number of components
  expect_distributed_fit(comm, ctx, data, split(data.n, size), false, pca_fit(p), rtol64, "PCA n_components=0.8");
  // "full" and "randomized" over several ranks: the covariance route, against the 1-process "full".
  gpuml::PCAParams full;
  full.svd_solver = "full";
  full.n_components = 4;
  gpuml::PCAParams randomized = full;
  randomized.svd_solver = "randomized";
  randomized.random_state = 3;
  {
    const int64_t b = split(data.n, size)[comm.rank()], e = split(data.n, size)[comm.rank() + 1];
    gpuml::Context single = test_context();
    const std::vector<double> want = pca_fit(full)(single, data.Xv(0, data.n), data.yv(0, data.n), nullptr);
    for (const gpuml::PCAParams& q : {full, randomized}) {
      const std::vector<double> got = pca_fit(q)(ctx, data.Xv(b, e), data.yv(b, e), nullptr);
      expect_close(got, want, rtol64, "PCA " + q.svd_solver + " over ranks against 1-process full");
      expect_same_bits(comm, got, "PCA " + q.svd_solver);
    }
  }
  gpuml::PCAParams p32;
  p32.svd_solver = "covariance_eigh";
  const Data<float> f32 = make_data<float>(seed + 22, 1200, 5, 1, -8.0);
  expect_distributed_fit(comm, ctx, f32, split(f32.n, size), false, pca_fit(p32), rtol32, "PCA float32");

  // TruncatedSVD: over several ranks XᵀX summed and eigen-decomposed, against the 1-process
  // "full" (an SVD of R). The small singular values from the Gram matrix carry errors of about
  // eps s_max² / s: relative to s_max, ~1e-14 here (mean 0.5, so cond(X) stays ~10).
  gpuml::TruncatedSVDParams s;
  s.algorithm = "full";
  s.n_components = 3;
  const Data<double> rows = make_data<double>(seed + 23, 1100, 7, 1, 0.5);
  expect_distributed_fit(comm, ctx, rows, split_few(rows.n, size, 2), false, svd_fit(s), rtol64,
                         "TruncatedSVD, 2 rows on rank 0");
  {
    gpuml::TruncatedSVDParams r = s;
    r.algorithm = "randomized";
    r.random_state = 1;
    const int64_t b = split(rows.n, size)[comm.rank()], e = split(rows.n, size)[comm.rank() + 1];
    gpuml::Context single = test_context();
    const std::vector<double> want = svd_fit(s)(single, rows.Xv(0, rows.n), rows.yv(0, rows.n), nullptr);
    const std::vector<double> got = svd_fit(r)(ctx, rows.Xv(b, e), rows.yv(b, e), nullptr);
    expect_close(got, want, rtol64, "TruncatedSVD randomized over ranks against 1-process full");
  }
  const Data<float> rows32 = make_data<float>(seed + 24, 900, 5, 1, 0.5);
  expect_distributed_fit(comm, ctx, rows32, split(rows32.n, size), false, svd_fit(s), rtol32, "TruncatedSVD float32");

  // Bad input on one rank: every rank returns an error, and the next fit works.
  const bool last = comm.rank() == size - 1;
  std::vector<double> nan_X = data.X;
  if (comm.rank() == 0) nan_X[11] = std::nan("");
  expect_error(gpuml::ErrorCode::invalid_argument, comm.rank() == 0 ? "NaN" : "failed on rank 0",
               [&] { gpuml::PCA().fit(ctx, gpuml::host_view(nan_X.data(), 50, 6)); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, comm.rank() == 0 ? "NaN" : "failed on rank 0",
               [&] { gpuml::TruncatedSVD().fit(ctx, gpuml::host_view(nan_X.data(), 50, 6)); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on n_features",
               [&] { gpuml::PCA().fit(ctx, gpuml::host_view(data.X.data(), 30, last ? 5 : 6)); }, __LINE__);
  gpuml::TruncatedSVDParams other;
  other.n_components = last ? 3 : 2;
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on n_components",
               [&] { gpuml::TruncatedSVD(other).fit(ctx, data.Xv(0, 30)); }, __LINE__);
  gpuml::PCA ok;
  ok.fit(ctx, data.Xv(0, 30));
  expect_same_bits(comm, values_of(ok.components()), "a PCA fit after the errors");
}


// ---- LogisticRegression -----------------------------------------------------------------

// Class labels for data.X: label value 10 c - 3 (not 0..k-1: the classes are mapped) for the c
// with the largest X b_c + 2 * Gumbel noise, b_c fresh normal; data.y becomes the labels.
// sorted: the rows sorted by label, so that the first ranks hold the smallest classes only and
// the last rank the largest class alone.
template <typename T>
void make_labels(Data<T>& data, int64_t n_classes, uint64_t seed, bool sorted) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(1e-12, 1.0);
  std::vector<double> b(n_classes * data.d);
  for (double& v : b) v = normal(gen);
  std::vector<std::pair<double, int64_t>> order(data.n);
  for (int64_t i = 0; i < data.n; ++i) {
    int64_t best = 0;
    double top = -1e300;
    for (int64_t c = 0; c < n_classes; ++c) {
      double z = -2.0 * std::log(-std::log(uniform(gen)));
      for (int64_t j = 0; j < data.d; ++j) z += static_cast<double>(data.X[i * data.d + j]) * b[c * data.d + j];
      if (z > top) top = z, best = c;
    }
    order[i] = {10.0 * best - 3.0, i};
  }
  if (sorted) std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
  Data<T> out = data;
  out.t = 1;
  out.y.resize(data.n);
  for (int64_t i = 0; i < data.n; ++i) {
    const int64_t from = order[i].second;
    std::copy(data.X.begin() + from * data.d, data.X.begin() + (from + 1) * data.d, out.X.begin() + i * data.d);
    out.w[i] = data.w[from];
    out.y[i] = static_cast<T>(order[i].first);
  }
  data = std::move(out);
}

// coef_ and intercept_; checks that classes_ are the n_classes labels of make_labels (a rank
// that holds fewer classes learns the others').
Fit logistic_fit(gpuml::LogisticRegressionParams params, int64_t n_classes) {
  return [params, n_classes](gpuml::Context& ctx, const gpuml::ArrayView& X, const gpuml::ArrayView& y,
                             const gpuml::ArrayView* w) {
    gpuml::LogisticRegression lr(params);
    lr.fit(ctx, X, y, w);
    const std::vector<double> classes = values_of(lr.classes());
    CHECK(static_cast<int64_t>(classes.size()) == n_classes, "%zu classes, expected %lld", classes.size(),
          static_cast<long long>(n_classes));
    for (std::size_t c = 0; c < classes.size(); ++c)
      CHECK(classes[c] == 10.0 * static_cast<double>(c) - 3.0, "classes_[%zu] = %g", c, classes[c]);
    std::vector<double> out;
    for (const char* name : {"coef_", "intercept_"})
      for (double v : values_of(lr.attribute(name))) out.push_back(v);
    return out;
  };
}

void test_logistic(gpuml::Comm& comm, uint64_t seed) {
  gpuml::Context ctx = distributed_context();
  const int size = comm.size();
  // Both fits run L-BFGS / OWL-QN on the same objective to tol 1e-10; their paths differ only by
  // the order of the sums over rows (~1e-16 relative per evaluation). Each stops either on the
  // gradient or when the relative decrease is <= 64 eps, which leaves it ~sqrt(64 eps / the
  // Hessian's smallest eigenvalue) from the optimum: the two fits can differ by that much.
  // Smooth penalties: 3e-7 of the largest coefficient seen at worst over 24 seeds: 1e-5.
  // L1 / elasticnet (OWL-QN): binary ~1e-15 seen, multinomial up to 1.2e-4 (the search halves
  // its step and stops early on the decrease): 1e-3. float32: scores and residuals formed in
  // float32 (~1e-7 per row) move the optimum by up to 1.2e-4 seen: 2e-3.
  const double rtol_smooth = 1e-5, rtol_l1 = 1e-3, rtol32 = 2e-3;
  gpuml::LogisticRegressionParams p;
  p.tol = 1e-10;
  p.max_iter = 1000;
  {
    Data<double> data = make_data<double>(seed + 31, 1001, 6, 1, 2.0);
    make_labels(data, 2, seed + 32, false);
    expect_distributed_fit(comm, ctx, data, split_few(data.n, size, 3), false, logistic_fit(p, 2), rtol_smooth,
                           "LogisticRegression binary l2, 3 rows on rank 0");
    gpuml::LogisticRegressionParams none = p;
    none.penalty = "none";
    none.fit_intercept = false;
    expect_distributed_fit(comm, ctx, data, split(data.n, size), true, logistic_fit(none, 2), rtol_smooth,
                           "LogisticRegression binary, no penalty, no intercept, weighted");
    gpuml::LogisticRegressionParams l1 = p;
    l1.penalty = "l1";
    l1.C = 0.05;
    expect_distributed_fit(comm, ctx, data, split(data.n, size), false, logistic_fit(l1, 2), rtol_l1,
                           "LogisticRegression binary l1 (OWL-QN)");
  }
  {
    // Sorted by label: rank 0 holds one class only (a 1-process fit of its rows alone would be
    // refused), and the largest class is on the last rank(s) only.
    Data<double> data = make_data<double>(seed + 33, 1200, 5, 1, -1.0);
    make_labels(data, 4, seed + 34, true);
    gpuml::LogisticRegressionParams balanced = p;
    balanced.class_weight_balanced = true;
    expect_distributed_fit(comm, ctx, data, split_few(data.n, size, 20), true, logistic_fit(balanced, 4), rtol_smooth,
                           "LogisticRegression 4 classes sorted by label, balanced, weighted");
    gpuml::LogisticRegressionParams enet = p;
    enet.penalty = "elasticnet";
    enet.l1_ratio = 0.4;
    enet.C = 0.2;
    enet.class_weight = {{-3.0, 2.0}, {27.0, 0.5}};
    expect_distributed_fit(comm, ctx, data, split(data.n, size), false, logistic_fit(enet, 4), rtol_l1,
                           "LogisticRegression 4 classes sorted, elasticnet, listed class weights");
  }
  {
    Data<float> f32 = make_data<float>(seed + 35, 1500, 4, 1, 0.5);
    make_labels(f32, 3, seed + 36, false);
    gpuml::LogisticRegressionParams q = p;
    q.tol = 1e-6;
    expect_distributed_fit(comm, ctx, f32, split(f32.n, size), true, logistic_fit(q, 3), rtol32,
                           "LogisticRegression float32, 3 classes, weighted");
  }

  // Bad input on one rank: every rank returns an error (none waits forever), and the next fit works.
  const bool last = comm.rank() == size - 1;
  Data<double> data = make_data<double>(seed + 37, 60, 3, 1, 0.0);
  make_labels(data, 3, seed + 38, false);
  std::vector<double> nan_X = data.X;
  if (last) nan_X[4] = std::nan("");
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "NaN" : "failed on rank",
               [&] { gpuml::LogisticRegression().fit(ctx, gpuml::host_view(nan_X.data(), 60, 3), data.yv(0, 60)); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, comm.rank() == 0 ? "1-d array" : "failed on rank 0",
               [&] {
                 const gpuml::ArrayView y = comm.rank() == 0 ? gpuml::host_view(data.y.data(), 30, 2) : data.yv(0, 60);
                 gpuml::LogisticRegression().fit(ctx, data.Xv(0, 60), y);
               },
               __LINE__);
  std::vector<double> weights(60, 1.0);
  if (last) weights[7] = -2.0;
  const gpuml::ArrayView w = gpuml::host_view(weights.data(), 60);
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "non-negative" : "failed on rank",
               [&] { gpuml::LogisticRegression().fit(ctx, data.Xv(0, 60), data.yv(0, 60), &w); }, __LINE__);
  gpuml::LogisticRegressionParams other;
  other.C = last ? 2.0 : 1.0;
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on C",
               [&] { gpuml::LogisticRegression(other).fit(ctx, data.Xv(0, 60), data.yv(0, 60)); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on n_features",
               [&] { gpuml::LogisticRegression().fit(ctx, gpuml::host_view(data.X.data(), 60, last ? 2 : 3), data.yv(0, 60)); },
               __LINE__);
  // One class over all ranks: every rank finds it in the agreed classes.
  std::vector<double> one_class(60, 4.0);
  expect_error(gpuml::ErrorCode::invalid_argument, "at least 2 classes",
               [&] { gpuml::LogisticRegression().fit(ctx, data.Xv(0, 60), gpuml::host_view(one_class.data(), 60)); }, __LINE__);
  // A class present on one rank only, with zero weight there: "balanced" has no weight for it on any rank.
  std::vector<double> labels(60, 1.0), zero_w(60, 1.0);
  for (int64_t i = 0; i < 30; ++i) labels[i] = 0.0;
  if (last) labels[59] = 9.0, zero_w[59] = 0.0;
  gpuml::LogisticRegressionParams bal;
  bal.class_weight_balanced = true;
  const gpuml::ArrayView zw = gpuml::host_view(zero_w.data(), 60);
  expect_error(gpuml::ErrorCode::invalid_argument, "class 9 has none",
               [&] { gpuml::LogisticRegression(bal).fit(ctx, data.Xv(0, 60), gpuml::host_view(labels.data(), 60), &zw); },
               __LINE__);
  gpuml::LogisticRegression ok;
  ok.fit(ctx, data.Xv(0, 60), data.yv(0, 60));
  expect_same_bits(comm, values_of(ok.coef()), "a LogisticRegression fit after the errors");
}
// ---- Random forests ----------------------------------------------------------------------

// Every fitted attribute of a forest as doubles (int32 and int64 arrays converted exactly), in
// attribute_names() order, leaving out the out-of-bag arrays (they hold the rank's own rows).
std::vector<double> forest_values(const gpuml::Estimator& est) {
  std::vector<double> out;
  for (const std::string& name : est.attribute_names()) {
    if (name.rfind("oob_", 0) == 0) continue;
    const gpuml::HostArray& a = est.attribute(name);
    if (a.dtype() == gpuml::DType::int32)
      out.insert(out.end(), a.as<const int32_t>(), a.as<const int32_t>() + a.bytes() / sizeof(int32_t));
    else
      for (double v : values_of(a)) out.push_back(v);
  }
  return out;
}

struct ForestCase {
  gpuml::RandomForestParams params;
  bool weighted = false;
  int64_t few = -1;  // rows on rank 0 (split_few), or -1: split()
  std::string what;
};

// The forest fitted on every rank's rows under `dist` must be the 1-process forest of all rows
// bit for bit (every node array, importances, classes), hold the same bits on every rank, and,
// with oob_score, give this rank's rows the 1-process out-of-bag values.
template <typename T>
void expect_distributed_forest(gpuml::Comm& comm, gpuml::Context& dist, const Data<T>& data, bool classification,
                               const ForestCase& c) {
  const std::vector<int64_t> begin = c.few >= 0 ? split_few(data.n, comm.size(), c.few) : split(data.n, comm.size());
  const int64_t b = begin[comm.rank()], e = begin[comm.rank() + 1];
  const gpuml::ArrayView w_local = data.wv(b, e), w_all = data.wv(0, data.n);
  auto make = [&]() -> std::unique_ptr<gpuml::RandomForestBase> {
    if (classification) return std::make_unique<gpuml::RandomForestClassifier>(c.params);
    return std::make_unique<gpuml::RandomForestRegressor>(c.params);
  };
  try {
    std::unique_ptr<gpuml::RandomForestBase> got = make(), want = make();
    const gpuml::ArrayView y_local = data.yv(b, e), y_all = data.yv(0, data.n);
    got->fit(dist, data.Xv(b, e), &y_local, c.weighted ? &w_local : nullptr);
    gpuml::Context single = test_context();  // no communicator: one process, all rows
    want->fit(single, data.Xv(0, data.n), &y_all, c.weighted ? &w_all : nullptr);
    const std::vector<double> g = forest_values(*got), w = forest_values(*want);
    CHECK(g.size() == w.size() && std::memcmp(g.data(), w.data(), g.size() * sizeof(double)) == 0,
          "%s: the forest differs from the 1-process forest (%zu and %zu values)", c.what.c_str(), g.size(), w.size());
    expect_same_bits(comm, g, c.what);
    if (!c.params.oob_score) {
      CHECK(gpuml::serialize(*got) == gpuml::serialize(*want), "%s: the serialized models differ", c.what.c_str());
    } else {
      const double score = *got->attribute("oob_score_").as<const double>();
      const double want_score = *want->attribute("oob_score_").as<const double>();
      CHECK(std::abs(score - want_score) <= 1e-12 * std::max(1.0, std::abs(want_score)), "%s: oob_score_ %.17g, 1-process %.17g",
            c.what.c_str(), score, want_score);
      const std::string oob = classification ? "oob_decision_function_" : "oob_prediction_";
      const std::vector<double> mine = values_of(got->attribute(oob)), all = values_of(want->attribute(oob));
      const int64_t k = static_cast<int64_t>(all.size()) / data.n;
      CHECK(static_cast<int64_t>(mine.size()) == (e - b) * k &&
                std::equal(mine.begin(), mine.end(), all.begin() + b * k),
            "%s: %s of this rank's rows differs from the 1-process one", c.what.c_str(), oob.c_str());
    }
  } catch (const std::exception& ex) {
    CHECK(false, "%s: %s", c.what.c_str(), ex.what());
    throw;  // the ranks may now disagree on the collectives that follow: stop
  }
}

// Random parameters for a case (the same on every rank: rng from the shared seed).
ForestCase random_forest_case(std::mt19937_64& rng, bool classification, int64_t n, int64_t d, int index) {
  auto pick = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  ForestCase c;
  gpuml::RandomForestParams& p = c.params;
  p.n_estimators = pick(3, 10);
  p.random_state = rng() >> 1;
  p.criterion = classification ? (pick(0, 2) == 0 ? "entropy" : "gini") : (pick(0, 3) == 0 ? "poisson" : "squared_error");
  p.bootstrap = pick(0, 4) != 0;
  if (pick(0, 1)) p.max_depth = pick(1, 12);
  if (pick(0, 3) == 0) p.max_leaf_nodes = pick(2, 40);
  switch (pick(0, 4)) {
    case 0: p.max_features = "sqrt"; break;
    case 1: p.max_features = "log2"; break;
    case 2: p.max_features = "all"; break;
    case 3: p.max_features = "count", p.max_features_value = static_cast<double>(pick(1, d)); break;
    default: p.max_features = "fraction", p.max_features_value = 0.3 + 0.1 * static_cast<double>(pick(0, 7)); break;
  }
  if (pick(0, 2) == 0) p.min_samples_leaf = pick(0, 1) ? gpuml::CountOrFraction{static_cast<double>(pick(2, 8)), false}
                                                       : gpuml::CountOrFraction{0.01, true};
  if (pick(0, 2) == 0) p.min_samples_split = {static_cast<double>(pick(3, 20)), false};
  if (pick(0, 3) == 0) p.n_bins = pick(2, 64);
  if (p.bootstrap && pick(0, 3) == 0)
    p.max_samples = pick(0, 1) ? gpuml::CountOrFraction{static_cast<double>(pick(20, n)), false} : gpuml::CountOrFraction{0.6, true};
  // Weights choose the rows with bootstrap (integer counts); without it they would weigh them
  // (not summed exactly over ranks: refused, tested below).
  c.weighted = p.bootstrap && pick(0, 1);
  if (classification && p.bootstrap && pick(0, 1)) p.class_weight_mode = "balanced";
  if (p.bootstrap && pick(0, 2) == 0) p.oob_score = true;
  c.few = pick(0, 2) == 0 ? pick(1, 5) : -1;
  char text[400];
  std::snprintf(text, sizeof text,
                "%s %d: %s, %lld trees, bootstrap %d, max_depth %lld, max_leaf_nodes %lld, max_features %s %g, "
                "min_samples_leaf %g%s, min_samples_split %g, n_bins %lld, max_samples %s, weighted %d, class_weight %s, "
                "oob %d, rows on rank 0 %lld",
                classification ? "RandomForestClassifier" : "RandomForestRegressor", index, p.criterion.c_str(),
                static_cast<long long>(p.n_estimators), p.bootstrap, static_cast<long long>(p.max_depth.value_or(-1)),
                static_cast<long long>(p.max_leaf_nodes.value_or(-1)), p.max_features.c_str(), p.max_features_value,
                p.min_samples_leaf.value, p.min_samples_leaf.fraction ? " (fraction)" : "", p.min_samples_split.value,
                static_cast<long long>(p.n_bins), p.max_samples ? std::to_string(p.max_samples->value).c_str() : "None",
                c.weighted, p.class_weight_mode.empty() ? "None" : p.class_weight_mode.c_str(), p.oob_score,
                static_cast<long long>(c.few));
  c.what = text;
  return c;
}

// Data for the forests: make_data's rows with a constant column and a column of 4 values (ties,
// constant nodes), weights in quarters (0 included: rows never drawn), so that "balanced" class
// totals are exact in any order.
template <typename T>
Data<T> forest_data(uint64_t seed, int64_t n, int64_t d) {
  Data<T> data = make_data<T>(seed, n, d, 1, 0.0);
  std::mt19937_64 gen(seed + 1);
  for (int64_t i = 0; i < n; ++i) {
    data.X[i * d + (d - 1)] = static_cast<T>(1.5);
    data.X[i * d] = static_cast<T>(std::floor(static_cast<double>(data.X[i * d]) * 0.7));
    if (d > 2) data.X[i * d + 1] = static_cast<T>(static_cast<int64_t>(gen() % 4));
    data.w[i] = static_cast<T>(0.25 * static_cast<double>(gen() % 9));
  }
  return data;
}

void test_forest(gpuml::Comm& comm, uint64_t seed) {
  gpuml::Context ctx = distributed_context();
  const int size = comm.size();
  std::mt19937_64 rng(seed + 41);
  for (int index = 0; index < 16; ++index) {
    const bool classification = index % 2 == 0;
    const int64_t n = 150 + static_cast<int64_t>(rng() % 900), d = 3 + static_cast<int64_t>(rng() % 8);
    Data<double> data = forest_data<double>(seed + 42 + index, n, d);
    if (classification) make_labels(data, 2 + static_cast<int64_t>(rng() % 3), seed + 43 + index, rng() % 3 == 0);
    else if (index % 4 == 1)  // poisson-friendly: y >= 0, some zeros
      for (double& v : data.y) v = std::max(0.0, std::round(v));
    const ForestCase c = random_forest_case(rng, classification, n, d, index);
    if (c.params.criterion == "poisson") {
      for (double& v : data.y) v = std::max(0.0, std::round(v));
      data.y[0] += 1.0;  // a positive sum
    }
    if (g_rank == 0 && std::getenv("GPUML_TEST_VERBOSE")) std::printf("%s\n", c.what.c_str());
    expect_distributed_forest(comm, ctx, data, classification, c);
  }
  {
    Data<float> f32 = forest_data<float>(seed + 60, 700, 5);
    make_labels(f32, 3, seed + 61, true);  // sorted: rank 0 holds the first class only
    ForestCase c;
    c.params.n_estimators = 6;
    c.params.random_state = seed;
    c.what = "RandomForestClassifier float32, sorted labels, defaults";
    expect_distributed_forest(comm, ctx, f32, true, c);
  }

  // Bad input on one rank: every rank returns an error (none waits forever), and the next fit works.
  const bool last = comm.rank() == size - 1;
  Data<double> data = forest_data<double>(seed + 70, 80, 4);
  make_labels(data, 3, seed + 71, false);
  gpuml::RandomForestParams small;
  small.n_estimators = 3;
  small.random_state = 5;
  std::vector<double> nan_X = data.X;
  if (last) nan_X[6] = std::nan("");
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "NaN" : "failed on rank",
               [&] { gpuml::RandomForestClassifier(small).fit(ctx, gpuml::host_view(nan_X.data(), 80, 4), data.yv(0, 80)); },
               __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, comm.rank() == 0 ? "samples" : "failed on rank 0",
               [&] { gpuml::RandomForestRegressor(small).fit(ctx, data.Xv(0, 80), data.yv(0, comm.rank() == 0 ? 70 : 80)); },
               __LINE__);
  std::vector<double> weights(80, 1.0);
  if (last) weights[3] = -1.0;
  const gpuml::ArrayView w = gpuml::host_view(weights.data(), 80);
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "non-negative" : "failed on rank",
               [&] { gpuml::RandomForestClassifier(small).fit(ctx, data.Xv(0, 80), data.yv(0, 80), &w); }, __LINE__);
  gpuml::RandomForestParams other = small;
  other.n_estimators = last ? 4 : 3;
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on n_estimators",
               [&] { gpuml::RandomForestClassifier(other).fit(ctx, data.Xv(0, 80), data.yv(0, 80)); }, __LINE__);
  std::vector<double> one_class(80, 2.0);
  expect_error(gpuml::ErrorCode::invalid_argument, "at least 2 classes",
               [&] { gpuml::RandomForestClassifier(small).fit(ctx, data.Xv(0, 80), gpuml::host_view(one_class.data(), 80)); },
               __LINE__);
  std::vector<double> counts(80, 1.0);
  if (last) counts[9] = -1.0;
  gpuml::RandomForestParams poisson = small;
  poisson.criterion = "poisson";
  expect_error(gpuml::ErrorCode::invalid_argument, "negative",
               [&] { gpuml::RandomForestRegressor(poisson).fit(ctx, data.Xv(0, 80), gpuml::host_view(counts.data(), 80)); },
               __LINE__);
  // Weights that weigh the rows (no bootstrap) are not summed exactly over ranks: a named refusal.
  gpuml::RandomForestParams no_bootstrap = small;
  no_bootstrap.bootstrap = false;
  no_bootstrap.class_weight_mode = "balanced";
  expect_error(gpuml::ErrorCode::unsupported, "integer row weights",
               [&] { gpuml::RandomForestClassifier(no_bootstrap).fit(ctx, data.Xv(0, 80), data.yv(0, 80)); }, __LINE__);
  gpuml::RandomForestClassifier ok(small);
  ok.fit(ctx, data.Xv(0, 80), data.yv(0, 80));
  expect_same_bits(comm, forest_values(ok), "a RandomForestClassifier fit after the errors");
}
// ---- PageRank ----------------------------------------------------------------------------

// A fresh random graph: m edges among n vertices, sources skewed towards low ids (a few hubs),
// duplicates and self-loops kept, about a tenth of the vertices without out-edges (dangling);
// weights in [0, 2) (some 0).
struct Graph {
  int64_t n = 0, m = 0;
  std::vector<int64_t> src, dst;
  std::vector<double> w;
};

Graph make_graph(uint64_t seed, int64_t n, int64_t m) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> any(0, n - 1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Graph g;
  g.n = n, g.m = m;
  for (int64_t e = 0; e < m; ++e) {
    int64_t s = static_cast<int64_t>(static_cast<double>(n) * unit(gen) * unit(gen));
    if (s % 10 == 9) s = any(gen) / 10 * 10;  // ids ending in 9 have no out-edges
    g.src.push_back(s);
    g.dst.push_back(any(gen));
    g.w.push_back(unit(gen) < 0.05 ? 0.0 : 2.0 * unit(gen));
  }
  return g;
}

struct PageRankOptions {
  bool weighted = false, personalized = false;
  gpuml::PageRankParams params;
};

// The personalization and dangling vectors of the personalized runs.
void per_vertex_vectors(int64_t n, std::vector<double>& personalization, std::vector<double>& dangling) {
  personalization.resize(n);
  dangling.resize(n);
  for (int64_t v = 0; v < n; ++v) personalization[v] = 1.0 + v % 7, dangling[v] = v % 3 == 0 ? 0.0 : 1.0;
}

// The ranks, n_iter and converged of pagerank over edges [b, e) of g under ctx.
template <typename T>
std::vector<double> run_pagerank(gpuml::Context& ctx, const Graph& g, int64_t b, int64_t e, const PageRankOptions& o) {
  std::vector<T> w(g.w.begin() + b, g.w.begin() + e), out(g.n);
  std::vector<double> personalization, dangling;
  per_vertex_vectors(g.n, personalization, dangling);
  const gpuml::ArrayView wv = gpuml::host_view(w.data(), e - b), pv = gpuml::host_view(personalization.data(), g.n),
                         dv = gpuml::host_view(dangling.data(), g.n);
  const gpuml::PageRankResult r = gpuml::pagerank(
      ctx, g.n, gpuml::host_view(g.src.data() + b, e - b), gpuml::host_view(g.dst.data() + b, e - b),
      o.weighted ? &wv : nullptr, o.personalized ? &pv : nullptr, nullptr, o.personalized ? &dv : nullptr, o.params,
      gpuml::host_view(out.data(), g.n));
  std::vector<double> result(out.begin(), out.end());
  result.push_back(static_cast<double>(r.n_iter));
  result.push_back(r.converged ? 1.0 : 0.0);
  return result;
}

// The same over a prebuilt gpuml::Graph (o.weighted is the graph's), ranks in T.
template <typename T>
std::vector<double> rank_graph(gpuml::Graph& graph, const PageRankOptions& o) {
  const int64_t n = graph.n_vertices();
  std::vector<T> out(n);
  std::vector<double> personalization, dangling;
  per_vertex_vectors(n, personalization, dangling);
  const gpuml::ArrayView pv = gpuml::host_view(personalization.data(), n), dv = gpuml::host_view(dangling.data(), n);
  const gpuml::PageRankResult r = graph.pagerank(o.personalized ? &pv : nullptr, nullptr, o.personalized ? &dv : nullptr,
                                                 o.params, gpuml::host_view(out.data(), n));
  std::vector<double> result(out.begin(), out.end());
  result.push_back(static_cast<double>(r.n_iter));
  result.push_back(r.converged ? 1.0 : 0.0);
  return result;
}

// A gpuml::Graph of every rank's edges [begin[r], begin[r + 1]), ranked several times with
// different options: every call equals the one-shot distributed pagerank bit for bit (the same
// build and iteration run) and holds the same bits on every rank.
template <typename T>
void expect_distributed_graph(gpuml::Comm& comm, gpuml::Context& dist, const Graph& g, const std::vector<int64_t>& begin,
                              bool weighted, const std::string& what) {
  try {
    const int64_t b = begin[comm.rank()], e = begin[comm.rank() + 1];
    std::vector<T> w(g.w.begin() + b, g.w.begin() + e);
    const gpuml::ArrayView wv = gpuml::host_view(w.data(), e - b);
    gpuml::Graph graph(dist, g.n, gpuml::host_view(g.src.data() + b, e - b), gpuml::host_view(g.dst.data() + b, e - b),
                       weighted ? &wv : nullptr, gpuml::dtype_of<T>::value);
    CHECK(graph.n_edges() == g.m, "%s: n_edges %lld, expected %lld", what.c_str(), static_cast<long long>(graph.n_edges()),
          static_cast<long long>(g.m));
    std::vector<PageRankOptions> calls(4);
    for (PageRankOptions& o : calls) o.weighted = weighted, o.params.tol = 1e-9, o.params.max_iter = 500;
    calls[1].personalized = true;
    calls[2].params.alpha = 0.6;
    calls[3].params.max_iter = 3;
    calls[3].params.allow_unconverged = true;
    for (int pass = 0; pass < 2; ++pass)  // twice over: a call must not depend on the ones before
      for (std::size_t i = 0; i < calls.size(); ++i) {
        const std::string call = what + ", call " + std::to_string(i);
        const std::vector<double> got = rank_graph<T>(graph, calls[i]);
        const std::vector<double> want = run_pagerank<T>(dist, g, b, e, calls[i]);
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)) == 0,
              "%s: the graph's ranks differ from the one-shot pagerank's", call.c_str());
        expect_same_bits(comm, got, call);
      }
  } catch (const std::exception& e) {
    CHECK(false, "%s: %s", what.c_str(), e.what());
    throw;
  }
}

// Every rank passes its chunk [begin[r], begin[r + 1]) of the edges; every rank's result must
// equal the 1-process PageRank of all edges (the chunks' union in rank order), n_iter and
// converged exactly, and hold the same bits on every rank.
template <typename T>
void expect_distributed_pagerank(gpuml::Comm& comm, gpuml::Context& dist, const Graph& g, const std::vector<int64_t>& begin,
                                 const PageRankOptions& o, double rtol, const std::string& what) {
  try {
    const std::vector<double> got = run_pagerank<T>(dist, g, begin[comm.rank()], begin[comm.rank() + 1], o);
    gpuml::Context single = test_context();
    const std::vector<double> want = run_pagerank<T>(single, g, 0, g.m, o);
    CHECK(got[g.n] == want[g.n] && got[g.n + 1] == want[g.n + 1], "%s: n_iter %g converged %g, 1-process %g %g",
          what.c_str(), got[g.n], got[g.n + 1], want[g.n], want[g.n + 1]);
    expect_close(std::vector<double>(got.begin(), got.begin() + g.n), std::vector<double>(want.begin(), want.begin() + g.n),
                 rtol, what);
    expect_same_bits(comm, got, what);
  } catch (const std::exception& e) {
    CHECK(false, "%s: %s", what.c_str(), e.what());
    throw;
  }
}

void test_pagerank(gpuml::Comm& comm, uint64_t seed) {
  gpuml::Context ctx = distributed_context();
  const int size = comm.size();
  // Each row's sum runs over its in-edges in the same order as one process (the union in rank
  // order, grouped by destination); only the weighted out-degrees are summed in another order
  // (rank by rank), and the L1 change over other chunks of rows. Unweighted out-degrees are
  // exact: the ranks agree to the last bits or nearly (1e-13 relative to the largest rank);
  // weighted, the out-degrees' rounding (~1e-16) moves the ranks by about as much, times the
  // iterations' error amplification (1 / (1 - alpha) ~ 7): 3e-16 seen, 1e-12. float32: the same
  // sums, so the same values (0 seen), unless an out-degree's rounding flips a float32 rounding
  // (a float32 ulp, 6e-8, times the amplification): 1e-5.
  const double rtol64 = 1e-12, rtol32 = 1e-5;
  PageRankOptions o;
  o.params.tol = 1e-10;
  o.params.max_iter = 500;
  const Graph g = make_graph(seed + 51, 3001, 20000);
  expect_distributed_pagerank<double>(comm, ctx, g, split_few(g.m, size, 5), o, rtol64,
                                      "PageRank unweighted, 5 edges on rank 0");
  o.weighted = true;
  expect_distributed_pagerank<double>(comm, ctx, g, split(g.m, size), o, rtol64, "PageRank weighted");
  o.personalized = true;
  o.params.alpha = 0.6;
  expect_distributed_pagerank<double>(comm, ctx, g, split_few(g.m, size, 0), o, rtol64,
                                      "PageRank weighted, personalization and dangling, no edges on rank 0");
  o.params.alpha = 0.85;
  o.params.tol = 1e-7;
  expect_distributed_pagerank<float>(comm, ctx, g, split(g.m, size), o, rtol32, "PageRank float32 weighted personalized");
  {
    PageRankOptions few;
    few.params.max_iter = 3;
    few.params.allow_unconverged = true;
    expect_distributed_pagerank<double>(comm, ctx, g, split(g.m, size), few, rtol64, "PageRank 3 iterations, unconverged");
    // Fewer vertices than ranks: some ranks own no vertex.
    const Graph tiny = make_graph(seed + 52, 1, 4);
    expect_distributed_pagerank<double>(comm, ctx, tiny, split(tiny.m, size), PageRankOptions{}, rtol64,
                                        "PageRank on 1 vertex");
  }

  expect_distributed_graph<double>(comm, ctx, g, split(g.m, size), true, "Graph weighted");
  expect_distributed_graph<float>(comm, ctx, g, split_few(g.m, size, 0), false, "Graph float32, no edges on rank 0");

  // Bad input on one rank: every rank returns an error (none waits forever), and the next run works.
  const bool last = comm.rank() == size - 1;
  std::vector<int64_t> src = {0, 1, 2, 3, 4, 5}, dst = {1, 2, 3, 4, 5, 0};
  std::vector<double> out(6), weights(6, 1.0);
  auto run = [&](int64_t n, const gpuml::ArrayView* w, const gpuml::ArrayView* personalization,
                 const gpuml::PageRankParams& params) {
    gpuml::pagerank(ctx, n, gpuml::host_view(src.data(), 6), gpuml::host_view(dst.data(), 6), w, personalization, nullptr,
                    nullptr, params, gpuml::host_view(out.data(), n));
  };
  if (last) dst[3] = 6;
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "vertex ids < n_vertices" : "failed on rank",
               [&] { run(6, nullptr, nullptr, gpuml::PageRankParams{}); }, __LINE__);
  dst[3] = 4;
  if (comm.rank() == 0) weights[2] = -1.0;
  const gpuml::ArrayView wv = gpuml::host_view(weights.data(), 6);
  expect_error(gpuml::ErrorCode::invalid_argument, comm.rank() == 0 ? "non-negative" : "failed on rank 0",
               [&] { run(6, &wv, nullptr, gpuml::PageRankParams{}); }, __LINE__);
  gpuml::PageRankParams bad_alpha;
  if (last) bad_alpha.alpha = 1.5;
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "alpha must be in (0, 1)" : "failed on rank",
               [&] { run(6, nullptr, nullptr, bad_alpha); }, __LINE__);
  gpuml::PageRankParams other_tol;
  other_tol.tol = last ? 1e-8 : 1e-6;
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on tol",
               [&] { run(6, nullptr, nullptr, other_tol); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on n_vertices",
               [&] { run(last ? 7 : 6, nullptr, nullptr, gpuml::PageRankParams{}); }, __LINE__);
  std::vector<double> personalization(6, 1.0);
  if (last) personalization[1] = 2.0;
  const gpuml::ArrayView pv = gpuml::host_view(personalization.data(), 6);
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on personalization",
               [&] { run(6, nullptr, &pv, gpuml::PageRankParams{}); }, __LINE__);
  gpuml::PageRankParams two;
  two.max_iter = 2;
  personalization[1] = 5.0;  // not uniform: two iterations do not converge
  expect_error(gpuml::ErrorCode::not_converged, "failed to converge",
               [&] { run(6, nullptr, &pv, two); }, __LINE__);
  run(6, nullptr, &pv, gpuml::PageRankParams{});
  expect_same_bits(comm, out, "a PageRank run after the errors");

  // The same for a Graph: what must agree is checked when it is built (the graph) and at each call
  // (the parameters and vectors); the graph still ranks after a refused call.
  const gpuml::ArrayView sv = gpuml::host_view(src.data(), 6), tv = gpuml::host_view(dst.data(), 6);
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on n_vertices",
               [&] { gpuml::Graph(ctx, last ? 7 : 6, sv, tv, nullptr); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on precision",
               [&] { gpuml::Graph(ctx, 6, sv, tv, nullptr, last ? gpuml::DType::float32 : gpuml::DType::float64); },
               __LINE__);
  if (last) dst[3] = 6;
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "vertex ids < n_vertices" : "failed on rank",
               [&] { gpuml::Graph(ctx, 6, sv, tv, nullptr); }, __LINE__);
  dst[3] = 4;
  gpuml::Graph graph(ctx, 6, sv, tv, nullptr);
  const gpuml::ArrayView ov = gpuml::host_view(out.data(), 6);
  if (last) personalization[1] = 2.0;
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on personalization",
               [&] { graph.pagerank(&pv, nullptr, nullptr, gpuml::PageRankParams{}, ov); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, "disagree on tol",
               [&] { graph.pagerank(nullptr, nullptr, nullptr, other_tol, ov); }, __LINE__);
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "alpha must be in (0, 1)" : "failed on rank",
               [&] { graph.pagerank(nullptr, nullptr, nullptr, bad_alpha, ov); }, __LINE__);
  std::vector<double> short_p(last ? 5 : 6, 1.0);
  const gpuml::ArrayView sp = gpuml::host_view(short_p.data(), static_cast<int64_t>(short_p.size()));
  expect_error(gpuml::ErrorCode::invalid_argument, last ? "personalization has length 5" : "failed on rank",
               [&] { graph.pagerank(&sp, nullptr, nullptr, gpuml::PageRankParams{}, ov); }, __LINE__);
  std::vector<double> from_graph(6);
  personalization.assign(6, 1.0);
  personalization[1] = 5.0;
  graph.pagerank(&pv, nullptr, nullptr, gpuml::PageRankParams{}, gpuml::host_view(from_graph.data(), 6));
  CHECK(from_graph == out, "the graph's ranks after the errors differ from pagerank's");
}

// gpuml_context_attach_mpi on a CUDA context: NCCL bootstrapped over MPI (run with 1 rank: NCCL
// refuses two ranks on one GPU). Each rank takes the GPU of its local rank. A KMeans fit under
// the communicator equals the fit without one, bit for bit. Returns 77 (skipped) with no GPU.
int test_cuda_nccl(gpuml::Comm& comm, uint64_t data_seed) {
  const int n_gpus = gpuml::cuda_device_count();
  const char* require = std::getenv("GPUML_REQUIRE_CUDA");
  if (n_gpus == 0 && !(require != nullptr && std::string(require) == "1")) {
    std::printf("rank %d: skipped: no CUDA device\n", g_rank);
    return 77;
  }
  CHECK(n_gpus > 0, "GPUML_REQUIRE_CUDA=1 and no CUDA device");
  if (n_gpus == 0) return 0;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_rank = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  const std::string device = "cuda:" + std::to_string(local_rank % n_gpus);
  gpuml_context_t ctx = nullptr, plain = nullptr;
  CHECK(gpuml_context_create(device.c_str(), &ctx) == GPUML_OK, "context_create: %s", gpuml_last_error());
  CHECK(gpuml_context_create(device.c_str(), &plain) == GPUML_OK, "context_create: %s", gpuml_last_error());
  if (!gpuml::built_with_nccl()) {
    CHECK(gpuml_context_attach_mpi(ctx) == GPUML_ERROR_UNSUPPORTED && std::strstr(gpuml_last_error(), "NCCL") != nullptr,
          "attach_mpi without NCCL: %s", gpuml_last_error());
    gpuml_context_free(ctx);
    gpuml_context_free(plain);
    return 0;
  }
  CHECK(gpuml_context_attach_mpi(ctx) == GPUML_OK, "attach_mpi (CUDA): %s", gpuml_last_error());
  int32_t rank = -1, n_ranks = -1;
  CHECK(gpuml_context_rank(ctx, &rank, &n_ranks) == GPUML_OK && rank == comm.rank() && n_ranks == comm.size(),
        "after attaching: rank %d of %d", rank, n_ranks);
  CHECK(gpuml_context_attach_mpi(ctx) == GPUML_ERROR_INVALID_ARGUMENT, "attaching twice: %s", gpuml_last_error());
  if (comm.size() == 1) {  // the plain fit sees every row only with one rank
    const int64_t n = 4001, d = 5, k = 6;
    const std::vector<double> rows = make_rows(data_seed, n, d, k);
    std::vector<double> centers[2];
    gpuml_context_t contexts[2] = {plain, ctx};
    for (int i = 0; i < 2; ++i) {
      gpuml_estimator_t est = nullptr;
      CHECK(gpuml_estimator_create("kmeans", "{\"n_clusters\": 6, \"random_state\": 5}", &est) == GPUML_OK, "%s",
            gpuml_last_error());
      gpuml_array_t X = {const_cast<double*>(rows.data()), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 2, {n, d}, {d, 1}};
      CHECK(gpuml_estimator_fit(contexts[i], est, &X, nullptr, nullptr) == GPUML_OK, "fit: %s", gpuml_last_error());
      centers[i].assign(static_cast<std::size_t>(k * d), 0.0);
      gpuml_array_t out = {centers[i].data(), GPUML_FLOAT64, GPUML_DEVICE_CPU, 0, 2, {k, d}, {d, 1}};
      CHECK(gpuml_estimator_get_attribute(contexts[i], est, "cluster_centers_", &out) == GPUML_OK, "%s", gpuml_last_error());
      gpuml_estimator_free(est);
    }
    CHECK(std::memcmp(centers[0].data(), centers[1].data(), centers[0].size() * sizeof(double)) == 0,
          "KMeans under NCCL differs from the plain fit");
  }
  gpuml_context_free(ctx);
  gpuml_context_free(plain);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what != "comm" && what != "kmeans" && what != "linear" && what != "decomposition" && what != "logistic" &&
      what != "pagerank" && what != "forest" && what != "cuda") {
    std::fprintf(stderr, "usage: mpirun -np N %s comm|kmeans|linear|decomposition|logistic|pagerank|forest|cuda [cuda|nccl]\n",
                 argv[0]);
    return 2;
  }
  g_nccl = argc > 2 && std::string(argv[2]) == "nccl";
  const bool on_cuda = g_nccl || (argc > 2 && std::string(argv[2]) == "cuda");
  const bool over_gloo = argc > 2 && std::string(argv[2]) == "gloo";
  if (argc > 2 && !on_cuda && !over_gloo) {
    std::fprintf(stderr, "the second argument, if any, must be cuda, nccl or gloo; got %s\n", argv[2]);
    return 2;
  }
  try {
    std::shared_ptr<gpuml::Comm> world = gpuml::Comm::mpi_world();  // initializes MPI
    g_rank = world->rank();
    if (on_cuda) {
      const int n_gpus = gpuml::cuda_device_count();
      const char* require = std::getenv("GPUML_REQUIRE_CUDA");
      if (n_gpus == 0) {
        if (require != nullptr && std::string(require) == "1") {
          std::fprintf(stderr, "rank %d: GPUML_REQUIRE_CUDA=1 and no CUDA device\n", g_rank);
          return 1;
        }
        std::printf("rank %d: skipped: no CUDA device\n", g_rank);
        return 77;
      }
      MPI_Comm node;
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
      int local_rank = 0, local_size = 1;
      MPI_Comm_rank(node, &local_rank);
      MPI_Comm_size(node, &local_size);
      MPI_Comm_free(&node);
      if (g_nccl && local_size > n_gpus) {  // NCCL refuses two ranks on one GPU
        std::printf("rank %d: skipped: %d ranks on this node and %d GPU(s); NCCL needs one GPU per rank\n", g_rank,
                    local_size, n_gpus);
        return 77;
      }
      g_device = "cuda:" + std::to_string(local_rank % n_gpus);
      if (what == "comm" || what == "cuda") {
        std::fprintf(stderr, "`%s cuda`: the second argument is for the estimators' tests\n", what.c_str());
        return 2;
      }
    }
    if (over_gloo) {
      if (!gpuml::built_with_gloo()) {
        std::printf("rank %d: skipped: gpuml was built without Gloo\n", g_rank);
        return 77;
      }
      if (what == "cuda") {
        std::fprintf(stderr, "`cuda gloo`: the second argument is for the estimators' tests and comm\n");
        return 2;
      }
      // Rank 0 makes the rendezvous directory; MPI carries its name (as int32 words) to the others.
      int32_t words[64] = {};
      if (g_rank == 0) {
        std::string pattern = (std::filesystem::temp_directory_path() / "gpuml-gloo-XXXXXX").string();
        if (pattern.size() < sizeof(words) && mkdtemp(pattern.data()) != nullptr) std::memcpy(words, pattern.c_str(), pattern.size());
      }
      world->broadcast(words, 64, 0);
      g_gloo_dir.assign(reinterpret_cast<const char*>(words), strnlen(reinterpret_cast<const char*>(words), sizeof(words)));
      if (g_gloo_dir.empty()) {
        std::fprintf(stderr, "rank %d: rank 0 could not make a rendezvous directory\n", g_rank);
        return 1;
      }
    }
    if (what == "comm" && over_gloo) {
      test_comm(*gloo_world(world->size()));
    } else if (what == "comm") {
      test_comm(*world);
      // Any communicator, by its Fortran handle: here a split of the world into even and odd ranks.
      MPI_Comm half;
      MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &half);
      std::shared_ptr<gpuml::Comm> sub = gpuml::Comm::mpi_from_fortran(MPI_Comm_c2f(half));
      CHECK(sub->size() == (world->size() + 1 - g_rank % 2) / 2 && sub->rank() == g_rank / 2, "split: rank %d of %d",
            sub->rank(), sub->size());
      int64_t one = 1;
      sub->allreduce_sum(&one, 1);
      CHECK(one == sub->size(), "allreduce over the split: %lld", static_cast<long long>(one));
      sub.reset();
      MPI_Comm_free(&half);
    } else {
      // Fresh data each run; rank 0 draws the seed and prints it (GPUML_TEST_SEED replays one).
      int64_t seed = static_cast<int64_t>(std::random_device{}() >> 1);
      if (const char* fixed = std::getenv("GPUML_TEST_SEED")) seed = std::atoll(fixed);
      world->broadcast(&seed, 1, 0);
      if (g_rank == 0) std::printf("data seed %lld (GPUML_TEST_SEED=%lld replays it)\n", static_cast<long long>(seed),
                                   static_cast<long long>(seed));
      if (what == "cuda") {
        if (test_cuda_nccl(*world, static_cast<uint64_t>(seed)) == 77) return 77;
      } else if (what == "kmeans") {
        if (over_gloo) test_c_abi_gloo(*world, static_cast<uint64_t>(seed));
        else test_c_abi(*world, static_cast<uint64_t>(seed));
        test_kmeans(*world, static_cast<uint64_t>(seed));
      } else if (what == "linear") {
        test_linear(*world, static_cast<uint64_t>(seed));
      } else if (what == "logistic") {
        test_logistic(*world, static_cast<uint64_t>(seed));
      } else if (what == "pagerank") {
        test_pagerank(*world, static_cast<uint64_t>(seed));
      } else if (what == "forest") {
        test_forest(*world, static_cast<uint64_t>(seed));
      } else {
        test_decomposition(*world, static_cast<uint64_t>(seed));
      }
    }
    world->barrier();
    if (!g_gloo_dir.empty() && g_rank == 0) std::filesystem::remove_all(g_gloo_dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: unexpected exception: %s\n", g_rank, e.what());
    ++g_failures;
  }
  std::printf("rank %d: %s on %s%s: %s (%d failed checks)\n", g_rank, what.c_str(), g_device.c_str(),
              g_nccl ? " over NCCL" : !g_gloo_dir.empty() ? " over Gloo" : "",
              g_failures ? "FAILED" : "passed", g_failures);
  std::fflush(stdout);
  return g_failures ? 1 : 0;
}
