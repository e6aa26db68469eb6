// Fuzz target: `--set key.path=value` (experiments::config::apply_set and parse_experiment).
// Each line of the input is one assignment (at most 8); they are applied in order to a small
// valid experiment and the result is parsed strictly, as `gnnpipe run --set ...` does. Each
// assignment is also applied alone to an empty document (apply_set's own checks).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "gnnpipe/experiments/config/experiment_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace config = gnnpipe::experiments::config;
  static const YAML::Node base = YAML::Load(
      "name: fuzz\n"
      "dataset: {synthetic: {nodes: 100, avg_degree: 4, features: 8, classes: 3}}\n"
      "model: {type: gcn, layers: 2, hidden: 16}\n"
      "sampler: {type: neighbor, fanouts: [5, 5], batch_size: 32}\n"
      "optimizer: {type: adam, lr: 0.01}\n"
      "run: {device: cpu, epochs: 2, seed: 0}\n");
  std::vector<std::string> sets;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (std::size_t start = 0; start <= text.size() && sets.size() < 8;) {
    const std::size_t end = text.find('\n', start);
    sets.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  for (const std::string& assignment : sets) {
    gnnpipe::fuzz::guarded([&] {
      YAML::Node root;
      config::apply_set(root, assignment);
    });
  }
  gnnpipe::fuzz::guarded([&] { (void)config::parse_experiment(base, sets); });
  return 0;
}
