#include "gnnpipe/core/build_info.hpp"

#include "backend.hpp"
#include "build_config.hpp"  // generated: GNNPIPE_VERSION_STRING, GNNPIPE_CUDA_ARCHS_STRING

// GNNPIPE_BUILD_TYPE is a compile definition of this file (it depends on the configuration).
namespace gnnpipe::core {

const BuildInfo& build_info() {
  static const BuildInfo info{
      GNNPIPE_VERSION_STRING,
      GNNPIPE_BUILD_TYPE,
      backend::compiled(),
      backend::compiled() ? GNNPIPE_CUDA_ARCHS_STRING : "",
#if defined(__clang__)
      "clang " __clang_version__,
#elif defined(__GNUC__)
      "g++ " __VERSION__,
#else
      "unknown",
#endif
  };
  return info;
}

}  // namespace gnnpipe::core
