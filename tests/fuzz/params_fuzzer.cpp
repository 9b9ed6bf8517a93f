// libFuzzer target for the params JSON of gpuml_estimator_create (the C ABI): the first input
// byte picks the estimator kind, the rest is the JSON text. Seeds are real params strings
// (make_seeds). Invalid params must be a named status with a message; valid ones must survive
// the library's own round trips: get_params -> create gives the same params, and an unfitted
// model serializes and loads back with them. Each input runs on a thread with a 256 KB stack, so
// that recursion over the caller's JSON (nesting is the dictionary's "[[[[" and "{\"a\":{") runs
// out of stack at the depths a 64 KB input reaches, as it would on a small worker thread.
#include <pthread.h>

#include <string>

#include "fuzz_util.hpp"

using namespace gpuml_fuzz;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OMP_NUM_THREADS", "1", 0);
  return 0;
}

namespace {

void run_one(const uint8_t* data, std::size_t size) {
  const std::string& kind = kinds()[data[0] % kinds().size()];
  const std::string json(reinterpret_cast<const char*>(data + 1), size - 1);  // c_str() stops at a NUL

  gpuml_estimator_t est = nullptr;
  gpuml_status_t st = gpuml_estimator_create(kind.c_str(), json.c_str(), &est);
  expect_named_error(st, "gpuml_estimator_create");
  if (st != GPUML_OK) {
    if (est != nullptr) fail("gpuml_estimator_create failed but left *out non-NULL");
    if (st != GPUML_ERROR_INVALID_ARGUMENT) fail("bad params gave a status other than invalid_argument");
    return;
  }
  const std::string params = params_or_fail(est);

  gpuml_estimator_t again = nullptr;
  if (gpuml_estimator_create(kind.c_str(), params.c_str(), &again) != GPUML_OK)
    fail("the params get_params returned are refused by create:", params);
  if (params_or_fail(again) != params) fail("get_params -> create -> get_params changed the params:", params);
  gpuml_estimator_free(again);

  const std::vector<uint8_t> bytes = serialize_or_fail(est);
  gpuml_estimator_t loaded = nullptr;
  if (gpuml_estimator_deserialize(bytes.data(), bytes.size(), &loaded) != GPUML_OK)
    fail("an unfitted model with these params does not load:", params);
  if (params_or_fail(loaded) != params) fail("serialization changed the params:", params);
  gpuml_estimator_free(loaded);
  gpuml_estimator_free(est);
}

constexpr std::size_t kStackBytes = 256 * 1024;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  struct Input {
    const uint8_t* data;
    std::size_t size;
  } input{data, size};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, kStackBytes) != 0) fail("pthread_attr");
  pthread_t thread;
  auto body = [](void* p) -> void* {
    const auto* in = static_cast<const Input*>(p);
    run_one(in->data, in->size);
    return nullptr;
  };
  if (pthread_create(&thread, &attr, body, &input) != 0) fail("pthread_create");
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  return 0;
}
