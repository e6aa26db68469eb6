#pragma once
// MappedFile: a move-only RAII memory map of a whole file, opened read-only.
// The mapping is private (MAP_PRIVATE) with PROT_READ | PROT_WRITE: callers may modify the pages
// in place (for example an in-place byte swap or a fix-up) and the writes go to copy-on-write
// pages of this process, never to the file. Pages are loaded lazily by the kernel, so mapping a
// large feature matrix costs nothing until it is read.
// Thread-safety: the object is immutable after open(); concurrent readers of data() are fine.
#include <cstddef>
#include <filesystem>

namespace gnnpipe::core {

// A file truncated (or overwritten shorter) while it is mapped raises SIGBUS at the next access to
// the lost pages. Every MappedFile registers its range; this handler, installed once by a program
// (the gnnpipe CLI), turns such a SIGBUS into one line on stderr naming the file and the offset,
// and exit code 3 (data error), instead of a crash dump. A SIGBUS outside every mapping is left to
// the default action. Async-signal-safe; idempotent.
void install_mapped_file_fault_handler();

class MappedFile {
 public:
  // Maps `path` in full. An empty file gives size() == 0 and data() == nullptr.
  // Throws DataError naming the path and the system error if it cannot be opened, stat'ed or mapped.
  static MappedFile open(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The first byte of the file (writable, copy-on-write); nullptr when empty.
  std::byte* data() const { return data_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void release() noexcept;

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::filesystem::path path_;
};

}  // namespace gnnpipe::core
