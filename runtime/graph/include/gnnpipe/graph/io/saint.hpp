#pragma once
// The GraphSAINT layout: adj_full.npz (scipy CSR: indptr, indices, data, shape; row i lists the
// targets j of edges i -> j), class_map.json ({"node": class} or {"node": [0/1, ...]} for
// multi-label), role.json ({"tr": [...], "va": [...], "te": [...]}), optional feats.npy (N x F).
// The graph is stored transposed into our convention (row = destination).
#include <filesystem>

#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::graph::io {

Dataset read_saint(const std::filesystem::path& dir);

}  // namespace gnnpipe::graph::io
