#include "gnnpipe/core/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <system_error>

namespace gnnpipe::core {

std::string write_file_atomically(const std::filesystem::path& file,
                                  std::initializer_list<std::span<const std::byte>> pieces) {
  namespace fs = std::filesystem;
  static std::atomic<uint64_t> counter{0};
  const fs::path temp = fs::path(file).concat(fmt::format(".tmp{}-{}", ::getpid(), counter++));
  std::error_code ec;
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    for (const std::span<const std::byte> piece : pieces) {
      out.write(reinterpret_cast<const char*>(piece.data()), static_cast<std::streamsize>(piece.size()));
    }
    out.close();
    if (!out) {
      fs::remove(temp, ec);
      return fmt::format("cannot write {}", temp.string());
    }
  }
  fs::rename(temp, file, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(temp, ec);
    return fmt::format("cannot rename {} into place: {}", temp.string(), why);
  }
  return {};
}

}  // namespace gnnpipe::core
