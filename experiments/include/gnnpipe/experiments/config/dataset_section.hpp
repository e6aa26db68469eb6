#pragma once
// The `dataset:` section of an experiment (docs/DESIGN.md §5):
//   dataset:
//     path: ogbn-arxiv/netbenchmark   # relative to --data-dir, else $GNNPIPE_DATA_DIR, else cwd
//     format: auto                    # auto | native | saint | npz | ogb | planetoid-npy | edgelist | mat
//     keys: {edges: edge_index, features: x, labels: y, train: train_mask, val: val_mask,
//            test: test_mask}         # array names of an .npz (graph/io/named_npz.hpp)
//     split: 0                        # the column of [N, splits] masks
//     random_features: 128            # only for a dataset without features
//     random_features_seed: 0
//     feature_dtype: float32          # float32 | float16 | bfloat16 (storage in memory)
//     normalize_features: none        # none | row (divide each feature row by its sum)
//     synthetic: {nodes: 100000, avg_degree: 20, features: 64, classes: 16, seed: 0,
//                 homophily: 0.8, power_law_exponent: 2.5, feature_noise: 1.0,
//                 train_fraction: 0.6, val_fraction: 0.2}   # instead of path
#include "gnnpipe/experiments/config/config_map.hpp"
#include "gnnpipe/graph/dataset_options.hpp"

namespace gnnpipe::experiments::config {

// Reads and checks the section (unknown keys, types, values); ConfigError naming the key.
graph::DatasetOptions parse_dataset_section(ConfigMap section);

// Reads the dataset section of the experiment file at `path`; the other canonical top-level
// sections are allowed but not read here (the commands that use them validate them).
graph::DatasetOptions read_dataset_options(const std::filesystem::path& path);

}  // namespace gnnpipe::experiments::config
