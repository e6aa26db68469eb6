#include "gnnpipe/core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace gnnpipe::core {
namespace {

// Keeps the base name of __FILE__ so messages do not depend on the build directory.
const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// Messages quote what they found in the input (a key, a field, a file name), which may be any
// bytes. An error is one printable line, for the terminal and for the one-line log and summary
// records, so every control byte but '\t' (and DEL) is written as an escape: "\n", "\r", "\xNN".
// Bytes from 0x80 up are left alone (UTF-8 names stay readable). Found by the fuzz targets
// (tests/fuzz): a --set value or a YAML key holding "\x01" reached the terminal raw.
std::string printable(const std::string& message) {
  const auto is_control = [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return (c < 0x20 && c != '\t') || c == 0x7F;
  };
  if (std::none_of(message.begin(), message.end(), is_control)) return message;
  std::string out;
  out.reserve(message.size() + 16);
  for (const char ch : message) {
    if (!is_control(ch)) {
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(static_cast<unsigned char>(ch)));
    }
  }
  return out;
}

std::string format_what(const std::string& message, const SourceLocation& where) {
  if (where.expression != nullptr && where.expression[0] != '\0') {
    return fmt::format("{} ({}:{}, check failed: {})", message, base_name(where.file), where.line,
                       where.expression);
  }
  return fmt::format("{} ({}:{})", message, base_name(where.file), where.line);
}

}  // namespace

Error::Error(const std::string& message, SourceLocation where)
    : std::runtime_error(format_what(printable(message), where)), message_(printable(message)), where_(where) {}

ExitCode exit_code_for(const std::exception& e) noexcept {
  if (dynamic_cast<const ConfigError*>(&e) != nullptr) return ExitCode::kUsage;
  if (dynamic_cast<const DataError*>(&e) != nullptr) return ExitCode::kData;
  if (dynamic_cast<const CudaError*>(&e) != nullptr) return ExitCode::kDevice;
  if (dynamic_cast<const OutOfBudget*>(&e) != nullptr) return ExitCode::kDevice;
  if (dynamic_cast<const Interrupted*>(&e) != nullptr) return ExitCode::kInterrupted;
  return ExitCode::kInternal;
}

std::string user_message(const std::exception& e) {
  if (const auto* error = dynamic_cast<const Error*>(&e)) return error->message();
  return e.what();
}

}  // namespace gnnpipe::core
