#pragma once
// Sparse (CSR) feature matrices as datasets store them, made dense float32 for the FeatureStore.
#include <cstdint>
#include <string_view>

#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/graph/host_array.hpp"

namespace gnnpipe::graph::io {

// rows x cols dense matrix from CSR arrays. Validates offsets and column ids; DataError naming
// `what` otherwise. Repeated (row, col) entries are summed, as scipy's todense() does.
FeatureStore dense_from_csr(const HostArray<int64_t>& indptr, const HostArray<int64_t>& indices,
                            const HostArray<float>& values, int64_t rows, int64_t cols, std::string_view what);

}  // namespace gnnpipe::graph::io
