// The context's device memory limit (Context::set_memory_limit): beyond it a fit fails with
// out_of_memory, the context then does smaller work, and failed fits leak nothing (the
// context's device bytes come back to where they were). On a GPU; the CPU side is that the
// limit is refused there.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "gpuml/gpuml.hpp"
#include "test_util.hpp"

namespace gpuml {
namespace {

using test::uniform_real;

TEST(MemoryLimit, CpuContextsRefuseIt) {
  Context cpu = Context::cpu();
  try {
    cpu.set_memory_limit(1 << 20);
    FAIL() << "a CPU context took a device memory limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
  EXPECT_EQ(cpu.memory_in_use(), 0);
  EXPECT_EQ(cpu.memory_limit(), 0);
}

std::vector<float> random_rows(std::mt19937_64& rng, int64_t n, int64_t d) {
  std::vector<float> X(static_cast<std::size_t>(n * d));
  for (float& v : X) v = static_cast<float>(uniform_real(rng, -1.0, 1.0));
  return X;
}

TEST(MemoryLimitGpu, FitsBeyondTheLimitFailAndLeaveTheContextUsable) {
  GPUML_CUDA_CONTEXT_OR_SKIP(gpu);
  GPUML_FRESH_RNG(rng);
  EXPECT_THROW(gpu.set_memory_limit(-1), Error);
  const int64_t baseline = gpu.memory_in_use();
  const int64_t d = 32, big_n = 400000;  // X alone: 51 MB on the device
  const std::vector<float> big = random_rows(rng, big_n, d), small = random_rows(rng, 2000, d);
  KMeansParams params;
  params.n_clusters = 8;
  params.n_init = 1;
  params.random_state = rng();
  params.max_iter = 10;  // the fits' memory is the point, not their convergence (and racecheck runs this test too)
  gpu.set_memory_limit(baseline + (16 << 20));  // 16 MB more than the context holds now
  EXPECT_EQ(gpu.memory_limit(), baseline + (16 << 20));
  for (int attempt = 0; attempt < 20; ++attempt) {
    {
      KMeans km(params);
      try {
        km.fit(gpu, host_view(big.data(), big_n, d));
        FAIL() << "a fit of 51 MB of X went through a 16 MB limit";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::out_of_memory) << e.what();
        EXPECT_NE(std::string(e.what()).find("memory limit"), std::string::npos) << e.what();
      }
    }
    gpu.synchronize();
    EXPECT_EQ(gpu.memory_in_use(), baseline) << "attempt " << attempt << ": a failed fit left device buffers behind";
  }
  // Smaller work fits under the same limit, and gives what an unlimited context gives.
  KMeans limited(params), free_run(params);
  limited.fit(gpu, host_view(small.data(), 2000, d));
  gpu.set_memory_limit(0);
  free_run.fit(gpu, host_view(small.data(), 2000, d));
  const HostArray& a = limited.cluster_centers();
  const HostArray& b = free_run.cluster_centers();
  ASSERT_EQ(a.spec().shape[0], b.spec().shape[0]);
  for (int64_t i = 0; i < a.spec().shape[0] * d; ++i) EXPECT_EQ(a.as<float>()[i], b.as<float>()[i]);  // same seed: same bits
  // Without the limit the big fit goes through.
  {
    KMeans unlimited(params);
    unlimited.fit(gpu, host_view(big.data(), big_n, d));
    EXPECT_EQ(unlimited.cluster_centers().spec().shape[0], 8);
  }
  gpu.synchronize();
  EXPECT_GE(gpu.memory_in_use(), baseline);  // the two small models may keep device copies
}

}  // namespace
}  // namespace gpuml
