#pragma once
// Philox stream ids of the synthetic generator, one per purpose, so that (seed, purpose, index)
// names every draw and no two parts of the generator share random bits. Private to graph/src.
#include <cstdint>

namespace gnnpipe::graph::synthetic_streams {

inline constexpr uint64_t kCommunities = 1;  // the node permutation that deals communities
inline constexpr uint64_t kWeights = 2;      // expected-degree draws, positional by node
inline constexpr uint64_t kInsideEdges = 3;  // then the chunk index
inline constexpr uint64_t kAcrossEdges = 7;  // then the chunk index
inline constexpr uint64_t kCentroids = 4;    // class centroids, sequential
inline constexpr uint64_t kFeatures = 5;     // then the node id
inline constexpr uint64_t kSplits = 6;       // the node permutation cut into train/val/test

}  // namespace gnnpipe::graph::synthetic_streams
