#pragma once
// The memory.limit an OutOfBudget message names ("... fits from memory.limit 93.55 MiB under ..."),
// in bytes, rounded up past the message's two decimals. Parsed by hand: std::regex trips GCC 12's
// -Wmaybe-uninitialized in the ASan build (-O1 -Werror).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>

namespace gnnpipe::test {

inline std::size_t named_limit(const std::string& message) {
  const std::string lead = "fits from memory.limit ";
  const std::size_t at = message.find(lead);
  REQUIRE(at != std::string::npos);
  std::istringstream in(message.substr(at + lead.size()));
  double value = 0;
  std::string unit;
  REQUIRE(static_cast<bool>(in >> value >> unit));
  REQUIRE((unit == "B" || unit == "KiB" || unit == "MiB" || unit == "GiB"));
  const double scale = unit == "B" ? 1 : unit == "KiB" ? 1024.0 : unit == "MiB" ? 1024.0 * 1024 : 1024.0 * 1024 * 1024;
  return static_cast<std::size_t>(std::ceil((value + 0.005) * scale));
}

}  // namespace gnnpipe::test
