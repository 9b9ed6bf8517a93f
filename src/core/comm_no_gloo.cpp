// Comm::gloo in a build without Gloo (GPUML_GLOO=OFF or Gloo not found): it says so with
// ErrorCode::unsupported. (Not compiled when Gloo is on; see comm_gloo.cpp.)
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

namespace {
[[noreturn]] void no_gloo() {
  throw_error(ErrorCode::unsupported,
              "gpuml was built without Gloo (GPUML_GLOO=OFF, or Gloo was not found at build time): Gloo communicators "
              "are unavailable");
}
}  // namespace

std::shared_ptr<Comm> Comm::gloo(int, int, const GlooOptions&) { no_gloo(); }
std::shared_ptr<Comm> Comm::gloo(int, int, GlooStore&, const GlooOptions&) { no_gloo(); }

}  // namespace gpuml
