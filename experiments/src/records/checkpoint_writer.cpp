#include "records/checkpoint_writer.hpp"

#include <algorithm>
#include <utility>

#include "gnnpipe/core/log.hpp"

namespace gnnpipe::experiments {

CheckpointWriter::CheckpointWriter(Write write, double interval_s, pipeline::StageRecorder* recorder)
    : write_(std::move(write)),
      interval_s_(interval_s),
      interval_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval_s))),
      recorder_(recorder),
      thread_([this] { loop(); }) {}

CheckpointWriter::~CheckpointWriter() {
  try {
    flush();
  } catch (const std::exception& e) {
    core::logger().error("a checkpoint could not be written: {}", e.what());
  }
  {
    const std::lock_guard lock(mutex_);
    quit_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CheckpointWriter::rethrow_locked() {
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void CheckpointWriter::submit(pipeline::CheckpointEvent event) {
  {
    const std::lock_guard lock(mutex_);
    rethrow_locked();
    if (event.last) ++last_states_;
    if (interval_s_ > 0) {
      // A waiting event whose every file the new one rewrites is not written.
      const auto superseded = [&](const pipeline::CheckpointEvent& old) {
        return (!old.best || event.best) && (!old.last || event.last);
      };
      const auto before = pending_.size();
      std::erase_if(pending_, superseded);
      coalesced_ += static_cast<int64_t>(before - pending_.size());
    }
    pending_.push_back(std::move(event));
  }
  changed_.notify_all();
}

void CheckpointWriter::flush() {
  std::unique_lock lock(mutex_);
  ++flushing_;
  changed_.notify_all();
  changed_.wait(lock, [this] { return (pending_.empty() && !writing_) || error_; });
  --flushing_;
  rethrow_locked();
}

bool CheckpointWriter::wants_last() const {
  const std::lock_guard lock(mutex_);
  if (interval_s_ <= 0) return true;
  if (writing_last_ || std::any_of(pending_.begin(), pending_.end(), [](const pipeline::CheckpointEvent& e) { return e.last; })) {
    return false;
  }
  return !wrote_last_ || Clock::now() - last_written_ >= interval_;
}

int64_t CheckpointWriter::coalesced() const {
  const std::lock_guard lock(mutex_);
  return coalesced_;
}

int64_t CheckpointWriter::last_states() const {
  const std::lock_guard lock(mutex_);
  return last_states_;
}

int64_t CheckpointWriter::written() const {
  const std::lock_guard lock(mutex_);
  return written_;
}

double CheckpointWriter::busy_seconds() const {
  const std::lock_guard lock(mutex_);
  return busy_s_;
}

bool CheckpointWriter::ready_locked(Clock::time_point now, Clock::time_point* at) const {
  const pipeline::CheckpointEvent& front = pending_.front();
  if (front.partial || interval_s_ <= 0 || flushing_ > 0 || quit_) return true;
  *at = now;
  if (front.last && wrote_last_) *at = std::max(*at, last_written_ + interval_);
  if (front.best && wrote_best_) *at = std::max(*at, best_written_ + interval_);
  return now >= *at;
}

void CheckpointWriter::loop() {
  if (recorder_ != nullptr) recorder_->lane("checkpoint");
  for (;;) {
    pipeline::CheckpointEvent event;
    {
      std::unique_lock lock(mutex_);
      for (;;) {
        changed_.wait(lock, [this] { return quit_ || !pending_.empty(); });
        if (pending_.empty()) return;
        Clock::time_point at;
        if (ready_locked(Clock::now(), &at)) break;
        // Woken early by a flush, a newer event (which may replace this one) or the end.
        changed_.wait_until(lock, at);
      }
      event = std::move(pending_.front());
      pending_.pop_front();
      writing_ = true;
      writing_last_ = event.last;
    }
    const auto t0 = Clock::now();
    const double begin_s = recorder_ != nullptr ? recorder_->begin(pipeline::Stage::kCheckpoint, event.epoch, -1) : 0.0;
    std::exception_ptr failed;
    try {
      write_(event);
    } catch (...) {
      failed = std::current_exception();
    }
    if (recorder_ != nullptr) recorder_->record(pipeline::Stage::kCheckpoint, event.epoch, -1, begin_s, recorder_->now());
    const auto t1 = Clock::now();
    {
      const std::lock_guard lock(mutex_);
      writing_ = false;
      writing_last_ = false;
      busy_s_ += std::chrono::duration<double>(t1 - t0).count();
      if (failed) {
        // Moved, not copied: this thread keeps no reference to the exception, so the thread that
        // rethrows it (and reads its message) is the one that frees it.
        if (!error_) error_ = std::move(failed);
        failed = nullptr;
        pending_.clear();  // after a failed write the run ends; later states are not written
      } else {
        ++written_;
        if (event.last) {
          wrote_last_ = true;
          last_written_ = t1;
        }
        if (event.best) {
          wrote_best_ = true;
          best_written_ = t1;
        }
      }
    }
    changed_.notify_all();
  }
}

}  // namespace gnnpipe::experiments
