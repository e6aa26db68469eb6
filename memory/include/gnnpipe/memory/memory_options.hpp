#pragma once
// The `memory:` section of an experiment (DESIGN §4, §5) as plain options with in-class defaults.
#include <cstdint>

namespace gnnpipe::memory {

struct MemoryOptions {
  // The device memory budget (YAML `limit`, e.g. 16GiB): the governor and allocator never exceed it.
  uint64_t limit_bytes = uint64_t{16} << 30;
};

}  // namespace gnnpipe::memory
