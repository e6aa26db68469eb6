#pragma once
// GrowOnlyFootprint: the device memory of a set of grow-only arrays (models::DeviceArray), tracked
// without touching them. Each array holds one allocator block of the size class of the largest
// request it has served (arrays never shrink), so the memory a set of arrays holds after serving
// a batch is a function of the requests so far: the governor predicts with it before the batch
// runs. Requests are bytes per array, position i always meaning the same array (0 = unused).
// Not thread-safe.
#include <cstddef>
#include <span>
#include <vector>

namespace gnnpipe::memory {

class GrowOnlyFootprint {
 public:
  // Bytes the arrays would hold after serving `needs`.
  std::size_t bytes_after(std::span<const std::size_t> needs) const;
  // Bytes the arrays would hold after serving every request of `steps` (micro-batches in turn).
  std::size_t bytes_after_all(std::span<const std::vector<std::size_t>> steps) const;
  // Records that `needs` was served.
  void grow(std::span<const std::size_t> needs);
  // Records that every array but the one at `kept` was given back (capacity 0).
  void release_all_but(std::size_t kept);
  // Bytes the arrays hold now.
  std::size_t bytes() const { return bytes_after({}); }

 private:
  std::vector<std::size_t> capacity_;  // bytes requested, per array (the block is its size class)
};

}  // namespace gnnpipe::memory
