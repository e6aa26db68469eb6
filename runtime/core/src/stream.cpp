#include "gnnpipe/core/stream.hpp"

#include <utility>

#include "backend.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/simulated_fault.hpp"

namespace gnnpipe::core {

Stream::Stream(Device device) : device_(device) {
  device_.require_available();
  if (device_.is_cuda()) handle_ = backend::stream_create(device_.index());
}

Stream::Stream(Stream&& other) noexcept : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) backend::stream_destroy(device_.index(), handle_);
    device_ = other.device_;
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Stream::~Stream() {
  if (handle_ != nullptr) backend::stream_destroy(device_.index(), handle_);
}

void Stream::synchronize() const {
  if (handle_ != nullptr) {
    backend::stream_synchronize(handle_);
  } else {
    detail::throw_if_simulated_fault("stream synchronize");
  }
}

void Stream::wait(const Event& event) const {
  GNNPIPE_CHECK(event.device() == device_, "stream on {} cannot wait on an event of {}", device_.str(),
                event.device().str());
  if (handle_ != nullptr) {
    backend::stream_wait_event(handle_, event.native_handle());
  } else {
    detail::throw_if_simulated_fault("stream wait");
  }
}

Event::Event(Device device, EventOptions options) : device_(device), options_(options) {
  device_.require_available();
  if (device_.is_cuda()) handle_ = backend::event_create(device_.index(), options_.enable_timing);
}

Event::Event(Event&& other) noexcept
    : device_(other.device_),
      options_(other.options_),
      handle_(std::exchange(other.handle_, nullptr)),
      recorded_(std::exchange(other.recorded_, false)),
      host_stamp_(other.host_stamp_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) backend::event_destroy(device_.index(), handle_);
    device_ = other.device_;
    options_ = other.options_;
    handle_ = std::exchange(other.handle_, nullptr);
    recorded_ = std::exchange(other.recorded_, false);
    host_stamp_ = other.host_stamp_;
  }
  return *this;
}

Event::~Event() {
  if (handle_ != nullptr) backend::event_destroy(device_.index(), handle_);
}

void Event::record(const Stream& stream) {
  GNNPIPE_CHECK(stream.device() == device_, "event of {} cannot record a stream on {}", device_.str(),
                stream.device().str());
  if (handle_ != nullptr) {
    backend::event_record(handle_, stream.native_handle());
  } else {
    detail::throw_if_simulated_fault("event record");
    host_stamp_ = std::chrono::steady_clock::now();  // inline work: recorded == completed
  }
  recorded_ = true;
}

bool Event::query() const {
  if (handle_ != nullptr) return backend::event_query(handle_);
  detail::throw_if_simulated_fault("event query");
  return true;
}

void Event::synchronize() const {
  if (handle_ != nullptr) {
    backend::event_synchronize(handle_);
  } else {
    detail::throw_if_simulated_fault("event synchronize");
  }
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  GNNPIPE_CHECK(start.recorded_ && end.recorded_, "elapsed_ms needs two recorded events");
  GNNPIPE_CHECK(start.device_ == end.device_, "elapsed_ms between events of {} and {}", start.device_.str(),
                end.device_.str());
  if (start.handle_ == nullptr) {
    return std::chrono::duration<float, std::milli>(end.host_stamp_ - start.host_stamp_).count();
  }
  GNNPIPE_CHECK(start.options_.enable_timing && end.options_.enable_timing,
                "elapsed_ms needs events created with EventOptions{{.enable_timing = true}}");
  return backend::event_elapsed_ms(start.handle_, end.handle_);
}

}  // namespace gnnpipe::core
