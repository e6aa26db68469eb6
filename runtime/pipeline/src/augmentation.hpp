#pragma once
// Augmentation: MH-Aug's chain as a stage of its own (issue #41; docs/AUGMENT.md).
//
// Schedule. State S_0 keeps everything. Epoch e trains on the views of (S_{e-1}, S_e); S_e is the
// chain's step from S_{e-1} with the per-node uncertainties `ent` as they stood at the end of
// epoch e - 2's training (all ones before any: nodes never seen count as fully uncertain). So the
// uncertainties the chain reads are between one and two epochs of steps old (the official code
// reads the current model's): the price of running the chain while epoch e - 1 trains instead of
// between epochs. Both modes compute the same states from the same inputs, so a pipelined run
// equals the sequential one bitwise.
//
// Pipelined: a thread of its own computes S_1, S_2, ... as soon as each one's uncertainties exist,
// and the epoch's first sample waits for it (prepare_epoch; the wait is counted). Sequential:
// prepare_epoch computes the state itself.
//
// The train stage writes each batch's uncertainties (the normalised entropy of the original
// view's logits, by node id) into live_uncertainty() on the train stream; end_epoch() queues the
// copy of that array to the host as the epoch's snapshot.
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/graph/csr_graph.hpp"
#include "gnnpipe/graph/mini_batch.hpp"
#include "gnnpipe/models/device_array.hpp"
#include "gnnpipe/pipeline/training_run.hpp"
#include "gnnpipe/samplers/mh_aug.hpp"
#include "gnnpipe/samplers/mh_views.hpp"

namespace gnnpipe::pipeline::detail {

class Augmentation {
 public:
  // ConfigError (one line, naming augment.type) when the sampler's batches take no views, the
  // labels are multi-label, or the run resumes (the chain's state is not in checkpoints yet).
  explicit Augmentation(const TrainingSetup& s);
  ~Augmentation();
  Augmentation(const Augmentation&) = delete;
  Augmentation& operator=(const Augmentation&) = delete;

  // Before epoch `epoch`'s first batch is sampled (any thread): S_epoch exists when it returns.
  void prepare_epoch(int epoch);
  // Sets `batch`'s views from its epoch's states (prepared). Thread-safe.
  void attach(graph::MiniBatch& batch) const;
  // The uncertainties the train stage writes: [num_nodes] floats in the model's context memory,
  // 1 until a batch holding the node trained.
  float* live_uncertainty();
  // On the train thread after epoch `epoch`'s last step: its snapshot for the chain.
  void end_epoch(int epoch);
  // Epoch `epoch`'s counters (after prepare_epoch(epoch)).
  AugmentCounters counters(int epoch) const;
  // On the train thread, after epoch `epoch`'s last step (or in the next epoch, before a step):
  // the chain's state for a checkpoint (TrainingSetup::resumed_augment restores it).
  AugmentCheckpoint checkpoint(int epoch);
  // Stops the chain's thread (a failed run): prepare_epoch then throws.
  void stop() noexcept;

 private:
  struct Snapshot {
    core::Buffer<float> host;
    std::optional<core::Event> copied;
  };
  // S_epoch from S_{epoch-1} (on the chain's thread or the caller's).
  void compute_state(int epoch);
  std::vector<double> uncertainties_of(int epoch);  // waits for end_epoch(epoch) when epoch >= 1
  // Epoch `epoch`'s snapshot as floats (all 1 before epoch 1); it must exist.
  std::vector<float> snapshot_values(int epoch);
  void restore(const AugmentCheckpoint& c);
  void loop();

  const TrainingSetup& s_;
  const bool background_;
  const graph::CsrGraph chain_graph_;
  samplers::mh::MhChain chain_;
  samplers::mh::ViewBuilder views_;
  int64_t next_proposal_ = 0;  // the chain's proposal counter (its thread or prepare_epoch's)
  models::DeviceArray<float> live_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, std::shared_ptr<const samplers::mh::ViewState>> states_;
  std::map<int, AugmentCounters> counters_;
  // Kept until the chain no longer reads them and a checkpoint cannot ask for them (epochs e - 1
  // and e of the chain's latest state e - 2 at least); inserted by end_epoch, erased by the chain.
  std::map<int, Snapshot> snapshots_;
  std::map<int, int64_t> proposals_after_;  // the proposal counter after state e
  bool stopping_ = false;
  int computed_ = 0;  // the last state computed
  std::thread thread_;  // started by the first prepare_epoch in background mode
};

}  // namespace gnnpipe::pipeline::detail
