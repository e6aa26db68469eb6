#include "gnnpipe/samplers/full_batch_sampler.hpp"

#include <algorithm>
#include <numeric>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::samplers {

FullBatchSampler::FullBatchSampler(const graph::CsrGraph& graph, std::vector<graph::NodeId> train_nodes,
                                   graph::BlockNorm norm, std::size_t num_layers)
    : norm_(norm), block_(graph::full_graph_block(graph, norm)), num_layers_(num_layers) {
  GNNPIPE_CHECK_CONFIG(num_layers_ >= 1, "model.layers: must be >= 1, got {}", num_layers_);
  std::sort(train_nodes.begin(), train_nodes.end());
  for (std::size_t i = 0; i < train_nodes.size(); ++i) {
    GNNPIPE_CHECK_DATA(train_nodes[i] >= 0 && train_nodes[i] < graph.num_nodes(), "training node {} is outside [0, {})",
                       train_nodes[i], graph.num_nodes());
    GNNPIPE_CHECK_DATA(i == 0 || train_nodes[i] != train_nodes[i - 1], "training node {} is listed twice", train_nodes[i]);
  }
  std::vector<graph::NodeId> all(static_cast<std::size_t>(graph.num_nodes()));
  std::iota(all.begin(), all.end(), 0);
  all_nodes_ = graph::HostArray<graph::NodeId>(std::move(all));
  train_rows_ = graph::HostArray<int32_t>(std::vector<int32_t>(train_nodes.begin(), train_nodes.end()));
}

std::vector<BatchSpec> FullBatchSampler::plan_epoch(int64_t epoch) const { return {BatchSpec{epoch, 0, {}, {}}}; }

std::unique_ptr<SamplerWorkspace> FullBatchSampler::make_workspace() const { return std::make_unique<SamplerWorkspace>(); }

graph::MiniBatch FullBatchSampler::sample(const BatchSpec& spec, SamplerWorkspace& /*workspace*/) const {
  graph::MiniBatch batch;
  batch.epoch = spec.epoch;
  batch.index = spec.index;
  batch.blocks.push_back(block_);  // shares the arrays
  batch.input_nodes = all_nodes_;
  batch.targets = all_nodes_;
  batch.loss_rows = train_rows_;
  batch.compute_shape(0, num_layers_);
  return batch;
}

}  // namespace gnnpipe::samplers
