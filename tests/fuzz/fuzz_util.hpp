// Shared by the libFuzzer targets and the seed generator in tests/fuzz (scripts/fuzz builds them).
#pragma once
#include <gpuml/gpuml.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace gpuml_fuzz {

// Every estimator kind the C ABI creates (gpuml::estimator_kinds()); the params fuzzer's first
// input byte picks one of them.
inline const std::vector<std::string>& kinds() {
  static const std::vector<std::string> k = {
      "kmeans", "linear_regression", "ridge", "elastic_net", "lasso", "logistic_regression",
      "pca", "truncated_svd", "random_forest_classifier", "random_forest_regressor"};
  return k;
}

// A broken rule: print it and abort, which libFuzzer reports as a crash with the input saved.
[[noreturn]] inline void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "FUZZ FAILURE: %s %s\n(last error: %s)\n", what, detail.c_str(), gpuml_last_error());
  std::abort();
}

// A failed call must report a named status other than "internal" (which means an exception the
// library did not expect) and a message.
inline void expect_named_error(gpuml_status_t status, const char* call) {
  if (status == GPUML_OK) return;
  if (status == GPUML_ERROR_INTERNAL || status < 0 || status > GPUML_ERROR_NOT_CONVERGED)
    fail(call, "returned status " + std::to_string(static_cast<int>(status)));
  if (gpuml_last_error()[0] == '\0') fail(call, "failed with an empty gpuml_last_error()");
}

// The model format's checksum (64-bit FNV-1a over the payload), so that the fuzzer can repair
// mutated models and reach the payload parser behind the checksum.
inline uint64_t fnv1a64(const uint8_t* p, std::size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

constexpr std::size_t kModelHeaderBytes = 24;  // magic, version, flags, payload size

// Rewrites the payload size and checksum fields of a model buffer to match its bytes.
inline void repair_model(std::vector<uint8_t>& m) {
  if (m.size() < kModelHeaderBytes + 8) return;
  const uint64_t payload = m.size() - kModelHeaderBytes - 8;
  std::memcpy(m.data() + 16, &payload, 8);
  const uint64_t sum = fnv1a64(m.data() + kModelHeaderBytes, payload);
  std::memcpy(m.data() + kModelHeaderBytes + payload, &sum, 8);
}

inline std::vector<uint8_t> serialize_or_fail(gpuml_estimator_t est) {
  uint64_t size = 0;
  if (gpuml_estimator_serialized_size(est, &size) != GPUML_OK) fail("gpuml_estimator_serialized_size failed");
  std::vector<uint8_t> bytes(size);
  if (gpuml_estimator_serialize(est, bytes.data(), size) != GPUML_OK) fail("gpuml_estimator_serialize failed");
  return bytes;
}

inline std::string params_or_fail(gpuml_estimator_t est) {
  const char* json = nullptr;
  if (gpuml_estimator_get_params(est, &json) != GPUML_OK || json == nullptr) fail("gpuml_estimator_get_params failed");
  return json;
}

}  // namespace gpuml_fuzz
