#pragma once
// Full-batch "sampling": every epoch is one batch holding the whole graph as one block that every
// layer reads (docs/DESIGN.md §2's shared block), targets = all nodes, loss over the training nodes. The
// block is built once; batches share its arrays (HostArray copies share), so sample() is O(N).
#include <cstdint>
#include <vector>

#include "gnnpipe/graph/block.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers {

class FullBatchSampler final : public Sampler {
 public:
  // `train_nodes` in any order (sorted here; duplicates and ids out of range are DataErrors).
  FullBatchSampler(const graph::CsrGraph& graph, std::vector<graph::NodeId> train_nodes, graph::BlockNorm norm,
                   std::size_t num_layers);

  std::vector<BatchSpec> plan_epoch(int64_t epoch) const override;
  std::unique_ptr<SamplerWorkspace> make_workspace() const override;
  graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const override;
  std::size_t num_layers() const override { return num_layers_; }
  bool redraws() const override { return false; }  // the plan fixes every batch
  bool fixed_batch() const override { return true; }
  bool full_graph_batch() const override { return true; }
  // The block's weights count its own rows (the self-looped graph's in-degrees).
  std::optional<mh::ViewSupport> augment_support() const override {
    return mh::ViewSupport{.norm = norm_, .degrees = mh::ViewDegrees::kBatchRows};
  }

 private:
  graph::BlockNorm norm_;
  graph::Block block_;
  graph::HostArray<graph::NodeId> all_nodes_;
  graph::HostArray<int32_t> train_rows_;
  std::size_t num_layers_;
};

}  // namespace gnnpipe::samplers
