#include <catch2/catch.hpp>

#include <thread>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/simulated_fault.hpp"
#include "gnnpipe/core/stream.hpp"

using namespace gnnpipe::core;

TEST_CASE("CPU streams and events: work is inline, events complete on record", "[core][stream]") {
  Stream a(Device::cpu());
  Stream b(Device::cpu());
  Event e(Device::cpu());
  CHECK(a.native_handle() == nullptr);
  CHECK(e.query());
  e.record(a);
  b.wait(e);
  CHECK(e.query());
  e.synchronize();
  a.synchronize();
}

TEST_CASE("CPU events measure host time between records", "[core][stream]") {
  Stream s(Device::cpu());
  Event start(Device::cpu());
  Event end(Device::cpu());
  start.record(s);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  end.record(s);
  CHECK(Event::elapsed_ms(start, end) >= 19.0f);
  Event never(Device::cpu());
  CHECK_THROWS_AS(Event::elapsed_ms(start, never), Error);
}

TEST_CASE("streams and events are move-only owners", "[core][stream]") {
  static_assert(!std::is_copy_constructible_v<Stream>);
  static_assert(!std::is_copy_constructible_v<Event>);
  Stream a(Device::cpu());
  Stream b = std::move(a);
  b.synchronize();
  Event e(Device::cpu());
  Event f(Device::cpu());
  f = std::move(e);
  f.record(b);
  CHECK(f.query());
}

TEST_CASE("a stream or event on a missing GPU cannot be created", "[core][stream]") {
  const Device missing = Device::cuda(cuda_device_count());
  CHECK_THROWS_AS(Stream(missing), CudaError);
  CHECK_THROWS_AS(Event(missing), CudaError);
}

TEST_CASE("a simulated device fault makes every CPU stream and event call fail until it is cleared", "[core][stream]") {
  const Stream stream(Device::cpu());
  Event event(Device::cpu());
  {
    const gnnpipe::core::ScopedSimulatedDeviceFault fault("an illegal memory access was encountered");
    CHECK_THROWS_WITH(stream.synchronize(), Catch::Contains("stream synchronize: an illegal memory access was encountered"));
    CHECK_THROWS_AS(stream.wait(event), gnnpipe::core::CudaError);
    CHECK_THROWS_AS(event.record(stream), gnnpipe::core::CudaError);
    CHECK_THROWS_AS(event.query(), gnnpipe::core::CudaError);
    CHECK_THROWS_AS(event.synchronize(), gnnpipe::core::CudaError);
  }
  CHECK_NOTHROW(stream.synchronize());
  CHECK_NOTHROW(event.record(stream));
  CHECK(event.query());
}
