#include "ranks/rank_launcher.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::experiments {
namespace {

std::atomic<int> g_signals{0};  // stop signals received (the handler's only state)

extern "C" void on_launcher_signal(int) { g_signals.fetch_add(1); }

// The processes whose parent is `parent` (from /proc/<pid>/stat), mpirun's ranks here.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) found.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return found;
}

}  // namespace

int run_rank_launcher(const std::vector<std::string>& command) {
  GNNPIPE_CHECK(!command.empty(), "run_rank_launcher: no command");
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Handlers before the fork: a signal between the fork and the wait must not end the launcher.
  struct sigaction action {}, old_int {}, old_term {};
  action.sa_handler = on_launcher_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  int exec_error[2];
  GNNPIPE_CHECK(pipe2(exec_error, O_CLOEXEC) == 0, "--ranks: pipe: {}", std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = fork();
  if (child == 0) {
    setpgid(0, 0);  // out of the terminal's foreground group: its Ctrl-C reaches the launcher alone
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigaction(SIGINT, &default_action, nullptr);
    sigaction(SIGTERM, &default_action, nullptr);
    close(exec_error[0]);
    execvp(argv[0], argv.data());
    const int e = errno;
    [[maybe_unused]] const ssize_t w = write(exec_error[1], &e, sizeof e);
    _exit(127);
  }
  close(exec_error[1]);
  GNNPIPE_CHECK(child > 0, "--ranks: fork: {}", std::strerror(errno));
  int e = 0;
  const ssize_t got = read(exec_error[0], &e, sizeof e);  // 0 bytes: the exec succeeded
  close(exec_error[0]);
  if (got == static_cast<ssize_t>(sizeof e)) {
    waitpid(child, nullptr, 0);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    GNNPIPE_THROW(Error, "--ranks: cannot start {} ({}): install openmpi-bin (tools/setup.sh)", command[0],
                  std::strerror(e));
  }
  int handed_on = 0, status = 0;
  while (true) {
    const pid_t done = waitpid(child, &status, 0);
    if (done == child) break;
    if (done < 0 && errno != EINTR) break;
    // Each signal once to every rank (a rank takes a second within a second as the same request).
    for (const int seen = g_signals.load(); handed_on < seen; ++handed_on) {
      for (const pid_t rank : children_of(child)) kill(rank, SIGTERM);
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

}  // namespace gnnpipe::experiments
