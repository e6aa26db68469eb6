#pragma once
// The sampler contract (docs/DESIGN.md §2): plan an epoch as a list of independent BatchSpecs, then turn
// each into a MiniBatch. A batch's randomness comes only from (seed, epoch, batch index), so the
// batches are the same whatever thread samples them and in whatever order. sample() is
// thread-safe for different workspaces; a workspace is reused across batches by one thread.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/samplers/view_support.hpp"

namespace gnnpipe::samplers {

struct BatchSpec {
  int64_t epoch = 0;
  int64_t index = 0;                  // position in the epoch's plan
  std::vector<graph::NodeId> seeds;   // target nodes of this batch (global ids; neighbor, inference)
  std::vector<int32_t> parts;         // partitions joined into this batch (Cluster-GCN)
  // 0 for the batch of the plan; k > 0 draws the k-th replacement of it (memory.policy: resample)
  // from a stream of its own. Samplers whose batches are fixed by the plan (full batch,
  // Cluster-GCN) give the same batch for every attempt: redraws() says so.
  int attempt = 0;
};

// Per-thread scratch reused across batches (no allocation per batch on the hot path once warm).
class SamplerWorkspace {
 public:
  virtual ~SamplerWorkspace() = default;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::vector<BatchSpec> plan_epoch(int64_t epoch) const = 0;
  virtual std::unique_ptr<SamplerWorkspace> make_workspace() const = 0;
  virtual graph::MiniBatch sample(const BatchSpec& spec, SamplerWorkspace& workspace) const = 0;
  // The number of model layers the batches are built for (blocks per batch, or uses of the shared block).
  virtual std::size_t num_layers() const = 0;
  // True when BatchSpec::attempt > 0 draws a different batch (random samplers); false when the
  // plan fixes each batch (full batch, Cluster-GCN's parts).
  virtual bool redraws() const { return true; }
  // True when every epoch's plan is the same single batch, with the same contents whatever the
  // epoch (full batch; Cluster-GCN with all parts in one batch): a training run may build, pack
  // and copy it once and keep it on the device (pipeline.resident).
  virtual bool fixed_batch() const { return false; }
  // True when that batch is the whole graph, every node a target in id order, with the blocks a
  // full-neighbour forward of the model uses (full batch): an eval-mode forward of it gives the
  // logits layer-wise inference gives (up to the order of floating-point sums).
  virtual bool full_graph_batch() const { return false; }
  // MH-Aug (issue #41): how this sampler's one shared square block is weighted, so that an
  // augmented view re-weights its kept entries (mh_views.hpp); nullopt when its batches take no
  // augmentation (layer-wise blocks: neighbor sampling).
  virtual std::optional<mh::ViewSupport> augment_support() const { return std::nullopt; }
};

}  // namespace gnnpipe::samplers
