#pragma once
// The progress line of `gnnpipe run` on a terminal (issue #16 item 2): redrawn in place after
// steps (at most 5 times a second) on stderr: epoch, batches done, seeds/s, the run's ETA and the
// last epoch's bound. Log lines clear it first (core::set_console_line_reset), so it never mixes
// with them; off (every call a no-op) when not enabled, e.g. when stderr is a file.
#include <mutex>
#include <string>

#include "gnnpipe/core/timer.hpp"
#include "gnnpipe/pipeline/training_run.hpp"

namespace gnnpipe::experiments {

// The text of the line (no terminal codes), for tests: e.g.
// "epoch 3/200 [#####-----] 45/89 batches | 12345 seeds/s | ETA 3m12s | bound by training".
std::string progress_text(int epoch, int epochs, int64_t done, int64_t batches, double seeds_per_s, double eta_s,
                          const std::string& bound);

class ProgressLine {
 public:
  ProgressLine(int epochs, bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void step(int epoch, int64_t batch, int64_t batches, int64_t seeds);  // train thread
  void epoch_done(const pipeline::EpochResult& r);                       // reporting thread
  void clear();

 private:
  std::mutex mutex_;
  bool enabled_;
  int epochs_;
  core::Stopwatch watch_;
  int epoch_ = 0;
  double epoch_start_s_ = 0, last_draw_s_ = -1, epoch_s_sum_ = 0, last_step_s_ = 0;
  int epochs_timed_ = 0;
  int64_t seeds_ = 0;
  std::string bound_;
  bool drawn_ = false;
};

}  // namespace gnnpipe::experiments
