#pragma once
// gnn-benchmark / GraphData .npz files (shchur/gnn-benchmark, EdisonLeeeee/GraphData): adjacency
// as CSR (adj_data, adj_indices, adj_indptr, adj_shape), features as CSR (attr_*) or dense
// (attr_matrix), labels. As PyG's reader does, self-loops are removed and the graph is made
// undirected (each stored edge in both directions, once). Pickled name arrays are not read.
// These files carry no split: see read_split_dir.
#include <filesystem>

#include "gnnpipe/graph/dataset.hpp"
#include "gnnpipe/graph/io/npz.hpp"

namespace gnnpipe::graph::io {

// `npz`: an open archive with an adj_indptr entry (its path names it in messages and the dataset).
Dataset read_gnn_benchmark_npz(const NpzArchive& npz);

// Reads <dir>/<prefix>{train,val,test}.npy (int node ids) into `dataset.splits`.
void read_split_dir(Dataset& dataset, const std::filesystem::path& dir, const std::string& prefix);

}  // namespace gnnpipe::graph::io
