#pragma once
// Neighbor sampling on the GPU (issue #40): the graph's CSR is copied to the device once; each
// batch's hops run as the kernels of neighbor_hop.hpp's phases on the workspace's own stream,
// with three small reads per hop (the scans' totals that size the next arrays). The batch's
// nodes and rows come back to the host, where the blocks are weighted and transposed as the CPU
// sampler's are (assemble_neighbor_batch): its batches are the CPU sampler's bit for bit (a GPU
// test compares them batch by batch; neighbor_twin.hpp is the CPU twin CI tests). Not yet on the
// training path: the pipeline still samples on the CPU (sampler.device is issue #40's next step).
#include <memory>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/device.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers {

class GpuNeighborSampler final : public Sampler {
 public:
  // As NeighborSampler's checks and errors; CudaError when `device` is not an available GPU
  // (or the build has no CUDA). Copies the graph's offsets and in-neighbors to the device.
  GpuNeighborSampler(const graph::CsrGraph& graph, std::vector<graph::NodeId> train_nodes, NeighborSamplerOptions options,
                     core::Device device);

  std::vector<BatchSpec> plan_epoch(int64_t epoch) const override { return plan_.plan_epoch(epoch); }
  // A stream of its own and the device arrays of one batch at a time (grown as batches need).
  std::unique_ptr<SamplerWorkspace> make_workspace() const override;
  graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const override;
  std::size_t num_layers() const override { return o_.fanouts.size(); }

 private:
  const graph::CsrGraph& graph_;
  NeighborSampler plan_;
  NeighborSamplerOptions o_;
  core::Device device_;
  core::Buffer<int64_t> offsets_;   // on the device
  core::Buffer<int32_t> indices_;
  std::vector<float> inv_sqrt_degree_;  // kGcn (the host assembles the weights)
};

}  // namespace gnnpipe::samplers
