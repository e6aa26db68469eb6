#pragma once
// What this binary is: version, build type, whether the CUDA backend was compiled in and for
// which architectures. Printed by `gnnpipe --version` and recorded in run summaries.
#include <string>

namespace gnnpipe::core {

struct BuildInfo {
  std::string version;
  std::string build_type;
  bool cuda = false;
  std::string cuda_archs;  // e.g. "75;90"; empty without CUDA
  std::string compiler;
};

const BuildInfo& build_info();

}  // namespace gnnpipe::core
