#pragma once
// Finding the real datasets of ../shared/datasets and the PyG reference outputs of
// ../shared/reference from tests. A test that needs one and cannot find it skips with a message:
// Catch2 2.13 has no SKIP(), so it WARNs "SKIP: ..." and returns. Under CI (CI=true), where
// ../shared is always beside the clone, a missing file is a failure instead: a test that
// silently skips there would be a test that never runs.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace gnnpipe::test {

// True when the environment says this is a CI run (CI=true or CI=1, as CI services set it).
inline bool running_in_ci() {
  const char* env = std::getenv("CI");
  if (env == nullptr) return false;
  const std::string_view value(env);
  return value == "true" || value == "1" || value == "TRUE" || value == "True";
}

// The shared datasets folder: $GNNPIPE_DATA_DIR if set, else <source>/../shared/datasets.
inline std::filesystem::path datasets_root() {
  if (const char* env = std::getenv("GNNPIPE_DATA_DIR"); env != nullptr && env[0] != '\0') return env;
  return std::filesystem::path(GNNPIPE_SOURCE_DIR) / ".." / "shared" / "datasets";
}

// The PyG reference folder: $GNNPIPE_REFERENCE_DIR if set, else <source>/../shared/reference.
// Independent of GNNPIPE_DATA_DIR, which may point at a copy of the datasets alone.
inline std::filesystem::path reference_root() {
  if (const char* env = std::getenv("GNNPIPE_REFERENCE_DIR"); env != nullptr && env[0] != '\0') return env;
  return std::filesystem::path(GNNPIPE_SOURCE_DIR) / ".." / "shared" / "reference";
}

// <root>/<relative> when it exists.
inline std::optional<std::filesystem::path> find_under(const std::filesystem::path& root, const std::string& relative) {
  const auto path = root / relative;
  if (std::filesystem::exists(path)) return path;
  return std::nullopt;
}
inline std::optional<std::filesystem::path> find_dataset(const std::string& relative) {
  return find_under(datasets_root(), relative);
}

}  // namespace gnnpipe::test

// Reports a missing input: WARN "SKIP: ..." and leave the test case, or FAIL under CI.
#define GNNPIPE_SKIP_MISSING(what)                                        \
  do {                                                                    \
    if (::gnnpipe::test::running_in_ci()) {                               \
      FAIL("missing under CI=true (../shared must be beside the clone): " << what); \
    }                                                                     \
    WARN("SKIP: " << what);                                               \
    return;                                                               \
  } while (false)

#define GNNPIPE_REQUIRE_UNDER_(var, root, relative, env)                                                           \
  const auto var##_found = ::gnnpipe::test::find_under(root, relative);                                             \
  if (!var##_found) {                                                                                                \
    GNNPIPE_SKIP_MISSING("'" << std::string(relative) << "' not found under " << (root) << " (set " env ")");      \
  }                                                                                                                  \
  const std::filesystem::path var = *var##_found

// Binds `var` to the dataset path, or skips the test case (fails under CI).
#define GNNPIPE_REQUIRE_DATASET(var, relative) \
  GNNPIPE_REQUIRE_UNDER_(var, ::gnnpipe::test::datasets_root(), relative, "GNNPIPE_DATA_DIR")
// Binds `var` to a file or folder of the PyG reference, or skips the test case (fails under CI).
#define GNNPIPE_REQUIRE_REFERENCE(var, relative) \
  GNNPIPE_REQUIRE_UNDER_(var, ::gnnpipe::test::reference_root(), relative, "GNNPIPE_REFERENCE_DIR")
