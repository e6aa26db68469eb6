#pragma once
// Streams and events with one interface for both backends.
//   CPU:  a stream runs work inline on the calling thread, so an event is complete as soon as it
//         is recorded; record() stamps the host clock so elapsed_ms() still measures.
//   CUDA: a non-blocking cudaStream_t / cudaEvent_t held behind an opaque handle, so this header
//         needs no CUDA header. Every asynchronous call takes its stream explicitly.
// Both types are move-only RAII owners; destroying a CUDA stream does not wait for its work
// (the driver finishes it), destroying an event is always safe.
#include <chrono>

#include "gnnpipe/core/device.hpp"

namespace gnnpipe::core {

class Event;

class Stream {
 public:
  // Creates a stream on `device`. Throws CudaError when the device is unavailable.
  explicit Stream(Device device);
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  Device device() const { return device_; }
  // Blocks the calling thread until all work queued so far on this stream has finished.
  void synchronize() const;
  // Makes work queued on this stream after this call wait until `event` has completed.
  // The event may belong to another stream of the same device. A no-op on the CPU backend.
  void wait(const Event& event) const;
  // The cudaStream_t (as void*) for code under */cuda/; nullptr on the CPU backend.
  void* native_handle() const { return handle_; }

 private:
  Device device_;
  void* handle_ = nullptr;
};

struct EventOptions {
  // CUDA events without timing are cheaper to record and wait on; ask for timing explicitly.
  bool enable_timing = false;
};

class Event {
 public:
  explicit Event(Device device, EventOptions options = {});
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  Device device() const { return device_; }
  // Captures the work queued on `stream` so far; the event completes when that work has.
  // Throws Error when the stream is on another device.
  void record(const Stream& stream);
  // True when the captured work has finished (always true on the CPU backend).
  bool query() const;
  // Blocks the calling thread until the captured work has finished.
  void synchronize() const;
  // Milliseconds between two completed, recorded events (CUDA: both created with timing).
  static float elapsed_ms(const Event& start, const Event& end);
  // The cudaEvent_t (as void*) for code under */cuda/; nullptr on the CPU backend.
  void* native_handle() const { return handle_; }

 private:
  Device device_;
  EventOptions options_;
  void* handle_ = nullptr;
  bool recorded_ = false;
  std::chrono::steady_clock::time_point host_stamp_{};
};

}  // namespace gnnpipe::core
