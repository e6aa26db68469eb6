#pragma once
// `gnnpipe doctor`: checks that this machine can run gnnpipe and says how fast it moves data.
// For each device asked for it creates streams and events, allocates host, pinned and device
// buffers, runs fill and copy round trips across two streams ordered by an event, verifies every
// byte, and measures copy bandwidth (on a GPU: pinned and pageable host-to-device); it also
// checks the RNG against its known-answer vector. Prints a report to `out`.
#include <cstdint>
#include <iosfwd>
#include <vector>

#include "gnnpipe/core/device.hpp"

namespace gnnpipe::experiments {

struct DoctorOptions {
  std::vector<core::Device> devices;  // empty: cpu and every visible GPU
  uint64_t copy_bytes = 64ull << 20;  // size of the bandwidth test per direction
  int repeats = 5;                    // bandwidth = best of this many copies
};

struct DoctorReport {
  bool ok = true;
  int checks_passed = 0;
  int checks_failed = 0;
};

// Never throws for a failed check (it is reported and counted); throws ConfigError for bad options.
DoctorReport run_doctor(const DoctorOptions& options, std::ostream& out);

}  // namespace gnnpipe::experiments
