#pragma once
// Layer-wise inference's transform-once store (layerwise_inference.cpp): the transformed rows
// (GnnModel::infer_transform_rows: h and the per-head terms) of every node for a layer with a row
// transform, in host memory (CPU backend), written in runs of rows before the layer's chunks and
// read by each chunk for its sources.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/models/layers/layer.hpp"

namespace gnnpipe::pipeline::detail {

class TransformedStore {
 public:
  // Room for `nodes` rows of `width` columns and `heads` terms (zeros).
  void reset(int64_t nodes, int64_t width, int64_t heads);
  // The rows of `ids` from z (rows in ids' order).
  void put(std::span<const graph::NodeId> ids, const models::TransformedRows<float>& z) { copy_rows(ids, z, true); }
  // The rows of `ids` into z (rows in ids' order).
  void get(std::span<const graph::NodeId> ids, const models::TransformedRows<float>& z) { copy_rows(ids, z, false); }

 private:
  void copy_rows(std::span<const graph::NodeId> ids, const models::TransformedRows<float>& z, bool into_store);

  std::size_t width_ = 0, heads_ = 0;
  std::vector<float> h_, a_;
};

}  // namespace gnnpipe::pipeline::detail
