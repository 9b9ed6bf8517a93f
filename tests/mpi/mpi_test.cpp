// Distributed training over MPI, run by ctest under `mpirun -np 2` (label mpi; any rank count
// works). `mpi_test comm` checks every Comm operation; `mpi_test kmeans` checks that KMeans fitted
// on every rank's own rows (an uneven split of fresh random rows) equals, on every rank, a
// 1-process fit on all rows with the same seed, and the collective error paths.
// A failed check prints the rank and the line and makes the program exit non-zero.
// MPI's C API only (Open MPI's and MPICH's mpi.h would pull in the deprecated C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpuml/core/comm.hpp"
#include "gpuml/gpuml.h"
#include "gpuml/gpuml.hpp"

namespace {

int g_rank = -1;
int g_failures = 0;

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

void expect_same_model(const Model& got, const Model& want, double rtol, const char* what) {
  CHECK(got.n_iter == want.n_iter, "%s: n_iter %lld, 1-process fit %lld", what, static_cast<long long>(got.n_iter),
        static_cast<long long>(want.n_iter));
  double scale = 0;
  for (double v : want.centers) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < want.centers.size(); ++i)
    CHECK(std::abs(got.centers[i] - want.centers[i]) <= rtol * scale,  // rtol relative to the largest coordinate
          "%s: center value %zu is %.17g, 1-process fit %.17g (rtol %g)", what, i, got.centers[i], want.centers[i], rtol);
  CHECK(std::abs(got.inertia - want.inertia) <= rtol * want.inertia, "%s: inertia %.17g, 1-process fit %.17g (rtol %g)",
        what, got.inertia, want.inertia, rtol);
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
  gpuml::Context single = gpuml::Context::cpu();  // no communicator: one process, all rows
  const Model reference = fit_kmeans<T>(single, params, all, n, d, weighted ? &weights_all : nullptr, &all_labels);
  expect_same_model(distributed, reference, rtol, what);
  expect_same_on_every_rank(comm, distributed, what);
  int64_t differ = 0;
  for (int64_t i = 0; i < e - b; ++i) differ += local_labels[i] != all_labels[b + i];
  CHECK(differ == 0, "%s: %lld of this rank's labels differ from the 1-process fit's", what, static_cast<long long>(differ));
}

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
  gpuml_context_free(ctx);
}

void test_kmeans(gpuml::Comm& comm, uint64_t data_seed) {
  gpuml::Context ctx = gpuml::Context::cpu();
  ctx.attach_comm(gpuml::Comm::mpi_world());
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

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what != "comm" && what != "kmeans") {
    std::fprintf(stderr, "usage: mpirun -np N %s comm|kmeans\n", argv[0]);
    return 2;
  }
  try {
    std::shared_ptr<gpuml::Comm> world = gpuml::Comm::mpi_world();  // initializes MPI
    g_rank = world->rank();
    if (what == "comm") {
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
      test_c_abi(*world, static_cast<uint64_t>(seed));
      test_kmeans(*world, static_cast<uint64_t>(seed));
    }
    world->barrier();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: unexpected exception: %s\n", g_rank, e.what());
    ++g_failures;
  }
  std::printf("rank %d: %s: %s (%d failed checks)\n", g_rank, what.c_str(), g_failures ? "FAILED" : "passed", g_failures);
  std::fflush(stdout);
  return g_failures ? 1 : 0;
}
