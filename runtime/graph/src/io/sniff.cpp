#include "gnnpipe/graph/io/sniff.hpp"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::graph::io {
namespace {

bool starts_with(std::string_view head, std::string_view magic) { return head.substr(0, magic.size()) == magic; }

// Text: no NUL byte and at most 1 % control bytes other than \t \n \r \f \v (UTF-8 passes: its
// bytes are >= 0x80, not control bytes).
bool looks_like_text(std::string_view head) {
  std::size_t control = 0;
  for (const char ch : head) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) return false;
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') ++control;
    if (c == 0x7f) ++control;
  }
  return control * 100 <= head.size();
}

}  // namespace

const char* to_string(FileKind kind) {
  switch (kind) {
    case FileKind::kEmpty: return "an empty file";
    case FileKind::kNpy: return "a NumPy .npy array";
    case FileKind::kZip: return "a ZIP archive (.npz)";
    case FileKind::kGzip: return "a gzip file";
    case FileKind::kMat5: return "a MATLAB 5 MAT-file";
    case FileKind::kHdf5: return "an HDF5 file (MATLAB 7.3)";
    case FileKind::kText: return "text";
    case FileKind::kBinary: return "binary data of no known format";
  }
  return "unknown";
}

Sniffed sniff_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  GNNPIPE_CHECK_DATA(in.is_open(), "{}: cannot open: {}", path.string(), std::strerror(errno));
  std::array<char, 4096> buffer{};
  in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  GNNPIPE_CHECK_DATA(!in.bad(), "{}: read failed: {}", path.string(), std::strerror(errno));
  const std::string_view head(buffer.data(), static_cast<std::size_t>(in.gcount()));
  Sniffed s;
  for (std::size_t i = 0; i < head.size() && i < 8; ++i) {
    if (i > 0) s.head_hex += ' ';
    s.head_hex += fmt::format("{:02x}", static_cast<unsigned char>(head[i]));
  }
  if (head.empty()) {
    s.kind = FileKind::kEmpty;
  } else if (starts_with(head, "\x93NUMPY")) {
    s.kind = FileKind::kNpy;
  } else if (starts_with(head, "PK\x03\x04") || starts_with(head, "PK\x05\x06")) {
    s.kind = FileKind::kZip;
  } else if (starts_with(head, "\x1f\x8b")) {
    s.kind = FileKind::kGzip;
  } else if (starts_with(head, "MATLAB 5.0 MAT-file")) {
    s.kind = FileKind::kMat5;
  } else if (starts_with(head, "\x89HDF\r\n\x1a\n")) {
    s.kind = FileKind::kHdf5;
  } else {
    s.kind = looks_like_text(head) ? FileKind::kText : FileKind::kBinary;
  }
  return s;
}

std::string printable(std::string_view text, std::size_t max_chars) {
  std::string out;
  const std::size_t n = std::min(text.size(), max_chars);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

}  // namespace gnnpipe::graph::io
