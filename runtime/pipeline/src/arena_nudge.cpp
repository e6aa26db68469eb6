#include "arena_nudge.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "gnnpipe/core/log.hpp"

namespace gnnpipe::pipeline::detail {

ArenaNudge::ArenaNudge(tbb::task_arena& arena, const StageRecorder& recorder, double period_s,
                       std::function<std::string()> describe)
    : arena_(arena), recorder_(recorder), period_s_(period_s), describe_(std::move(describe)), thread_([this] { loop(); }) {}

ArenaNudge::~ArenaNudge() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

int ArenaNudge::spells() const {
  std::lock_guard lock(mutex_);
  return spells_;
}

void ArenaNudge::loop() {
  const auto period = std::chrono::duration<double>(period_s_);
  const double started = recorder_.now();
  double spell_nudged_at = -1;  // the first nudge of the current quiet spell; -1: none
  std::unique_lock lock(mutex_);
  while (!stop_cv_.wait_for(lock, period, [this] { return stop_; })) {
    const double last = std::max(started, recorder_.last_activity_s());
    if (recorder_.now() - last < period_s_) {
      if (spell_nudged_at >= 0 && last > spell_nudged_at) {
        core::logger().debug("pipeline: a stage advanced again after the nudge");
        spell_nudged_at = -1;
      }
      continue;
    }
    // An empty closure: no memory of ours crosses oneTBB's task pool (arena_puts.hpp says why).
    arena_.enqueue([] {});
    if (spell_nudged_at < 0) {
      spell_nudged_at = recorder_.now();
      ++spells_;
      lock.unlock();
      core::logger().debug("pipeline: no stage advanced for {:.1f} s; nudged oneTBB's arena ({})", spell_nudged_at - last,
                           describe_());
      lock.lock();
    }
  }
}

}  // namespace gnnpipe::pipeline::detail
