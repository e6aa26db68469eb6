#pragma once
// A fresh temporary directory for one test, removed with everything in it on destruction.
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "gnnpipe/core/rng.hpp"

namespace gnnpipe::test {

class TempDir {
 public:
  TempDir() {
    static uint64_t counter = 0;
    const auto stamp = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    path_ = std::filesystem::temp_directory_path() /
            ("gnnpipe-test-" + std::to_string(core::splitmix64(stamp ^ ++counter) & 0xFFFFFFFFFFull));
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Writes `text` to `path` (creating parent folders), gzip-compressed when `gzip` is set.
inline void write_text(const std::filesystem::path& path, const std::string& text, bool gzip = false) {
  std::filesystem::create_directories(path.parent_path());
  if (!gzip) {
    std::ofstream(path, std::ios::binary) << text;
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot write " + path.string());
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

}  // namespace gnnpipe::test
