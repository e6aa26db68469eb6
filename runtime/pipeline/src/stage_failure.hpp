#pragma once
// The first failure of a run, with the stage and batch it happened in. Every stage catches what
// it throws, records it here (only the first is kept) and cancels the flow graph; the run rethrows
// it once after the graph and the streams have drained. The rethrown exception keeps its type (so
// the exit code is that of the original error) and its message gains "stage S, batch B of epoch E: ".
#include <atomic>
#include <exception>
#include <mutex>
#include <string>

namespace gnnpipe::pipeline::detail {

// `error` as the same gnnpipe error type with `context` before its message (core::Error for any
// other exception).
std::exception_ptr with_context(std::exception_ptr error, const std::string& context);

class Failure {
 public:
  // Keeps the first failure; returns true when this call recorded it.
  bool record(std::exception_ptr error, const std::string& context) {
    std::lock_guard lock(mutex_);
    if (error_) return false;
    error_ = with_context(std::move(error), context);
    failed_.store(true, std::memory_order_release);
    return true;
  }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  void rethrow_if_failed() const {
    std::lock_guard lock(mutex_);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  mutable std::mutex mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

}  // namespace gnnpipe::pipeline::detail
