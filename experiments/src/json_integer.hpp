#pragma once
// Integers read from JSON that a user or a damaged file may have written (checkpoint manifests).
// nlohmann's get<int>() converts a float, or an integer out of the target's range, with a plain
// cast: undefined behaviour for 9.2e19 read as an unsigned (found by the checkpoint fuzz target).
// These check the JSON type and the range first.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::experiments {

// `value` as T; DataError "WHAT: VALUE is not an integer in [MIN, MAX]" otherwise.
template <class T>
T json_integer(const nlohmann::json& value, const std::string& what) {
  if (value.is_number_unsigned()) {
    const auto u = value.get<uint64_t>();
    if (std::in_range<T>(u)) return static_cast<T>(u);
  } else if (value.is_number_integer()) {
    const auto s = value.get<int64_t>();
    if (std::in_range<T>(s)) return static_cast<T>(s);
  }
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 40) + "...";
  GNNPIPE_THROW(DataError, "{}: {} is not an integer in [{}, {}]", what, text, std::numeric_limits<T>::min(),
                std::numeric_limits<T>::max());
}

// An array of such integers.
template <class T>
std::vector<T> json_integers(const nlohmann::json& value, const std::string& what) {
  GNNPIPE_CHECK_DATA(value.is_array(), "{}: not an array", what);
  std::vector<T> out;
  out.reserve(value.size());
  for (const nlohmann::json& item : value) out.push_back(json_integer<T>(item, what));
  return out;
}

}  // namespace gnnpipe::experiments
