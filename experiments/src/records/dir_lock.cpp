#include "gnnpipe/experiments/records/dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::experiments {
namespace {

// The pid the holder wrote into the lock file, as text; empty when there is none (yet).
std::string holder_pid(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid;
  for (ssize_t i = 0; i < n && text[i] >= '0' && text[i] <= '9'; ++i) pid += text[i];
  return pid;
}

[[noreturn]] void refuse(const std::filesystem::path& dir, int fd) {
  const std::string pid = holder_pid(fd);
  ::close(fd);
  GNNPIPE_THROW(ConfigError, "{}: in use by another gnnpipe process{}; wait for it to end or use another directory",
                dir.string(), pid.empty() ? std::string() : " (pid " + pid + ")");
}

}  // namespace

void DirectoryLock::check_free(const std::filesystem::path& dir) {
  const int fd = ::open((dir / kFileName).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // never locked
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) refuse(dir, fd);
  ::close(fd);  // (releases the shared lock it may have taken)
}

DirectoryLock::DirectoryLock(const std::filesystem::path& dir) : dir_(dir) {
  const std::filesystem::path file = dir / kFileName;
  // O_CLOEXEC: a child process (a tool the run starts) does not inherit the lock.
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  GNNPIPE_CHECK_CONFIG(fd_ >= 0, "{}: cannot create the lock file: {}", file.string(), std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno, fd = std::exchange(fd_, -1);
    if (err == EWOULDBLOCK) refuse(dir, fd);
    ::close(fd);
    GNNPIPE_THROW(ConfigError, "{}: cannot lock: {}", file.string(), std::strerror(err));
  }
  const std::string pid = fmt::format("{}\n", ::getpid());
  // The pid is for the message of a second process only: a failure to write it changes nothing.
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t written = ::pwrite(fd_, pid.data(), pid.size(), 0);
    (void)written;
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace gnnpipe::experiments
