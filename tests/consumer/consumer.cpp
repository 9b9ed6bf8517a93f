// A tiny outside program: links the installed gpuml with find_package and fits KMeans.
#include <gpuml/gpuml.hpp>

#include <cstdio>
#include <random>
#include <vector>

int main() {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<double> noise(0.0, 0.1);
  std::vector<double> X;
  for (int i = 0; i < 200; ++i) {
    double c = (i % 2) ? 5.0 : -5.0;
    X.push_back(c + noise(rng));
    X.push_back(c + noise(rng));
  }
  gpuml::Context ctx = gpuml::Context::cpu();
  gpuml::KMeansParams p;
  p.n_clusters = 2;
  p.random_state = 0;
  gpuml::KMeans km(p);
  km.fit(ctx, gpuml::host_view(X.data(), 200, 2));
  const int32_t* labels = km.labels().as<int32_t>();
  for (int i = 2; i < 200; ++i)
    if (labels[i] != labels[i % 2]) { std::fprintf(stderr, "wrong cluster for row %d\n", i); return 1; }
  std::printf("consumer_cpp: inertia %.4f\n", km.inertia());
  return 0;
}
