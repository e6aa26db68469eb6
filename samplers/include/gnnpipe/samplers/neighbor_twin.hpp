#pragma once
// The data-parallel neighbor sampler (issue #40), run on CPU threads: each hop in the phases of
// neighbor_hop.hpp, every phase a parallel loop over frontier nodes or picks of the element
// functions the GPU kernels call, with scans between them. It plans epochs as NeighborSampler
// does and gives its batches bit for bit (tests compare the two on Cora, arxiv and a power-law
// graph), so it tests the GPU sampler's logic where there is no GPU, and the GPU sampler is
// checked against the CPU sampler batch by batch.
#include <memory>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/neighbor_sampler.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers {

class NeighborSamplerTwin final : public Sampler {
 public:
  // As NeighborSampler's (the same checks and errors).
  NeighborSamplerTwin(const graph::CsrGraph& graph, std::vector<graph::NodeId> train_nodes, NeighborSamplerOptions options);

  std::vector<BatchSpec> plan_epoch(int64_t epoch) const override { return plan_.plan_epoch(epoch); }
  std::unique_ptr<SamplerWorkspace> make_workspace() const override;
  graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const override;
  std::size_t num_layers() const override { return o_.fanouts.size(); }

 private:
  const graph::CsrGraph& graph_;
  NeighborSampler plan_;  // plans epochs and validates the options
  NeighborSamplerOptions o_;
  std::vector<float> inv_sqrt_degree_;  // kGcn
};

}  // namespace gnnpipe::samplers
