#pragma once
// Values read from JSON that a user or a damaged file may have written (checkpoint manifests).
// nlohmann's get<int>() converts a float, or an integer out of the target's range, with a plain
// cast: undefined behaviour for 9.2e19 read as an unsigned (found by the checkpoint fuzz target),
// and its at() throws "[json.exception.out_of_range.403] key 'x' not found", which names neither
// the file nor the key's path. These check presence, the JSON type and the range first, and throw
// a one-line DataError naming both.
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

// `object`'s member at the dotted key path `path` ("run_state.tracker": the member "tracker" of
// `object`, which is run_state); DataError "FILE: PATH is missing" when `object` has no such
// member and "FILE: PARENT is not an object" when `object` is not an object.
inline const nlohmann::json& json_at(const nlohmann::json& object, const std::string& file, const std::string& path) {
  const std::size_t dot = path.rfind('.');
  const std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
  if (dot != std::string::npos) {
    GNNPIPE_CHECK_DATA(object.is_object(), "{}: {} is not an object", file, path.substr(0, dot));
  } else {
    GNNPIPE_CHECK_DATA(object.is_object(), "{}: not a JSON object", file);
  }
  const auto it = object.find(key);
  GNNPIPE_CHECK_DATA(it != object.end(), "{}: {} is missing", file, path);
  return *it;
}

// `value` as a string; DataError "WHAT: is not a string" otherwise.
inline std::string json_string(const nlohmann::json& value, const std::string& what) {
  GNNPIPE_CHECK_DATA(value.is_string(), "{}: is not a string", what);
  return value.get<std::string>();
}

// `value` as a double (a JSON number); DataError "WHAT: is not a number" otherwise.
inline double json_number(const nlohmann::json& value, const std::string& what) {
  GNNPIPE_CHECK_DATA(value.is_number(), "{}: is not a number", what);
  return value.get<double>();
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

// A JSON object at `path` of `file` ("" for the file's top level), read member by member with the
// checks above: every message names the file and the member's whole path.
struct JsonSection {
  const nlohmann::json& object;
  std::string file, path;

  std::string key_path(const std::string& key) const { return path.empty() ? key : path + "." + key; }
  std::string what(const std::string& key) const { return file + ": " + key_path(key); }
  const nlohmann::json& at(const std::string& key) const { return json_at(object, file, key_path(key)); }
  JsonSection section(const std::string& key) const { return {at(key), file, key_path(key)}; }
  template <class T>
  T integer(const std::string& key) const {
    return json_integer<T>(at(key), what(key));
  }
  template <class T>
  std::vector<T> integers(const std::string& key) const {
    return json_integers<T>(at(key), what(key));
  }
  std::string string(const std::string& key) const { return json_string(at(key), what(key)); }
  double number(const std::string& key) const { return json_number(at(key), what(key)); }
};

}  // namespace gnnpipe::experiments
