#pragma once
// SIGINT and SIGTERM for `gnnpipe run` (issue #15): while a StopSignals lives, the first of them
// sets flag() to its number (the run stops before its next step, see TrainingSetup::stop_request).
// Another within a second of it is taken for the same request delivered twice (a terminal's
// Ctrl-C reaches every rank, and mpirun forwards it again) and ignored; one after that ends the
// process at once, with the signal's default action. The destructor restores the handlers that
// were there before. One instance at a time.
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
