#include "gnnpipe/graph/io/text_lines.hpp"

#include <zlib.h>

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
  gzbuffer(file.get(), 1 << 20);
  constexpr std::size_t kChunk = 16 << 20;
  std::vector<char> buffer(kChunk);
  std::string carry;  // a partial line from the previous chunk
  int64_t line_number = 0;
  while (true) {
    const int got = gzread(file.get(), buffer.data(), static_cast<unsigned>(buffer.size()));
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file.get(), &code);
      GNNPIPE_THROW(DataError, "{}: read failed after line {}: {}", path.string(), line_number, message);
    }
    if (got == 0) break;
    std::string_view chunk(buffer.data(), static_cast<std::size_t>(got));
    std::size_t start = 0;
    for (std::size_t nl = chunk.find('\n'); nl != std::string_view::npos; nl = chunk.find('\n', start)) {
      std::string_view line = chunk.substr(start, nl - start);
      if (!carry.empty()) {
        carry.append(line);
        line = carry;
      }
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      on_line(line, ++line_number);
      carry.clear();
      start = nl + 1;
    }
    carry.append(chunk.substr(start));
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
