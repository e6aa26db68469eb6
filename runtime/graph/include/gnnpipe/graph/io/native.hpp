#pragma once
// gnnpipe's native dataset directory: meta.yaml plus plain .npy arrays that numpy reads as they
// are, memory-mapped on load (a products-size feature matrix is never copied):
//   meta.yaml           format: gnnpipe-native, version, name, counts, feature dtype, synthesized
//   graph_offsets.npy   int64 [N + 1]    CSR offsets, rows = destinations
//   graph_indices.npy   int32 [E]        in-neighbors (sources)
//   features.npy        float32 or float16 [N, F]; bfloat16 as uint16 bits [N, F]   (optional)
//   labels.npy          int32 [N] (-1 unlabeled) or uint8 [N, C] multi-label        (optional)
//   train.npy, val.npy, test.npy   int32 node ids                                   (optional)
#include <filesystem>

#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::graph::io {

inline constexpr int kNativeFormatVersion = 1;

// Writes `dataset` into `dir` (created; existing native files are replaced). Each file is written
// to a temporary name and renamed, and meta.yaml last, so a failed write never leaves a
// directory that reads as complete.
void write_native(const Dataset& dataset, const std::filesystem::path& dir);

// Reads and validates a native directory. DataError names the file and the problem.
Dataset read_native(const std::filesystem::path& dir);

}  // namespace gnnpipe::graph::io
