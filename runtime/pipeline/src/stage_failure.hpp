#pragma once
// The failure of a run, with the stage and batch it happened in. Every stage catches what it
// throws, records it here and cancels the flow graph (the first to record does); the run rethrows
// one once after the graph and the streams have drained: the one of the earliest batch in the
// run's order (`order`: the batch's position in the run), the first recorded among equals. A
// device fault is sticky, so the stage that caused it and a stage of a later batch that merely
// waited on a stream next both fail, in either order in time; the earliest batch is the cause. The rethrown exception keeps its type (so
// the exit code is that of the original error) and its message gains "stage S, batch B of epoch E: ".
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace gnnpipe::pipeline::detail {

// `error` as the same gnnpipe error type with `context` before its message (core::Error for any
// other exception).
std::exception_ptr with_context(std::exception_ptr error, const std::string& context);

// Whether running the stage that threw `error` again may succeed (pipeline.stage_retries): not
// after a ConfigError or DataError (the same input repeats them), a CudaError (a device fault is
// sticky: every later call fails alike), an OutOfBudget (a step's own is handled by the governor's
// split-and-retry; any other is a plan that does not fit) or Interrupted (a stop request); yes for
// any other exception (a failed host allocation, an I/O error, a system error, an internal check).
bool may_succeed_again(std::exception_ptr error);

class Failure {
 public:
  // For failures outside any batch (planning, evaluation): after every batch's.
  static constexpr int64_t kNoBatch = INT64_MAX;

  // Keeps the failure of the earliest `order`; returns true when this call is the run's first
  // failure (the caller cancels the graph).
  bool record(std::exception_ptr error, const std::string& context, int64_t order = kNoBatch) {
    std::vector<std::function<void()>> wakers;
    bool first = false;
    {
      std::lock_guard lock(mutex_);
      first = !error_;
      if (first || order < order_) {
        error_ = with_context(std::move(error), context);
        order_ = order;
      }
      failed_.store(true, std::memory_order_release);
      wakers = wakers_;
    }
    for (const auto& wake : wakers) wake();
    return first;
  }
  // `wake` is called after every record (outside the lock): a stage that holds items back (a
  // DedicatedStage waiting for the next batch in run order) lets them go once the run failed.
  // Whoever registers must outlive every record (the run's stages: they are destroyed after it).
  void add_waker(std::function<void()> wake) {
    std::lock_guard lock(mutex_);
    wakers_.push_back(std::move(wake));
  }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  void rethrow_if_failed() const {
    std::lock_guard lock(mutex_);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  mutable std::mutex mutex_;
  std::exception_ptr error_;
  int64_t order_ = kNoBatch;
  std::vector<std::function<void()>> wakers_;
  std::atomic<bool> failed_{false};
};

}  // namespace gnnpipe::pipeline::detail
