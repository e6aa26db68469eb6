#pragma once
// GraphSAGE-style neighbor sampling (Hamilton et al.; PyG's NeighborLoader). An epoch shuffles
// the training nodes (keyed by (seed, epoch)) and cuts them into batches of batch_size seeds.
// A batch samples hop by hop from the seeds: fanouts[0] in-neighbors of each seed, fanouts[1] of
// every node first reached in that hop, ... (-1: all), without replacement unless `replace`.
// Each hop becomes one Block whose destinations are the previous frontier and whose sources are
// those destinations followed by the newly reached nodes, so destinations are a prefix of sources
// and blocks[l].num_dst == blocks[l + 1].num_src. Edge weights follow `norm`.
#include <cstdint>
#include <vector>

#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/samplers/sampler.hpp"
#include "gnnpipe/samplers/sampler_options.hpp"

namespace gnnpipe::samplers {

struct NeighborSamplerOptions {
  std::vector<int> fanouts{15, 10};  // PyG order (see SamplerOptions)
  int batch_size = 1024;
  bool replace = false;
  bool shuffle = true;               // shuffle the seeds every epoch
  uint64_t seed = 0;
  // Edge weights of the blocks: kMean (SAGE), kNone, kSelfLoops (GAT: adds i -> i), or kGcn (adds
  // i -> i; weight (d_u d_v)^-1/2 with d = full-graph in-degree + 1, an estimator of the
  // full-graph normalisation that does not depend on what was sampled).
  graph::BlockNorm norm = graph::BlockNorm::kMean;
};

class NeighborSampler final : public Sampler {
 public:
  // `graph` and `train_nodes` must outlive the sampler. ConfigError for an empty fanout list, a
  // fanout of 0 or below -1, batch_size < 1; DataError for a training node out of range.
  NeighborSampler(const graph::CsrGraph& graph, std::vector<graph::NodeId> train_nodes,
                  NeighborSamplerOptions options);

  std::vector<BatchSpec> plan_epoch(int64_t epoch) const override;
  std::unique_ptr<SamplerWorkspace> make_workspace() const override;
  graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const override;
  std::size_t num_layers() const override { return o_.fanouts.size(); }
  // kGcn weighs with the full graph's in-degrees + 1 (self-loops counted), kMean with the sampled
  // rows.
  std::optional<mh::ViewSupport> augment_support() const override {
    const bool gcn = o_.norm == graph::BlockNorm::kGcn;
    return mh::ViewSupport{.norm = o_.norm,
                           .degrees = gcn ? mh::ViewDegrees::kFullGraph : mh::ViewDegrees::kBatchRows,
                           .counts_self_loops = true};
  }

 private:
  const graph::CsrGraph& graph_;
  std::vector<graph::NodeId> train_;
  NeighborSamplerOptions o_;
  std::vector<float> inv_sqrt_degree_;  // kGcn: (full-graph in-degree + 1)^-1/2
};

}  // namespace gnnpipe::samplers
