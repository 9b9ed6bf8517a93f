// Comm::gloo in a build without Gloo (GPUML_GLOO=OFF or Gloo not found): it says so with
// ErrorCode::unsupported. (Not compiled when Gloo is on; see comm_gloo.cpp.)
#include "gpuml/core/comm.hpp"
#include "gpuml/core/error.hpp"

namespace gpuml {

std::shared_ptr<Comm> Comm::gloo(int, int, const GlooOptions&) {
  throw_error(ErrorCode::unsupported,
              "gpuml was built without Gloo (GPUML_GLOO=OFF, or Gloo was not found at build time): Gloo communicators "
              "are unavailable");
}

}  // namespace gpuml
