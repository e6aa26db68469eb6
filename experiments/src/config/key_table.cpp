#include "config/key_table.hpp"

#include <fmt/format.h>

#include <array>

namespace gnnpipe::experiments::config {

void check_positive(const ConfigMap& section, const std::string& key, double value) {
  GNNPIPE_CHECK_CONFIG(value > 0, "{}: must be > 0, got {}", section.key_path(key), value);
}

void check_fraction(const ConfigMap& section, const std::string& key, double value) {
  GNNPIPE_CHECK_CONFIG(value >= 0 && value < 1, "{}: must be in [0, 1), got {}", section.key_path(key), value);
}

YAML::Node number(double value) { return YAML::Node(fmt::format("{}", value)); }

std::string bytes_text(uint64_t bytes) {
  const std::array<const char*, 4> units{"TiB", "GiB", "MiB", "KiB"};
  for (std::size_t i = 0; i < units.size(); ++i) {
    const uint64_t unit = uint64_t{1} << (10 * (units.size() - i));
    if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, units[i]);
  }
  return std::to_string(bytes);
}

YAML::Node flow_list(const std::vector<int>& values) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const int v : values) list.push_back(v);
  list.SetStyle(YAML::EmitterStyle::Flow);
  return list;
}

YAML::Node text(std::string_view value) { return YAML::Node(std::string(value)); }

const std::vector<std::pair<std::string, KeyText>>& unread_key_docs() {
  const char* const all = "all";
  static const std::vector<std::pair<std::string, KeyText>> docs{
      {"name", {"string", all, "Names the run directory (runs/<name>-<time>); 1-100 of [A-Za-z0-9_.-]. Required."}},
      {"dataset", {"section", all, "Where the graph comes from: `path` or `synthetic`, exactly one. Required."}},
      {"dataset.keys",
       {"section", all, "Names of the arrays of an .npz saved by other tools (np.savez(edge_index=..., x=...))."}},
      {"dataset.synthetic", {"section", all, "A generated graph with community structure instead of `path`."}},
      {"model", {"section", all, "The GNN."}},
      {"sampler", {"section", all, "How training batches are drawn."}},
      {"optimizer", {"section", all, "The optimizer."}},
      {"pipeline", {"section", all, "How the stages run."}},
      {"memory", {"section", all, "The device memory budget and what the governor does with batches over it."}},
      {"run", {"section", all, "The run."}},
      {"augment", {"section", all, "Graph augmentation during training (MH-Aug); absent or type none: off."}},
      {"sweep",
       {"mapping of key paths to lists", all,
        "A grid of runs: every combination of the listed values of these --set key paths, one run directory each; "
        "at most 1000 runs per sweep (each is parsed before the first starts)."}},
  };
  return docs;
}

}  // namespace gnnpipe::experiments::config
