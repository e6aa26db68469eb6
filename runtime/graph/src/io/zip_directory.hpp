#pragma once
// The central directory of a zip archive (PKWARE APPNOTE 6.3), as needed for .npz files:
// single-disk archives, an optional archive comment, and ZIP64 sizes and offsets.
// Private to the npz reader; it only locates entries and never decompresses.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gnnpipe::graph::io::detail {

struct ZipEntry {
  std::string name;  // as stored, e.g. "adj_indptr.npy"
  uint16_t flags = 0;   // general purpose bits; bit 0 = encrypted
  uint16_t method = 0;  // 0 = stored, 8 = deflate
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
};

// Finds the end-of-central-directory record (searching backwards over a comment of up to 64 KiB),
// follows the ZIP64 locator when there is one, and reads every central directory entry, taking
// sizes and offsets from ZIP64 extra fields where the 32-bit fields are 0xFFFFFFFF.
// Throws DataError "<name>: ..." for anything that is not a well-formed single-disk zip.
std::vector<ZipEntry> read_zip_directory(std::string_view name, std::span<const std::byte> archive);

// The compressed bytes of `entry`, which follow its local file header. Throws DataError
// "<name>: ..." if the local header is missing or the data runs past the end of the archive.
std::span<const std::byte> zip_entry_data(std::string_view name, const ZipEntry& entry,
                                          std::span<const std::byte> archive);

}  // namespace gnnpipe::graph::io::detail
