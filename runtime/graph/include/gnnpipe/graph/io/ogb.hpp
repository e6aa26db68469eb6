#pragma once
// The OGB raw node-property layout, as a download unpacks it:
//   raw/edge.csv.gz            one "src,dst" row per edge (required)
//   raw/num-node-list.csv.gz   the node count (optional: else from labels or features)
//   raw/node-feat.csv.gz       one comma-separated float row per node (optional)
//   raw/node-label.csv.gz      one row per node: a class id (single-label; "nan" = unlabeled) or
//                              several 0/1 columns (multi-label)
//   split/<name>/{train,valid,test}.csv.gz   one node id per row
// Edges are kept as stored (src -> dst; row dst lists src).
#include <filesystem>
#include <string>

#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::graph::io {

struct OgbOptions {
  // Which split/<name> folder to use; empty: the only one present (an error if several).
  std::string split;
};

Dataset read_ogb(const std::filesystem::path& root, const OgbOptions& options = {});

}  // namespace gnnpipe::graph::io
