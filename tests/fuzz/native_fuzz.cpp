// Fuzz target: the native dataset reader (graph::io::read_native). The input is meta.yaml; the
// arrays beside it are a valid 3-node dataset (int64 offsets, int32 indices, float32 [3 x 2]
// features, int32 labels, one node per split), so the counts and types the fuzzer writes into
// meta.yaml are checked against real files.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_support.hpp"
#include "gnnpipe/graph/io/native.hpp"
#include "gnnpipe/graph/io/npy.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path& native_dir() {
  static const fs::path dir = [] {
    using gnnpipe::graph::io::write_npy;
    const fs::path d = gnnpipe::fuzz::scratch_dir() / "native";
    fs::create_directories(d);
    write_npy<int64_t>(d / "graph_offsets.npy", std::vector<int64_t>{0, 1, 2, 3});
    write_npy<int32_t>(d / "graph_indices.npy", std::vector<int32_t>{1, 2, 0});
    write_npy<float>(d / "features.npy", std::vector<float>{0.5F, 1, -1, 2, 0, 0}, {3, 2});
    write_npy<int32_t>(d / "labels.npy", std::vector<int32_t>{0, 1, -1});
    write_npy<int32_t>(d / "train.npy", std::vector<int32_t>{0});
    write_npy<int32_t>(d / "val.npy", std::vector<int32_t>{1});
    write_npy<int32_t>(d / "test.npy", std::vector<int32_t>{2});
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path& dir = native_dir();
  gnnpipe::fuzz::write_bytes(dir / "meta.yaml", data, size);
  gnnpipe::fuzz::guarded([&] { (void)gnnpipe::graph::io::read_native(dir); });
  return 0;
}
