#pragma once
// StagingPool: the pipeline's tokens (docs/DESIGN.md §3). N slots, each one contiguous byte buffer that
// holds one whole batch (gathered features, labels, block arrays) so that a batch crosses to the
// device in one copy. Host slots are pinned on a CUDA device (asynchronous H2D at full speed) and
// plain host memory on the CPU backend; the same class holds the device-side twins (kind kDevice).
// A slot grows to the largest batch it has held and is then reused without allocation. Which slot
// is free is decided by the owner of the tokens (the flow graph), not here: a slot is used by one
// thread at a time.
#include <cstddef>
#include <vector>

#include "gnnpipe/core/buffer.hpp"
#include "gnnpipe/core/check.hpp"

namespace gnnpipe::memory {

class StagingSlot {
 public:
  StagingSlot(core::MemoryKind kind, core::Device device) : kind_(kind), device_(device) {}

  // Makes room for `bytes`; growth over-allocates by 1/8 so that slowly growing batches do not
  // reallocate every time. The contents are not kept.
  void ensure(std::size_t bytes) {
    if (bytes <= buffer_.size()) return;
    buffer_ = core::Buffer<std::byte>();  // free first: the peak stays one buffer
    buffer_ = core::Buffer<std::byte>(bytes + bytes / 8, kind_, device_);
  }
  // Gives the memory back (a resident batch's slot once its one copy completed).
  void release() { buffer_ = core::Buffer<std::byte>(); }
  std::byte* data() { return buffer_.data(); }
  const std::byte* data() const { return buffer_.data(); }
  std::size_t capacity() const { return buffer_.size(); }
  core::Buffer<std::byte>& buffer() { return buffer_; }
  const core::Buffer<std::byte>& buffer() const { return buffer_; }

 private:
  core::MemoryKind kind_;
  core::Device device_;
  core::Buffer<std::byte> buffer_;
};

class StagingPool {
 public:
  // `slots` >= 1 (ConfigError naming pipeline.staging_slots otherwise).
  StagingPool(int slots, core::MemoryKind kind, core::Device device) {
    GNNPIPE_CHECK_CONFIG(slots >= 1, "pipeline.staging_slots: must be >= 1, got {}", slots);
    slots_.reserve(static_cast<std::size_t>(slots));
    for (int i = 0; i < slots; ++i) slots_.emplace_back(kind, device);
  }
  int size() const { return static_cast<int>(slots_.size()); }
  StagingSlot& slot(int i) { return slots_.at(static_cast<std::size_t>(i)); }
  std::size_t bytes() const {
    std::size_t total = 0;
    for (const auto& s : slots_) total += s.capacity();
    return total;
  }

 private:
  std::vector<StagingSlot> slots_;
};

}  // namespace gnnpipe::memory
