#include "zip_directory.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::graph::io::detail {
namespace {

constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfCentralDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr std::size_t kEndRecordSize = 22;
constexpr std::size_t kZip64LocatorSize = 20;
constexpr std::size_t kZip64EndRecordSize = 56;
constexpr std::size_t kCentralHeaderSize = 46;
constexpr std::size_t kLocalHeaderSize = 30;
constexpr uint16_t kMax16 = 0xFFFF;
constexpr uint32_t kMax32 = 0xFFFFFFFF;

// Bounds-checked little-endian reads from the archive; a read past the end is a DataError.
class Reader {
 public:
  Reader(std::string_view name, std::span<const std::byte> bytes) : name_(name), bytes_(bytes) {}

  bool fits(uint64_t offset, uint64_t length) const {
    return offset <= bytes_.size() && length <= bytes_.size() - offset;
  }
  void require(uint64_t offset, uint64_t length, std::string_view what) const {
    GNNPIPE_CHECK_DATA(fits(offset, length), "{}: truncated zip: {} at offset {} ({} bytes) runs past the end ({} bytes)",
                       name_, what, offset, length, bytes_.size());
  }
  uint64_t read(uint64_t offset, std::size_t width) const {
    require(offset, width, "a field");
    uint64_t value = 0;
    for (std::size_t i = 0; i < width; ++i) value |= static_cast<uint64_t>(bytes_[offset + i]) << (8 * i);
    return value;
  }
  uint16_t u16(uint64_t offset) const { return static_cast<uint16_t>(read(offset, 2)); }
  uint32_t u32(uint64_t offset) const { return static_cast<uint32_t>(read(offset, 4)); }
  uint64_t u64(uint64_t offset) const { return read(offset, 8); }
  std::string_view text(uint64_t offset, std::size_t length) const {
    require(offset, length, "a name");
    return {reinterpret_cast<const char*>(bytes_.data()) + offset, length};
  }
  std::size_t size() const { return bytes_.size(); }

 private:
  std::string_view name_;
  std::span<const std::byte> bytes_;
};

struct Directory {
  uint64_t entries = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
};

// The end-of-central-directory record is the last thing in the file, followed only by its
// comment, so the record whose comment length reaches exactly the end is the real one.
Directory find_directory(std::string_view name, const Reader& in) {
  GNNPIPE_CHECK_DATA(in.size() >= kEndRecordSize, "{}: not a zip archive ({} bytes is too short)", name, in.size());
  const uint64_t last = in.size() - kEndRecordSize;
  const uint64_t first = last > kMax16 ? last - kMax16 : 0;
  std::optional<uint64_t> found;
  for (uint64_t pos = last + 1; pos-- > first;) {
    if (in.u32(pos) == kEndOfCentralDirectory && pos + kEndRecordSize + in.u16(pos + 20) == in.size()) {
      found = pos;
      break;
    }
  }
  GNNPIPE_CHECK_DATA(found.has_value(), "{}: no zip end-of-central-directory record (not a zip, or truncated)", name);
  const uint64_t end = *found;
  GNNPIPE_CHECK_DATA(in.u16(end + 4) == 0 && in.u16(end + 6) == 0, "{}: multi-disk zip archives are not supported",
                     name);
  Directory dir{in.u16(end + 10), in.u32(end + 12), in.u32(end + 16)};

  const bool has_locator = end >= kZip64LocatorSize && in.u32(end - kZip64LocatorSize) == kZip64Locator;
  if (has_locator) {
    const uint64_t locator = end - kZip64LocatorSize;
    const uint64_t record = in.u64(locator + 8);
    in.require(record, kZip64EndRecordSize, "the ZIP64 end-of-central-directory record");
    GNNPIPE_CHECK_DATA(in.u32(record) == kZip64EndOfCentralDirectory,
                       "{}: bad ZIP64 end-of-central-directory signature at offset {}", name, record);
    GNNPIPE_CHECK_DATA(in.u32(record + 16) == 0 && in.u32(record + 20) == 0,
                       "{}: multi-disk zip archives are not supported", name);
    dir = Directory{in.u64(record + 32), in.u64(record + 40), in.u64(record + 48)};
  } else {
    GNNPIPE_CHECK_DATA(dir.entries != kMax16 && dir.size != kMax32 && dir.offset != kMax32,
                       "{}: zip needs a ZIP64 end-of-central-directory record but has none", name);
  }
  in.require(dir.offset, dir.size, "the central directory");
  return dir;
}

// Replaces the 0xFF..FF fields of `entry` by the values of a ZIP64 extra field (in APPNOTE order:
// uncompressed size, compressed size, local header offset, disk number).
void apply_zip64_extra(std::string_view name, const Reader& in, uint64_t extra, uint64_t extra_length,
                       ZipEntry& entry) {
  const uint64_t end = extra + extra_length;
  while (extra + 4 <= end) {
    const uint16_t id = in.u16(extra);
    const uint16_t length = in.u16(extra + 2);
    const uint64_t body = extra + 4;
    GNNPIPE_CHECK_DATA(body + length <= end, "{}: entry '{}': extra field overruns its header", name, entry.name);
    if (id == kZip64ExtraId) {
      uint64_t at = body;
      auto take = [&](uint64_t& field) {
        GNNPIPE_CHECK_DATA(at + 8 <= body + length, "{}: entry '{}': ZIP64 extra field is too short", name, entry.name);
        field = in.u64(at);
        at += 8;
      };
      if (entry.uncompressed_size == kMax32) take(entry.uncompressed_size);
      if (entry.compressed_size == kMax32) take(entry.compressed_size);
      if (entry.local_header_offset == kMax32) take(entry.local_header_offset);
    }
    extra = body + length;
  }
}

}  // namespace

std::vector<ZipEntry> read_zip_directory(std::string_view name, std::span<const std::byte> archive) {
  const Reader in(name, archive);
  const Directory dir = find_directory(name, in);
  const uint64_t end = dir.offset + dir.size;
  std::vector<ZipEntry> entries;
  entries.reserve(static_cast<std::size_t>(std::min<uint64_t>(dir.entries, dir.size / kCentralHeaderSize)));
  uint64_t at = dir.offset;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    GNNPIPE_CHECK_DATA(at + kCentralHeaderSize <= end && in.u32(at) == kCentralHeader,
                       "{}: corrupt central directory: entry {} of {} at offset {}", name, i, dir.entries, at);
    ZipEntry entry;
    entry.flags = in.u16(at + 8);
    entry.method = in.u16(at + 10);
    entry.crc32 = in.u32(at + 16);
    entry.compressed_size = in.u32(at + 20);
    entry.uncompressed_size = in.u32(at + 24);
    const uint16_t name_length = in.u16(at + 28);
    const uint16_t extra_length = in.u16(at + 30);
    const uint16_t comment_length = in.u16(at + 32);
    GNNPIPE_CHECK_DATA(in.u16(at + 34) == 0 || in.u16(at + 34) == kMax16,
                       "{}: multi-disk zip archives are not supported", name);
    entry.local_header_offset = in.u32(at + 42);
    const uint64_t next = at + kCentralHeaderSize + name_length + extra_length + comment_length;
    GNNPIPE_CHECK_DATA(next <= end, "{}: corrupt central directory: entry {} overruns it", name, i);
    entry.name = std::string(in.text(at + kCentralHeaderSize, name_length));
    apply_zip64_extra(name, in, at + kCentralHeaderSize + name_length, extra_length, entry);
    entries.push_back(std::move(entry));
    at = next;
  }
  return entries;
}

std::span<const std::byte> zip_entry_data(std::string_view name, const ZipEntry& entry,
                                          std::span<const std::byte> archive) {
  const Reader in(name, archive);
  const uint64_t local = entry.local_header_offset;
  in.require(local, kLocalHeaderSize, fmt::format("the local header of '{}'", entry.name));
  GNNPIPE_CHECK_DATA(in.u32(local) == kLocalHeader, "{}: entry '{}': no local file header at offset {}", name,
                     entry.name, local);
  const uint64_t data = local + kLocalHeaderSize + in.u16(local + 26) + in.u16(local + 28);
  GNNPIPE_CHECK_DATA(in.fits(data, entry.compressed_size),
                     "{}: entry '{}' is truncated: {} bytes at offset {} run past the end of the archive ({} bytes)",
                     name, entry.name, entry.compressed_size, data, archive.size());
  return archive.subspan(static_cast<std::size_t>(data), static_cast<std::size_t>(entry.compressed_size));
}

}  // namespace gnnpipe::graph::io::detail
