#pragma once
// MemoryGovernor: the memory governor of docs/DESIGN.md §4 for the training pipeline. Before a batch is
// copied it predicts the device memory the run will hold while the batch trains, and decides:
//   fits      -> the batch runs as sampled;
//   too big   -> memory.policy: layerwise (one layer at a time over chunks of rows, the hidden
//                outputs on the device, one layer's there, or on the host: layerwise_step.hpp; exact), split (k micro-batches with exactly the sampled computation trees of
//                their loss targets, gradients accumulated into one optimizer step: nothing is
//                dropped), resample (draw another batch, up to memory.max_tries, then split), or
//                cut (remove the fewest lowest-scored edges that make it fit, found by binary search).
// The prediction: what is resident (measured when training starts: parameters, gradients,
// optimizer state, the evaluation twin, library workspaces), an upper bound of evaluation's
// arrays (the largest inference chunk), the device slots (every slot grown to the most one has
// had to hold so far, 1/8 headroom, as the transfer stage grows them: a whole batch, or the
// largest micro-batch of a split one, since micro-batches enter the device slot one at a time),
// and the train stream's grow-only
// arrays (the model's and the train stage's) via GrowOnlyFootprint, refined by PeakPredictor's
// online fit against what the train stream measurably holds after each step.
// The governor is called in batch order by one thread (the flow graph's govern stage, or the
// sequential loop): admit() returns the whole decision for a batch (how it runs, whether it stays
// resident); observe() comes from the train thread after the step, with its own lock.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gnnpipe/graph/edge_cut.hpp"
#include "gnnpipe/graph/feature_store.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/graph/node_scores.hpp"
#include "gnnpipe/graph/split_batch.hpp"
#include "gnnpipe/memory/grow_only_footprint.hpp"
#include "gnnpipe/memory/memory_options.hpp"
#include "gnnpipe/memory/peak_predictor.hpp"
#include "gnnpipe/models/gnn_model.hpp"
#include "gnnpipe/pipeline/memory_report.hpp"
#include "gnnpipe/samplers/augment_options.hpp"
#include "layerwise_step.hpp"

namespace gnnpipe::pipeline::detail {

// How one batch runs.
struct Admission {
  MemoryAction action = MemoryAction::kFit;
  std::vector<graph::MiniBatch> parts;  // what the step trains on, in order: the batch, or its micro-batches
  int64_t edges_removed = 0;            // cut
  // The train stage gives the model's and its own grow-only arrays back before the step: the
  // batch fits on its own but not on top of arrays grown for other shapes (arrays never shrink).
  bool trim = false;
  std::size_t predicted_total = 0;      // device bytes the run holds while the step trains
  double analytical_train = 0;          // train-stream bytes by the arithmetic alone
  double predicted_train = 0;           // ... with the fitted correction
  int64_t nodes = 0, edges = 0;         // summed over the parts' blocks (the fit's variables)
  // pipeline.resident: the batch stays on the device for the run (a candidate admitted as it is),
  // and evaluation runs over it in one piece (its whole-graph bound fit beside it).
  bool keep_resident = false;
  bool whole_eval = false;
  // MemoryAction::kLayerwise: the chunks of parts.front(), run by LayerwiseStep.
  std::optional<LayerwisePlan> layerwise;
  // MH-Aug: its step holds the new view's forward aside (a second set of activations), unless the
  // batch fits only without it (then the view is forwarded again: slower, the same gradients).
  bool augment_keeps_aside = true;
};

// What admit() is to decide beyond the split: whether a batch that may stay on the device for the
// run (pipeline.resident's fixed batch, none kept yet) is kept, and whether evaluation over it in
// one piece (a full-graph batch: `whole_eval_bound`, its arrays at most) fits beside it; that
// bound then replaces evaluation's (layer-wise inference's).
struct Residency {
  bool candidate = false;
  std::optional<std::size_t> whole_eval_bound;
};

// What one admission adds to the counts (fits, splits and their micro-batches, ...).
MemoryCounters counters_of(const Admission& a);

struct GovernorSetup {
  const models::GnnModel<float>& model;
  int64_t feature_cols = 0;
  int64_t classes = 0;
  // memory.features: device packs batches without feature rows (packed_feature_cols 0), cache
  // packs the missed ones (sized here as if every row were missed: an upper bound); with either the
  // train stage assembles a part's rows into one array of its own (gathers_on_device; none for a
  // device placement's rows 0..k-1 in order).
  int64_t packed_feature_cols = 0;
  bool gathers_on_device = false;
  // The store's type: fp16/bf16 rows are packed and moved in 16 bits and widened into a float
  // array by the train stage (with gathers_on_device, after a 16-bit array of their own).
  graph::FeatureDType feature_dtype = graph::FeatureDType::kFloat32;
  memory::MemoryOptions options;
  std::size_t budget = 0;          // what the allocator enforces (limit - reserve, clamped)
  int device_slots = 1;
  std::size_t resident_other = 0;  // bytes in use off the train stream when training starts
  std::size_t train_fixed = 0;     // bytes in use on the train stream when training starts
  std::size_t eval_bound = 0;      // evaluation's arrays at most
  // memory.policy cut: the node values the edges are scored by (null values for `random`), how
  // cut rows are reweighted, and the run's seed (the random order of a batch's cut).
  graph::NodeScores cut_scores;
  graph::CutWeights cut_weights = graph::CutWeights::kKeep;
  uint64_t seed = 0;
  // Set when augment is on: a step also grows MH-Aug's arrays (augmented_step.hpp); the views'
  // blocks are in the packed batch (BatchLayout).
  std::optional<samplers::AugmentOptions> augment;
};

class MemoryGovernor {
 public:
  explicit MemoryGovernor(GovernorSetup setup) : s_(std::move(setup)) {}

  // Decides how `batch` (of an epoch of `batches` batches) runs. `redraw(k)` samples the k-th
  // replacement of the batch (resample); `redraws` says whether that gives a different batch.
  // `residency`: whether it stays on the device for the run (see Residency).
  // Throws OutOfBudget (naming the batch and the smallest memory.limit that works) when not even
  // its smallest split fits. Candidate splits are sized before they are built (split()).
  Admission admit(graph::MiniBatch batch, int64_t batches, bool redraws,
                  const std::function<graph::MiniBatch(int attempt)>& redraw, const Residency& residency = {});

  // The most device memory the run would hold while any one of `batches` (of an epoch of
  // `per_epoch`) trains as sampled, from the governor's state now; nothing when one of them does not
  // fit unsplit. For planning before the run (Stages asks it for the feature placement and evaluation's
  // outputs); changes nothing.
  std::optional<std::size_t> predict_unsplit(std::span<const graph::MiniBatch> batches, int64_t per_epoch) const;

  // The step of `admitted` ran: the train stream held `measured_train` bytes after it.
  void observe(const Admission& admitted, std::size_t measured_train);

  double mape() const;
  double max_error() const;
  int64_t observations() const;
  std::size_t slot_capacity_bound() const { return slot_bound(0); }
  const GovernorSetup& setup() const { return s_; }

  // What identifies a batch that comes back every epoch (a full batch, a Cluster-GCN batch of the
  // same parts): the governor remembers the split or the chunks it got.
  struct BatchKey {
    std::size_t inputs = 0, loss_rows = 0;
    int64_t edges = 0;
    graph::NodeId first = 0, last = 0;
    auto operator<=>(const BatchKey&) const = default;
  };
  static BatchKey key_of(const graph::MiniBatch& batch);

 private:
  struct Estimate {
    std::size_t total = 0;
    double analytical_train = 0, predicted_train = 0;
    int64_t nodes = 0, edges = 0;
    std::size_t slot = 0;    // the device slot: the batch, or the largest part (parts travel one at a time)
    std::vector<std::vector<std::size_t>> needs;
    bool trim = false;  // predicted after the train stream's arrays were given back
  };
  // What the prediction needs of one part: its layers' block shapes, packed bytes, loss rows and
  // the fit's variables. From a batch, or from a batch with other per-block edge counts (a cut
  // candidate, sized without building it).
  struct PartSize {
    std::vector<models::BlockShape> shapes;  // one per layer
    std::size_t packed = 0;
    std::size_t loss_rows = 0;
    int64_t nodes = 0, edges = 0;
    bool identity_rows = false;  // its input nodes are 0..nodes-1 in order
    // MH-Aug: the step holds the new view's forward aside (AugmentedStep::run's keep_aside).
    bool keep_aside = true;
  };
  PartSize size_of(const graph::MiniBatch& part) const;
  PartSize size_of(const graph::MiniBatch& part, std::span<const int64_t> block_edges) const;
  std::vector<PartSize> sizes_of(std::span<const graph::MiniBatch> parts) const;
  Estimate estimate(std::span<const PartSize> parts, int64_t batches, bool trim = false) const;
  bool fits(const Estimate& e) const;
  // The estimate of `parts` as the arrays are, or after a trim where only that fits; nothing
  // when neither fits (`last` gets the smaller estimate, for the error message).
  std::optional<Estimate> admissible(std::span<const PartSize> parts, int64_t batches, Estimate* last = nullptr) const;
  // The same for any estimate (estimate_of(trim)): as the arrays are, else after a trim.
  std::optional<Estimate> admissible_by(const std::function<Estimate(bool trim)>& estimate_of, Estimate* last) const;
  // memory.policy cut: the batch without the fewest lowest-ranked edges that make it fit, or
  // nothing when removing every removable edge is not enough.
  // `least` gets the smallest total predicted (every removable edge removed) when that fails too.
  bool try_cut(Admission& a, const graph::MiniBatch& sampled, int64_t batches, std::size_t* least = nullptr);
  // memory.policy split (and where resample and cut give up): the fewest micro-batches that fit,
  // sized by graph::split_sizes before any is built (only the chosen split is); throws OutOfBudget
  // naming the smallest memory.limit that works when none does, or when splitting stops helping.
  void split(Admission& a, const graph::MiniBatch& sampled, int64_t batches, std::size_t cut_least);
  // memory.policy layerwise (and where splitting cannot shrink a batch's trees): the largest chunks
  // of rows that fit (memory_governor_layerwise.cpp), or false with `least` the smallest total
  // predicted (one row a chunk) when none do, or 0 when the model cannot run layer-wise.
  bool try_layerwise(Admission& a, const graph::MiniBatch& sampled, int64_t batches, std::size_t* least);
  Estimate estimate_layerwise(const LayerwisePlan& plan, int64_t batches, bool trim) const;
  // The largest chunks of `sampled` that fit under `placement`, or nothing (`least` gets the
  // total of one-row chunks).
  std::optional<std::pair<LayerwisePlan, Estimate>> largest_chunks(const graph::MiniBatch& sampled, int64_t batches,
                                                                   LayerwisePlacement placement, std::size_t* least) const;
  // The placements try_layerwise tries, in the order it prefers them.
  std::vector<LayerwisePlacement> layerwise_placements() const;
  // A placement is taken when it leaves chunks of at least this many rows (or the widest layer's):
  // smaller chunks cost more per chunk than a placement that moves more bytes saves.
  static constexpr int64_t kMinDeviceChunkRows = 256;
  std::optional<Estimate> admissible_layerwise(const LayerwisePlan& plan, int64_t batches, Estimate* last = nullptr) const;
  // The estimate's needs positions (the model's arrays, the train stage's, the layer-wise step's):
  // the epoch's loss slots, which a trim keeps.
  std::size_t epoch_losses_position(const std::vector<std::size_t>& needs) const;
  // How many arrays MH-Aug's step has, last in an estimate's needs (AugmentedStep::array_count).
  std::size_t augment_arrays() const;
  // The parts of split_batch(batch, .., parts), sized without building them (equal to sizes_of
  // them); with `prune`, only up to the first part that does not fit alone (the split cannot fit).
  std::vector<PartSize> split_estimate(const graph::MiniBatch& batch, int parts, int64_t batches, bool prune) const;
  PartSize size_of(const graph::MiniBatch& parent, const graph::MicroBatchSize& micro) const;
  // The memory.limit at which a prediction of `total` fits (the budget plus the reserve).
  std::size_t limit_for(std::size_t total) const;
  std::size_t slot_bound(std::size_t packed) const;
  // Raises evaluation's bound to `bytes` when `admitted` (the run's only batch: a resident one)
  // still fits with it, and its predicted total with it; returns whether it does (true, and
  // unchanged, when `bytes` is not more).
  bool try_raise_eval_bound(Admission& admitted, std::size_t bytes);
  void admit_estimate(Admission& a, Estimate e);

  // The split a batch got, by what identifies a batch that comes back every epoch (BatchKey): the
  // search starts there, since splitting a large batch into every smaller candidate first costs seconds.
  static constexpr std::size_t kSplitMemoEntries = 4096;
  std::map<BatchKey, int> split_memo_;
  // The chunk rows a batch ran layer-wise with (tried first when it comes back).
  std::map<BatchKey, std::pair<int64_t, LayerwisePlacement>> layerwise_memo_;  // (chunk rows, placement)

  GovernorSetup s_;
  memory::GrowOnlyFootprint train_arrays_;  // what the train stream's arrays have served so far
  std::size_t largest_slot_ = 0;            // the most a device slot has had to hold so far
  mutable std::mutex predictor_mutex_;      // observe() runs on the train thread
  memory::PeakPredictor predictor_;
};

}  // namespace gnnpipe::pipeline::detail
