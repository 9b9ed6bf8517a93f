#pragma once
// Shared helpers for the C++ tests: fresh random inputs whose seed is printed on failure,
// Gaussian blobs, the CUDA skip rule, and a small CSV reader for the bundled data sets.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gpuml/gpuml.hpp"

namespace gpuml::test {

// A seed from std::random_device, or from the environment variable GPUML_TEST_SEED when it is
// set (to replay a failure).
uint64_t fresh_seed();

// True when GPUML_REQUIRE_CUDA=1: a missing GPU is then a failure, not a skip.
bool cuda_required();

// Gaussian blobs: k centers drawn uniformly in [-center_box, center_box]^d, at least
// min_center_distance apart, and n rows, each a center plus N(0, spread^2) noise. Row i
// belongs to blob i % k, so every blob has rows.
struct Blobs {
  int64_t n = 0, d = 0, k = 0;
  std::vector<double> X;        // n x d, row-major
  std::vector<int32_t> labels;  // n
  std::vector<double> centers;  // k x d
};
Blobs make_blobs(std::mt19937_64& rng, int64_t n, int64_t d, int64_t k, double spread, double center_box,
                 double min_center_distance = 0.0);

// Uniform integer in [lo, hi].
int64_t uniform_int(std::mt19937_64& rng, int64_t lo, int64_t hi);
double uniform_real(std::mt19937_64& rng, double lo, double hi);

template <typename To, typename From>
std::vector<To> cast_vector(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}

// A numeric CSV file with a header line.
struct Table {
  std::vector<std::string> columns;
  std::vector<double> values;  // rows x columns, row-major
  int64_t rows = 0;
  int64_t column_index(const std::string& name) const;  // -1 when absent
};
// Throws std::runtime_error when the file cannot be read or a cell is not a number.
Table read_csv(const std::string& path);
// Where the bundled data sets live: $GPUML_DATASETS, else GPUML_DATASETS_DIR (../shared/datasets).
std::string datasets_dir();

// Sets an environment variable for a scope (value nullptr: unsets it), then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value) setenv(name, value, 1); else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1); else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace gpuml::test

// Declares `std::mt19937_64 name` seeded by fresh_seed(); the seed is attached to every failure
// message of the enclosing scope so that GPUML_TEST_SEED=<seed> replays it.
#define GPUML_FRESH_RNG(name)                                                             \
  const uint64_t name##_seed = ::gpuml::test::fresh_seed();                              \
  SCOPED_TRACE("random seed " + std::to_string(name##_seed) + " (replay: GPUML_TEST_SEED=" + \
               std::to_string(name##_seed) + ")");                                       \
  std::mt19937_64 name(name##_seed)

// In a test body: declares `gpuml::test::Table name`, the bundled data set `relative` (a path
// under datasets_dir()), or skips the test when it cannot be read.
#define GPUML_DATASET_OR_SKIP(name, relative)                                              \
  ::gpuml::test::Table name;                                                               \
  try {                                                                                    \
    name = ::gpuml::test::read_csv(::gpuml::test::datasets_dir() + "/" + (relative));      \
  } catch (const std::exception& gpuml_dataset_error_) {                                   \
    GTEST_SKIP() << "data set not available: " << gpuml_dataset_error_.what();             \
  }

// In a test body: declares `gpuml::Context name` on CUDA device 0, or skips the test when no
// device is present (fails instead when GPUML_REQUIRE_CUDA=1). A macro because GTEST_SKIP and
// FAIL return from the function they are written in.
#define GPUML_CUDA_CONTEXT_OR_SKIP(name)                                                   \
  if (::gpuml::cuda_device_count() == 0) {                                                 \
    if (::gpuml::test::cuda_required()) {                                                  \
      FAIL() << "no CUDA device, but GPUML_REQUIRE_CUDA=1 requires one";                    \
    } else {                                                                               \
      GTEST_SKIP() << "no CUDA device";                                                    \
    }                                                                                      \
  }                                                                                        \
  ::gpuml::Context name = ::gpuml::Context::cuda(0)

// Expects `statement` to throw gpuml::Error with `code`.
#define GPUML_EXPECT_ERROR(statement, expected_code)                                             \
  do {                                                                                           \
    try {                                                                                        \
      statement;                                                                                 \
      ADD_FAILURE() << "expected gpuml::Error(" << ::gpuml::error_code_name(expected_code)       \
                    << ") from: " #statement;                                                    \
    } catch (const ::gpuml::Error& gpuml_error_) {                                               \
      EXPECT_EQ(gpuml_error_.code(), expected_code)                                              \
          << "got " << ::gpuml::error_code_name(gpuml_error_.code()) << ": " << gpuml_error_.what() \
          << "\n  from: " #statement;                                                            \
    }                                                                                            \
  } while (0)
