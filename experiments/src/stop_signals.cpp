#include "stop_signals.hpp"

#include <time.h>

#include <csignal>
#include <cstdint>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::experiments {
namespace {

// Written by the handler: lock-free atomics are async-signal-safe.
std::atomic<int> g_stop{0};
std::atomic<int64_t> g_first_ms{0};  // when the first signal came (CLOCK_MONOTONIC)
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free);

// A repeat this soon after the first signal is the same request delivered twice: a terminal's
// Ctrl-C reaches every process of its group, and mpirun forwards it to its ranks once more.
constexpr int64_t kRepeatGraceMs = 1000;

struct sigaction g_old_int {}, g_old_term {};

extern "C" void on_stop_signal(int signal) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  const int64_t ms = static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
  int none = 0;
  if (g_stop.compare_exchange_strong(none, signal)) {
    g_first_ms.store(ms);
    return;
  }
  if (ms - g_first_ms.load() < kRepeatGraceMs) return;
  // A later one ends the process at once: the default action (sigaction and raise are
  // async-signal-safe).
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal, &default_action, nullptr);
  raise(signal);
}

}  // namespace

StopSignals::StopSignals() {
  g_stop.store(0);
  g_first_ms.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // the handler itself lets a later signal end the process
  GNNPIPE_CHECK(sigaction(SIGINT, &action, &g_old_int) == 0 && sigaction(SIGTERM, &action, &g_old_term) == 0,
                "cannot install the SIGINT/SIGTERM handlers");
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

const std::atomic<int>& StopSignals::flag() const { return g_stop; }

}  // namespace gnnpipe::experiments
