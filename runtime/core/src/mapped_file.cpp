#include "gnnpipe/core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

}  // namespace

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
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace gnnpipe::core
