#pragma once
// Wall-clock timing on the host (steady_clock). Device-side timing uses Event::elapsed_ms.
#include <chrono>

namespace gnnpipe::core {

// Measures elapsed time since construction or the last restart(). Not thread-safe.
class Stopwatch {
 public:
  using Clock = std::chrono::steady_clock;
  Stopwatch() : start_(Clock::now()) {}
  void restart() { start_ = Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  double milliseconds() const { return seconds() * 1e3; }

 private:
  Clock::time_point start_;
};

// Adds the lifetime of the scope, in seconds, to `*sink` on destruction (also when unwinding).
class ScopedTimer {
 public:
  explicit ScopedTimer(double& sink) : sink_(sink) {}
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;
  ~ScopedTimer() { sink_ += watch_.seconds(); }

 private:
  double& sink_;
  Stopwatch watch_;
};

}  // namespace gnnpipe::core
