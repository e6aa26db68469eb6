#pragma once
// MATLAB MAT-files (level 5 / 7, as DeepWalk-era and LINKX-era graphs ship; read through libmatio,
// Debian libmatio-dev). Variables, first present name wins:
//   adjacency  network | A | adj | adjacency: N x N, sparse or dense; entry (i, j) != 0 is the edge
//              i -> j (weights are not kept; DeepWalk's `network` is symmetric)
//   labels     group | label | labels (optional): N x C 0/1 (multi-label, DeepWalk's `group`), or a
//              dense N-vector of class ids (-1 unlabeled)
//   features   features | node_feat | attributes | X (optional): N x F, sparse or dense
// No split is stored: the loader applies a ../splits folder beside the file (BlogCatalog), as for
// an .npz. A build without libmatio throws DataError saying so (has_mat_support() is false).
#include <filesystem>

#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::graph::io {

bool has_mat_support();

// DataError naming the file (and the variable) for anything unreadable or inconsistent. MATLAB 7.3
// files (HDF5) are read when Debian's libmatio was built with HDF5, as it is.
Dataset read_mat(const std::filesystem::path& path);

}  // namespace gnnpipe::graph::io
