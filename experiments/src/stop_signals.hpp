#pragma once
// SIGINT and SIGTERM for `gnnpipe run` (issue #15): while a StopSignals lives, the first of them
// sets flag() to its number (the run stops before its next step, see TrainingSetup::stop_request)
// and restores the default action, so a second one ends the process at once. The destructor
// restores the handlers that were there before. One instance at a time.
#include <atomic>

namespace gnnpipe::experiments {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  const std::atomic<int>& flag() const;
};

}  // namespace gnnpipe::experiments
