#include "gnnpipe/samplers/gpu_subgraph_samplers.hpp"

#include "gnnpipe/core/check.hpp"
#include "device_arrays.hpp"
#include "induced_subgraph.hpp"
#include "subgraph_kernels.hpp"

namespace gnnpipe::samplers {
namespace {

using detail::GrowingArray;
using graph::EdgeOffset;
using graph::NodeId;

// One thread's stream and device arrays: marks and local ids per graph node (0 and -1 between
// batches), the marks' ranks, and the batch's set, rows, weights and loss rows.
class SubgraphWorkspace final : public SamplerWorkspace {
 public:
  SubgraphWorkspace(core::Device device, NodeId num_nodes) : d(device) {
    const auto n = static_cast<std::size_t>(num_nodes);
    mark = core::Buffer<int32_t>::on(device, std::max<std::size_t>(1, n));
    local_of = core::Buffer<int32_t>::on(device, std::max<std::size_t>(1, n));
    rank = core::Buffer<int32_t>::on(device, n + 1);
    core::fill_async(mark, int32_t{0}, d.stream);
    core::fill_async(local_of, int32_t{-1}, d.stream);
    d.stream.synchronize();
  }
  detail::DeviceScratch d;
  core::Buffer<int32_t> mark, local_of, rank;
  GrowingArray<int32_t> nodes, row_indices, is_loss, loss_start, loss_rows, parts;
  GrowingArray<int64_t> lengths, row_start, edge_ids, member_start;
  GrowingArray<double> inv_sqrt;
  GrowingArray<float> weights, loss_weights;
};

DeviceGraph upload_graph(detail::DeviceScratch& d, const graph::CsrGraph& g, std::span<const uint8_t> is_train) {
  return {d.upload(g.offsets()), d.upload(g.indices()), d.upload(is_train)};
}

bool self_loops_of(graph::BlockNorm norm) { return norm == graph::BlockNorm::kGcn || norm == graph::BlockNorm::kSelfLoops; }
bool weighted(graph::BlockNorm norm) { return norm == graph::BlockNorm::kMean || norm == graph::BlockNorm::kGcn; }

// What is shared after the set is marked: its compaction, its induced rows, `weigh` (the
// sampler's weights into w.weights), its loss rows (`loss_weigh` their weights, or none), the copy
// back and the per-node arrays cleaned.
struct SubgraphResult {
  std::vector<NodeId> nodes;
  std::vector<EdgeOffset> offsets;
  std::vector<NodeId> indices;
  std::vector<float> weights;
  std::vector<int32_t> loss_rows;
  std::vector<float> loss_weights;
};

template <class Weigh, class LossWeigh>
SubgraphResult finish_subgraph(SubgraphWorkspace& w, const DeviceGraph& g, NodeId n, bool self_loops, bool with_edge_ids,
                               bool with_weights, Weigh&& weigh, LossWeigh&& loss_weigh) {
  void* stream = w.d.stream.native_handle();
  const core::Device dev = w.d.device;
  w.d.scan(w.mark.data(), w.rank.data(), n, int32_t{0});
  const int64_t k = w.d.read(w.rank.data() + n);
  const auto ks = static_cast<std::size_t>(k);
  int32_t* nodes = w.nodes.reserve(ks, 0, dev, w.d.stream);
  kernels::launch_compact(w.mark.data(), w.rank.data(), n, nodes, stream);
  kernels::launch_set_local(w.local_of.data(), nodes, k, 0, false, stream);
  induced::InducedView view{.graph_offsets = g.offsets.data(),
                            .graph_indices = g.indices.data(),
                            .nodes = nodes,
                            .local_of = w.local_of.data(),
                            .self_loops = self_loops,
                            .lengths = w.lengths.reserve(ks, 0, dev, w.d.stream),
                            .row_start = nullptr,
                            .row_indices = nullptr,
                            .edge_ids = nullptr};
  int64_t* row_start = w.row_start.reserve(ks + 1, 0, dev, w.d.stream);
  kernels::launch_induced(kernels::InducedPhase::kRowLength, view, k, stream);
  w.d.scan(view.lengths, row_start, k, int64_t{0});
  const int64_t edges = w.d.read(row_start + k);
  const auto es = static_cast<std::size_t>(edges);
  view.row_start = row_start;
  view.row_indices = w.row_indices.reserve(es, 0, dev, w.d.stream);
  view.edge_ids = with_edge_ids ? w.edge_ids.reserve(es, 0, dev, w.d.stream) : nullptr;
  kernels::launch_induced(kernels::InducedPhase::kWriteRow, view, k, stream);
  float* weights = with_weights ? w.weights.reserve(es, 0, dev, w.d.stream) : nullptr;
  if (with_weights) weigh(view, k, weights);

  int32_t* is_loss = w.is_loss.reserve(ks, 0, dev, w.d.stream);
  int32_t* loss_start = w.loss_start.reserve(ks + 1, 0, dev, w.d.stream);
  kernels::launch_loss_flags(nodes, k, g.is_train.data(), is_loss, stream);
  w.d.scan(is_loss, loss_start, k, int32_t{0});
  const auto losses = static_cast<std::size_t>(w.d.read(loss_start + k));
  int32_t* loss_rows = w.loss_rows.reserve(losses, 0, dev, w.d.stream);
  float* loss_weights = loss_weigh(losses);
  loss_weigh.launch(is_loss, loss_start, nodes, k, loss_rows, loss_weights, stream);

  SubgraphResult r;
  r.nodes = w.d.read(static_cast<const int32_t*>(nodes), ks);
  r.offsets = w.d.read(static_cast<const int64_t*>(row_start), ks + 1);
  r.indices = w.d.read(static_cast<const int32_t*>(view.row_indices), es);
  if (with_weights) r.weights = w.d.read(static_cast<const float*>(weights), es);
  r.loss_rows = w.d.read(static_cast<const int32_t*>(loss_rows), losses);
  if (loss_weights != nullptr) r.loss_weights = w.d.read(static_cast<const float*>(loss_weights), losses);
  kernels::launch_clear_set(nodes, k, w.mark.data(), w.local_of.data(), stream);
  w.d.stream.synchronize();
  return r;
}

graph::MiniBatch assemble(const BatchSpec& spec, SubgraphResult r, std::size_t num_layers, const char* what) {
  return detail::assemble_subgraph_batch(spec, r.nodes, graph::HostArray<EdgeOffset>(std::move(r.offsets)),
                                         graph::HostArray<NodeId>(std::move(r.indices)),
                                         r.weights.empty() ? graph::HostArray<float>() : graph::HostArray<float>(std::move(r.weights)),
                                         std::move(r.loss_rows), std::move(r.loss_weights), num_layers, what);
}

void require_gpu(core::Device device, const char* what) {
  GNNPIPE_CHECK_AS(CudaError, device.is_cuda(), "the GPU {} sampler needs a GPU device, not {}", what, device.str());
  device.require_available();
}

}  // namespace

GpuSaintSampler::GpuSaintSampler(const SaintSampler& sampler, core::Device device) : cpu_(sampler), device_(device) {
  require_gpu(device_, "GraphSAINT");
  detail::DeviceScratch d(device_);
  const SaintSampler::Tables t = cpu_.tables();
  graph_ = upload_graph(d, cpu_.graph(), t.is_train);
  alias_ = d.upload(t.alias);
  row_of_block_ = d.upload(t.row_of_block);
  node_counts_ = d.upload(cpu_.node_counts());
  edge_counts_ = d.upload(cpu_.edge_counts());
  full_inv_sqrt_ = d.upload(t.full_inv_sqrt);
}

std::unique_ptr<SamplerWorkspace> GpuSaintSampler::make_workspace() const {
  return std::make_unique<SubgraphWorkspace>(device_, cpu_.graph().num_nodes());
}

graph::MiniBatch GpuSaintSampler::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& w = dynamic_cast<SubgraphWorkspace&>(workspace);
  const SaintSamplerOptions& o = cpu_.options();
  const SaintSampler::Tables t = cpu_.tables();
  const NodeId n = cpu_.graph().num_nodes();
  const kernels::SaintDraws draws{.mode = static_cast<int>(o.mode),
                                  .key = saint::batch_key(o.seed, spec.epoch, spec.index, spec.attempt),
                                  .budget = o.budget,
                                  .alias = alias_.data(),
                                  .alias_size = static_cast<uint32_t>(t.alias.size()),
                                  .row_of_block = row_of_block_.data(),
                                  .num_blocks = static_cast<int64_t>(t.row_of_block.size()),
                                  .row_block_shift = t.row_block_shift,
                                  .offsets = graph_.offsets.data(),
                                  .indices = graph_.indices.data(),
                                  .num_nodes = n,
                                  .walk_length = o.walk_length};
  kernels::launch_saint_mark(draws, w.mark.data(), w.d.stream.native_handle());
  struct LossWeigh {
    const GpuSaintSampler& s;
    SubgraphWorkspace& w;
    bool normalize;
    double num_train;
    float* operator()(std::size_t losses) { return normalize ? w.loss_weights.reserve(losses, 0, w.d.device, w.d.stream) : nullptr; }
    void launch(const int32_t* is_loss, const int32_t* start, const int32_t* nodes, int64_t k, int32_t* rows, float* weights,
                void* stream) const {
      kernels::launch_loss_rows(is_loss, start, nodes, k, rows, weights, s.cpu_.norm_samples(), s.node_counts_.data(), num_train, stream);
    }
  };
  SubgraphResult r = finish_subgraph(
      w, graph_, n, self_loops_of(o.norm), true, weighted(o.norm),
      [&](const induced::InducedView& view, int64_t k, float* weights) {
        const induced::SaintWeightView sw{.normalize = o.normalize,
                                          .gcn = o.norm == graph::BlockNorm::kGcn,
                                          .graph_offsets = graph_.offsets.data(),
                                          .nodes = view.nodes,
                                          .row_start = view.row_start,
                                          .row_indices = view.row_indices,
                                          .edge_ids = view.edge_ids,
                                          .node_counts = node_counts_.data(),
                                          .edge_counts = edge_counts_.data(),
                                          .full_inv_sqrt = full_inv_sqrt_.data(),
                                          .inv_sqrt = w.inv_sqrt.reserve(static_cast<std::size_t>(k), 0, w.d.device, w.d.stream)};
        kernels::launch_saint_weights(sw, k, weights, w.d.stream.native_handle());
      },
      LossWeigh{*this, w, o.normalize, t.num_train});
  return assemble(spec, std::move(r), o.num_layers, "GraphSAINT subgraph");
}

GpuClusterSampler::GpuClusterSampler(const ClusterSampler& sampler, core::Device device) : cpu_(sampler), device_(device) {
  require_gpu(device_, "Cluster-GCN");
  detail::DeviceScratch d(device_);
  const ClusterSampler::Tables t = cpu_.tables();
  graph_ = upload_graph(d, cpu_.graph(), t.is_train);
  part_offsets_ = d.upload(t.part_offsets);
  part_nodes_ = d.upload(t.part_nodes);
}

std::unique_ptr<SamplerWorkspace> GpuClusterSampler::make_workspace() const {
  return std::make_unique<SubgraphWorkspace>(device_, cpu_.graph().num_nodes());
}

graph::MiniBatch GpuClusterSampler::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& w = dynamic_cast<SubgraphWorkspace&>(workspace);
  const ClusterSamplerOptions& o = cpu_.options();
  const ClusterSampler::Tables t = cpu_.tables();
  std::vector<int64_t> member_start(spec.parts.size() + 1, 0);
  for (std::size_t q = 0; q < spec.parts.size(); ++q) {
    const int32_t p = spec.parts[q];
    GNNPIPE_CHECK(p >= 0 && p < o.num_parts, "batch {}: part {} is outside [0, {})", spec.index, p, o.num_parts);
    member_start[q + 1] = member_start[q] + (t.part_offsets[static_cast<std::size_t>(p) + 1] - t.part_offsets[static_cast<std::size_t>(p)]);
  }
  const auto num_parts = static_cast<int64_t>(spec.parts.size());
  int32_t* parts = w.parts.reserve(spec.parts.size() + 1, 0, device_, w.d.stream);
  int64_t* starts = w.member_start.reserve(member_start.size(), 0, device_, w.d.stream);
  if (num_parts > 0) core::copy_from_host_sync(parts, spec.parts.data(), spec.parts.size() * sizeof(int32_t), w.d.stream);
  core::copy_from_host_sync(starts, member_start.data(), member_start.size() * sizeof(int64_t), w.d.stream);
  kernels::launch_parts_mark(parts, starts, num_parts, member_start.back(), part_offsets_.data(), part_nodes_.data(), w.mark.data(),
                             w.d.stream.native_handle());
  struct NoLossWeights {
    float* operator()(std::size_t) const { return nullptr; }
    void launch(const int32_t* is_loss, const int32_t* start, const int32_t* nodes, int64_t k, int32_t* rows, float*, void* stream) const {
      kernels::launch_loss_rows(is_loss, start, nodes, k, rows, nullptr, 0, nullptr, 1.0, stream);
    }
  };
  SubgraphResult r = finish_subgraph(
      w, graph_, cpu_.graph().num_nodes(), self_loops_of(o.norm), false, weighted(o.norm),
      [&](const induced::InducedView& view, int64_t k, float* weights) {
        const induced::ClusterWeightView cw{.gcn = o.norm == graph::BlockNorm::kGcn,
                                            .diag_lambda = o.diag_lambda,
                                            .row_start = view.row_start,
                                            .row_indices = view.row_indices,
                                            .inv_sqrt = w.inv_sqrt.reserve(static_cast<std::size_t>(k), 0, w.d.device, w.d.stream)};
        kernels::launch_cluster_weights(cw, k, weights, w.d.stream.native_handle());
      },
      NoLossWeights{});
  // A part listed twice marks its members twice: fewer nodes than members (as the CPU sampler refuses).
  GNNPIPE_CHECK(static_cast<int64_t>(r.nodes.size()) == member_start.back(), "batch {}: a part appears twice", spec.index);
  return assemble(spec, std::move(r), o.num_layers, "cluster block");
}

}  // namespace gnnpipe::samplers
