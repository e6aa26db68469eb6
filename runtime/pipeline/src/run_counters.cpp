#include "run_counters.hpp"

#include <algorithm>

namespace gnnpipe::pipeline::detail {
namespace {

// Removes and returns an epoch's entry (a value-initialised one when it has none).
template <class T>
T take_entry(std::map<int, T>& per_epoch, int epoch) {
  T value{};
  if (auto it = per_epoch.find(epoch); it != per_epoch.end()) {
    value = it->second;
    per_epoch.erase(it);
  }
  return value;
}

}  // namespace

void RunCounters::count(int epoch, const MemoryCounters& c) {
  const std::lock_guard lock(mutex_);
  epoch_counters_[epoch].add(c);
}

void RunCounters::moved(int64_t epoch, const DataMovement& d) {
  const std::lock_guard lock(mutex_);
  epoch_moved_[static_cast<int>(epoch)].add(d);
  total_moved_.add(d);
}

void RunCounters::resume(int epoch, const MemoryCounters& c) {
  const std::lock_guard lock(mutex_);
  epoch_counters_[epoch] = c;
}

MemoryCounters RunCounters::epoch_so_far(int epoch) const {
  const std::lock_guard lock(mutex_);
  if (auto it = epoch_counters_.find(epoch); it != epoch_counters_.end()) return it->second;
  return {};
}

void RunCounters::add_eval_retries(int retries) {
  const std::lock_guard lock(mutex_);
  total_counters_.stage_retries += retries;
}

DataMovement RunCounters::take_epoch_movement(int epoch) {
  const std::lock_guard lock(mutex_);
  return take_entry(epoch_moved_, epoch);
}

DataMovement RunCounters::data_movement() const {
  const std::lock_guard lock(mutex_);
  return total_moved_;
}

MemoryCounters RunCounters::take_epoch_counters(int epoch) {
  const std::lock_guard lock(mutex_);
  const MemoryCounters c = take_entry(epoch_counters_, epoch);
  total_counters_.add(c);
  return c;
}

MemoryCounters RunCounters::total_counters() const {
  const std::lock_guard lock(mutex_);
  MemoryCounters c = total_counters_;
  c.peak_bytes = std::max(c.peak_bytes, allocator_.stats().peak_in_use_bytes);
  return c;
}

}  // namespace gnnpipe::pipeline::detail
