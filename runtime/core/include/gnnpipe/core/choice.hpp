#pragma once
// parse_choice: the value of an enum whose to_string (found by argument-dependent lookup) spells a
// config text, for every module's option parsers. Otherwise a ConfigError naming the key, the text
// and every allowed spelling, listed from the values themselves so that a message cannot drift
// from the enum:
//   parse_choice(text, "memory.policy", {kSplit, kResample, kCut}, "a memory policy")
//     -> "memory.policy: 'drop' is not a memory policy (allowed: split, resample, cut)"
//   parse_choice(text, "model.type", kModelTypes)   (no noun)
//     -> "model.type: 'gin' is not one of gcn, sage, gat, ggnn, gaan"
#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::core {

template <class Enum>
Enum parse_choice(std::string_view text, std::string_view key, std::span<const Enum> values,
                  std::string_view noun = {}) {
  std::string names;
  for (const Enum value : values) {
    if (to_string(value) == text) return value;
    if (!names.empty()) names += ", ";
    names += to_string(value);
  }
  if (noun.empty()) GNNPIPE_THROW(ConfigError, "{}: '{}' is not one of {}", key, text, names);
  GNNPIPE_THROW(ConfigError, "{}: '{}' is not {} (allowed: {})", key, text, noun, names);
}

template <class Enum>
Enum parse_choice(std::string_view text, std::string_view key, std::initializer_list<Enum> values,
                  std::string_view noun = {}) {
  return parse_choice<Enum>(text, key, std::span<const Enum>(values.begin(), values.size()), noun);
}

template <class Enum, std::size_t N>
Enum parse_choice(std::string_view text, std::string_view key, const std::array<Enum, N>& values,
                  std::string_view noun = {}) {
  return parse_choice<Enum>(text, key, std::span<const Enum>(values), noun);
}

}  // namespace gnnpipe::core
