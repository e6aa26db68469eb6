#include "gnnpipe/core/process.hpp"

#include <fstream>
#include <string>

namespace gnnpipe::core {

uint64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      uint64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

}  // namespace gnnpipe::core
