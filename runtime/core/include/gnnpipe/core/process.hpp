#pragma once
// Facts about the running process, for reports.
#include <cstdint>

namespace gnnpipe::core {

// Peak resident set size of this process in bytes (VmHWM of /proc/self/status); 0 when the
// system does not report it.
uint64_t peak_rss_bytes();

}  // namespace gnnpipe::core
