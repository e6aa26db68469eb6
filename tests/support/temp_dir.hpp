#pragma once
// TempDir: a fresh directory under the system temp folder, removed with its contents on
// destruction; plus small file helpers for tests that write malformed inputs byte by byte.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

namespace gnnpipe::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gnnpipe_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
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

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace gnnpipe::test

#include <zlib.h>

namespace gnnpipe::test {

// Writes `text` to `path` (creating parent folders), gzip-compressed when `gzip` is set.
inline void write_text(const std::filesystem::path& path, const std::string& text, bool gzip = false) {
  std::filesystem::create_directories(path.parent_path());
  if (!gzip) {
    write_file(path, text);
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot write " + path.string());
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

}  // namespace gnnpipe::test
