#include "gnnpipe/core/simulated_fault.hpp"

#include <atomic>
#include <mutex>
#include <utility>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::core {
namespace {

std::atomic<bool> g_active{false};
std::mutex g_mutex;
std::string g_message;

}  // namespace

void simulate_device_fault(std::string message) {
  std::lock_guard lock(g_mutex);
  g_message = std::move(message);
  g_active.store(true, std::memory_order_release);
}

void clear_simulated_device_fault() {
  std::lock_guard lock(g_mutex);
  g_active.store(false, std::memory_order_release);
  g_message.clear();
}

ScopedSimulatedDeviceFault::ScopedSimulatedDeviceFault(std::string message) { simulate_device_fault(std::move(message)); }
ScopedSimulatedDeviceFault::~ScopedSimulatedDeviceFault() { clear_simulated_device_fault(); }

namespace detail {
void throw_if_simulated_fault(const char* what) {
  if (!g_active.load(std::memory_order_relaxed)) return;
  std::string message;
  {
    std::lock_guard lock(g_mutex);
    if (!g_active.load(std::memory_order_relaxed)) return;
    message = g_message;
  }
  GNNPIPE_THROW(CudaError, "{}: {} (simulated device fault)", what, message);
}
}  // namespace detail

}  // namespace gnnpipe::core
