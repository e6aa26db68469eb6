// Fuzz target: the GraphSAINT reader (graph::io::read_saint). A minimal valid GraphSAINT directory
// (3 nodes: adj_full.npz with a deflated indptr, class_map.json, role.json, feats.npy) is written
// once; byte 0 % 4 picks the file that the rest of the input replaces (role.json, class_map.json,
// adj_full.npz, feats.npy), which is restored afterwards.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "gnnpipe/graph/io/npy.hpp"
#include "gnnpipe/graph/io/saint.hpp"
#include "temp_dir.hpp"
#include "zip_writer.hpp"

namespace {

namespace fs = std::filesystem;

template <class T>
std::string npy_bytes(std::vector<T> values, std::vector<int64_t> shape = {}) {
  const fs::path tmp = gnnpipe::fuzz::scratch_dir() / "tmp.npy";
  gnnpipe::graph::io::write_npy<T>(tmp, values, std::move(shape));
  return gnnpipe::test::read_file(tmp);
}

struct SaintDir {
  fs::path dir;
  std::array<std::string, 4> names{"role.json", "class_map.json", "adj_full.npz", "feats.npy"};
  std::array<std::string, 4> valid;
};

const SaintDir& saint_dir() {
  static const SaintDir saint = [] {
    SaintDir s;
    s.dir = gnnpipe::fuzz::scratch_dir() / "saint" / "data";
    s.valid[0] = R"({"tr": [0], "va": [1], "te": [2]})";
    s.valid[1] = R"({"0": 0, "1": 1, "2": 0})";
    s.valid[2] = gnnpipe::test::make_zip({gnnpipe::test::deflated("indptr.npy", npy_bytes<int64_t>({0, 1, 2, 3})),
                                          gnnpipe::test::stored("indices.npy", npy_bytes<int32_t>({1, 2, 0})),
                                          gnnpipe::test::stored("data.npy", npy_bytes<uint8_t>({1, 1, 1})),
                                          gnnpipe::test::stored("shape.npy", npy_bytes<int64_t>({3, 3}))});
    s.valid[3] = npy_bytes<float>({0.5F, 1, -1, 2, 0, 0}, {3, 2});
    for (std::size_t i = 0; i < s.names.size(); ++i) gnnpipe::fuzz::write_bytes(s.dir / s.names[i], s.valid[i]);
    return s;
  }();
  return saint;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const SaintDir& s = saint_dir();
  const std::size_t which = data[0] % s.names.size();
  gnnpipe::fuzz::write_bytes(s.dir / s.names[which], data + 1, size - 1);
  gnnpipe::fuzz::guarded([&] { (void)gnnpipe::graph::io::read_saint(s.dir); });
  gnnpipe::fuzz::write_bytes(s.dir / s.names[which], s.valid[which]);
  return 0;
}
