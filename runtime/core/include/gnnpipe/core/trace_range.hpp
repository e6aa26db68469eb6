#pragma once
// TraceRange: a named range on the profiler's timeline for the lifetime of the object (NVTX on
// CUDA builds: Nsight Systems shows "gnnpipe train" etc. next to the kernels and copies the range
// queued). Costs a function call when no profiler is attached, nothing on builds without CUDA.
// Ranges nest per thread; create and destroy one on the same thread.
namespace gnnpipe::core {

class TraceRange {
 public:
  explicit TraceRange(const char* name) noexcept;
  ~TraceRange();
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;
};

}  // namespace gnnpipe::core
