#pragma once
// GraphSAINT and Cluster-GCN batches on the GPU (issue #40): the sampler's tables (alias table,
// pre-sample counts, partition) copied to the device once; a batch's node set marked by kernels
// (GraphSAINT's draws, a part's members), compacted in ascending order by a scan, its induced
// rows, weights and loss rows computed there by the element functions the twins run
// (induced_phases.hpp); the arrays come back to the host and are assembled as the CPU sampler's
// (its batches bit for bit; tests/gpu/test_samplers_gpu.cpp). Not yet on the training path.
#include <memory>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/device.hpp"
#include "gnnpipe/samplers/cluster_sampler.hpp"
#include "gnnpipe/samplers/saint_sampler.hpp"
#include "gnnpipe/samplers/sampler.hpp"

namespace gnnpipe::samplers {

// The device copies every batch of a subgraph sampler reads: the graph and the training mask.
struct DeviceGraph {
  core::Buffer<int64_t> offsets;
  core::Buffer<int32_t> indices;
  core::Buffer<uint8_t> is_train;
};

class GpuSaintSampler final : public Sampler {
 public:
  // `sampler` (and its graph) must outlive this one; CudaError when `device` is not an available GPU.
  GpuSaintSampler(const SaintSampler& sampler, core::Device device);
  std::vector<BatchSpec> plan_epoch(int64_t epoch) const override { return cpu_.plan_epoch(epoch); }
  std::unique_ptr<SamplerWorkspace> make_workspace() const override;
  graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const override;
  std::size_t num_layers() const override { return cpu_.num_layers(); }

 private:
  const SaintSampler& cpu_;
  core::Device device_;
  DeviceGraph graph_;
  core::Buffer<saint::AliasEntry> alias_;
  core::Buffer<int32_t> row_of_block_;
  core::Buffer<uint32_t> node_counts_, edge_counts_;
  core::Buffer<double> full_inv_sqrt_;
};

class GpuClusterSampler final : public Sampler {
 public:
  // `sampler` (and its graph) must outlive this one; CudaError when `device` is not an available GPU.
  GpuClusterSampler(const ClusterSampler& sampler, core::Device device);
  std::vector<BatchSpec> plan_epoch(int64_t epoch) const override { return cpu_.plan_epoch(epoch); }
  std::unique_ptr<SamplerWorkspace> make_workspace() const override;
  graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const override;
  std::size_t num_layers() const override { return cpu_.num_layers(); }
  bool redraws() const override { return cpu_.redraws(); }
  bool fixed_batch() const override { return cpu_.fixed_batch(); }

 private:
  const ClusterSampler& cpu_;
  core::Device device_;
  DeviceGraph graph_;
  core::Buffer<int32_t> part_offsets_, part_nodes_;
};

}  // namespace gnnpipe::samplers
