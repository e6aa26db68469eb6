#include "gnnpipe/core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::core {
namespace {

struct Unit {
  std::string_view name;  // lower case
  double factor;
};

constexpr std::array<Unit, 10> kUnits{{{"", 1.0},
                                       {"b", 1.0},
                                       {"kb", 1e3},
                                       {"mb", 1e6},
                                       {"gb", 1e9},
                                       {"tb", 1e12},
                                       {"kib", 1024.0},
                                       {"mib", 1024.0 * 1024},
                                       {"gib", 1024.0 * 1024 * 1024},
                                       {"tib", 1024.0 * 1024 * 1024 * 1024}}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

uint64_t parse_bytes(std::string_view text) {
  const std::string_view s = trim(text);
  double value = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  GNNPIPE_CHECK_CONFIG(ec == std::errc() && end != s.data(),
                       "'{}' is not a byte size (examples: 16GiB, 512MB, 1e9)", text);
  std::string unit(trim(std::string_view(end, static_cast<std::size_t>(s.data() + s.size() - end))));
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto it = std::find_if(kUnits.begin(), kUnits.end(), [&](const Unit& u) { return u.name == unit; });
  GNNPIPE_CHECK_CONFIG(it != kUnits.end(), "'{}' has unknown unit '{}' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)",
                       text, unit);
  const double bytes = value * it->factor;
  GNNPIPE_CHECK_CONFIG(std::isfinite(bytes) && bytes >= 0.0 && bytes < 1.8e19, "'{}' is not a byte size in range",
                       text);
  return static_cast<uint64_t>(std::llround(bytes));
}

std::string format_bytes(uint64_t bytes) {
  constexpr std::array<const char*, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kNames.size()) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", value, kNames[unit]);
}

}  // namespace gnnpipe::core
