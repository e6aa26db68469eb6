// The pipelined driver (pipeline.mode pipelined): one oneTBB flow graph for the whole run, and
// the evaluation thread beside it.
#include <fmt/format.h>
#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "arena_nudge.hpp"
#include "arena_puts.hpp"
#include "dedicated_stage.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/tsan_annotations.hpp"
#include "gnnpipe/samplers/parallel_sampler.hpp"
#include "run_driver.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

using samplers::BatchSpec;

// The evaluation thread: takes one epoch at a time from the train thread, evaluates it when due,
// and reports every epoch in order. The train thread hands over an epoch only when the previous
// one is done (the evaluation twin is then free to be overwritten by the next snapshot).
class EvalWorker {
 public:
  EvalWorker(Stages& stages, EvalTracker& tracker, const std::function<void(const EpochResult&)>& on_epoch,
             Failure& failure, tbb::flow::graph& g, std::atomic<int>& stop_epoch)
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
  // Waits until the previous epoch is reported; returns when the wait began (recorder time).
  double wait_idle() {
    const double t0 = stages_.setup().recorder.now();
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !job_.has_value(); });
    return t0;
  }
  // Whether an epoch is handed over and not yet reported (a stall message; any thread).
  bool busy() {
    std::lock_guard lock(mutex_);
    return job_.has_value();
  }
  // Epoch times from the device's timeline (GPU runs), by epoch; read after the thread stopped.
  const std::map<int, double>& device_times() const { return device_times_; }

  // `due`: the epoch's checkpoint state when one is due (capture_checkpoint), else null.
  void submit(EpochResult r, std::shared_ptr<CheckpointEvent> due) {
    {
      std::lock_guard lock(mutex_);
      job_ = std::move(r);
      due_ = std::move(due);
    }
    changed_.notify_all();
  }

 private:
  void loop() {
    stages_.setup().recorder.lane("eval");
    for (;;) {
      EpochResult r;
      std::shared_ptr<CheckpointEvent> due;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return quit_ || job_.has_value(); });
        if (!job_.has_value()) return;
        r = *job_;
        due = std::move(due_);
      }
      if (!failure_.failed() && r.epoch <= stop_epoch_.load()) {
        try {
          StageRecorder& rec = stages_.setup().recorder;
          double t0 = rec.begin(Stage::kMetrics, r.epoch, -1);
          r.loss = stages_.epoch_loss();
          rec.record(Stage::kMetrics, r.epoch, -1, t0, rec.now());
          if (stages_.setup().model.context().is_cuda()) {
            // The train thread only queues a GPU epoch's work: the device's timeline says how long it took.
            r.epoch_time_s = std::max(r.epoch_time_s, stages_.epoch_device_seconds());
            device_times_[r.epoch] = r.epoch_time_s;
          }
          // The epoch's window is over, and the evaluations that ran in it (earlier epochs') are
          // recorded: what ran within it names the bound.
          r.window = stages_.setup().recorder.window(r.window_begin_s, r.window_end_s);
          r.verdict = epoch_verdict(r.window, true);
          if (r.evaluated) {
            stages_.evaluate(r);
            r.eval_time_s = stages_.setup().recorder.totals(r.epoch).at(Stage::kEval).busy_s;
          }
          // Jobs come in epoch order and later epochs' windows begin after this one's.
          stages_.setup().recorder.forget(r.window_begin_s, r.epoch);
          if (tracker_.add(r)) {
            stop_epoch_.store(r.epoch);
            stages_.stop_augment();  // no state past the stop is due: a wait for one ends
          }
          t0 = rec.begin(Stage::kReport, r.epoch, -1);
          on_epoch_(r);
          report_checkpoint(stages_.setup(), stages_, tracker_, r, std::move(due));
          rec.record(Stage::kReport, r.epoch, -1, t0, rec.now());
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
  Failure& failure_;
  tbb::flow::graph& graph_;
  std::atomic<int>& stop_epoch_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<EpochResult> job_;
  std::shared_ptr<CheckpointEvent> due_;
  std::map<int, double> device_times_;  // (eval thread)
  bool quit_ = false;
  std::thread thread_;
};

// The pipelined run (docs/DESIGN.md §3): one oneTBB flow graph for the whole run, built node by node below
// in the order batches flow through it:
//   specs -> take_slot (a staging-slot token) -> sample (+ gather, sampler_threads at once)
//   -> in_order (sequencer) -> govern (memory governor, serial) -> governed (queue) -> take_device_slot
//   -> transfer (dedicated thread) -> train (dedicated thread; epoch ends go to the eval thread).
// Members hold what the bodies share; every body records its failure and cancels the graph.
class PipelinedRun {
 public:
  using Transfer = detail::DedicatedStage<std::tuple<Item, int>, Item>;
  using Train = detail::DedicatedStage<Item, tbb::flow::continue_msg>;
  using AugmentGate = detail::DedicatedStage<std::tuple<Item, int>, std::tuple<Item, int>>;

  PipelinedRun(const TrainingSetup& s, const std::function<void(const EpochResult&)>& on_epoch)
      : s_(s),
        on_epoch_(on_epoch),
        stages_(s),
        tracker_(make_tracker(s)),
        sampler_(s.sampler),
        epoch_(s.first_epoch),
        specs_(build_specs()),
        slot_tokens_(g_),
        device_tokens_(g_),
        take_slot_(g_),
        sample_(build_sample()),
        in_order_(g_, [](const Item& item) { return static_cast<std::size_t>(item.seq); }),
        govern_(build_govern()),
        governed_(g_),
        take_device_slot_(g_),
        transfer_(build_transfer()),
        train_(build_train()) {
    using namespace tbb::flow;
    make_edge(specs_, input_port<0>(take_slot_));
    make_edge(slot_tokens_, input_port<1>(take_slot_));
    if (s.augment.enabled()) {
      // MH-Aug: a batch is sampled once its epoch's states exist. The wait for the chain (which
      // waits for training) is on a thread of its own: a oneTBB worker must not block on work
      // that other tasks have to finish.
      make_augment_gate();
      make_edge(take_slot_, augment_gate_->node);
      make_edge(augment_gate_->node, sample_);
      failure_.add_waker([this] { stages_.stop_augment(); });
    } else {
      make_edge(take_slot_, sample_);
    }
    make_edge(sample_, in_order_);
    make_edge(in_order_, govern_);
    make_edge(govern_, governed_);
    make_edge(governed_, input_port<0>(take_device_slot_));
    make_edge(device_tokens_, input_port<1>(take_device_slot_));
    make_edge(take_device_slot_, transfer_.node);
    make_edge(transfer_.node, train_.node);
    GNNPIPE_CHECK(joined_arena_ && arena_.is_active(), "pipelined run: the constructing thread is in no oneTBB arena");
  }
  ~PipelinedRun() { s_.recorder.set_hand_offs({}); }  // (a run that threw) before what it reads goes
  PipelinedRun(const PipelinedRun&) = delete;
  PipelinedRun& operator=(const PipelinedRun&) = delete;

  RunResult run() {
    // Epoch 1 starts now, on the host and on the train stream's timeline (after the stages' setup).
    epoch_start_ = s_.recorder.now();
    stages_.start_timeline();
    const double begin = epoch_start_;
    eval_worker_.emplace(stages_, tracker_, on_epoch_, failure_, g_, stop_epoch_);
    s_.recorder.set_hand_offs([this] { return describe_hand_offs(); });
    core::tsan::graph_started();  // the graph is built; its first messages follow
    staging_free_ = staging_total_ = stages_.slots();
    device_free_ = device_total_ = stages_.device_slot_count();
    for (int i = 0; i < stages_.slots(); ++i) slot_tokens_.try_put(i);
    for (int i = 0; i < stages_.device_slot_count(); ++i) device_tokens_.try_put(i);
    specs_.activate();
    std::optional<ArenaNudge> nudge(std::in_place, arena_, s_.recorder, kNudgeAfterS, [this] { return describe_hand_offs(); });
    g_.wait_for_all();
    nudge.reset();
    core::tsan::acquire_graph_wait(g_);  // what every task and dedicated thread did for the graph
    if (!failure_.failed()) eval_worker_->wait_idle();
    for (const auto& [epoch, seconds] : eval_worker_->device_times()) {
      const int at = epoch - s_.first_epoch;  // times_ holds this run's epochs (a resumed run's from first_epoch)
      if (at >= 0 && static_cast<std::size_t>(at) < times_.size()) times_[static_cast<std::size_t>(at)] = seconds;
    }
    s_.recorder.set_hand_offs({});
    eval_worker_.reset();  // joins the evaluation thread
    if (failure_.failed()) {
      stages_.drain_after_failure();  // the first failure is the one reported
      failure_.rethrow_if_failed();
    }
    stages_.drain();

    int epochs_run = last_trained_epoch_;
    if (stop_epoch_.load() < std::max(last_trained_epoch_, last_stepped_epoch_)) {
      // Early stop decided while the next epoch was already training: report the stopping epoch.
      epochs_run = stop_epoch_.load();
      stages_.restore_snapshot();
      times_.resize(std::min(times_.size(), static_cast<std::size_t>(std::max(0, epochs_run - s_.first_epoch + 1))));
    }
    RunResult result = finish(s_, tracker_, stages_, epochs_run, std::move(times_));
    result.span_s = s_.recorder.now() - begin;
    add_predictor(result, stages_);
    result.max_in_flight = max_in_flight_.load();
    return result;
  }

 private:
  // A quiet spell this long gets an empty task enqueued into the graph's arena (arena_nudge.hpp).
  static constexpr double kNudgeAfterS = 1.0;

  bool active(const Item& item) const { return item.epoch <= stop_epoch_.load(); }
  // A split batch keeps its staging slot from transfer to train (its micro-batches are copied from
  // it in the train step).
  static bool holds_staging(const Item& item) { return item.layouts.size() > 1; }
  void fail(const std::string& where, int64_t order = Failure::kNoBatch) {
    if (failure_.record(std::current_exception(), where, order)) g_.cancel();
    stages_.stop_augment();  // the input node may wait for the chain
  }

  // A message a dedicated thread (transfer, train: outside oneTBB's arena) puts into the graph:
  // made by a task enqueued into the graph's arena (arena_puts.hpp says why).
  template <class Put>
  void put_from_thread(Put put) {
    detail::ArenaPuts::put(arena_, g_, [put = std::move(put)] {
      core::tsan::received();  // the graph start: the nodes the put reaches
      put();
    });
  }
  // `free`: the count of the tokens' free slots (a stall message's).
  void put_token(tbb::flow::buffer_node<int>& tokens, int token, std::atomic<int>& free) {
    ++free;
    put_from_thread([&tokens, token] { tokens.try_put(token); });
  }
  void put_staging(int slot) { put_token(slot_tokens_, slot, staging_free_); }
  void put_device(int slot) { put_token(device_tokens_, slot, device_free_); }

  // What the hand-offs hold (StageRecorder::hand_offs, the stall watchdog's message): how far
  // batches got, what each dedicated thread waits for, the free slot tokens. Set while the
  // evaluation thread exists.
  std::string describe_hand_offs() {
    return fmt::format(
        "hand-offs: {} batches planned, {} sampled, {} governed; transfer {}; train {}; staging slots {} of {} free, "
        "device slots {} of {} free; evaluation thread {}",
        seq_.load(), sampled_.load(), governed_count_.load(), transfer_.describe_queue(), train_.describe_queue(),
        staging_free_.load(), staging_total_, device_free_.load(), device_total_,
        eval_worker_->busy() ? "busy" : "idle");
  }

  // Batch specs of every epoch in order; an epoch is planned when its first batch is due.
  tbb::flow::input_node<Item> build_specs() {
    return tbb::flow::input_node<Item>(g_, [this](tbb::flow_control& fc) -> Item {
      core::tsan::received();  // the graph start: see core::tsan::graph_started()
      while (epoch_ <= s_.epochs && epoch_ <= stop_epoch_.load() && !failure_.failed()) {
        if (next_ == 0) {
          try {
            plan_ = s_.sampler.plan_epoch(epoch_);
            next_ = first_batch(s_, epoch_, plan_.size());
          } catch (...) {
            fail(fmt::format("planning epoch {}: ", epoch_));
            break;
          }
        }
        if (next_ < plan_.size()) {
          Item item;
          item.spec = std::move(plan_[next_++]);
          item.epoch = epoch_;
          item.seq = seq_++;
          item.batches = static_cast<int64_t>(plan_.size());
          return item;
        }
        ++epoch_;
        next_ = 0;
      }
      fc.stop();
      return Item{};
    });
  }

  // Sample and gather into the slot the join paired the batch with, sampler_threads at once.
  tbb::flow::function_node<std::tuple<Item, int>, Item> build_sample() {
    using Node = tbb::flow::function_node<std::tuple<Item, int>, Item>;
    return Node(g_, static_cast<std::size_t>(std::max(1, s_.pipeline.sampler_threads)), [this](const std::tuple<Item, int>& in) {
              core::tsan::received(in);  // the join's output, copied into this body's task
              Item item = std::get<0>(in);
              item.slot = std::get<1>(in);
              --staging_free_;
              const int now = ++in_flight_;
              for (int seen = max_in_flight_.load(); now > seen && !max_in_flight_.compare_exchange_weak(seen, now);) {
              }
              // A batch past an early stop is not sampled (MH-Aug's chain has no state for it).
              if (!failure_.failed() && active(item) && !stages_.adopt_resident(item)) {
                Stage stage = Stage::kSample;
                try {
                  graph::MiniBatch batch = stages_.sample(item, sampler_);
                  stage = Stage::kGather;
                  stages_.gather(item, std::move(batch));
                } catch (...) {
                  fail(context(stage, item), item.seq);
                }
              }
              ++sampled_;
              return item;
            });
  }

  // The memory governor, in batch order (serial): fits, or split / resample / cut before the copy.
  tbb::flow::function_node<Item, Item> build_govern() {
    using Node = tbb::flow::function_node<Item, Item>;
    return Node(g_, tbb::flow::serial, [this](const Item& in) {
              core::tsan::received(in);  // the sequencer's output, copied into this body's task
              Item item = in;
              if (!failure_.failed() && item.loss_rows > 0 && active(item)) {
                try {
                  stages_.govern(item, sampler_);
                } catch (...) {
                  fail(context(Stage::kGovern, item), item.seq);
                }
              }
              item.sampled.reset();
              ++governed_count_;
              return item;
            });
  }

  // Copies the slot to the device on the copy stream; its own thread (it waits on CUDA events).
  // MH-Aug: waits until the batch's epoch has its states (Augmentation::prepare_epoch), in run
  // order. A wait that a stop ended lets the batch pass unsampled (it is past the stop).
  void make_augment_gate() {
    augment_gate_.emplace(
        g_, "augment gate", Stage::kAugment, s_.recorder, failure_,
        [this](const std::tuple<Item, int>& in, AugmentGate::Gateway& gateway) {
          const Item& item = std::get<0>(in);
          if (!failure_.failed() && active(item)) {
            try {
              stages_.prepare_augment(item.epoch);
            } catch (...) {
              if (active(item) && !failure_.failed()) throw;
            }
          }
          // From this thread, outside the graph's arena: made there (put_from_thread).
          put_from_thread([&gateway, in] {
            core::tsan::received(in);  // the copy the gate's thread queued (ArenaPuts)
            gateway.try_put(in);
          });
        },
        [](const std::tuple<Item, int>& in) { return describe(std::get<0>(in)); },
        [](const std::tuple<Item, int>& in) { return std::get<0>(in).epoch; },
        [](const std::tuple<Item, int>& in) { return std::get<0>(in).seq; });
  }

  Transfer build_transfer() {
    return Transfer(
        g_, "transfer", Stage::kTransfer, s_.recorder, failure_,
        [this](const std::tuple<Item, int>& in, Transfer::Gateway& gateway) {
          Item item = std::get<0>(in);
          item.device_slot = std::get<1>(in);
          --device_free_;
          try {
            if (item.loss_rows > 0 && active(item)) stages_.transfer(item);
          } catch (...) {
            --in_flight_;
            put_staging(item.slot);  // (the run stops: whether train still needs it does not matter)
            throw;
          }
          --in_flight_;
          // The copy has completed: the staging slot is free. A split batch keeps it for train.
          if (!holds_staging(item)) put_staging(item.slot);
          put_from_thread([&gateway, item] {
            core::tsan::received(item);  // the copy the transfer thread queued (ArenaPuts)
            gateway.try_put(item);
          });
        },
        [](const std::tuple<Item, int>& in) { return describe(std::get<0>(in)); },
        [](const std::tuple<Item, int>& in) { return std::get<0>(in).epoch; },
        [](const std::tuple<Item, int>& in) { return std::get<0>(in).seq; });
  }

  // Queues the optimizer step; at an epoch's end, hands the epoch to the evaluation thread.
  Train build_train() {
    return Train(
        g_, "train", Stage::kTrain, s_.recorder, failure_,
        [this](const Item& item, Train::Gateway&) {
          if (const int signal = stop_signal(s_); signal != 0 && active(item) && item.loss_rows > 0) {
            // The evaluations of earlier epochs report (and checkpoint) first; one of them may
            // stop the run early, and then this step is not due anyway.
            eval_worker_->wait_idle();
            if (active(item)) {
              try {
                stop_before(s_, stages_, tracker_.state, item, signal);
              } catch (...) {
                put_device(item.device_slot);
                throw;
              }
            }
          }
          const bool is_active = active(item);
          if (is_active && item.loss_rows > 0) {
            try {
              stages_.train(item);
              last_stepped_epoch_ = item.epoch;
            } catch (...) {
              put_device(item.device_slot);
              throw;
            }
          }
          if (holds_staging(item)) put_staging(item.slot);  // its micro-batches were copied
          put_device(item.device_slot);  // its reads are queued on the train stream
          if (item.last_in_epoch() && is_active) end_epoch(item.epoch);
        },
        [](const Item& item) { return describe(item); }, [](const Item& item) { return item.epoch; },
        [](const Item& item) { return item.seq; });
  }

  // On the train thread after an epoch's last step. The loss is filled in by the evaluation
  // thread (EpochLosses: no wait for the GPU here).
  void end_epoch(int epoch) {
    EpochResult r;
    r.epoch = epoch;
    // The next epoch starts now: its time includes any wait for this epoch's evaluation below.
    const double now = s_.recorder.now();
    r.epoch_time_s = now - epoch_start_;
    r.window_begin_s = epoch_start_;
    r.window_end_s = now;
    epoch_start_ = now;
    r.evaluated = evaluates(s_, epoch);
    r.memory = stages_.take_epoch_counters(epoch);
    r.data = stages_.take_epoch_movement(epoch);
    r.augment = stages_.augment_counters(epoch);
    times_.push_back(r.epoch_time_s);
    last_trained_epoch_ = epoch;
    // The evaluation twin and the loss copy are free once the previous epoch is reported.
    const double wait_begin = eval_worker_->wait_idle();
    s_.recorder.record_wait(Stage::kTrain, epoch + 1, wait_begin, s_.recorder.now(), WaitFor::kEvaluation);
    stages_.end_epoch_losses();
    stages_.end_epoch_augment(epoch);
    if (epoch > stop_epoch_.load()) return;
    std::shared_ptr<CheckpointEvent> due = capture_checkpoint(s_, stages_, epoch);
    if (r.evaluated) stages_.snapshot();
    eval_worker_->submit(std::move(r), std::move(due));
  }

  const TrainingSetup& s_;
  const std::function<void(const EpochResult&)>& on_epoch_;
  Stages stages_;
  EvalTracker tracker_;
  Failure failure_;
  std::atomic<int> stop_epoch_{std::numeric_limits<int>::max()};
  std::atomic<int> in_flight_{0}, max_in_flight_{0};
  // How far batches got and the free slot tokens (describe_hand_offs; approximate while they move).
  std::atomic<int64_t> sampled_{0}, governed_count_{0};
  std::atomic<int> staging_free_{0}, device_free_{0};
  int staging_total_ = 0, device_total_ = 0;  // (set before the graph and the nudge's thread start)
  samplers::ParallelSampler sampler_;  // per-thread workspaces
  // The input node's state (touched only by its body).
  int epoch_;
  std::vector<BatchSpec> plan_;
  std::size_t next_ = 0;
  std::atomic<int64_t> seq_{0};  // (atomic: describe_hand_offs reads how many were planned)
  // Train-thread state (touched only by the train thread).
  double epoch_start_ = 0;
  std::vector<double> times_;
  int last_trained_epoch_ = 0;
  int last_stepped_epoch_ = 0;  // the latest epoch with at least one optimizer step
  // The graph and its nodes, in flow order (declared after what their bodies use). arena_ is the
  // arena the graph runs in, for put_from_thread: both attach to the constructing thread's arena,
  // which join_arena() makes sure exists (a thread that never ran oneTBB work has none, and each
  // would then create an arena of its own).
  static bool join_arena() {
    tbb::this_task_arena::isolate([] {});  // oneTBB attaches a thread to its implicit arena on first use
    return true;
  }
  bool joined_arena_ = join_arena();
  tbb::task_arena arena_{tbb::task_arena::attach()};
  tbb::flow::graph g_;
  tbb::flow::input_node<Item> specs_;
  tbb::flow::buffer_node<int> slot_tokens_;
  tbb::flow::buffer_node<int> device_tokens_;
  tbb::flow::join_node<std::tuple<Item, int>, tbb::flow::reserving> take_slot_;
  tbb::flow::function_node<std::tuple<Item, int>, Item> sample_;
  tbb::flow::sequencer_node<Item> in_order_;
  tbb::flow::function_node<Item, Item> govern_;
  // A reserving join pulls only from nodes that can be reserved: a queue (FIFO, and govern is
  // serial in batch order) holds the governed batches until a device slot is free.
  tbb::flow::queue_node<Item> governed_;
  tbb::flow::join_node<std::tuple<Item, int>, tbb::flow::reserving> take_device_slot_;
  Transfer transfer_;
  Train train_;
  std::optional<AugmentGate> augment_gate_;  // augment on
  std::optional<EvalWorker> eval_worker_;  // last: its thread stops before the nodes go
};
}  // namespace

RunResult run_pipelined(const TrainingSetup& s, const std::function<void(const EpochResult&)>& on_epoch) {
  PipelinedRun run(s, on_epoch);
  return run.run();
}

}  // namespace gnnpipe::pipeline::detail
