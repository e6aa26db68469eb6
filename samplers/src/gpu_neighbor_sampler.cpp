#include "gnnpipe/samplers/gpu_neighbor_sampler.hpp"

#include <algorithm>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/memory_kind.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/samplers/neighbor_draw.hpp"
#include "device_arrays.hpp"
#include "neighbor_batch.hpp"
#include "neighbor_kernels.hpp"

namespace gnnpipe::samplers {
namespace {

using graph::EdgeOffset;
using graph::NodeId;
using detail::GrowingArray;
using kernels::HopPhase;

// One sampling thread's stream and device arrays: local ids and first reaches per graph node (-1
// and kNoPick between batches), the batch's nodes and rows, and one hop's arrays.
class GpuWorkspace final : public SamplerWorkspace {
 public:
  GpuWorkspace(core::Device on, NodeId num_nodes)
      : d(on),
        local_of(core::Buffer<int32_t>::on(on, static_cast<std::size_t>(num_nodes))),
        first(core::Buffer<int64_t>::on(on, static_cast<std::size_t>(num_nodes))) {
    core::fill_async(local_of, int32_t{-1}, d.stream);
    core::fill_async(first, hop::kNoPick, d.stream);
    d.stream.synchronize();
  }
  detail::DeviceScratch d;
  core::Buffer<int32_t> local_of;
  core::Buffer<int64_t> first;
  GrowingArray<int32_t> nodes, is_new, rank, row_indices;
  GrowingArray<int64_t> counts, pick_start, picks, lengths, row_offsets;
};

}  // namespace

GpuNeighborSampler::GpuNeighborSampler(const graph::CsrGraph& graph, std::vector<NodeId> train_nodes,
                                       NeighborSamplerOptions options, core::Device device)
    : graph_(graph), plan_(graph, std::move(train_nodes), options), o_(std::move(options)), device_(device) {
  GNNPIPE_CHECK_AS(CudaError, device_.is_cuda(), "the GPU neighbor sampler needs a GPU device, not {}", device_.str());
  device_.require_available();
  detail::DeviceScratch d(device_);
  offsets_ = d.upload(graph_.offsets());
  indices_ = d.upload(graph_.indices());
  if (o_.norm == graph::BlockNorm::kGcn) inv_sqrt_degree_ = inverse_sqrt_degrees(graph_);
}

std::unique_ptr<SamplerWorkspace> GpuNeighborSampler::make_workspace() const {
  return std::make_unique<GpuWorkspace>(device_, graph_.num_nodes());
}

graph::MiniBatch GpuNeighborSampler::sample(const BatchSpec& spec, SamplerWorkspace& workspace) const {
  auto& ws = dynamic_cast<GpuWorkspace&>(workspace);
  void* stream = ws.d.stream.native_handle();
  const auto num_seeds = static_cast<int64_t>(spec.seeds.size());
  for (NodeId s : spec.seeds) {
    GNNPIPE_CHECK(s >= 0 && s < graph_.num_nodes(), "batch {}: seed {} is outside [0, {})", spec.index, s, graph_.num_nodes());
  }
  std::vector<NodeId> sorted(spec.seeds);
  std::sort(sorted.begin(), sorted.end());
  GNNPIPE_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), "batch {}: a seed appears twice", spec.index);
  ws.nodes.reserve(static_cast<std::size_t>(num_seeds), 0, device_, ws.d.stream);
  core::copy_from_host_sync(ws.nodes.data(), spec.seeds.data(), spec.seeds.size() * sizeof(NodeId), ws.d.stream);
  kernels::launch_set_local(ws.local_of.data(), ws.nodes.data(), num_seeds, 0, false, stream);
  ws.row_offsets.reserve(1, 0, device_, ws.d.stream);
  core::fill_bytes_async(ws.row_offsets.data(), 1, sizeof(int64_t), 0, ws.d.stream);

  const bool self_loops = o_.norm == graph::BlockNorm::kGcn || o_.norm == graph::BlockNorm::kSelfLoops;
  std::vector<NodeId> dst_counts, src_counts;
  int64_t num_nodes = num_seeds, expanded = 0, rows = 0;
  for (std::size_t h = 0; h < o_.fanouts.size(); ++h) {
    const int64_t frontier = num_nodes - expanded;
    hop::HopView v{};
    v.graph_offsets = offsets_.data();
    v.graph_indices = indices_.data();
    v.frontier_size = frontier;
    v.fanout = o_.fanouts[h];
    v.replace = o_.replace;
    v.self_loops = self_loops;
    v.key = neighbor_hop_key(o_.seed, spec.epoch, spec.index, h, spec.attempt);
    v.local_of = ws.local_of.data();
    v.first = ws.first.data();
    v.num_nodes_before = static_cast<int32_t>(num_nodes);
    const auto f = static_cast<std::size_t>(frontier);
    v.counts = ws.counts.reserve(f, 0, device_, ws.d.stream);
    int64_t* pick_start = ws.pick_start.reserve(f + 1, 0, device_, ws.d.stream);
    v.pick_start = pick_start;
    v.lengths = ws.lengths.reserve(f, 0, device_, ws.d.stream);
    // The nodes array may grow this hop: every view into it is taken after the reserve below.
    v.frontier = ws.nodes.data() + expanded;
    kernels::launch_hop_phase(HopPhase::kCount, v, frontier, stream);
    ws.d.scan(static_cast<const int64_t*>(v.counts), pick_start, frontier, int64_t{0});
    const int64_t picks = ws.d.read(pick_start + frontier);
    const auto p = static_cast<std::size_t>(picks);
    v.picks = ws.picks.reserve(p, 0, device_, ws.d.stream);
    v.is_new = ws.is_new.reserve(p, 0, device_, ws.d.stream);
    int32_t* rank = ws.rank.reserve(p + 1, 0, device_, ws.d.stream);
    v.rank = rank;
    v.nodes = ws.nodes.reserve(static_cast<std::size_t>(num_nodes) + p, static_cast<std::size_t>(num_nodes), device_, ws.d.stream);
    v.frontier = v.nodes + expanded;
    kernels::launch_hop_phase(HopPhase::kDraw, v, frontier, stream);
    kernels::launch_hop_phase(HopPhase::kFirstReach, v, picks, stream);
    kernels::launch_hop_phase(HopPhase::kFlag, v, picks, stream);
    ws.d.scan(static_cast<const int32_t*>(v.is_new), rank, picks, int32_t{0});
    const int32_t reached = ws.d.read(rank + picks);
    kernels::launch_hop_phase(HopPhase::kAssign, v, picks, stream);
    kernels::launch_hop_phase(HopPhase::kRowLength, v, frontier, stream);
    int64_t* row_offsets = ws.row_offsets.reserve(static_cast<std::size_t>(num_nodes) + 1, static_cast<std::size_t>(expanded) + 1,
                                                  device_, ws.d.stream);
    ws.d.scan(static_cast<const int64_t*>(v.lengths), row_offsets + expanded, frontier, rows);
    v.row_start = row_offsets + expanded;
    const int64_t rows_after = ws.d.read(row_offsets + num_nodes);
    v.row_indices = ws.row_indices.reserve(static_cast<std::size_t>(rows_after), static_cast<std::size_t>(rows), device_, ws.d.stream);
    kernels::launch_hop_phase(HopPhase::kWriteRow, v, frontier, stream);
    kernels::launch_hop_phase(HopPhase::kReset, v, picks, stream);
    dst_counts.push_back(static_cast<NodeId>(num_nodes));
    expanded = num_nodes;
    num_nodes += reached;
    rows = rows_after;
    src_counts.push_back(static_cast<NodeId>(num_nodes));
  }
  const std::vector<NodeId> nodes = ws.d.read(static_cast<const NodeId*>(ws.nodes.data()), static_cast<std::size_t>(num_nodes));
  const std::vector<EdgeOffset> row_offsets =
      ws.d.read(static_cast<const EdgeOffset*>(ws.row_offsets.data()), static_cast<std::size_t>(expanded) + 1);
  const std::vector<NodeId> row_indices = ws.d.read(static_cast<const NodeId*>(ws.row_indices.data()), static_cast<std::size_t>(rows));
  kernels::launch_set_local(ws.local_of.data(), ws.nodes.data(), num_nodes, 0, true, stream);  // clean for the next batch
  ws.d.stream.synchronize();
  return assemble_neighbor_batch(spec, {.dst_counts = dst_counts,
                                        .src_counts = src_counts,
                                        .row_offsets = row_offsets,
                                        .row_indices = row_indices,
                                        .nodes = nodes},
                                 o_.norm, inv_sqrt_degree_);
}

}  // namespace gnnpipe::samplers
