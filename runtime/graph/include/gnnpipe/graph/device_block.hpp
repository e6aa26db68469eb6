#pragma once
// DeviceBlockCopy: a Block's arrays copied into the memory of a stream's device, viewed as a Block
// whose arrays point there. For a whole graph that stays on the device (full-batch training on a
// GPU, benchmarks, parity tests); sampled batches travel packed in a staging slot instead
// (pipeline/packed_batch.hpp). On a CUDA device the view's arrays must never be read on the host.
// The copy is complete when the constructor returns (it synchronises the stream).
#include <memory>

#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/block.hpp"

namespace gnnpipe::graph {

class DeviceBlockCopy {
 public:
  DeviceBlockCopy(const Block& source, const core::Stream& stream);
  // The block in device memory (kept alive by this object and by copies of the view's arrays).
  const Block& block() const { return block_; }

 private:
  Block block_;
};

}  // namespace gnnpipe::graph
