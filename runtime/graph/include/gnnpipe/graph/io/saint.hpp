#pragma once
// The GraphSAINT layout: adj_full.npz (scipy CSR: indptr, indices, data, shape; row i lists the
// targets j of edges i -> j), class_map.json ({"node": class} or {"node": [0/1, ...]} for
// multi-label), role.json ({"tr": [...], "va": [...], "te": [...]}), optional feats.npy (N x F).
// ../shared/datasets' converted/ folders hold labels.npy (int [N], or 0/1 uint8 [N, C] for
// multi-label) instead of class_map.json, and their split as ../splits/<kSplitPrefix>{train,val,test}.npy
// instead of role.json: both are read when the GraphSAINT file is absent.
// The graph is stored transposed into our convention (row = destination).
#include <filesystem>

#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::graph::io {

// The derived split's file prefix (../shared/datasets: random_60_20_20_seed0_train.npy, ...).
inline constexpr const char* kSplitPrefix = "random_60_20_20_seed0_";

Dataset read_saint(const std::filesystem::path& dir);

}  // namespace gnnpipe::graph::io
