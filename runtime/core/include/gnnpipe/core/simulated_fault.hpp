#pragma once
// Test support: makes the CPU backend behave like a CUDA context after a sticky error (an illegal
// address, a trap in a kernel), where every later call on that context returns the error. While a
// simulated fault is active, every CPU stream synchronisation and wait, and every CPU event record,
// query and synchronisation throws CudaError with its message. So the paths that must survive a
// GPU fault (destructors that never throw, the first failure reported with its stage and batch,
// streams drained after a failure) are tested on machines without a GPU. Process-wide and
// thread-safe; it costs one relaxed atomic load per CPU synchronisation when inactive.
#include <string>

namespace gnnpipe::core {

// Activates the fault for as long as the object lives (not nestable).
class ScopedSimulatedDeviceFault {
 public:
  explicit ScopedSimulatedDeviceFault(std::string message);
  ~ScopedSimulatedDeviceFault();
  ScopedSimulatedDeviceFault(const ScopedSimulatedDeviceFault&) = delete;
  ScopedSimulatedDeviceFault& operator=(const ScopedSimulatedDeviceFault&) = delete;
};

// Activates the fault until clear_simulated_device_fault() (for a test's fault hook, which runs
// inside a pipeline stage; the test owns the clearing).
void simulate_device_fault(std::string message);
void clear_simulated_device_fault();

namespace detail {
// Throws CudaError with the active fault's message; does nothing when none is active.
void throw_if_simulated_fault(const char* what);
}  // namespace detail

}  // namespace gnnpipe::core
