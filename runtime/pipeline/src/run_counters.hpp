#pragma once
// RunCounters: what the governor did (MemoryCounters) and what the batches moved (DataMovement),
// per epoch and for the run. Any stage's thread adds (count, moved); the drivers take an epoch's
// entries once its last batch trained. One mutex guards both maps.
#include <cstdint>
#include <map>
#include <mutex>

#include "gnnpipe/memory/caching_allocator.hpp"
#include "gnnpipe/pipeline/memory_report.hpp"
#include "gnnpipe/pipeline/packed_batch.hpp"
#include "gnnpipe/pipeline/training_run.hpp"

namespace gnnpipe::pipeline::detail {

class RunCounters {
 public:
  // `allocator`: the run's (total_counters() reports its peak).
  explicit RunCounters(const memory::CachingAllocator& allocator) : allocator_(allocator) {}

  // Adds to `epoch`'s counters.
  void count(int epoch, const MemoryCounters& c);
  // Adds to what `epoch`'s batches moved (any stage's thread).
  void moved(int64_t epoch, const DataMovement& d);
  // A packed layout's feature rows: gathered on the host, and (a cache) how many the cache held.
  void count_rows(int64_t epoch, const BatchLayout& layout) {
    const auto misses = static_cast<uint64_t>(layout.cached ? layout.feature_rows - layout.cached_rows : 0);
    moved(epoch, {.host_gathered_bytes = layout.features.bytes,
                  .cache_hit_rows = static_cast<uint64_t>(layout.cached_rows),
                  .cache_miss_rows = misses});
  }
  // A resumed run: `epoch`'s counters so far (the checkpoint's).
  void resume(int epoch, const MemoryCounters& c);
  // `epoch`'s counters so far (a stop request's checkpoint); leaves them in place.
  MemoryCounters epoch_so_far(int epoch) const;
  // Retries of an evaluation: its epoch's counters were taken before it ran, so they go to the
  // run's totals only (the caller adds them to the epoch's result).
  void add_eval_retries(int retries);

  // What the governor did in `epoch` (complete once the epoch's last batch trained); also added
  // to the run's totals.
  MemoryCounters take_epoch_counters(int epoch);
  MemoryCounters total_counters() const;
  // What `epoch`'s batches moved (complete once its last batch trained); the run's totals.
  DataMovement take_epoch_movement(int epoch);
  DataMovement data_movement() const;

 private:
  const memory::CachingAllocator& allocator_;
  mutable std::mutex mutex_;
  std::map<int, MemoryCounters> epoch_counters_;
  MemoryCounters total_counters_;
  std::map<int, DataMovement> epoch_moved_;
  DataMovement total_moved_;
};

}  // namespace gnnpipe::pipeline::detail
