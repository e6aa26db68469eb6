#pragma once
// The `dataset:` section of an experiment (docs/DESIGN.md §5), as plain options with in-class defaults;
// experiments/ fills it from YAML. Exactly one of `path` and `synthetic` is set.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/graph/io/load.hpp"
#include "gnnpipe/graph/synthetic.hpp"

namespace gnnpipe::graph {

struct DatasetOptions {
  std::string path;                                    // relative paths resolve against the data dir
  io::DatasetFormat format = io::DatasetFormat::kAuto;
  io::ArrayKeys keys;  // `dataset.keys` (array names of an .npz) and `dataset.split` (mask column)
  int64_t random_features = 0;                         // > 0: seeded random features (datasets without any)
  uint64_t random_features_seed = 0;
  FeatureDType feature_dtype = FeatureDType::kFloat32;  // storage of the features in memory
  bool normalize_rows = false;  // `normalize_features: row`: divide each feature row by its sum (GCN paper)
  std::optional<SyntheticOptions> synthetic;           // instead of path
  // `dataset.partition`: in a data-parallel job, which rank keeps which feature rows (feature_shard.hpp;
  // applied by the program once the ranks are known). A single process holds every row.
  FeaturePartition partition = FeaturePartition::kNone;

  bool operator==(const DatasetOptions&) const = default;
};

// The base of relative dataset paths and where it came from ("--data-dir", "$GNNPIPE_DATA_DIR",
// "the current directory"; empty when a caller gave the path itself), for the error that says
// where a dataset was looked for.
struct DataDir {
  DataDir(std::filesystem::path dir, std::string from = {}) : path(std::move(dir)), origin(std::move(from)) {}
  DataDir(const char* dir) : path(dir) {}
  std::filesystem::path path;
  std::string origin;
};

// The data dir for relative dataset paths: `flag` (--data-dir) if not empty, else
// $GNNPIPE_DATA_DIR if set, else the current directory.
DataDir resolve_data_dir(const std::string& flag);

// Loads (or generates) the dataset, adds random features if asked, converts the feature storage,
// and validates. ConfigError for inconsistent options and for a dataset.path that does not exist
// (naming the key, the path and, for a relative one, the data dir and where it came from);
// DataError for bad data.
Dataset load_dataset(const DatasetOptions& options, const DataDir& data_dir);

// What load_dataset does to a dataset once read: random features, row normalisation, the feature
// storage type. For a dataset read elsewhere (the Python module's arrays), with the same options.
Dataset finish_dataset(Dataset d, const DatasetOptions& options);

}  // namespace gnnpipe::graph
