#include "gnnpipe/core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <string>
#include <cstring>
#include <utility>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::core {
namespace {

// Closes a descriptor on every path out of open(); the mapping stays valid after close.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// The live mappings, for the SIGBUS handler: a fixed table the handler can read without locks or
// allocation. A slot is claimed by CAS on `begin` (0 = free); `end` and the path are written
// before `ready` is released. More live mappings than slots only lose the handler's file name.
struct MappingSlot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> ready{false};
  char path[240] = {};
};
constexpr int kSlots = 256;
MappingSlot g_slots[kSlots];

void register_mapping(const std::byte* data, std::size_t size, const std::filesystem::path& path) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  for (MappingSlot& slot : g_slots) {
    uintptr_t free = 0;
    if (!slot.begin.compare_exchange_strong(free, begin)) continue;
    slot.end.store(begin + size);
    const std::string text = path.string();
    const std::size_t n = std::min(text.size(), sizeof(slot.path) - 1);
    std::memcpy(slot.path, text.data(), n);
    slot.path[n] = '\0';
    slot.ready.store(true, std::memory_order_release);
    return;
  }
}

void unregister_mapping(const std::byte* data) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  for (MappingSlot& slot : g_slots) {
    if (slot.begin.load() != begin) continue;
    slot.ready.store(false);
    slot.end.store(0);
    slot.begin.store(0);
    return;
  }
}

// write(2) of a NUL-terminated string and of a decimal number: all a signal handler may use.
void put(const char* text) {
  const std::size_t n = std::strlen(text);
  if (::write(STDERR_FILENO, text, n) < 0) return;
}
void put_number(uintptr_t value) {
  char digits[24];
  int i = sizeof(digits) - 1;
  digits[i] = '\0';
  do {
    digits[--i] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && i > 0);
  put(digits + i);
}

extern "C" void on_sigbus(int signal, siginfo_t* info, void*) {
  const auto address = reinterpret_cast<uintptr_t>(info != nullptr ? info->si_addr : nullptr);
  for (const MappingSlot& slot : g_slots) {
    const uintptr_t begin = slot.begin.load();
    if (begin == 0 || !slot.ready.load(std::memory_order_acquire) || address < begin || address >= slot.end.load()) {
      continue;
    }
    put("gnnpipe: ");
    put(slot.path);
    put(": the file was truncated or replaced while mapped (read at byte ");
    put_number(address - begin);
    put(" failed with SIGBUS): the run cannot go on; restore the dataset and resume\n");
    ::_exit(3);  // ExitCode::kData
  }
  // Not ours: the default action (a core dump with the real fault).
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

}  // namespace

void install_mapped_file_fault_handler() {
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  GNNPIPE_CHECK(::sigaction(SIGBUS, &action, nullptr) == 0, "cannot install the SIGBUS handler: {}",
                std::strerror(errno));
}

MappedFile MappedFile::open(const std::filesystem::path& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) GNNPIPE_THROW(DataError, "{}: cannot open: {}", path.string(), std::strerror(errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    GNNPIPE_THROW(DataError, "{}: cannot stat: {}", path.string(), std::strerror(errno));
  }
  GNNPIPE_CHECK_DATA(S_ISREG(info.st_mode), "{}: not a regular file", path.string());

  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<std::size_t>(info.st_size);
  if (file.size_ == 0) return file;  // mmap of length 0 is invalid; an empty file maps to nothing
  void* addr = ::mmap(nullptr, file.size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) {
    file.size_ = 0;
    GNNPIPE_THROW(DataError, "{}: cannot map {} bytes: {}", path.string(), info.st_size, std::strerror(errno));
  }
  file.data_ = static_cast<std::byte*>(addr);
  register_mapping(file.data_, file.size_, path);
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() noexcept {
  if (data_ != nullptr) {
    unregister_mapping(data_);
    ::munmap(data_, size_);
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace gnnpipe::core
