#pragma once
// Cluster-GCN's data-parallel batch assembly (issue #40), run on CPU threads: the parts' nodes
// marked, compacted in ascending order, then the induced rows, weights and loss rows as phases of
// the element functions the GPU kernels call (induced_phases.hpp). It reads a ClusterSampler's
// tables and gives that sampler's batches bit for bit.
#include <memory>
#include <vector>

#include "gnnpipe/samplers/cluster_sampler.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers {

class ClusterSamplerTwin final : public Sampler {
 public:
  // `sampler` (and its graph) must outlive the twin.
  explicit ClusterSamplerTwin(const ClusterSampler& sampler) : cpu_(sampler) {}

  std::vector<BatchSpec> plan_epoch(int64_t epoch) const override { return cpu_.plan_epoch(epoch); }
  std::unique_ptr<SamplerWorkspace> make_workspace() const override;
  graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const override;
  std::size_t num_layers() const override { return cpu_.num_layers(); }
  bool redraws() const override { return cpu_.redraws(); }
  bool fixed_batch() const override { return cpu_.fixed_batch(); }

 private:
  const ClusterSampler& cpu_;
};

}  // namespace gnnpipe::samplers
