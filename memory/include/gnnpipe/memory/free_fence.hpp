#pragma once
// FreeFence: how the caching allocator learns that the work queued before a free has completed,
// so that another stream may reuse the block (or the driver may take it back).
// The allocator's default is a core::Event recorded on the freeing stream. Tests substitute
// fences whose completion they control: on the CPU backend events complete when recorded, so
// "freed on another stream, work still pending" could not happen there otherwise.
// Fences are pooled by the allocator and recorded again for later frees (no event creation per
// free after warm-up). Not thread-safe: the allocator uses each under its lock.
#include <functional>
#include <memory>

#include "gnnpipe/core/device.hpp"
#include "gnnpipe/core/stream.hpp"

namespace gnnpipe::memory {

class FreeFence {
 public:
  virtual ~FreeFence() = default;
  // Marks the work queued on `stream` so far (a new record replaces the previous one).
  virtual void record(const core::Stream& stream) = 0;
  // True when the work marked by the last record() has completed.
  virtual bool query() = 0;
  // Blocks until the work marked by the last record() has completed.
  virtual void synchronize() = 0;
};

// Makes the fences of an allocator; each call returns a new, unrecorded fence.
using FenceFactory = std::function<std::unique_ptr<FreeFence>()>;

// The default: a core::Event (untimed) of `device`.
FenceFactory event_fences(core::Device device);

}  // namespace gnnpipe::memory
