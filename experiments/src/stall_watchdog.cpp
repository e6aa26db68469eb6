#include "stall_watchdog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace gnnpipe::experiments {

std::string describe_stall(const pipeline::StageRecorder& recorder, double idle_s) {
  std::string held;
  const double now = recorder.now();
  for (const auto& item : recorder.in_flight()) {
    const std::string what = item.batch < 0 ? fmt::format("epoch {}", item.epoch)
                                            : fmt::format("batch {} of epoch {}", item.batch, item.epoch);
    held += fmt::format("{}{}: {} (thread {}) for {:.0f} s", held.empty() ? "" : "; ", pipeline::to_string(item.stage),
                        what, item.lane, now - item.since_s);
  }
  const std::string hand_offs = recorder.hand_offs();
  return fmt::format("stalled: no stage advanced for {:.0f} s (run.stall_timeout); {}{}", idle_s,
                     held.empty() ? std::string("no thread holds an item (every stage is waiting for another)") : held,
                     hand_offs.empty() ? std::string() : "; " + hand_offs);
}

StallWatchdog::StallWatchdog(const pipeline::StageRecorder& recorder, double timeout_s,
                             std::function<void(const std::string&)> on_stall)
    : recorder_(recorder), timeout_s_(timeout_s), on_stall_(std::move(on_stall)) {
  if (timeout_s_ > 0) thread_ = std::thread([this] { loop(); });
}

StallWatchdog::~StallWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StallWatchdog::loop() {
  const auto period = std::chrono::duration<double>(std::clamp(timeout_s_ / 4, 0.05, 1.0));
  // The run has not begun any item before its first step: count from when the watch began.
  const double started = recorder_.now();
  std::unique_lock lock(mutex_);
  while (!stop_cv_.wait_for(lock, period, [this] { return stop_; })) {
    const double idle = recorder_.now() - std::max(started, recorder_.last_activity_s());
    if (idle < timeout_s_) continue;
    const std::string message = describe_stall(recorder_, idle);
    lock.unlock();
    on_stall_(message);
    return;
  }
}

}  // namespace gnnpipe::experiments
