#include "gnnpipe/graph/dataset_options.hpp"

#include <cstdlib>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/random_features.hpp"

namespace gnnpipe::graph {

std::filesystem::path resolve_data_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("GNNPIPE_DATA_DIR"); env != nullptr && env[0] != '\0') return env;
  return std::filesystem::current_path();
}

Dataset load_dataset(const DatasetOptions& options, const std::filesystem::path& data_dir) {
  GNNPIPE_CHECK_CONFIG(options.path.empty() != !options.synthetic.has_value(),
                       "dataset: set exactly one of dataset.path and dataset.synthetic");
  GNNPIPE_CHECK_CONFIG(options.random_features >= 0, "dataset.random_features: must be >= 0, got {}",
                       options.random_features);
  Dataset d;
  if (options.synthetic) {
    d = make_synthetic(*options.synthetic);
  } else {
    std::filesystem::path path = options.path;
    if (path.is_relative()) path = data_dir / path;
    d = io::load_dataset(path, options.format);
  }
  if (options.random_features > 0) add_random_features(d, options.random_features, options.random_features_seed);
  if (options.normalize_rows) {
    GNNPIPE_CHECK_CONFIG(!d.features.empty(), "dataset.normalize_features: the dataset has no features");
    d.features = normalize_feature_rows(d.features);
    d.synthesized.push_back("features: each row divided by its sum (normalize_features: row)");
  }
  if (!d.features.empty() && d.features.dtype() != options.feature_dtype) d.features = d.features.converted(options.feature_dtype);
  return d;
}

}  // namespace gnnpipe::graph
