#pragma once
// Item: one batch on its way through the stages of a training run (pipelined_driver.cpp, sequential_driver.cpp), and the
// helpers that name it in errors and logs.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/pipeline/stage_stats.hpp"
#include "gnnpipe/samplers/sampler.hpp"
#include "memory_governor.hpp"

namespace gnnpipe::pipeline::detail {

struct Item {
  samplers::BatchSpec spec;
  int epoch = 0;
  int64_t seq = 0;      // position in the whole run (the sequencer's order)
  int64_t batches = 0;  // in its epoch (spec.index is the batch's position in it)
  int slot = -1;        // staging slot held from the join until the copy completed
  int device_slot = -1; // device slot held from the second join until the train step was queued
  // What the staging slot holds: one part (the batch) or its micro-batches one after another.
  std::vector<BatchLayout> layouts;
  std::vector<std::size_t> offsets;  // each part's first byte in the slot; empty: parts packed by train
  std::size_t total_bytes = 0;
  std::size_t loss_rows = 0;  // of the sampled batch; 0: nothing to train on (a subgraph without training nodes)
  bool idle_share = false;    // data-parallel: this rank's share carries no loss (rank_share.hpp)
  bool unpacked = false;      // gather left the staging slot empty (a batch that ran layer-wise before)
  // The run's resident batch (pipeline.resident): `becomes_resident` for the epoch-1 batch that is
  // copied once and kept; `resident` for a later epoch's, which skips sample to transfer and trains
  // on the kept copy.
  bool becomes_resident = false;
  bool resident = false;
  std::shared_ptr<graph::MiniBatch> sampled;   // gather -> govern
  std::shared_ptr<const Admission> admission;  // govern -> train (the parts, kept for a retry)
  // What the governor did with it, counted in its epoch when it trains (so that an epoch's counts
  // so far are those of the batches that stepped, whatever the pipeline governed ahead).
  MemoryCounters governed;
  [[no_unique_address]] core::tsan::Published published{};  // last member: see core::tsan::Published

  bool last_in_epoch() const { return spec.index + 1 == batches; }
};

inline std::string describe(const Item& item) { return fmt::format("batch {} of epoch {}", item.spec.index, item.epoch); }
inline std::string context(Stage stage, const Item& item) {
  return fmt::format("stage {}, {}: ", to_string(stage), describe(item));
}

}  // namespace gnnpipe::pipeline::detail
