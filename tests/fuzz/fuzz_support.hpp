#pragma once
// Shared by the libFuzzer targets (tests/fuzz/*_fuzz.cpp) and their corpus replay (replay_main.cpp).
//
// The contract every target checks: malformed input is refused with one of the project's exceptions
// (core::Error and its subclasses: ConfigError, DataError, ...), whose message is one printable line
// (no byte below 0x20 other than '\t': an error must never echo raw binary input to a terminal or a
// log). Anything else is a finding: a crash or sanitizer report, another exception escaping
// (std::bad_alloc from an absurd size, std::out_of_range, a yaml-cpp or nlohmann exception, a
// filesystem_error), a hang, or a non-printable message (reported here with abort()).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "gnnpipe/core/error.hpp"

namespace gnnpipe::fuzz {

// The byte offset of the first byte of `text` that is neither printable nor '\t', or npos.
inline std::size_t first_control_byte(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\t') return i;
  }
  return std::string_view::npos;
}

// Aborts (a finding) when the message of `e` holds a control byte.
inline void check_printable(const core::Error& e) {
  const std::size_t at = first_control_byte(e.message());
  if (at == std::string_view::npos) {
    if (std::getenv("GNNPIPE_FUZZ_VERBOSE") != nullptr) std::fprintf(stderr, "refused: %s\n", e.message().c_str());
    return;
  }
  std::string shown;
  for (const char ch : e.message()) {
    const auto c = static_cast<unsigned char>(ch);
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    shown += (c < 0x20 || c >= 0x7F) ? std::string(hex) : std::string(1, ch);
  }
  std::fprintf(stderr, "fuzz finding: error message has control byte 0x%02x at offset %zu: %s\n",
               static_cast<unsigned>(static_cast<unsigned char>(e.message()[at])), at, shown.c_str());
  std::abort();
}

// Runs `parse`; our exceptions are the expected outcome of bad input (checked for a printable
// message), every other exception propagates (libFuzzer and the replay report it).
template <class F>
int guarded(F&& parse) {
  try {
    parse();
  } catch (const core::Error& e) {
    check_printable(e);
  }
  return 0;
}

// A scratch directory for this process, created on first use under /dev/shm (RAM: a file written
// per input costs no disk I/O) or the temp folder, and removed at exit.
inline const std::filesystem::path& scratch_dir() {
  // Never destroyed: the atexit handler below runs after static destructors registered later.
  static const std::filesystem::path& dir = *new std::filesystem::path([] {
    std::error_code ec;
    const std::filesystem::path base =
        std::filesystem::is_directory("/dev/shm", ec) ? std::filesystem::path("/dev/shm") : std::filesystem::temp_directory_path();
    std::string pattern = (base / "gnnpipe_fuzz_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("gnnpipe fuzz: mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return pattern;
  }());
  return dir;
}

// Writes `size` bytes to `path` (replacing it), creating its parent folders; aborts on failure
// (the harness, not the reader, would be broken).
inline void write_bytes(const std::filesystem::path& path, const void* data, std::size_t size) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "gnnpipe fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

inline void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
  write_bytes(path, bytes.data(), bytes.size());
}

}  // namespace gnnpipe::fuzz
