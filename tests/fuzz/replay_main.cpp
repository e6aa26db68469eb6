// Replays a fuzz target's corpus as a regression test (built in the normal build, no libFuzzer):
//   gnnpipe_fuzz_replay TARGET DIR_OR_FILE...
// runs every file (directories: every regular file in them, sorted) through TARGET's
// LLVMFuzzerTestOneInput, renamed per target at compile time (tests/fuzz/CMakeLists.txt). A
// finding aborts or throws out of main, so ctest reports it; the file being replayed is named on
// stderr first. Exit 0 when every file passed, 2 for a usage error or an empty corpus.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#define GNNPIPE_FUZZ_TARGETS(X) X(npy) X(npz) X(ogb) X(saint) X(native) X(experiment_yaml) X(set) X(checkpoint)

#define GNNPIPE_FUZZ_DECLARE(name) extern "C" int gnnpipe_fuzz_##name(const uint8_t* data, size_t size);
GNNPIPE_FUZZ_TARGETS(GNNPIPE_FUZZ_DECLARE)
#undef GNNPIPE_FUZZ_DECLARE

namespace {

using TargetFn = int (*)(const uint8_t*, size_t);

struct Target {
  std::string_view name;
  TargetFn fn;
};

#define GNNPIPE_FUZZ_ENTRY(name) Target{#name, &gnnpipe_fuzz_##name},
constexpr Target kTargets[] = {GNNPIPE_FUZZ_TARGETS(GNNPIPE_FUZZ_ENTRY)};
#undef GNNPIPE_FUZZ_ENTRY

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TARGET DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  const auto target = std::find_if(std::begin(kTargets), std::end(kTargets),
                                   [&](const Target& t) { return t.name == argv[1]; });
  if (target == std::end(kTargets)) {
    std::fprintf(stderr, "%s: unknown target '%s'\n", argv[0], argv[1]);
    return 2;
  }
  std::vector<fs::path> files;
  for (int i = 2; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      for (const auto& entry : fs::directory_iterator(argv[i])) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      files.emplace_back(argv[i]);
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "%s: no corpus files for %s\n", argv[0], argv[1]);
    return 2;
  }
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], file.c_str());
      return 2;
    }
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::fprintf(stderr, "replay %s: %s (%zu bytes)\n", argv[1], file.c_str(), bytes.size());
    target->fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu %s inputs: no finding\n", files.size(), argv[1]);
  return 0;
}
