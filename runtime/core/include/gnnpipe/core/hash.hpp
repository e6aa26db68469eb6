#pragma once
// A fast 64-bit content hash for checksums in provenance records (dataset arrays of gigabytes):
// 8 bytes per step with a multiply-rotate mix, the tail byte by byte, the length folded in. Not
// cryptographic; stable across runs and machines of the same endianness (little-endian here).
#include <cstddef>
#include <cstdint>

namespace gnnpipe::core {

uint64_t hash64(const void* bytes, std::size_t size, uint64_t seed = 0);

}  // namespace gnnpipe::core
