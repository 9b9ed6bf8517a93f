// Distributed training with gpuml over MPI: run as `mpirun -np N train_mpi`.
//
// Every rank makes (here: draws) its own rows, attaches the MPI communicator to its context,
// and calls the same fit; every rank ends with the same model, that of all ranks' rows, which
// rank 0 prints. Nothing here is MPI code: gpuml initializes MPI (and finalizes it at exit).
#include <cstdio>
#include <random>
#include <vector>

#include <gpuml/core/comm.hpp>
#include <gpuml/gpuml.hpp>

int main() {
  try {
    gpuml::Context ctx = gpuml::Context::cpu();
    ctx.attach_comm(gpuml::Comm::mpi_world());  // collective: every rank attaches
    const int rank = ctx.comm().rank(), size = ctx.comm().size();

    // This rank's rows: 1000 + 300 * rank of them (uneven), 4 features around 3 centers, and a
    // target y = 2 x0 - x1 + 0.5 x3 + 1 + noise.
    const int64_t n = 1000 + 300 * rank, d = 4;
    std::mt19937_64 gen(12345 + rank);
    std::normal_distribution<double> noise(0.0, 1.0);
    const double centers[3][4] = {{0, 0, 0, 0}, {8, 8, 0, 0}, {0, 8, -8, 4}};
    std::vector<double> X(n * d), y(n);
    for (int64_t i = 0; i < n; ++i) {
      const int c = static_cast<int>(gen() % 3);
      for (int64_t j = 0; j < d; ++j) X[i * d + j] = centers[c][j] + noise(gen);
      y[i] = 2 * X[i * d] - X[i * d + 1] + 0.5 * X[i * d + 3] + 1 + 0.1 * noise(gen);
    }

    gpuml::KMeansParams kp;
    kp.n_clusters = 3;
    kp.random_state = 0;
    gpuml::KMeans km(kp);
    km.fit(ctx, gpuml::host_view(X.data(), n, d));
    gpuml::LinearRegression lr;
    lr.fit(ctx, gpuml::host_view(X.data(), n, d), gpuml::host_view(y.data(), n));

    if (rank == 0) {
      std::printf("%d ranks; KMeans inertia %.6g after %lld iterations; centers:\n", size, km.inertia(),
                  static_cast<long long>(km.n_iter()));
      const double* c = km.cluster_centers().as<const double>();
      for (int k = 0; k < 3; ++k) std::printf("  [% .4f % .4f % .4f % .4f]\n", c[4 * k], c[4 * k + 1], c[4 * k + 2], c[4 * k + 3]);
      const double* b = lr.coef().as<const double>();
      std::printf("LinearRegression coef [% .4f % .4f % .4f % .4f], intercept %.4f\n", b[0], b[1], b[2], b[3],
                  lr.intercept().as<const double>()[0]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mpi: %s\n", e.what());
    return 1;
  }
  return 0;
}
