#pragma once
// Finding the real datasets of ../shared/datasets from tests. A test that needs one and cannot
// find it skips with a message: Catch2 2.13 has no SKIP(), so it WARNs "SKIP: ..." and returns.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace gnnpipe::test {

// The shared datasets folder: $GNNPIPE_DATA_DIR if set, else <source>/../shared/datasets.
inline std::filesystem::path datasets_root() {
  if (const char* env = std::getenv("GNNPIPE_DATA_DIR"); env != nullptr && env[0] != '\0') return env;
  return std::filesystem::path(GNNPIPE_SOURCE_DIR) / ".." / "shared" / "datasets";
}

// <root>/<relative> when it exists.
inline std::optional<std::filesystem::path> find_dataset(const std::string& relative) {
  const auto path = datasets_root() / relative;
  if (std::filesystem::exists(path)) return path;
  return std::nullopt;
}

}  // namespace gnnpipe::test

// Binds `var` to the dataset path or skips the test case with a message.
#define GNNPIPE_REQUIRE_DATASET(var, relative)                                                    \
  const auto var##_found = ::gnnpipe::test::find_dataset(relative);                             \
  if (!var##_found) {                                                                           \
    WARN("SKIP: dataset '" << (relative) << "' not found under " << ::gnnpipe::test::datasets_root() \
                           << " (set GNNPIPE_DATA_DIR)");                                       \
    return;                                                                                     \
  }                                                                                             \
  const std::filesystem::path var = *var##_found
