#pragma once
// Where a run's time goes, per stage (docs/DESIGN.md §3): every stage execution is one timed event
// (stage, epoch, batch, lane = the thread or stream that ran it); waits are recorded where a
// dedicated thread blocks for its next item (the trainer's wait = how long compute waited for
// data). From the events come the per-stage busy / wait / item totals of summary.json, a one-line
// verdict per epoch, and a Chrome-trace JSON (one event per stage per batch, one lane per thread;
// opens in Perfetto / chrome://tracing). Thread-safe; recording takes a short lock per event
// (a handful per batch of milliseconds, never per element).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gnnpipe::pipeline {

// kCheckpoint: the checkpoint writer's thread (experiments' CheckpointWriter), beside the run:
// nothing waits for it until the run's end. kMetrics: an epoch's numbers reduced on the
// evaluation thread (the training loss reduced and copied to the host, the evaluation's scores
// computed from its logits). kReport: an epoch's reporting on that thread (its line and
// metrics.csv row, the checkpoint hand-off). The trainer waits for both as it waits for evaluation.
// kAugment: MH-Aug's chain (issue #41) on its own thread (pipelined) or before an epoch's first
// batch (sequential).
enum class Stage { kSample, kGather, kGovern, kTransfer, kTrain, kEval, kCheckpoint, kReport, kAugment, kMetrics };
constexpr std::string_view to_string(Stage s) {
  switch (s) {
    case Stage::kSample: return "sample";
    case Stage::kGather: return "gather";
    case Stage::kGovern: return "govern";
    case Stage::kTransfer: return "transfer";
    case Stage::kTrain: return "train";
    case Stage::kEval: return "eval";
    case Stage::kCheckpoint: return "checkpoint";
    case Stage::kReport: return "report";
    case Stage::kAugment: return "augment";
    case Stage::kMetrics: return "metrics";
  }
  return "?";
}
inline constexpr Stage kStages[] = {Stage::kSample, Stage::kGather, Stage::kGovern,     Stage::kTransfer,
                                    Stage::kTrain,  Stage::kEval,   Stage::kCheckpoint, Stage::kReport,
                                    Stage::kAugment, Stage::kMetrics};

struct StageEvent {
  Stage stage;
  int epoch;
  int64_t batch;  // -1 for epoch-level events (eval)
  int lane;
  double begin_s, end_s;  // seconds since the recorder was made
};

struct StageTotals {
  double busy_s = 0;  // summed durations
  double wait_s = 0;  // time the stage's dedicated thread waited for input
  int64_t items = 0;
  // On-CPU time of the threads that ran the items (CLOCK_THREAD_CPUTIME_ID from begin() to
  // record() on that thread; threads the item handed work to are not counted, nor items recorded
  // without a begin()). Beside busy_s it tells work from waiting for a CPU: a stage whose work is
  // the same in two runs has the same cpu_s however its threads were contended.
  double cpu_s = 0;

  StageTotals& operator+=(const StageTotals& o) {
    busy_s += o.busy_s;
    wait_s += o.wait_s;
    items += o.items;
    cpu_s += o.cpu_s;
    return *this;
  }
};

// What a dedicated thread waited for: its input (the trainer: data), or the evaluation thread (the
// trainer, before it may overwrite the evaluation twin with the next snapshot).
enum class WaitFor { kInput, kEvaluation };

// What happened within one stretch of wall time [begin_s, end_s), e.g. an epoch's: each event and
// wait counted by its overlap with the window (not by the epoch it belongs to, which for a
// pipelined run may be partly before or after it), so no share exceeds the window.
struct WindowStats {
  double length_s = 0;
  std::map<Stage, double> busy_s;  // every stage present, 0 when idle
  std::map<Stage, int> lanes;      // distinct threads that ran the stage within the window
  double train_wait_input_s = 0;   // the trainer waited for data
  double train_wait_eval_s = 0;    // the trainer waited for the evaluation thread
  std::map<int, double> eval_s_by_epoch;  // evaluation busy within the window, by the epoch evaluated

  // busy / (lanes x length) in percent, at most 100; `sampling` pools sample and gather.
  double share(Stage stage) const;
  double sampling_share() const;
  double share_of(double seconds) const;
};

class StageRecorder {
 public:
  // `keep_events`: keep every event for write_chrome_trace (about 50 bytes per stage per batch for
  // the whole run); otherwise forget() lets go of what no later window can read, so a long run's
  // recorder stays the size of a few epochs.
  explicit StageRecorder(bool keep_events = true);

  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count(); }
  // Names the calling thread's lane ("sampler", "transfer", "train", "eval"); lanes of the same
  // name get numbered. Returns the lane id used by record() from this thread.
  int lane(std::string_view name);
  void record(Stage stage, int epoch, int64_t batch, double begin_s, double end_s);
  // Marks the calling thread as working on (stage, epoch, batch) until its next record(); returns
  // now(), the item's begin time. What in_flight() reports (the stall watchdog).
  double begin(Stage stage, int epoch, int64_t batch);

  struct InFlight {
    Stage stage;
    int epoch;
    int64_t batch;
    std::string lane;
    double since_s;
    double thread_cpu_s;  // the thread's CPU time at begin()
  };
  // The items threads are working on now, oldest first.
  std::vector<InFlight> in_flight() const;
  // The latest begin, record or end of a wait (recorder time); 0 before any.
  double last_activity_s() const;
  // The stage's thread waited from begin_s to end_s before an item of `epoch`.
  void record_wait(Stage stage, int epoch, double begin_s, double end_s, WaitFor what = WaitFor::kInput);

  // Totals by the epoch the items belong to (summary.json): run-wide, or of one epoch.
  std::map<Stage, StageTotals> totals() const;
  std::map<Stage, StageTotals> totals(int epoch) const;
  // Totals by wall time: what ran within [begin_s, end_s) (the epoch lines' verdicts).
  WindowStats window(double begin_s, double end_s) const;
  // Chrome trace event format ("X" complete events, microseconds; lanes as thread names).
  void write_chrome_trace(const std::filesystem::path& path) const;
  // Called once per epoch by the run: every later window() begins at or after `before_s`, and no
  // event of an epoch before `first_epoch` is still to come. Drops the events and waits that ended
  // by `before_s` (unless the recorder keeps its events) and folds the totals of the epochs before
  // `first_epoch` into the run's (totals(epoch) of those is then empty; totals() is unchanged).
  void forget(double before_s, int first_epoch);

  // What the run's hand-offs between stages hold (queues, slot tokens, the batch each dedicated
  // thread waits for): the stall watchdog's message says it, above all when no thread holds an
  // item. A run sets `describe` for its duration and clears it (empty function) before what it
  // reads goes; it is called from the watchdog's thread.
  void set_hand_offs(std::function<std::string()> describe);
  // The run's description; empty when none is set.
  std::string hand_offs() const;

 private:
  int lane_locked(std::string_view name);
  int this_lane_locked(Stage stage);  // the calling thread's lane (named after `stage` when new)
  uint64_t serial_;  // unique per recorder in the process (thread lanes are keyed by it)
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mutex_;
  struct WaitEvent {
    Stage stage;
    WaitFor what;
    double begin_s, end_s;
  };
  std::vector<StageEvent> events_;                          // for the trace
  std::vector<WaitEvent> waits_;
  // The latest end among events_[0..i] (and waits_): window() reads backwards and stops where
  // everything before has ended, so an epoch's verdict does not rescan the whole run.
  std::vector<double> events_end_max_, waits_end_max_;
  std::map<int, InFlight> in_flight_;  // by lane
  double last_activity_s_ = 0;
  std::map<std::pair<Stage, int>, StageTotals> by_epoch_;  // kept as events arrive: totals() never rescans
  std::map<Stage, StageTotals> folded_;  // epochs forget() folded away
  bool keep_events_;
  std::vector<std::string> lane_names_;
  std::map<std::string, int, std::less<>> lane_counts_;
  // Held while the description is made, and by set_hand_offs: a run clearing it waits for a call
  // in progress (the mutex above is not held then: the description takes the stages' locks).
  mutable std::mutex hand_offs_mutex_;
  std::function<std::string()> hand_offs_;
};

// One line in plain words on what bounded the epoch whose wall-time window is `w`: the stage with
// the largest share of its threads' time in the window (sampling, transfer, training, evaluation;
// evaluation also when the trainer waited for it more than for data), and the trainer's waits,
// e.g. "bound by sampling: sampler threads 97% busy, trainer waited 41% of the epoch for data".
// Every share is of the window and at most 100%; an evaluation that ran in the window names the
// epoch it evaluated. `pipelined` false describes the sequential baseline's split of the epoch.
// The checkpoint writer, where it wrote in the window, is said after it ("; checkpoint writer 12%
// busy (its own thread)"): it runs beside the stages and is never the bound.
std::string epoch_verdict(const WindowStats& w, bool pipelined);
// The verdict without the writer's note.
std::string epoch_verdict_of_stages(const WindowStats& w, bool pipelined);

}  // namespace gnnpipe::pipeline
