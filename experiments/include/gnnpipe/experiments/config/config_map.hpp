#pragma once
// Strict reading of YAML mappings for experiment configs (docs/DESIGN.md §5). A ConfigMap is one mapping
// with its key path ("dataset.synthetic"); typed reads name that path in every ConfigError, and
// finish() rejects keys nobody read, suggesting the closest known key for a typo.
// Not thread-safe (reads record the keys they consumed).
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::experiments::config {

// Parses a YAML file; ConfigError "<file>: <line>:<column>: <problem>" when it cannot, including a
// key repeated within one mapping (check_unique_keys).
YAML::Node load_yaml_file(const std::filesystem::path& path);

// ConfigError "<line>:<column>: duplicate key 'k' in <path> (first at line L)" for the first key
// that appears twice in one mapping anywhere in `node`: YAML readers differ on which one wins
// (yaml-cpp: the first), so neither is taken.
void check_unique_keys(const YAML::Node& node);

// The known key closest to `key` by edit distance (at most 3 edits), or "" when none is close.
std::string closest_key(const std::string& key, const std::vector<std::string>& known);

class ConfigMap {
 public:
  // `node` must be a mapping or null (an absent section reads as empty).
  ConfigMap(YAML::Node node, std::string path);

  const std::string& path() const { return path_; }
  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const std::string& key) const;
  // Whether `key` is present and a list (a key that takes one value or a list, e.g. model.hidden).
  bool is_list(const std::string& key) const { return has(key) && node_[key].IsSequence(); }

  // The value at `key` as T, or `fallback` when absent. ConfigError naming the key when the
  // value is not a T.
  template <class T>
  T get(const std::string& key, T fallback) {
    std::optional<T> value = get_optional<T>(key);
    return value ? *value : fallback;
  }
  template <class T>
  std::optional<T> get_optional(const std::string& key) {
    note_read(key);
    const YAML::Node value = node_[key];
    if (!value) return std::nullopt;
    // An explicit null (`key:`, `~`, Python's None) is not the default: it is refused, as an
    // empty --set value is.
    GNNPIPE_CHECK_CONFIG(!value.IsNull(), "{}: expected {} value, got null (leave the key out for its default)",
                         key_path(key), with_article(type_name<T>()));
    GNNPIPE_CHECK_CONFIG(value.IsScalar(), "{}: expected {} value, got a {}", key_path(key),
                         with_article(type_name<T>()), value.IsMap() ? "mapping" : "list");
    T parsed{};
    try {
      parsed = value.as<T>();
    } catch (const YAML::Exception&) {
      GNNPIPE_THROW(ConfigError, "{}: '{}' is not a valid {}", key_path(key), value.Scalar(), type_name<T>());
    }
    if constexpr (std::is_floating_point_v<T>) {
      GNNPIPE_CHECK_CONFIG(std::isfinite(parsed), "{}: '{}' is not a finite number", key_path(key), value.Scalar());
    }
    return parsed;
  }
  // The list at `key` as a vector of T, or nullopt when absent. ConfigError naming the key when
  // the value is not a list, or "key[i]" for an element that is not a T.
  template <class T>
  std::optional<std::vector<T>> get_list_optional(const std::string& key) {
    note_read(key);
    const YAML::Node value = node_[key];
    if (!value) return std::nullopt;
    GNNPIPE_CHECK_CONFIG(!value.IsNull(), "{}: expected a list of {} values, got null (leave the key out for its default)",
                         key_path(key), type_name<T>());
    GNNPIPE_CHECK_CONFIG(value.IsSequence(), "{}: expected a list of {} values, got a {}", key_path(key),
                         type_name<T>(), value.IsMap() ? "mapping" : "single value");
    std::vector<T> items;
    for (std::size_t i = 0; i < value.size(); ++i) {
      const YAML::Node item = value[i];
      GNNPIPE_CHECK_CONFIG(item.IsScalar(), "{}[{}]: expected {} value", key_path(key), i, with_article(type_name<T>()));
      try {
        items.push_back(item.as<T>());
      } catch (const YAML::Exception&) {
        GNNPIPE_THROW(ConfigError, "{}[{}]: '{}' is not a valid {}", key_path(key), i, item.Scalar(), type_name<T>());
      }
      if constexpr (std::is_floating_point_v<T>) {
        GNNPIPE_CHECK_CONFIG(std::isfinite(items.back()), "{}[{}]: '{}' is not a finite number", key_path(key), i,
                             item.Scalar());
      }
    }
    return items;
  }
  // The mapping at `key` (empty when absent); ConfigError when it is not a mapping.
  ConfigMap child(const std::string& key);

  // Marks `keys` as known without reading them (sections another command validates).
  void allow(const std::vector<std::string>& keys);
  // Throws ConfigError for the first key that was neither read nor allowed.
  void finish() const;

  // The full key paths ("dataset.synthetic.nodes") that this map and every child() of it (and
  // their children) were asked for, present or not: the keys the parser reads, which the schema
  // that config.yaml and --set use must hold (checked by parse_experiment).
  const std::set<std::string>& keys_read() const { return *read_; }

 private:
  template <class T>
  static const char* type_name() {
    if constexpr (std::is_same_v<T, bool>) return "boolean";
    else if constexpr (std::is_integral_v<T>) return "integer";
    else if constexpr (std::is_floating_point_v<T>) return "number";
    else return "string";
  }

  static std::string with_article(const char* name) {
    return std::string(name[0] == 'i' ? "an " : "a ") + name;
  }

  void note_read(const std::string& key) {
    known_.insert(key);
    read_->insert(key_path(key));
  }
  ConfigMap(YAML::Node node, std::string path, std::shared_ptr<std::set<std::string>> read);

  YAML::Node node_;
  std::string path_;
  std::set<std::string> known_;
  std::shared_ptr<std::set<std::string>> read_;  // shared with the children
};

}  // namespace gnnpipe::experiments::config
