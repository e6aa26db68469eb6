#include "stop_signals.hpp"

#include <csignal>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::experiments {
namespace {

// Written by the handler: a lock-free atomic is async-signal-safe.
std::atomic<int> g_stop{0};
static_assert(std::atomic<int>::is_always_lock_free);

struct sigaction g_old_int {}, g_old_term {};

extern "C" void on_stop_signal(int signal) { g_stop.store(signal); }

}  // namespace

StopSignals::StopSignals() {
  g_stop.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // the second signal takes the default action: the process ends
  GNNPIPE_CHECK(sigaction(SIGINT, &action, &g_old_int) == 0 && sigaction(SIGTERM, &action, &g_old_term) == 0,
                "cannot install the SIGINT/SIGTERM handlers");
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

const std::atomic<int>& StopSignals::flag() const { return g_stop; }

}  // namespace gnnpipe::experiments
