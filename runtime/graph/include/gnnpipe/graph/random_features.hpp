#pragma once
// Seeded random node features for datasets that have none (ogbn-arxiv and Flickr here): standard
// normal values, row v drawn from the Philox stream keyed by (seed, v), so the matrix is the same
// for any thread count. Accuracy on such features is meaningless; the caller records them in
// Dataset::synthesized so that summaries say so.
#include <cstdint>

#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::graph {

FeatureStore random_features(int64_t rows, int64_t cols, uint64_t seed);

// Gives `dataset` random features of width `cols` (replacing none: throws DataError when it
// already has features) and appends a line to dataset.synthesized.
void add_random_features(Dataset& dataset, int64_t cols, uint64_t seed);

}  // namespace gnnpipe::graph
