#pragma once
// CheckpointWriter: a run's checkpoints written on a thread of its own (issue #39, item 1), so
// neither the train thread nor the evaluation thread waits for a file. The pipeline hands over a
// CheckpointEvent (the state already on the host); the writer turns it into files with `write`.
//  - Cadence: an event that writes checkpoints/last waits until `interval_s` seconds have passed
//    since the previous `last` was written, and one that writes checkpoints/best likewise since
//    the previous `best` (the first of each is written at once; a stop request's partial-epoch
//    state and flush() never wait). interval_s 0: every event is written as it comes, none is
//    dropped (run.keep_last > 1: every due epoch gets its epoch copy).
//  - Coalescing (interval_s > 0): an event still waiting when a newer one arrives is dropped when
//    the newer one writes every file it would (a newer `best` replaces an older `best`, a newer
//    `last` an older `last`), so the newest state is what gets written, and at most one event
//    waits per kind. Events are written in the order they came.
//  - Durability: flush() returns once everything handed over is on disk (the end of a run; a stop
//    request's checkpoint before its message names it). Each write is atomic (write_checkpoint).
//    A crash loses at most the last interval_s seconds (and the epoch in flight).
//  - Errors: a failed write is rethrown by the next submit() or flush(); the destructor flushes
//    what is left and logs a failure instead of throwing.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "gnnpipe/pipeline/stage_stats.hpp"
#include "gnnpipe/pipeline/training_run.hpp"

namespace gnnpipe::experiments {

class CheckpointWriter {
 public:
  using Write = std::function<void(const pipeline::CheckpointEvent&)>;
  // `recorder` (may be null) gets each write as Stage::kCheckpoint on a lane "checkpoint".
  CheckpointWriter(Write write, double interval_s, pipeline::StageRecorder* recorder = nullptr);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  void submit(pipeline::CheckpointEvent event);
  // Whether a `last` handed over now would be written without being replaced first: interval 0,
  // or no `last` waiting and the interval passed since the last one (or none written yet).
  bool wants_last() const;
  void flush();
  // Events dropped because a newer one superseded them, and events written.
  int64_t coalesced() const;
  int64_t written() const;
  // States handed over for checkpoints/last (each one a host copy the train thread made).
  int64_t last_states() const;
  // Seconds the writer's thread spent writing.
  double busy_seconds() const;

 private:
  using Clock = std::chrono::steady_clock;
  void loop();
  void rethrow_locked();
  // Whether the front event may be written now (else: the time it may be).
  bool ready_locked(Clock::time_point now, Clock::time_point* at) const;

  Write write_;
  double interval_s_;
  Clock::duration interval_;  // interval_s_ as a clock duration
  pipeline::StageRecorder* recorder_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<pipeline::CheckpointEvent> pending_;
  bool writing_ = false, writing_last_ = false, quit_ = false;
  int flushing_ = 0;
  bool wrote_last_ = false, wrote_best_ = false;
  Clock::time_point last_written_{}, best_written_{};
  std::exception_ptr error_;
  int64_t coalesced_ = 0, written_ = 0, last_states_ = 0;
  double busy_s_ = 0;
  std::thread thread_;
};

}  // namespace gnnpipe::experiments
