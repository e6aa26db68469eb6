#include "gnnpipe/graph/io/text_lines.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/sniff.hpp"

namespace gnnpipe::graph::io {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

void for_each_line(const std::filesystem::path& path,
                   const std::function<void(std::string_view, int64_t)>& on_line) {
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  GNNPIPE_CHECK_DATA(file != nullptr, "{}: cannot open: {}", path.string(), std::strerror(errno));
  // Buffers sized to the file (its bytes on disk, at least 64 KiB, at most 16 MiB of text per read
  // and 1 MiB of zlib input), left uninitialised: the many small csv files of an OGB folder (and
  // every fuzz input) no longer each zero 16 MiB. The chunk size changes nothing else: lines that
  // cross chunks are carried.
  std::error_code size_error;
  const std::uintmax_t on_disk = std::filesystem::file_size(path, size_error);
  const auto chunk = static_cast<std::size_t>(
      size_error ? std::uintmax_t{16} << 20 : std::clamp<std::uintmax_t>(on_disk, std::uintmax_t{64} << 10, std::uintmax_t{16} << 20));
  gzbuffer(file.get(), static_cast<unsigned>(std::min<std::size_t>(chunk, std::size_t{1} << 20)));
  const auto buffer = std::make_unique_for_overwrite<char[]>(chunk);
  std::string carry;  // a partial line from the previous chunk
  int64_t line_number = 0;
  while (true) {
    const int got = gzread(file.get(), buffer.get(), static_cast<unsigned>(chunk));
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file.get(), &code);
      GNNPIPE_THROW(DataError, "{}: read failed after line {}: {}", path.string(), line_number, message);
    }
    if (got == 0) {
      // zlib ends a gzip stream cut short like a complete one, but leaves Z_BUF_ERROR behind.
      int code = Z_OK;
      gzerror(file.get(), &code);
      GNNPIPE_CHECK_DATA(code != Z_BUF_ERROR, "{}: truncated gzip stream (unexpected end of file after line {})",
                         path.string(), line_number);
      break;
    }
    const std::string_view text(buffer.get(), static_cast<std::size_t>(got));
    std::size_t start = 0;
    for (std::size_t nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n', start)) {
      std::string_view line = text.substr(start, nl - start);
      if (!carry.empty()) {
        carry.append(line);
        line = carry;
      }
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      on_line(line, ++line_number);
      carry.clear();
      start = nl + 1;
    }
    carry.append(text.substr(start));
  }
  if (!carry.empty()) {
    std::string_view line = carry;
    if (line.back() == '\r') line.remove_suffix(1);
    on_line(line, ++line_number);
  }
}

std::size_t split_fields(std::string_view line, char separator, std::span<std::string_view> fields) {
  std::size_t count = 0;
  std::size_t start = 0;
  while (count < fields.size()) {
    const std::size_t end = line.find(separator, start);
    fields[count++] = trim(line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return count;
    start = end + 1;
  }
  return count + 1;  // more fields than asked for: the caller sees count > fields.size()
}

int64_t parse_int_field(std::string_view field, const std::filesystem::path& path, int64_t line, std::string_view what) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  GNNPIPE_CHECK_DATA(ec == std::errc() && end == field.data() + field.size() && !field.empty(),
                     "{}:{}: {} '{}' is not an integer", path.string(), line, what, printable(field));
  return value;
}

float parse_float_field(std::string_view field, const std::filesystem::path& path, int64_t line, std::string_view what) {
  float value = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  GNNPIPE_CHECK_DATA(ec == std::errc() && end == field.data() + field.size() && !field.empty(),
                     "{}:{}: {} '{}' is not a number", path.string(), line, what, printable(field));
  return value;
}

}  // namespace gnnpipe::graph::io
