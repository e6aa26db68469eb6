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
  // `git rev-parse HEAD` of the source tree at build time, "-dirty" appended when tracked files
  // had changes; empty when the sources were not a git checkout (then `version` identifies them).
  std::string git_commit;
};

const BuildInfo& build_info();

// The machine a run ran on, for provenance records: CUDA runtime and driver versions as
// "13.0" (empty without CUDA or a driver) and the CPU model name of /proc/cpuinfo.
struct MachineInfo {
  std::string cuda_runtime, cuda_driver;
  std::string cpu_model;
};
MachineInfo machine_info();

}  // namespace gnnpipe::core
