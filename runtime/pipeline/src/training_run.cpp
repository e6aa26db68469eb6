#include "gnnpipe/pipeline/training_run.hpp"

#include <fmt/format.h>
#include <tbb/flow_graph.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "dedicated_stage.hpp"
#include "epoch_losses.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/core/stream.hpp"
#include "gnnpipe/core/trace_range.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/memory/staging_pool.hpp"
#include "gnnpipe/models/ops/metrics.hpp"
#include "gnnpipe/models/ops/ops.hpp"
#include "gnnpipe/pipeline/layerwise_inference.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"
#include "stage_failure.hpp"

namespace gnnpipe::pipeline {
namespace {

using samplers::BatchSpec;

// One batch on its way through the stages.
struct Item {
  BatchSpec spec;
  int epoch = 0;
  int64_t seq = 0;           // position in the whole run (the sequencer's order)
  int64_t batches = 0;       // in its epoch (spec.index is the batch's position in it)
  int slot = -1;             // staging slot held from the join until the copy completed
  int device_slot = -1;      // device slot held from the second join until the train step was queued
  BatchLayout layout;
  std::size_t loss_rows = 0;  // 0: nothing to train on (a subgraph without training nodes)
  [[no_unique_address]] core::tsan::Published published{};  // last member: see core::tsan::Published

  bool last_in_epoch() const { return spec.index + 1 == batches; }
};

std::string describe(const Item& item) { return fmt::format("batch {} of epoch {}", item.spec.index, item.epoch); }
std::string context(Stage stage, const Item& item) { return fmt::format("stage {}, {}: ", to_string(stage), describe(item)); }

// Best-epoch selection and early stopping (ties: the earliest epoch).
struct EvalTracker {
  int patience = 0, eval_every = 1;
  int best_epoch = 0, since_best = 0;
  double best_val = -1, test_at_best = 0, train_at_best = 0;
  bool has_val = true;

  // Returns true when training should stop after this epoch.
  bool add(const EpochResult& r) {
    if (!r.evaluated) return false;
    const double score = has_val ? r.val_acc : r.train_acc;
    if (score > best_val) {
      best_val = score;
      best_epoch = r.epoch;
      test_at_best = r.test_acc;
      train_at_best = r.train_acc;
      since_best = 0;
    } else {
      since_best += eval_every;
    }
    return patience > 0 && since_best >= patience;
  }
};

// The stage functions both modes call, and the state they share.
class Stages {
 public:
  explicit Stages(const TrainingSetup& s)
      : s_(s),
        device_(s.model.context().device()),
        staging_(std::max(1, s.pipeline.staging_slots),
                 device_.is_cuda() ? core::MemoryKind::kPinned : core::MemoryKind::kHost, core::Device::cpu()),
        copy_stream_(device_),
        device_slots_(static_cast<std::size_t>(std::max(1, s.pipeline.staging_slots))),
        train_ctx_(s.model.context()),
        train_stream_(train_ctx_.stream()),
        eval_stream_(device_),
        eval_ctx_(eval_stream_, train_ctx_.options(), train_ctx_.allocator()),
        epoch_end_(device_),
        snapshot_done_(device_),
        eval_model_(s.model_options, s.data.features.cols(), s.data.labels.num_classes, s.seed, eval_ctx_),
        losses_(train_ctx_) {
    for (std::size_t i = 0; i < device_slots_.size(); ++i) {
      copied_.emplace_back(device_);
      released_.emplace_back(device_);
    }
  }

  const TrainingSetup& setup() const { return s_; }
  int slots() const { return staging_.size(); }
  std::size_t staging_bytes() const { return staging_.bytes(); }

  void fault(Stage stage, const Item& item) const {
    if (s_.fault) s_.fault(stage, item.epoch, item.spec.index);
  }

  // Sample the batch.
  graph::MiniBatch sample(const Item& item, samplers::ParallelSampler& sampler) {
    const core::TraceRange range("gnnpipe sample");
    const double t0 = s_.recorder.now();
    fault(Stage::kSample, item);
    graph::MiniBatch batch = sampler.sample_one(item.spec);
    s_.recorder.record(Stage::kSample, item.epoch, item.spec.index, t0, s_.recorder.now());
    return batch;
  }

  // Gather its features and pack it into its staging slot.
  void gather(Item& item, const graph::MiniBatch& batch) {
    const core::TraceRange range("gnnpipe gather");
    const double t0 = s_.recorder.now();
    fault(Stage::kGather, item);
    item.layout = BatchLayout::of(batch, s_.data.features.cols());
    item.loss_rows = batch.loss_rows.size();
    memory::StagingSlot& slot = staging_.slot(item.slot);
    core::tsan::acquire(&slot);  // slot hand-off: its token came back after its last copy (transfer)
    slot.ensure(item.layout.total_bytes);
    pack_batch(batch, s_.data.features, s_.data.labels.single.span(), item.layout, slot.data());
    core::tsan::release(&slot);  // slot hand-off: the item names it on its way to the transfer thread
    s_.recorder.record(Stage::kGather, item.epoch, item.spec.index, t0, s_.recorder.now());
  }

  // Queue the copy of the staging slot into the device slot on the copy stream (after the last
  // train step that read that device slot) and wait until it completed, so the staging slot can go back.
  void transfer(const Item& item) {
    const core::TraceRange range("gnnpipe transfer");
    const double t0 = s_.recorder.now();
    fault(Stage::kTransfer, item);
    const auto dev = static_cast<std::size_t>(item.device_slot);
    const std::size_t bytes = item.layout.total_bytes;
    copy_stream_.wait(released_[dev]);  // the last train step that read this device slot comes first
    models::DeviceArray<std::byte>& dst = device_slots_[dev];
    core::tsan::acquire(&staging_.slot(item.slot));  // slot hand-offs: filled by gather, and the device
    core::tsan::acquire(&dst);                       // slot's token returned by train after its step
    // Growth (1/8 headroom) frees the old memory in copy-stream order, after that wait: no host
    // synchronisation and no cudaFree (the run's caching allocator, under its budget).
    if (dst.capacity() < bytes) dst.ensure(train_ctx_.allocator(), copy_stream_, bytes + bytes / 8);
    const memory::StagingSlot& src = staging_.slot(item.slot);
    GNNPIPE_CHECK(src.capacity() >= bytes, "staging slot {} holds {} bytes, batch needs {}", item.slot, src.capacity(), bytes);
    core::copy_bytes_async(dst.data(), src.data(), bytes, copy_stream_);
    auto& copied = copied_[dev];
    copied.record(copy_stream_);
    copied.synchronize();
    core::tsan::release(&staging_.slot(item.slot));  // slot hand-offs: the staging slot's token goes
    core::tsan::release(&dst);                       // back, the device slot on to the train thread
    s_.recorder.record(Stage::kTransfer, item.epoch, item.spec.index, t0, s_.recorder.now());
  }

  // Queues one optimizer step on the batch in its device slot (its loss goes to the epoch's losses).
  void train(const Item& item) {
    const core::TraceRange range("gnnpipe train");
    const double t0 = s_.recorder.now();
    fault(Stage::kTrain, item);
    const auto dev = static_cast<std::size_t>(item.device_slot);
    core::tsan::acquire(&device_slots_[dev]);  // slot hand-off: filled by transfer
    train_stream_.wait(copied_[dev]);
    const PackedBatchView view = PackedBatchView::of(item.layout, nullptr, device_slots_[dev].data());
    const auto blocks = graph::layer_blocks(view.blocks, s_.model.num_layers(), item.spec.index);
    s_.model.params().zero_grad(train_ctx_);
    const auto logits = s_.model.forward(
        blocks, view.features, view.input_nodes, true,
        core::rng_key(s_.seed, {static_cast<uint64_t>(item.epoch), static_cast<uint64_t>(item.spec.index)}));
    const auto dlogits = dlogits_.matrix(train_ctx_, logits.rows, logits.cols);
    double* loss = losses_.slot(item.spec.index, item.batches, item.loss_rows);
    models::ops::log_softmax_nll<float>(train_ctx_, logits, view.labels, view.loss_rows, view.loss_weights, dlogits,
                                        loss_scratch_.ensure(train_ctx_, view.loss_rows.size()), loss);
    s_.model.backward(blocks, dlogits);
    s_.optimizer.step(s_.model.params());
    released_[dev].record(train_stream_);
    core::tsan::release(&device_slots_[dev]);  // slot hand-off: its token goes back
    s_.recorder.record(Stage::kTrain, item.epoch, item.spec.index, t0, s_.recorder.now());
  }

  // At an epoch's end, on the train thread: queue the copy of its losses (read later by mean()).
  void end_epoch_losses() { losses_.end_epoch(); }
  // The epoch's mean loss (waits for its copy; any thread, once per end_epoch_losses()).
  double epoch_loss() { return losses_.mean(); }

  // At an epoch's end, on the train thread: the eval stream waits for the epoch's last step, copies
  // the parameters into the evaluation twin, and the train stream waits for that copy before its
  // next step. (On the CPU backend the copy runs inline here.)
  void snapshot() {
    epoch_end_.record(train_stream_);
    eval_stream_.wait(epoch_end_);
    eval_model_.params().copy_values_from(s_.model.params(), eval_stream_);
    snapshot_done_.record(eval_stream_);
    train_stream_.wait(snapshot_done_);
  }

  // Layer-wise full-neighbor inference of the snapshot; fills the accuracies of `r`.
  void evaluate(EpochResult& r) {
    const core::TraceRange range("gnnpipe eval");
    const double t0 = s_.recorder.now();
    if (s_.fault) s_.fault(Stage::kEval, r.epoch, -1);
    const auto logits = infer_layerwise(eval_model_, s_.data.graph, s_.data.features,
                                        {.chunk_nodes = s_.eval_chunk_nodes, .parallel_chunks = s_.pipeline.sampler_threads},
                                        eval_workspace_);
    const auto labels = s_.data.labels.single.span();
    const auto& sp = s_.data.splits;
    r.evaluated = true;
    r.train_acc = models::cpu::accuracy<float>(logits.cview(), labels, sp.train.span());
    r.val_acc = sp.val.empty() ? NAN : models::cpu::accuracy<float>(logits.cview(), labels, sp.val.span());
    r.test_acc = sp.test.empty() ? NAN : models::cpu::accuracy<float>(logits.cview(), labels, sp.test.span());
    eval_stream_.synchronize();
    s_.recorder.record(Stage::kEval, r.epoch, -1, t0, s_.recorder.now());
  }

  // Early stop: put the snapshot of the stopping epoch back into the model (the pipelined run may
  // already have stepped into the next epoch).
  void restore_snapshot() {
    s_.model.params().copy_values_from(eval_model_.params(), train_stream_);
    train_stream_.synchronize();
  }

  // Waits for the work queued on every stream.
  void drain() {
    copy_stream_.synchronize();
    train_stream_.synchronize();
    eval_stream_.synchronize();
  }

  // The same after a stage failed: nothing may replace the first error, which names the stage and
  // batch. After a device fault every wait fails with the same sticky error; those are logged.
  void drain_after_failure() noexcept {
    for (const core::Stream* stream : std::initializer_list<const core::Stream*>{&copy_stream_, &train_stream_, &eval_stream_}) {
      try {
        stream->synchronize();
      } catch (const std::exception& e) {
        core::logger().debug("after the run failed, waiting for a stream failed too: {}", e.what());
      }
    }
  }

 private:
  const TrainingSetup& s_;
  core::Device device_;  // the model's op context's
  memory::StagingPool staging_;
  core::Stream copy_stream_;
  // One per staging slot: a batch on the device. After copy_stream_, which their frees are ordered
  // on, so they are destroyed before it.
  std::vector<models::DeviceArray<std::byte>> device_slots_;
  const models::OpContext& train_ctx_;  // the model's: its stream is the train stream
  const core::Stream& train_stream_;
  core::Stream eval_stream_;
  models::OpContext eval_ctx_;  // the evaluation twin's ops, on the eval stream
  std::vector<core::Event> copied_, released_;  // per device slot
  core::Event epoch_end_, snapshot_done_;
  models::GnnModel<float> eval_model_;
  InferenceWorkspace eval_workspace_;  // pinned and device buffers of every evaluation of the run
  models::DeviceArray<float> dlogits_;
  models::DeviceArray<double> loss_scratch_;
  detail::EpochLosses losses_;
};

bool evaluates(const TrainingSetup& s, int epoch) { return epoch % s.pipeline.eval_every == 0 || epoch == s.epochs; }

EvalTracker make_tracker(const TrainingSetup& s) {
  EvalTracker t;
  t.patience = s.patience;
  t.eval_every = s.pipeline.eval_every;
  t.has_val = !s.data.splits.val.empty();
  return t;
}

RunResult finish(const TrainingSetup& s, const EvalTracker& tracker, int epochs_run, std::vector<double> times) {
  RunResult r;
  r.epochs_run = epochs_run;
  r.best_epoch = tracker.best_epoch;
  r.best_val = tracker.best_val;
  r.test_at_best = tracker.test_at_best;
  r.train_at_best = tracker.train_at_best;
  r.params_checksum = s.model.params().checksum(s.model.context().stream());
  r.epoch_times = std::move(times);
  return r;
}

// Runs `fn`; what it throws comes out with `where` before its message (same error type), after
// the streams were drained without letting a later error replace it.
template <class Fn>
auto run_guarded(Stages& stages, const std::string& where, Fn&& fn) {
  try {
    return fn();
  } catch (...) {
    detail::Failure failure;
    failure.record(std::current_exception(), where);
    stages.drain_after_failure();
    failure.rethrow_if_failed();
    throw;  // unreachable: rethrow_if_failed threw
  }
}

RunResult run_sequential(const TrainingSetup& s, const std::function<void(const EpochResult&)>& on_epoch) {
  Stages stages(s);
  samplers::ParallelSampler sampler(s.sampler);
  EvalTracker tracker = make_tracker(s);
  std::vector<double> times;
  int epochs_run = 0;
  s.recorder.lane("sequential");
  for (int epoch = 1; epoch <= s.epochs; ++epoch) {
    const double start = s.recorder.now();
    const std::vector<BatchSpec> plan = s.sampler.plan_epoch(epoch);
    for (const BatchSpec& spec : plan) {
      Item item{spec, epoch, 0, static_cast<int64_t>(plan.size()), 0, 0, {}, 0};
      // Each stage in turn, synchronised; a failure names its stage and batch like the pipeline's.
      const auto guarded = [&](Stage stage, auto&& fn) {
        return run_guarded(stages, context(stage, item), fn);
      };
      const graph::MiniBatch batch = guarded(Stage::kSample, [&] { return stages.sample(item, sampler); });
      guarded(Stage::kGather, [&] { stages.gather(item, batch); });
      if (item.loss_rows == 0) continue;
      guarded(Stage::kTransfer, [&] { stages.transfer(item); });
      guarded(Stage::kTrain, [&] { stages.train(item); });
    }
    EpochResult r{epoch, 0, 0, false, 0, 0, 0, {}};
    r.loss = run_guarded(stages, fmt::format("stage train, end of epoch {}: ", epoch), [&] {
      stages.end_epoch_losses();
      return stages.epoch_loss();
    });
    bool stop = false;
    if (evaluates(s, epoch)) {
      run_guarded(stages, fmt::format("stage eval, epoch {}: ", epoch), [&] {
        stages.snapshot();
        stages.evaluate(r);
      });
      stop = tracker.add(r);
    }
    r.epoch_time_s = s.recorder.now() - start;
    r.verdict = epoch_verdict(s.recorder.totals(epoch), r.epoch_time_s, 1, false);
    times.push_back(r.epoch_time_s);
    epochs_run = epoch;
    on_epoch(r);
    if (stop) break;
  }
  stages.drain();
  RunResult result = finish(s, tracker, epochs_run, std::move(times));
  result.max_in_flight = 1;
  result.staging_bytes = stages.staging_bytes();
  return result;
}

// The evaluation thread: takes one epoch at a time from the train thread, evaluates it when due,
// and reports every epoch in order. The train thread hands over an epoch only when the previous
// one is done (the evaluation twin is then free to be overwritten by the next snapshot).
class EvalWorker {
 public:
  EvalWorker(Stages& stages, EvalTracker& tracker, const std::function<void(const EpochResult&)>& on_epoch,
             detail::Failure& failure, tbb::flow::graph& g, std::atomic<int>& stop_epoch)
      : stages_(stages), tracker_(tracker), on_epoch_(on_epoch), failure_(failure), graph_(g), stop_epoch_(stop_epoch),
        thread_([this] { loop(); }) {}
  ~EvalWorker() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  // Blocks until the previous epoch is done; returns the seconds waited.
  double wait_idle() {
    const double t0 = stages_.setup().recorder.now();
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !job_.has_value(); });
    return stages_.setup().recorder.now() - t0;
  }
  void submit(EpochResult r) {
    {
      std::lock_guard lock(mutex_);
      job_ = std::move(r);
    }
    changed_.notify_all();
  }

 private:
  void loop() {
    stages_.setup().recorder.lane("eval");
    for (;;) {
      EpochResult r;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return quit_ || job_.has_value(); });
        if (!job_.has_value()) return;
        r = *job_;
      }
      if (!failure_.failed() && r.epoch <= stop_epoch_.load()) {
        try {
          r.loss = stages_.epoch_loss();
          if (r.evaluated) stages_.evaluate(r);
          if (tracker_.add(r)) stop_epoch_.store(r.epoch);
          on_epoch_(r);
        } catch (...) {
          if (failure_.record(std::current_exception(), fmt::format("stage eval, epoch {}: ", r.epoch))) graph_.cancel();
        }
      }
      {
        std::lock_guard lock(mutex_);
        job_.reset();
      }
      changed_.notify_all();
    }
  }

  Stages& stages_;
  EvalTracker& tracker_;
  const std::function<void(const EpochResult&)>& on_epoch_;
  detail::Failure& failure_;
  tbb::flow::graph& graph_;
  std::atomic<int>& stop_epoch_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<EpochResult> job_;
  bool quit_ = false;
  std::thread thread_;
};

RunResult run_pipelined(const TrainingSetup& s, const std::function<void(const EpochResult&)>& on_epoch) {
  namespace flow = tbb::flow;
  Stages stages(s);
  EvalTracker tracker = make_tracker(s);
  detail::Failure failure;
  std::atomic<int> stop_epoch{std::numeric_limits<int>::max()};
  std::atomic<int> in_flight{0}, max_in_flight{0};
  samplers::ParallelSampler sampler(s.sampler);  // per-thread workspaces
  // Train-thread state (touched only by the train thread).
  double epoch_start = s.recorder.now();
  std::vector<double> times;
  int last_trained_epoch = 0;
  int last_stepped_epoch = 0;  // the latest epoch with at least one optimizer step

  flow::graph g;
  // Batch specs of every epoch in order; an epoch is planned when its first batch is due.
  int epoch = 1;
  std::vector<BatchSpec> plan;
  std::size_t next = 0;
  int64_t seq = 0;
  flow::input_node<Item> specs(g, [&](tbb::flow_control& fc) -> Item {
    core::tsan::received();  // the graph start: see core::tsan::graph_started()
    while (epoch <= s.epochs && epoch <= stop_epoch.load() && !failure.failed()) {
      if (next == 0) {
        try {
          plan = s.sampler.plan_epoch(epoch);
        } catch (...) {
          if (failure.record(std::current_exception(), fmt::format("planning epoch {}: ", epoch))) g.cancel();
          break;
        }
      }
      if (next < plan.size()) {
        Item item{std::move(plan[next]), epoch, seq++, static_cast<int64_t>(plan.size()), -1, -1, {}, 0};
        ++next;
        return item;
      }
      ++epoch;
      next = 0;
    }
    fc.stop();
    return Item{};
  });
  flow::buffer_node<int> slot_tokens(g);
  flow::buffer_node<int> device_tokens(g);
  flow::join_node<std::tuple<Item, int>, flow::reserving> take_slot(g);
  flow::function_node<std::tuple<Item, int>, Item> sample(
      g, static_cast<std::size_t>(std::max(1, s.pipeline.sampler_threads)), [&](const std::tuple<Item, int>& in) {
        core::tsan::received(in);  // the join's output, copied into this body's task
        Item item = std::get<0>(in);
        item.slot = std::get<1>(in);
        const int now = ++in_flight;
        for (int seen = max_in_flight.load(); now > seen && !max_in_flight.compare_exchange_weak(seen, now);) {
        }
        if (!failure.failed()) {
          Stage stage = Stage::kSample;
          try {
            const graph::MiniBatch batch = stages.sample(item, sampler);
            stage = Stage::kGather;
            stages.gather(item, batch);
          } catch (...) {
            if (failure.record(std::current_exception(), context(stage, item))) g.cancel();
          }
        }
        return item;
      });
  flow::sequencer_node<Item> in_order(g, [](const Item& item) { return static_cast<std::size_t>(item.seq); });
  flow::join_node<std::tuple<Item, int>, flow::reserving> take_device_slot(g);
  using Transfer = detail::DedicatedStage<std::tuple<Item, int>, Item>;
  Transfer transfer(
      g, "transfer", Stage::kTransfer, s.recorder, failure,
      [&](const std::tuple<Item, int>& in, Transfer::Gateway& gateway) {
        Item item = std::get<0>(in);
        item.device_slot = std::get<1>(in);
        try {
          if (item.loss_rows > 0 && item.epoch <= stop_epoch.load()) stages.transfer(item);
        } catch (...) {
          --in_flight;
          slot_tokens.try_put(item.slot);
          throw;
        }
        --in_flight;
        slot_tokens.try_put(item.slot);  // the copy has completed: the staging slot is free
        gateway.try_put(item);
      },
      [](const std::tuple<Item, int>& in) { return describe(std::get<0>(in)); },
      [](const std::tuple<Item, int>& in) { return std::get<0>(in).epoch; });
  std::optional<EvalWorker> eval_worker;
  using Train = detail::DedicatedStage<Item, flow::continue_msg>;
  Train train(
      g, "train", Stage::kTrain, s.recorder, failure,
      [&](const Item& item, Train::Gateway&) {
        const bool active = item.epoch <= stop_epoch.load();
        if (active && item.loss_rows > 0) {
          try {
            stages.train(item);
            last_stepped_epoch = item.epoch;
          } catch (...) {
            device_tokens.try_put(item.device_slot);
            throw;
          }
        }
        device_tokens.try_put(item.device_slot);  // its reads are queued on the train stream
        if (!item.last_in_epoch() || !active) return;
        // The loss is filled in by the evaluation thread (EpochLosses: no wait for the GPU here).
        EpochResult r{item.epoch, 0, s.recorder.now() - epoch_start, evaluates(s, item.epoch), 0, 0, 0, {}};
        r.verdict = epoch_verdict(s.recorder.totals(item.epoch), r.epoch_time_s, s.pipeline.sampler_threads, true);
        times.push_back(r.epoch_time_s);
        last_trained_epoch = item.epoch;
        // The evaluation twin and the loss copy are free once the previous epoch is reported.
        s.recorder.record_wait(Stage::kTrain, item.epoch + 1, eval_worker->wait_idle());
        stages.end_epoch_losses();
        epoch_start = s.recorder.now();
        if (item.epoch > stop_epoch.load()) return;
        if (r.evaluated) stages.snapshot();
        eval_worker->submit(std::move(r));
      },
      [](const Item& item) { return describe(item); }, [](const Item& item) { return item.epoch; });

  flow::make_edge(specs, flow::input_port<0>(take_slot));
  flow::make_edge(slot_tokens, flow::input_port<1>(take_slot));
  flow::make_edge(take_slot, sample);
  flow::make_edge(sample, in_order);
  flow::make_edge(in_order, flow::input_port<0>(take_device_slot));
  flow::make_edge(device_tokens, flow::input_port<1>(take_device_slot));
  flow::make_edge(take_device_slot, transfer.node);
  flow::make_edge(transfer.node, train.node);
  eval_worker.emplace(stages, tracker, on_epoch, failure, g, stop_epoch);
  core::tsan::graph_started();  // the graph is built; its first messages follow
  for (int i = 0; i < stages.slots(); ++i) {
    slot_tokens.try_put(i);
    device_tokens.try_put(i);
  }
  specs.activate();
  g.wait_for_all();
  core::tsan::acquire_graph_wait(g);  // what every task and dedicated thread did for the graph
  if (!failure.failed()) eval_worker->wait_idle();
  eval_worker.reset();  // joins the evaluation thread
  if (failure.failed()) {
    stages.drain_after_failure();  // the first failure is the one reported
    failure.rethrow_if_failed();
  }
  stages.drain();

  int epochs_run = last_trained_epoch;
  if (stop_epoch.load() < std::max(last_trained_epoch, last_stepped_epoch)) {
    // Early stop decided while the next epoch was already training: report the stopping epoch.
    epochs_run = stop_epoch.load();
    stages.restore_snapshot();
    times.resize(std::min(times.size(), static_cast<std::size_t>(epochs_run)));
  }
  RunResult result = finish(s, tracker, epochs_run, std::move(times));
  result.max_in_flight = max_in_flight.load();
  result.staging_bytes = stages.staging_bytes();
  return result;
}

}  // namespace

RunResult run_training(const TrainingSetup& s, const std::function<void(const EpochResult&)>& on_epoch) {
  GNNPIPE_CHECK_CONFIG(s.epochs >= 1, "run.epochs: must be >= 1, got {}", s.epochs);
  GNNPIPE_CHECK_CONFIG(s.pipeline.sampler_threads >= 1, "pipeline.sampler_threads: must be >= 1, got {}",
                       s.pipeline.sampler_threads);
  GNNPIPE_CHECK_CONFIG(s.pipeline.eval_every >= 1, "pipeline.eval_every: must be >= 1, got {}", s.pipeline.eval_every);
  GNNPIPE_CHECK_CONFIG(s.sampler.num_layers() == s.model.num_layers(), "the sampler builds batches for {} layers, the model has {}",
                       s.sampler.num_layers(), s.model.num_layers());
  return s.pipeline.mode == PipelineMode::kSequential ? run_sequential(s, on_epoch) : run_pipelined(s, on_epoch);
}

}  // namespace gnnpipe::pipeline
