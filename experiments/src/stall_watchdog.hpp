#pragma once
// run.stall_timeout (issue #16 item 2): a thread that watches a run's StageRecorder and, when no
// stage has begun or finished an item for `timeout_s` seconds, calls `on_stall` once with a line
// naming what each busy thread holds ("train: batch 3 of epoch 2 (lane train) for 612 s") and what
// the run's hand-offs hold (StageRecorder::hand_offs: queues, slot tokens, the batch each dedicated
// thread waits for; what tells a lost hand-off from a slow stage). The
// run's own action (trainer.cpp) records it and ends the process: a stalled thread cannot be
// unwound. The timeout must exceed the longest single item (an evaluation of a large graph).
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "gnnpipe/pipeline/stage_stats.hpp"

namespace gnnpipe::experiments {

// The stall message for `recorder`, idle for `idle_s` seconds.
std::string describe_stall(const pipeline::StageRecorder& recorder, double idle_s);

class StallWatchdog {
 public:
  // timeout_s <= 0: off (no thread).
  StallWatchdog(const pipeline::StageRecorder& recorder, double timeout_s, std::function<void(const std::string&)> on_stall);
  ~StallWatchdog();
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;

 private:
  void loop();

  const pipeline::StageRecorder& recorder_;
  double timeout_s_;
  std::function<void(const std::string&)> on_stall_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gnnpipe::experiments
