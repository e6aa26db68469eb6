#pragma once
// Where a run's time goes, per stage (DESIGN §3): every stage execution is one timed event
// (stage, epoch, batch, lane = the thread or stream that ran it); waits are recorded where a
// dedicated thread blocks for its next item (the trainer's wait = how long compute waited for
// data). From the events come the per-stage busy / wait / item totals of summary.json, a one-line
// verdict per epoch, and a Chrome-trace JSON (one event per stage per batch, one lane per thread;
// opens in Perfetto / chrome://tracing). Thread-safe; recording takes a short lock per event
// (a handful per batch of milliseconds, never per element).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gnnpipe::pipeline {

enum class Stage { kSample, kGather, kGovern, kTransfer, kTrain, kEval };
constexpr std::string_view to_string(Stage s) {
  switch (s) {
    case Stage::kSample: return "sample";
    case Stage::kGather: return "gather";
    case Stage::kGovern: return "govern";
    case Stage::kTransfer: return "transfer";
    case Stage::kTrain: return "train";
    case Stage::kEval: return "eval";
  }
  return "?";
}
inline constexpr Stage kStages[] = {Stage::kSample, Stage::kGather, Stage::kGovern, Stage::kTransfer, Stage::kTrain, Stage::kEval};

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
};

class StageRecorder {
 public:
  StageRecorder() : origin_(std::chrono::steady_clock::now()) {}

  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count(); }
  // Names the calling thread's lane ("sampler", "transfer", "train", "eval"); lanes of the same
  // name get numbered. Returns the lane id used by record() from this thread.
  int lane(std::string_view name);
  void record(Stage stage, int epoch, int64_t batch, double begin_s, double end_s);
  void record_wait(Stage stage, int epoch, double seconds);

  std::map<Stage, StageTotals> totals() const;
  std::map<Stage, StageTotals> totals(int epoch) const;
  // Chrome trace event format ("X" complete events, microseconds; lanes as thread names).
  void write_chrome_trace(const std::filesystem::path& path) const;

 private:
  int lane_locked(std::string_view name);
  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<StageEvent> events_;                          // for the trace
  std::map<std::pair<Stage, int>, StageTotals> by_epoch_;  // kept as events arrive: totals() never rescans
  std::vector<std::string> lane_names_;
  std::map<std::string, int, std::less<>> lane_counts_;
};

// One line in plain words on what bounded an epoch of `epoch_s` seconds, from its stage totals:
// e.g. "bound by sampling: sampler threads 97% busy, trainer waited 41% of the epoch" or
// "bound by training: trainer 92% busy, waited 3% for data". `sampler_threads` scales the sampling
// capacity; `pipelined` false describes the sequential baseline's split of the epoch instead.
std::string epoch_verdict(const std::map<Stage, StageTotals>& totals, double epoch_s, int sampler_threads, bool pipelined);

}  // namespace gnnpipe::pipeline
