// Fuzz target: a .npz (zip) archive. First the private zip layer on the bytes in memory (central
// directory, ZIP64 records, local headers: read_zip_directory / zip_entry_data), then the public
// path through a file: NpzArchive::open and read() of every entry with CRC checks on, which
// inflates deflated entries and parses each as .npy.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_support.hpp"
#include "gnnpipe/graph/io/npz.hpp"
#include "io/zip_directory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gnnpipe::graph::io;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  gnnpipe::fuzz::guarded([&] {
    for (const detail::ZipEntry& entry : detail::read_zip_directory("fuzz.npz", bytes)) {
      gnnpipe::fuzz::guarded([&] { (void)detail::zip_entry_data("fuzz.npz", entry, bytes); });
    }
  });

  static const std::filesystem::path file = gnnpipe::fuzz::scratch_dir() / "fuzz.npz";
  gnnpipe::fuzz::write_bytes(file, data, size);
  gnnpipe::fuzz::guarded([&] {
    const NpzArchive archive = NpzArchive::open(file);
    NpzReadOptions options;
    options.verify_stored_crc = true;
    for (const std::string& name : archive.names()) {
      gnnpipe::fuzz::guarded([&] { (void)archive.read(name, options); });
    }
    gnnpipe::fuzz::guarded([&] { (void)archive.read("missing"); });
  });
  return 0;
}
