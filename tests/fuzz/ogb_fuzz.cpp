// Fuzz target: the OGB csv.gz reader (graph::io::read_ogb). A minimal valid OGB directory (3 nodes,
// labels, features, one split) is written once; each input replaces one of its files:
//   (byte 0 & 0x7F) % 7 picks the file (edge, num-node-list, node-label, node-feat, train, valid, test);
//   byte 0 & 0x80 set: the rest is gzip-compressed here (fuzzes the csv parsing);
//   clear: the rest is the file's bytes as they are (fuzzes gzip itself; zlib reads bytes
//   without the gzip magic as plain text, so text inputs reach the parser too).
// The file is restored after each input.
#include <zlib.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "gnnpipe/graph/io/ogb.hpp"

namespace {

struct File {
  const char* path;
  const char* text;
};

constexpr std::array<File, 7> kFiles{{
    {"raw/edge.csv.gz", "0,1\n1,2\n2,0\n"},
    {"raw/num-node-list.csv.gz", "3\n"},
    {"raw/node-label.csv.gz", "0\n1\nnan\n"},
    {"raw/node-feat.csv.gz", "0.5,1\n-1,2e3\n0,0\n"},
    {"split/s/train.csv.gz", "0\n"},
    {"split/s/valid.csv.gz", "1\n"},
    {"split/s/test.csv.gz", "2\n"},
}};

void write_gzip(const std::filesystem::path& path, const void* data, std::size_t size) {
  std::filesystem::create_directories(path.parent_path());
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && gzwrite(f, data, static_cast<unsigned>(size)) != static_cast<int>(size)) ||
      gzclose(f) != Z_OK) {
    std::fprintf(stderr, "gnnpipe fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

const std::filesystem::path& ogb_dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path d = gnnpipe::fuzz::scratch_dir() / "ogb";
    for (const File& f : kFiles) write_gzip(d / f.path, f.text, std::char_traits<char>::length(f.text));
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::filesystem::path& dir = ogb_dir();
  const File& file = kFiles[(data[0] & 0x7F) % kFiles.size()];
  if ((data[0] & 0x80) != 0) {
    write_gzip(dir / file.path, data + 1, size - 1);
  } else {
    gnnpipe::fuzz::write_bytes(dir / file.path, data + 1, size - 1);
  }
  gnnpipe::fuzz::guarded([&] { (void)gnnpipe::graph::io::read_ogb(dir); });
  write_gzip(dir / file.path, file.text, std::char_traits<char>::length(file.text));
  return 0;
}
