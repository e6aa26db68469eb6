#include "gnnpipe/graph/dataset_options.hpp"

#include <cstdlib>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/random_features.hpp"

namespace gnnpipe::graph {

DataDir resolve_data_dir(const std::string& flag) {
  if (!flag.empty()) return {flag, "--data-dir"};
  if (const char* env = std::getenv("GNNPIPE_DATA_DIR"); env != nullptr && env[0] != '\0') {
    return {env, "$GNNPIPE_DATA_DIR"};
  }
  return {std::filesystem::current_path(), "the current directory"};
}

Dataset load_dataset(const DatasetOptions& options, const DataDir& data_dir) {
  GNNPIPE_CHECK_CONFIG(options.path.empty() != !options.synthetic.has_value(),
                       "dataset: set exactly one of dataset.path and dataset.synthetic");
  GNNPIPE_CHECK_CONFIG(options.random_features >= 0, "dataset.random_features: must be >= 0, got {}",
                       options.random_features);
  Dataset d;
  if (options.synthetic) {
    d = make_synthetic(*options.synthetic);
  } else {
    const std::filesystem::path given = options.path;
    const std::filesystem::path path = given.is_relative() ? data_dir.path / given : given;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      GNNPIPE_CHECK_CONFIG(given.is_relative(), "dataset.path: {} does not exist", given.string());
      GNNPIPE_THROW(ConfigError,
                    "dataset.path: '{}' not found in {}{} (relative paths are looked up under --data-dir, else "
                    "$GNNPIPE_DATA_DIR, else the current directory)",
                    given.string(), data_dir.path.string(),
                    data_dir.origin.empty() ? std::string() : " (" + data_dir.origin + ")");
    }
    d = io::load_dataset(path, options.format, options.keys);
  }
  return finish_dataset(std::move(d), options);
}

Dataset finish_dataset(Dataset d, const DatasetOptions& options) {
  GNNPIPE_CHECK_CONFIG(options.random_features >= 0, "dataset.random_features: must be >= 0, got {}",
                       options.random_features);
  if (options.random_features > 0) add_random_features(d, options.random_features, options.random_features_seed);
  if (options.normalize_rows) {
    GNNPIPE_CHECK_CONFIG(!d.features.empty(), "dataset.normalize_features: the dataset has no features");
    d.features = normalize_feature_rows(d.features);
    d.synthesized.push_back("features: each row divided by its sum (normalize_features: row)");
  }
  if (!d.features.empty() && d.features.dtype() != options.feature_dtype) {
    d.features = d.features.converted(options.feature_dtype, d.name + ": dataset.feature_dtype " + to_string(options.feature_dtype));
  }
  return d;
}

}  // namespace gnnpipe::graph
