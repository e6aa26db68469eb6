#pragma once
// GraphSAINT's data-parallel sampler (issue #40), run on CPU threads: a batch's draws (one per
// draw or walk), the node set compacted in ascending order from its marks, the induced rows, the
// weights and the loss rows, each a phase over elements of the functions the GPU kernels call
// (saint_draw.hpp, induced_phases.hpp), with scans between them. It reads the tables of a
// SaintSampler (the pre-sample counts, the alias table) and gives that sampler's batches bit for
// bit, so it tests the GPU sampler's logic where there is no GPU.
#include <memory>
#include <vector>

#include "gnnpipe/samplers/saint_sampler.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers {

class SaintSamplerTwin final : public Sampler {
 public:
  // `sampler` (and its graph) must outlive the twin.
  explicit SaintSamplerTwin(const SaintSampler& sampler) : cpu_(sampler) {}

  std::vector<BatchSpec> plan_epoch(int64_t epoch) const override { return cpu_.plan_epoch(epoch); }
  std::unique_ptr<SamplerWorkspace> make_workspace() const override;
  graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const override;
  std::size_t num_layers() const override { return cpu_.num_layers(); }

 private:
  const SaintSampler& cpu_;
};

}  // namespace gnnpipe::samplers
