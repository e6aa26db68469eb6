#pragma once
// The `converted/` folders of ../shared/datasets (Planetoid Cora, CiteSeer, PubMed): edge_index.npy
// int64 [2, E] (row 0 = source; C or Fortran order), labels.npy (-1 = unlabeled),
// {train,val,test}_idx.npy, and features as CSR (features_csr_{indptr,indices,data}.npy), made
// dense here. PubMed's feature_row_known.npy (features known for few rows) is recorded in
// Dataset::synthesized so reports state it.
#include <filesystem>

#include "gnnpipe/graph/dataset.hpp"

namespace gnnpipe::graph::io {

Dataset read_planetoid_npy(const std::filesystem::path& dir);

}  // namespace gnnpipe::graph::io
