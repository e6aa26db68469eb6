#include "gnnpipe/core/error.hpp"

#include <fmt/format.h>

#include <cstring>

namespace gnnpipe::core {
namespace {

// Keeps the base name of __FILE__ so messages do not depend on the build directory.
const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
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
    : std::runtime_error(format_what(message, where)), message_(message), where_(where) {}

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
