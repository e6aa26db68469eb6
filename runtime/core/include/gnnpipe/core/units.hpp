#pragma once
// Byte sizes as people write them in configs ("16GiB", "512MB", "1e9", "8 GiB").
#include <cstdint>
#include <string>
#include <string_view>

namespace gnnpipe::core {

// Parses a non-negative byte count with an optional unit: B, KB/MB/GB/TB (powers of 1000),
// KiB/MiB/GiB/TiB (powers of 1024); units are case-insensitive except that "b" alone means
// bytes. Throws ConfigError with the text on anything else or on overflow.
uint64_t parse_bytes(std::string_view text);

// Formats bytes for people with binary units: "16.00 GiB", "512 B".
std::string format_bytes(uint64_t bytes);

}  // namespace gnnpipe::core
