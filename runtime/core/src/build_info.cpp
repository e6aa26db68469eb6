#include "gnnpipe/core/build_info.hpp"

#include "backend.hpp"
#include "build_config.hpp"  // generated: GNNPIPE_VERSION_STRING, GNNPIPE_CUDA_ARCHS_STRING
#include "git_commit.hpp"    // generated at every build: GNNPIPE_GIT_COMMIT

#include <fmt/format.h>

#include <fstream>

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
      GNNPIPE_GIT_COMMIT,
  };
  return info;
}

namespace {
std::string cuda_version_text(int v) { return v > 0 ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : std::string(); }
}  // namespace

MachineInfo machine_info() {
  MachineInfo m;
  const backend::Versions v = backend::versions();
  m.cuda_runtime = cuda_version_text(v.runtime);
  m.cuda_driver = cuda_version_text(v.driver);
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) m.cpu_model = line.substr(line.find_first_not_of(" \t", colon + 1));
    break;
  }
  return m;
}

}  // namespace gnnpipe::core
