#pragma once
// Plain edge lists: one "src dst" pair per line, separated by spaces, tabs or a comma; blank lines
// and lines starting with '#' or '%' are skipped; plain or gzip. Node count = largest id + 1.
// The result has a graph only (no features, labels or splits).
#include <filesystem>

#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::graph::io {

// Throws DataError "<path>:<line>: ..." for a malformed line, a negative id or one beyond int32.
Dataset read_edgelist(const std::filesystem::path& path);

}  // namespace gnnpipe::graph::io
