#include <catch2/catch.hpp>

#include <thread>

#include "gnnpipe/core/timer.hpp"

using namespace gnnpipe::core;

TEST_CASE("ScopedTimer adds its scope's duration, also when unwinding", "[core][timer]") {
  double total = 0.0;
  {
    ScopedTimer t(total);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(total >= 0.009);
  const double after_first = total;
  try {
    ScopedTimer t(total);
    throw 1;
  } catch (int) {
  }
  CHECK(total >= after_first);
  Stopwatch w;
  CHECK(w.seconds() >= 0.0);
  CHECK(w.milliseconds() < 1e6);
}
