#pragma once
// Seeded random node features for datasets that have none (ogbn-arxiv and Flickr here): standard
// normal values, row v drawn from the Philox stream keyed by (seed, v), so the matrix is the same
// for any thread count. Accuracy on such features is meaningless; the caller records them in
// Dataset::synthesized so that summaries say so.
#include <cstdint>

#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::graph {

FeatureStore random_features(int64_t rows, int64_t cols, uint64_t seed);

// ConfigError naming `what` when a float32 matrix of rows x cols would take more than the
// machine's physical memory (a width of 2 * 10^9 was a std::bad_alloc); nothing when the machine
// does not report its memory. Called before generated features (random, synthetic) are allocated.
void check_feature_bytes(int64_t rows, int64_t cols, const char* what);

// Gives `dataset` random features of width `cols` (replacing none: throws DataError when it
// already has features) and appends a line to dataset.synthesized.
void add_random_features(Dataset& dataset, int64_t cols, uint64_t seed);

}  // namespace gnnpipe::graph
