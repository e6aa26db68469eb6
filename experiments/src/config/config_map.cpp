#include "gnnpipe/experiments/config/config_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace gnnpipe::experiments::config {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

void check_unique_keys(const YAML::Node& node, const std::string& path) {
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) check_unique_keys(node[i], fmt::format("{}[{}]", path, i));
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string("?");
    const YAML::Mark mark = entry.first.Mark();
    const auto [it, fresh] = first_line.emplace(key, mark.line + 1);
    GNNPIPE_CHECK_CONFIG(fresh, "{}:{}: duplicate key '{}' in {} (first at line {})", mark.line + 1, mark.column + 1,
                         key, path.empty() ? std::string("the top level") : path, it->second);
    check_unique_keys(entry.second, path.empty() ? key : path + "." + key);
  }
}

}  // namespace

void check_unique_keys(const YAML::Node& node) { check_unique_keys(node, ""); }

YAML::Node load_yaml_file(const std::filesystem::path& path) {
  GNNPIPE_CHECK_CONFIG(std::filesystem::is_regular_file(path), "{}: no such config file", path.string());
  YAML::Node root;
  try {
    root = YAML::LoadFile(path.string());
  } catch (const YAML::Exception& e) {
    GNNPIPE_THROW(ConfigError, "{}: {}:{}: {}", path.string(), e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  try {
    check_unique_keys(root);
  } catch (const core::ConfigError& e) {
    GNNPIPE_THROW(ConfigError, "{}: {}", path.string(), e.message());
  }
  return root;
}

std::string closest_key(const std::string& key, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_distance = 4;
  for (const auto& candidate : known) {
    const std::size_t d = edit_distance(key, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

ConfigMap::ConfigMap(YAML::Node node, std::string path)
    : ConfigMap(std::move(node), std::move(path), std::make_shared<std::set<std::string>>()) {}

ConfigMap::ConfigMap(YAML::Node node, std::string path, std::shared_ptr<std::set<std::string>> read)
    : node_(std::move(node)), path_(std::move(path)), read_(std::move(read)) {
  GNNPIPE_CHECK_CONFIG(!node_ || node_.IsNull() || node_.IsMap(), "{}: expected a mapping of keys to values",
                       path_.empty() ? std::string("the config") : path_);
}

bool ConfigMap::has(const std::string& key) const { return node_.IsMap() && node_[key] && !node_[key].IsNull(); }

ConfigMap ConfigMap::child(const std::string& key) {
  note_read(key);
  const YAML::Node value = node_.IsMap() ? node_[key] : YAML::Node();
  // An explicit null section (`model:` with nothing under it, Python's None) is not an empty one.
  GNNPIPE_CHECK_CONFIG(!value || !value.IsNull(), "{}: expected a mapping, got null (leave the section out for its "
                       "defaults)", key_path(key));
  return ConfigMap(value, key_path(key), read_);
}

void ConfigMap::allow(const std::vector<std::string>& keys) { known_.insert(keys.begin(), keys.end()); }

void ConfigMap::finish() const {
  if (!node_.IsMap()) return;
  for (const auto& entry : node_) {
    const auto key = entry.first.as<std::string>();
    if (known_.count(key) != 0) continue;
    const std::string suggestion = closest_key(key, std::vector<std::string>(known_.begin(), known_.end()));
    std::string allowed;
    for (const auto& k : known_) allowed += (allowed.empty() ? "" : ", ") + k;
    GNNPIPE_THROW(ConfigError, "{}: unknown key{} (allowed: {})", key_path(key),
                  suggestion.empty() ? std::string() : " (did you mean '" + suggestion + "'?)", allowed);
  }
}

}  // namespace gnnpipe::experiments::config
