#pragma once
// What the memory governor (docs/DESIGN.md §4) reports: the plan before epoch 1 and the counts of what it
// did, per epoch and for the run. Plain numbers; the program prints them and writes them to
// metrics.csv and summary.json.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gnnpipe::pipeline {

// What the governor did with one batch.
enum class MemoryAction { kFit, kSplit, kResample, kCut, kLayerwise };
std::string_view to_string(MemoryAction action);

struct MemoryCounters {
  int64_t fit = 0;            // batches that ran as sampled
  int64_t split = 0;          // batches split into micro-batches (before the copy)
  int64_t micro_batches = 0;  // micro-batches those made
  int64_t resampled = 0;      // batches replaced by another draw
  int64_t cut = 0;            // batches that lost edges
  int64_t edges_cut = 0;      // edges those lost
  int64_t retried = 0;        // steps that still ran out of budget and were split and run again
  int64_t layerwise = 0;      // batches run one layer at a time over chunks of rows (memory.policy layerwise)
  int64_t chunks = 0;         // the chunks those ran (every layer's)
  // MH-Aug: batches (among those that fit) whose step forwarded the new view again instead of
  // holding its forward aside: they fit the budget only without that second set of activations.
  int64_t augment_reforwarded = 0;
  std::size_t peak_bytes = 0; // the allocator's peak (all streams)
  std::size_t reserved_bytes = 0;  // the most the driver held for the allocator after a step (AllocatorStats::held_bytes)
  // The work the steps did (with the governor's counts, as both are gathered per step):
  int64_t seeds = 0;  // loss rows (training seeds) trained on
  int64_t edges = 0;  // edges of the blocks trained on (every part of a split batch)
  // Stage executions run again after a transient error (pipeline.stage_retries; an epoch's
  // evaluation counts in that epoch's).
  int64_t stage_retries = 0;

  void add(const MemoryCounters& other);
  // The batches the governor admitted, however it admitted them.
  int64_t batches() const { return fit + split + resampled + cut + layerwise; }
};

// Where device memory goes, and what will happen to epoch 1's batches (`gnnpipe run --plan`).
struct MemoryPlan {
  std::string device;
  std::size_t limit = 0, reserve = 0;
  std::size_t budget = 0;          // what the allocator enforces: limit - reserve, clamped to what is free
  std::size_t free_at_start = 0;   // on a GPU: cudaMemGetInfo's free bytes when the run began (0 on the CPU)
  bool clamped = false;            // the budget was cut to what was free
  std::string policy;
  // Resident when training starts, by kind.
  std::size_t parameters = 0;      // values and gradients
  std::size_t optimizer = 0;       // optimizer state (moments, decay factors)
  std::size_t eval_twin = 0;       // the evaluation copy of the parameters
  std::size_t library = 0;         // cuBLAS workspaces
  std::size_t other = 0;           // anything else in use at start (loss slots)
  std::size_t evaluation = 0;      // evaluation's arrays at most (the largest inference chunk)
  int eval_chunk_nodes = 0;        // layer-wise evaluation's destinations per chunk (fit to the budget)
  // Evaluation runs over the kept full-graph batch in one piece (its arrays are then `evaluation`).
  bool eval_whole = false;
  std::size_t device_slots = 0;    // the device slots, grown for epoch 1's largest step
  int device_slot_count = 0;       // how many (memory::plan_device_slots)
  // Epoch 1, batch by batch through the governor (without training).
  int64_t batches = 0;
  MemoryCounters counters;
  std::size_t largest_batch_peak = 0;  // the predicted peak while the largest batch trains
  int largest_split = 1;               // the most micro-batches one batch needs
  // Layer-wise batches: the most chunks one step runs, their rows, and the bytes one step moves
  // between host and device at most.
  int64_t layerwise_chunks = 0, layerwise_chunk_rows = 0;
  std::size_t layerwise_moved = 0;
  // Where a layer-wise step keeps the hidden outputs ("device": all of them; "layer": the running
  // layer's input rows only; "host") and reads layer 0's rows ("features": the placed matrix;
  // "device": the batch's rows loaded once a step; "host": gathered per chunk); "none": none ran.
  std::string layerwise_outputs = "none", layerwise_inputs = "none";
  // pipeline.resident: epoch 1's one fixed batch fits unsplit, so it is copied once and stays.
  bool resident_batch = false;
  // memory.features as decided: "device" (device_features bytes, copied once) or "host".
  std::string features = "host";
  std::size_t device_features = 0;  // the matrix, or the cache
  int64_t cache_rows = 0;
  std::string cache_rank;  // memory.cache_rank of the cache: "degree" or "presample (N epochs)"
  // pipeline.eval_graph as decided: the whole graph's block on the device (its bytes) or 0
  // (layer-wise evaluation, or over the resident full batch).
  std::size_t eval_graph = 0;
  // pipeline.eval_graph layerwise_device as decided: layer-wise evaluation keeps every layer's
  // outputs on the device (within `evaluation`).
  bool eval_outputs_on_device = false;
  // Host memory: the dataset's arrays (graph, features, labels) and the staging slots at most
  // (slots x epoch 1's largest packed batch, with the slots' 1/8 growth headroom).
  std::size_t host_dataset = 0, host_staging = 0;
  int staging_slots = 0;

  // The plan as lines for people (no trailing newlines).
  std::vector<std::string> lines() const;
};

}  // namespace gnnpipe::pipeline
